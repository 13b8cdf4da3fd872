/**
 * The machine's OpenSSL (libcrypto 3) through Deno FFI: signing with a CA private key and
 * verifying CSR signatures, 15-130x faster than Deno's WebCrypto for RSA and P-256. The library
 * is loaded on first use ({@link loadOpenSsl}), never at import. RSA signatures (`EVP_DigestSign`,
 * ~200-400 us) are `nonblocking` FFI symbols: they run on Deno's blocking thread pool, off the
 * JavaScript thread, so a second core signs while the main thread serves TLS and gRPC; the others
 * (P-256 signatures and verifications, RSA verifications: 12-70 us) run inline, since handing a
 * call to another thread and back costs more CPU than they do ({@link OpenSslOptions.offload}).
 *
 * Memory: every per-call OpenSSL object (digest context, CSR public key) is freed in a `finally`.
 * A CA key ({@link OpenSslKey}, with the signing context an EC key keeps) is freed by `close()`
 * once no signature is in flight, or, when the key object is dropped without `close()` (a rotated
 * CA), by a FinalizationRegistry: a signature in flight keeps its key object reachable, so the key
 * is never freed under it.
 * @module
 */

import { children, DerError, expectTag, oid, readTlv } from "./der.ts";

/** Library names tried in order by default. */
export const LIBCRYPTO_NAMES: readonly string[] = ["libcrypto.so.3", "libcrypto.so"];

const SYMBOLS = {
  d2i_AutoPrivateKey: { parameters: ["pointer", "buffer", "i64"], result: "pointer" },
  d2i_RSAPublicKey: { parameters: ["pointer", "buffer", "i64"], result: "pointer" },
  RSA_free: { parameters: ["pointer"], result: "void" },
  EC_GROUP_new_by_curve_name: { parameters: ["i32"], result: "pointer" },
  EC_KEY_new: { parameters: [], result: "pointer" },
  EC_KEY_set_group: { parameters: ["pointer", "pointer"], result: "i32" },
  EC_KEY_oct2key: { parameters: ["pointer", "buffer", "usize", "pointer"], result: "i32" },
  EC_KEY_free: { parameters: ["pointer"], result: "void" },
  SHA256: { parameters: ["buffer", "usize", "buffer"], result: "pointer" },
  SHA384: { parameters: ["buffer", "usize", "buffer"], result: "pointer" },
  SHA512: { parameters: ["buffer", "usize", "buffer"], result: "pointer" },
  EVP_PKEY_free: { parameters: ["pointer"], result: "void" },
  EVP_PKEY_get_size: { parameters: ["pointer"], result: "i32" },
  EVP_PKEY_get_bits: { parameters: ["pointer"], result: "i32" },
  EVP_PKEY_get_base_id: { parameters: ["pointer"], result: "i32" },
  EVP_MD_fetch: { parameters: ["pointer", "buffer", "pointer"], result: "pointer" },
  EVP_MD_CTX_new: { parameters: [], result: "pointer" },
  EVP_PKEY_CTX_new: { parameters: ["pointer", "pointer"], result: "pointer" },
  EVP_PKEY_CTX_free: { parameters: ["pointer"], result: "void" },
  EVP_PKEY_sign_init: { parameters: ["pointer"], result: "i32" },
  // Signs a digest (ECDSA on the JavaScript thread, with a context kept per key).
  EVP_PKEY_sign: { parameters: ["pointer", "buffer", "buffer", "buffer", "usize"], result: "i32" },
  EVP_MD_CTX_free: { parameters: ["pointer"], result: "void" },
  EVP_DigestSignInit: {
    parameters: ["pointer", "pointer", "pointer", "pointer", "pointer"],
    result: "i32",
  },
  EVP_DigestSign: {
    parameters: ["pointer", "buffer", "buffer", "buffer", "usize"],
    result: "i32",
    nonblocking: true,
  },
  ECDSA_verify: {
    parameters: ["i32", "buffer", "i32", "buffer", "i32", "pointer"],
    result: "i32",
    nonblocking: true,
  },
  RSA_verify: {
    parameters: ["i32", "buffer", "u32", "buffer", "u32", "pointer"],
    result: "i32",
    nonblocking: true,
  },
  // The same two, synchronous (on the JavaScript thread): measured against the nonblocking ones.
  EVP_DigestSign_sync: {
    name: "EVP_DigestSign",
    parameters: ["pointer", "buffer", "buffer", "buffer", "usize"],
    result: "i32",
  },
  ECDSA_verify_sync: {
    name: "ECDSA_verify",
    parameters: ["i32", "buffer", "i32", "buffer", "i32", "pointer"],
    result: "i32",
  },
  RSA_verify_sync: {
    name: "RSA_verify",
    parameters: ["i32", "buffer", "u32", "buffer", "u32", "pointer"],
    result: "i32",
  },
  ERR_get_error: { parameters: [], result: "u64" },
  ERR_error_string_n: { parameters: ["u64", "buffer", "usize"], result: "void" },
  ERR_clear_error: { parameters: [], result: "void" },
} as const satisfies Deno.ForeignLibraryInterface;

