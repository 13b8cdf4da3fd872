/**
 * The machine's OpenSSL (libcrypto 3) through Deno FFI: signing with a CA private key and
 * verifying CSR signatures, 15-130x faster than Deno's WebCrypto for RSA and P-256. The library
 * is loaded on first use ({@link loadOpenSsl}), never at import. The expensive calls
 * (`EVP_DigestSign`, `EVP_DigestVerify`) are `nonblocking` FFI symbols: they run on Deno's
 * blocking thread pool, off the JavaScript thread, so both cores sign while the main thread
 * serves TLS and gRPC.
 *
 * Memory: every per-call OpenSSL object (digest context, CSR public key) is freed in a `finally`.
 * A CA key ({@link OpenSslKey}) is freed by `close()` once no signature is in flight, or, when the
 * key object is dropped without `close()` (a rotated CA), by a FinalizationRegistry: a signature
 * in flight keeps its key object reachable, so the key is never freed under it.
 * @module
 */

/** Library names tried in order by default. */
export const LIBCRYPTO_NAMES: readonly string[] = ["libcrypto.so.3", "libcrypto.so"];

const SYMBOLS = {
  d2i_AutoPrivateKey: { parameters: ["pointer", "buffer", "i64"], result: "pointer" },
  d2i_PUBKEY: { parameters: ["pointer", "buffer", "i64"], result: "pointer" },
  EVP_PKEY_free: { parameters: ["pointer"], result: "void" },
  EVP_PKEY_get_size: { parameters: ["pointer"], result: "i32" },
  EVP_PKEY_get_bits: { parameters: ["pointer"], result: "i32" },
  EVP_PKEY_get_base_id: { parameters: ["pointer"], result: "i32" },
  EVP_MD_fetch: { parameters: ["pointer", "buffer", "pointer"], result: "pointer" },
  EVP_MD_CTX_new: { parameters: [], result: "pointer" },
  EVP_MD_CTX_free: { parameters: ["pointer"], result: "void" },
  EVP_DigestSignInit: {
    parameters: ["pointer", "pointer", "pointer", "pointer", "pointer"],
    result: "i32",
  },
  EVP_DigestVerifyInit: {
    parameters: ["pointer", "pointer", "pointer", "pointer", "pointer"],
    result: "i32",
  },
  EVP_DigestSign: {
    parameters: ["pointer", "buffer", "buffer", "buffer", "usize"],
    result: "i32",
    nonblocking: true,
  },
  EVP_DigestVerify: {
    parameters: ["pointer", "buffer", "usize", "buffer", "usize"],
    result: "i32",
    nonblocking: true,
  },
  // The same two, synchronous (on the JavaScript thread): measured against the nonblocking ones.
  EVP_DigestSign_sync: {
    name: "EVP_DigestSign",
    parameters: ["pointer", "buffer", "buffer", "buffer", "usize"],
    result: "i32",
  },
  EVP_DigestVerify_sync: {
    name: "EVP_DigestVerify",
    parameters: ["pointer", "buffer", "usize", "buffer", "usize"],
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

/** Hash names as WebCrypto spells them → OpenSSL's. */
const DIGESTS: Record<string, string> = {
  "SHA-256": "SHA256",
  "SHA-384": "SHA384",
  "SHA-512": "SHA512",
};

/** Thrown when libcrypto cannot be loaded, or an OpenSSL call fails. */
export class OpenSslError extends Error {
  override name = "OpenSslError";
}

/** Options of {@link loadOpenSsl}. */
export interface OpenSslOptions {
  /** Library file names or paths tried in order (default {@link LIBCRYPTO_NAMES}). */
  libraries?: readonly string[];
  /**
   * Run sign and verify on Deno's blocking thread pool (default true). False runs them on the
   * JavaScript thread (slower end to end; kept to measure the difference).
   */
  nonblocking?: boolean;
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
  const nonblocking = opts.nonblocking ?? true;
  const cacheKey = `${nonblocking}:${names.join("\0")}`;
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
    const o = create(name, lib.symbols, nonblocking);
    loaded.set(cacheKey, o);
    return o;
  }
  throw new OpenSslError(`cannot load OpenSSL libcrypto (${failures.join("; ")})`);
}

function firstLine(s: string): string {
  return s.split("\n")[0].replace(/^(Could not open library: )+/, "").trim();
}

function create(library: string, s: Lib, nonblocking: boolean): OpenSsl {
  const signCall = nonblocking ? s.EVP_DigestSign : s.EVP_DigestSign_sync;
  const verifyCall = nonblocking ? s.EVP_DigestVerify : s.EVP_DigestVerify_sync;
  const te = new TextEncoder();
  const digests = new Map<string, Deno.PointerObject>();
  /** A fetched digest (kept for the life of the process: three at most). */
  const digest = (hash: string): Deno.PointerObject => {
    let md = digests.get(hash);
    if (md) return md;
    const name = DIGESTS[hash];
    if (!name) throw new OpenSslError(`unsupported hash ${hash}`);
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
  const baseId = (pkey: Deno.PointerObject): "rsa" | "ec" | undefined => {
    const id = s.EVP_PKEY_get_base_id(pkey);
    return id === PKEY_RSA ? "rsa" : id === PKEY_EC ? "ec" : undefined;
  };

  let live = 0;
  const registry = new FinalizationRegistry<Deno.PointerObject>((pkey) => {
    s.EVP_PKEY_free(pkey);
    live--;
  });

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
    const kind = baseId(pkey);
    if (!kind) {
      s.EVP_PKEY_free(pkey);
      throw new OpenSslError("unsupported private key type: want RSA or EC");
    }
    const key = pkey;
    const size = s.EVP_PKEY_get_size(key);
    const bits = s.EVP_PKEY_get_bits(key);
    const md = digest("SHA-256");
    let inFlight = 0;
    let closed = false;
    let freed = false;
    const free = () => {
      if (freed) return;
      freed = true;
      registry.unregister(handle);
      s.EVP_PKEY_free(key);
      live--;
    };
    const handle: OpenSslKey = {
      kind,
      bits,
      async sign(data) {
        if (closed) throw new OpenSslError("the signing key was closed");
        const ctx = s.EVP_MD_CTX_new() ?? fail("EVP_MD_CTX_new");
        inFlight++;
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
    registry.register(handle, key, handle);
    return handle;
  };

  const verify = async (
    spki: Uint8Array,
    hash: string,
    signature: Uint8Array,
    data: Uint8Array,
  ): Promise<boolean> => {
    const md = digest(hash);
    s.ERR_clear_error();
    const pkey = d2i(s.d2i_PUBKEY, spki) ?? fail("d2i_PUBKEY (reading the CSR's public key)");
    let ctx: Deno.PointerValue = null;
    try {
      if (!baseId(pkey)) throw new OpenSslError("unsupported public key type: want RSA or EC");
      ctx = s.EVP_MD_CTX_new() ?? fail("EVP_MD_CTX_new");
      if (s.EVP_DigestVerifyInit(ctx, null, md, null, pkey) !== 1) fail("EVP_DigestVerifyInit");
      const r = await verifyCall(
        ctx,
        signature as BufferSource,
        BigInt(signature.length),
        data as BufferSource,
        BigInt(data.length),
      );
      // A bad signature leaves entries in the error queue of the thread that ran it (a fixed-size
      // ring per thread: nothing accumulates).
      return r === 1;
    } finally {
      if (ctx) s.EVP_MD_CTX_free(ctx);
      s.EVP_PKEY_free(pkey);
    }
  };

  return { library, privateKey, verify, liveKeys: () => live };
}