type Lib = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

/** Key types (`EVP_PKEY_RSA`, `EVP_PKEY_EC`). */
const PKEY_RSA = 6;
const PKEY_EC = 408;

/** `NID_X9_62_prime256v1`. */
const NID_P256 = 415;

/** Hash names as WebCrypto spells them → OpenSSL's name, NID, one-shot function, size. */
const DIGESTS = {
  "SHA-256": { name: "SHA256", nid: 672, fn: "SHA256", size: 32 },
  "SHA-384": { name: "SHA384", nid: 673, fn: "SHA384", size: 48 },
  "SHA-512": { name: "SHA512", nid: 674, fn: "SHA512", size: 64 },
} as const;

/** Thrown when libcrypto cannot be loaded, or an OpenSSL call fails. */
export class OpenSslError extends Error {
  override name = "OpenSslError";
}

/** Options of {@link loadOpenSsl}. */
export interface OpenSslOptions {
  /** Library file names or paths tried in order (default {@link LIBCRYPTO_NAMES}). */
  libraries?: readonly string[];
  /**
   * Which operations run on Deno's blocking thread pool rather than on the JavaScript thread:
   * `all`, `none`, or `auto` (the default): only those that cost more than handing them to
   * another thread and back — RSA signatures. ECDSA P-256 signatures (~14-27 us), P-256
   * verifications (~40-75 us) and RSA verifications (~12 us) run inline: handed over, a P-256
   * verification cost mesh_ca ~90 us more CPU per CSR than inline (a wake-up of a pool thread
   * and of the event loop per call, dearer in a VM than the call itself).
   */
  offload?: "auto" | "all" | "none";
}

/** A CA private key held by OpenSSL. */
export interface OpenSslKey {
  /** `rsa` or `ec`. */
  readonly kind: "rsa" | "ec";
  /** Key size in bits. */
  readonly bits: number;
  /**
   * Signs `data` with SHA-256: RSA PKCS#1 v1.5, or ECDSA with the DER `SEQUENCE { r, s }`
   * signature X.509 carries.
   */
  sign(data: Uint8Array): Promise<Uint8Array>;
  /** Frees the key once no signature is in flight; later `sign` calls throw. */
  close(): void;
}

/** A loaded libcrypto. */
export interface OpenSsl {
  /** The library that loaded (name or path as given). */
  readonly library: string;
  /** Loads a PKCS#8 (or traditional) DER private key; `der` is wiped afterwards. */
  privateKey(der: Uint8Array): OpenSslKey;
  /**
   * Verifies `signature` (RSA PKCS#1 v1.5, or ECDSA in DER form) over `data` with the
   * SubjectPublicKeyInfo `spki` and `hash` (`SHA-256`, `SHA-384`, `SHA-512`).
   * @throws OpenSslError for an unreadable key or unknown hash; false for a bad signature.
   */
  verify(spki: Uint8Array, hash: string, signature: Uint8Array, data: Uint8Array): Promise<boolean>;
  /** Number of CA keys currently held (tests: no leak). */
  liveKeys(): number;
}

const loaded = new Map<string, OpenSsl>();

/**
 * Loads libcrypto (once per library list and mode).
 * @throws OpenSslError with one line naming each library tried and why it failed (not found, FFI
 * not permitted, missing OpenSSL 3 symbols).
 */
export function loadOpenSsl(opts: OpenSslOptions = {}): OpenSsl {
  const names = opts.libraries ?? LIBCRYPTO_NAMES;
  const offload = opts.offload ?? "auto";
  const cacheKey = `${offload}:${names.join("\0")}`;
  const hit = loaded.get(cacheKey);
  if (hit) return hit;
  const failures: string[] = [];
  for (const name of names) {
    let lib: Deno.DynamicLibrary<typeof SYMBOLS>;
    try {
      lib = Deno.dlopen(name, SYMBOLS);
    } catch (e) {
      failures.push(`${name}: ${firstLine((e as Error).message)}`);
      continue;
    }
    const o = create(name, lib.symbols, offload);
    loaded.set(cacheKey, o);
    return o;
  }
  throw new OpenSslError(`cannot load OpenSSL libcrypto (${failures.join("; ")})`);
}

function firstLine(s: string): string {
  return s.split("\n")[0].replace(/^(Could not open library: )+/, "").trim();
}

// long: binds the FFI symbols once, then one small closure per operation
function create(library: string, s: Lib, offload: "auto" | "all" | "none"): OpenSsl {
  /** The nonblocking symbol, or the inline one (its result then awaited like a promise's). */
  const pick = <A extends unknown[]>(
    nonblocking: (...a: A) => Promise<number>,
    inline: (...a: A) => number,
    auto: boolean,
  ): (...a: A) => Promise<number> | number =>
    offload === "all" || (offload === "auto" && auto) ? nonblocking : inline;
  const rsaSign = pick(s.EVP_DigestSign, s.EVP_DigestSign_sync, true);
  const ecSign = pick(s.EVP_DigestSign, s.EVP_DigestSign_sync, false);
  const ecdsaVerify = pick(s.ECDSA_verify, s.ECDSA_verify_sync, false);
  const rsaVerify = pick(s.RSA_verify, s.RSA_verify_sync, false);
  const te = new TextEncoder();
  const digests = new Map<string, Deno.PointerObject>();
  /** A fetched digest (kept for the life of the process: three at most). */
  const digest = (hash: keyof typeof DIGESTS): Deno.PointerObject => {
    let md = digests.get(hash);
    if (md) return md;
    const name = DIGESTS[hash].name;
    md = s.EVP_MD_fetch(null, te.encode(name + "\0"), null) ??
      fail(`EVP_MD_fetch(${name})`);
    digests.set(hash, md);
    return md;
  };
  function fail(what: string): never {
    const codes: string[] = [];
    for (let e = s.ERR_get_error(); e; e = s.ERR_get_error()) {
      const buf = new Uint8Array(256);
      s.ERR_error_string_n(e, buf, BigInt(buf.length));
      codes.push(new TextDecoder().decode(buf.subarray(0, buf.indexOf(0))));
    }
    throw new OpenSslError(`${what} failed${codes.length ? `: ${codes.join(", ")}` : ""}`);
  }
  /** d2i_* with a `const unsigned char **` pointing at `der`. */
  const d2i = (
    fn: (a: null, pp: BufferSource, len: bigint) => Deno.PointerValue,
    der: Uint8Array,
  ): Deno.PointerValue => {
    if (!der.length) return null;
    const pp = new BigUint64Array([
      BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(der as BufferSource))),
    ]);
    return fn(null, pp, BigInt(der.length));
  };
  const keyType = (pkey: Deno.PointerObject): "rsa" | "ec" | undefined => {
    const id = s.EVP_PKEY_get_base_id(pkey);
    return id === PKEY_RSA ? "rsa" : id === PKEY_EC ? "ec" : undefined;
  };

  let live = 0;
  const release = (k: { pkey: Deno.PointerObject; pctx: Deno.PointerValue }) => {
    if (k.pctx) s.EVP_PKEY_CTX_free(k.pctx);
    s.EVP_PKEY_free(k.pkey);
    live--;
  };
  const registry = new FinalizationRegistry(release);

  const privateKey = (der: Uint8Array): OpenSslKey => {
    s.ERR_clear_error();
    let pkey: Deno.PointerValue;
    try {
      pkey = d2i(s.d2i_AutoPrivateKey, der);
    } finally {
      der.fill(0);
    }
    // Never include OpenSSL's error text about key bytes: say only that it is unreadable.
    if (!pkey) {
      s.ERR_clear_error();
      throw new OpenSslError("OpenSSL cannot read the private key");
    }
    const kind = keyType(pkey);
    if (!kind) {
      s.EVP_PKEY_free(pkey);
      throw new OpenSslError("unsupported private key type: want RSA or EC");
    }
    const key = pkey;
    const size = s.EVP_PKEY_get_size(key);
    const bits = s.EVP_PKEY_get_bits(key);
    const md = digest("SHA-256");
    const signCall = kind === "rsa" ? rsaSign : ecSign;
    // An ECDSA signature made on this thread reuses one signing context for the key: a fresh
    // digest-sign context per call (allocated, its algorithm fetched and initialised) cost ~3 us
    // of a ~29 us signature. Never shared across threads: only when EC signs run inline.
    let pctx: Deno.PointerValue = null;
    if (kind === "ec" && signCall === s.EVP_DigestSign_sync) {
      pctx = s.EVP_PKEY_CTX_new(key, null);
      if (!pctx || s.EVP_PKEY_sign_init(pctx) !== 1) {
        if (pctx) s.EVP_PKEY_CTX_free(pctx);
        s.EVP_PKEY_free(key);
        fail("EVP_PKEY_sign_init");
      }
    }
    const held = { pkey: key, pctx };
    let inFlight = 0;
    let closed = false;
    let freed = false;
    const free = () => {
      if (freed) return;
      freed = true;
      registry.unregister(handle);
      release(held);
    };
    const digestSign = async (data: Uint8Array): Promise<Uint8Array> => {
      const ctx = s.EVP_MD_CTX_new() ?? fail("EVP_MD_CTX_new");
      try {
        if (s.EVP_DigestSignInit(ctx, null, md, null, key) !== 1) fail("EVP_DigestSignInit");
        const sig = new Uint8Array(size);
        const sigLen = new BigUint64Array([BigInt(size)]);
        const ok = await signCall(ctx, sig, sigLen, data as BufferSource, BigInt(data.length));
        // This frame keeps the key object (so the key) and the buffers alive until here.
        if (ok !== 1) throw new OpenSslError("EVP_DigestSign failed");
        return sig.subarray(0, Number(sigLen[0]));
      } finally {
        s.EVP_MD_CTX_free(ctx);
      }
    };
    const dg = new Uint8Array(32);
    const sigLen = new BigUint64Array(1);
    const contextSign = (data: Uint8Array): Uint8Array => {
      s.SHA256(data as BufferSource, BigInt(data.length), dg);
      const sig = new Uint8Array(size);
      sigLen[0] = BigInt(size);
      if (s.EVP_PKEY_sign(pctx, sig, sigLen, dg, 32n) !== 1) {
        s.ERR_clear_error();
        throw new OpenSslError("EVP_PKEY_sign failed");
      }
      return sig.subarray(0, Number(sigLen[0]));
    };
    const handle: OpenSslKey = {
      kind,
      bits,
      async sign(data) {
        if (closed) throw new OpenSslError("the signing key was closed");
        inFlight++;
        try {
          return pctx ? contextSign(data) : await digestSign(data);
        } finally {
          inFlight--;
          if (closed && !inFlight) free();
        }
      },
      close() {
        closed = true;
        if (!inFlight) free();
      },
    };
    live++;
    registry.register(handle, held, handle);
    return handle;
  };

  // CSR keys are new on every call: OpenSSL 3's generic decoder (d2i_PUBKEY, ~160 us a key) would
  // cost more than the verification itself, so keys are built with the type-specific functions
  // (~2 us) and checked with ECDSA_verify / RSA_verify on a digest computed here.
  let p256: Deno.PointerObject | undefined;
  const verify = async (
    spki: Uint8Array,
    hash: string,
    signature: Uint8Array,
    data: Uint8Array,
  ): Promise<boolean> => {
    const h = DIGESTS[hash as keyof typeof DIGESTS];
    if (!h) throw new OpenSslError(`unsupported hash ${hash}`);
    const key = subjectPublicKey(spki);
    const dg = new Uint8Array(h.size);
    s[h.fn](data as BufferSource, BigInt(data.length), dg);
    if (key.kind === "ec") {
      p256 ??= s.EC_GROUP_new_by_curve_name(NID_P256) ?? fail("EC_GROUP_new_by_curve_name");
      const ec = s.EC_KEY_new() ?? fail("EC_KEY_new");
      try {
        if (s.EC_KEY_set_group(ec, p256) !== 1) fail("EC_KEY_set_group");
        if (s.EC_KEY_oct2key(ec, key.bits as BufferSource, BigInt(key.bits.length), null) !== 1) {
          s.ERR_clear_error();
          throw new OpenSslError("invalid EC public key (not a P-256 point)");
        }
        return await ecdsaVerify(
          0,
          dg,
          dg.length,
          signature as BufferSource,
          signature.length,
          ec,
        ) ===
          1;
      } finally {
        s.EC_KEY_free(ec);
      }
    }
    const rsa = d2i(s.d2i_RSAPublicKey, key.bits);
    if (!rsa) {
      s.ERR_clear_error();
      throw new OpenSslError("invalid RSA public key");
    }
    try {
      // A bad signature leaves an entry in the error queue of the thread that ran the check (a
      // fixed-size ring per thread: nothing accumulates).
      return await rsaVerify(
        h.nid,
        dg,
        dg.length,
        signature as BufferSource,
        signature.length,
        rsa,
      ) ===
        1;
    } finally {
      s.RSA_free(rsa);
    }
  };

  return { library, privateKey, verify, liveKeys: () => live };
}

const OID_RSA = "1.2.840.113549.1.1.1";
const OID_EC = "1.2.840.10045.2.1";
const OID_P256 = "1.2.840.10045.3.1.7";

/** The key of a SubjectPublicKeyInfo: RSA (PKCS#1 RSAPublicKey) or P-256 (the point). */
function subjectPublicKey(spki: Uint8Array): { kind: "rsa" | "ec"; bits: Uint8Array } {
  try {
    const [alg, key] = children(expectTag(readTlv(spki), 0x30, "SubjectPublicKeyInfo").value);
    const [id, params] = children(expectTag(alg, 0x30, "algorithm").value);
    const bits = expectTag(key, 0x03, "subjectPublicKey").value;
    if (bits[0] !== 0) throw new DerError("subjectPublicKey: unused bits");
    const algorithm = oid(expectTag(id, 0x06, "algorithm").value);
    if (algorithm === OID_RSA) return { kind: "rsa", bits: bits.subarray(1) };
    if (algorithm === OID_EC && params?.tag === 0x06 && oid(params.value) === OID_P256) {
      return { kind: "ec", bits: bits.subarray(1) };
    }
    throw new OpenSslError("unsupported public key: want RSA or EC P-256");
  } catch (e) {
    if (e instanceof DerError) throw new OpenSslError(`malformed public key: ${e.message}`);
    throw e;
  }
}
