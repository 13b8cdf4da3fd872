/**
 * The CA's key material, one mode at a time (reference §6.2): a self-signed root kept in a
 * {@link RootStore} (Secret `mesh-ca-secret` with an orchestrator, a directory without one) so a
 * restart keeps it; plugged files checked as a bundle; or a signing certificate obtained from an
 * upstream mesh_ca by CSR and renewed before it expires.
 * @module
 */

import { callUnary } from "../../lib/grpc/mod.ts";
import type { Logger } from "../../lib/log/mod.ts";
import {
  type CaMaterial,
  type CaMaterialPem,
  CertAuthority,
  type CertAuthorityOptions,
  createCsr,
  createSelfSignedCa,
  exportPrivateKey,
  generateKeyPair,
  loadCaMaterial,
  PkiError,
  type SigningBackend,
  spiffeId,
  writeFileAtomic,
} from "../../lib/pki/mod.ts";
import type { KeyMode } from "./config.ts";
import { CERTIFICATE_SERVICE } from "./grpc.ts";
import {
  decodeMeshCertificateResponse,
  encodeMeshCertificateRequest,
} from "../../lib/pki/ca_messages.ts";

/** Where a self-signed root is kept. */
export interface RootStore {
  /** For log lines: `Secret mesh-system/mesh-ca-secret`, `directory /var/lib/mesh_ca`. */
  readonly where: string;
  /** The stored root (certificate and key PEM), or undefined when none is stored. */
  load(): Promise<{ cert: string; key: string } | undefined>;
  /**
   * Stores a new root if none is stored. Throws {@link RootExistsError} when another replica
   * stored one first (then `load()` returns the winner's).
   */
  save(root: { cert: string; key: string }): Promise<void>;
}

/** {@link RootStore.save} lost a race: another replica stored its root first. */
export class RootExistsError extends Error {}

/** File names of a root in a directory (and keys of the Secret). */
export const ROOT_FILES = { cert: "ca-cert.pem", key: "ca-key.pem" } as const;

/** A {@link RootStore} in a directory: `ca-cert.pem` (0644) and `ca-key.pem` (0600). */
export function directoryRootStore(dir: string): RootStore {
  const read = async (name: string) => {
    try {
      return await Deno.readTextFile(`${dir}/${name}`);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw new Error(`Cannot read ${dir}/${name}: ${(e as Error).message}`);
    }
  };
  return {
    where: `directory ${dir}`,
    async load() {
      const [cert, key] = [await read(ROOT_FILES.cert), await read(ROOT_FILES.key)];
      if (cert === undefined && key === undefined) return undefined;
      if (cert === undefined || key === undefined) {
        throw new Error(
          `Incomplete CA root in ${dir}: ${
            cert === undefined ? ROOT_FILES.cert : ROOT_FILES.key
          } is missing`,
        );
      }
      return { cert, key };
    },
    async save(root) {
      await writeFileAtomic(`${dir}/${ROOT_FILES.key}`, root.key, 0o600);
      await writeFileAtomic(`${dir}/${ROOT_FILES.cert}`, root.cert, 0o644);
    },
  };
}

/** The current key material and its changes. */
export interface KeySource {
  /** The current CA. */
  ca(): CertAuthority;
  /** Called after the CA changed (upstream renewal). */
  onChange(cb: () => void): void;
  /** Stops renewals. */
  stop(): void;
}

/** Dependencies of {@link startKeySource}. */
export interface KeySourceDeps {
  /** Where a self-signed root is kept (self-signed mode). */
  store?: RootStore;
  maxTtlMs: number;
  /** Signs workload certificates and verifies CSRs (default WebCrypto). */
  backend?: SigningBackend;
  /** Renewal timing of an upstream certificate: grace ratio and minimum grace (ms). */
  graceRatio: number;
  minGraceMs: number;
  log: Logger;
  /** Clock (default Date.now). */
  now?: () => number;
}

async function readFile(flag: string, path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    const why = e instanceof Deno.errors.NotFound ? "no such file" : (e as Error).message;
    throw new Error(`Cannot read --${flag} "${path}": ${why}`);
  }
}

/** A CA whose backend holds the signing key (errors: the backend cannot use it). */
async function newCa(
  material: CaMaterial,
  opts: CertAuthorityOptions,
): Promise<CertAuthority> {
  const ca = new CertAuthority(material, opts);
  await ca.ready();
  return ca;
}

function fixed(ca: CertAuthority): KeySource {
  return { ca: () => ca, onChange() {}, stop() {} };
}

/**
 * Loads (or creates, or requests) the key material of `mode`.
 * @throws Error with a one-line startup message saying what is wrong.
 */
export async function startKeySource(mode: KeyMode, deps: KeySourceDeps): Promise<KeySource> {
  const opts = { maxTtlMs: deps.maxTtlMs, now: deps.now, backend: deps.backend };
  if (mode.kind === "plugged") {
    const pem: CaMaterialPem = {
      signingCert: await readFile("signing-cert", mode.signingCert),
      signingKey: await readFile("signing-key", mode.signingKey),
      certChain: mode.certChain ? await readFile("cert-chain", mode.certChain) : "",
      rootCert: await readFile("root-cert", mode.rootCert),
    };
    try {
      const ca = await newCa(await loadCaMaterial(pem), opts);
      deps.log.info(`CA: using the plugged signing certificate ${mode.signingCert}`);
      return fixed(ca);
    } catch (e) {
      throw new Error(`Plugged CA key material is inconsistent: ${(e as Error).message}`);
    }
  }
  if (mode.kind === "self-signed") {
    const store = deps.store;
    if (!store) throw new Error("self-signed mode needs a root store");
    const useStored = async (stored: { cert: string; key: string }, how: string) => {
      try {
        const m = await loadCaMaterial({
          signingCert: stored.cert,
          signingKey: stored.key,
          certChain: "",
          rootCert: stored.cert,
        });
        deps.log.info(`CA: using the self-signed root ${how} ${store.where}`);
        if (m.root.notAfter.getTime() < (deps.now ?? Date.now)()) {
          deps.log.warn(`CA: the stored root expired at ${m.root.notAfter.toISOString()}`);
        }
        return fixed(await newCa(m, opts));
      } catch (e) {
        throw new Error(`The CA root kept in ${store.where} is unusable: ${(e as Error).message}`);
      }
    };
    const stored = await store.load();
    if (stored) return await useStored(stored, "kept in");
    const pem = await createSelfSignedCa({
      org: mode.org,
      ttlMs: mode.ttlMs,
      key: { kind: "rsa", bits: mode.keySize },
      now: deps.now ? new Date(deps.now()) : undefined,
    });
    try {
      await store.save({ cert: pem.signingCert, key: pem.signingKey });
      deps.log.info(`CA: generated a self-signed root (O=${mode.org}) kept in ${store.where}`);
    } catch (e) {
      if (e instanceof RootExistsError) {
        // Several replicas started at once and another stored its root first (create-if-absent
        // in the API server): use the winner's, as Istio's CA does, so that all serve one root.
        const winner = await store.load();
        if (winner) return await useStored(winner, "another replica stored first in");
      }
      // As Istio: the CA still works; a restart will generate another root.
      deps.log.error(`CA: cannot keep the new root in ${store.where}: ${(e as Error).message}`);
    }
    return fixed(await newCa(await loadCaMaterial(pem), opts));
  }
  return await upstreamSource(mode, deps);
}

/**
 * The name the upstream's server certificate must carry: the address's host when it is a DNS
 * name, else `mesh-ca` (the first default host identity).
 */
export function upstreamServername(address: string): string {
  const host = address.replace(/:\d+$/, "").replace(/^\[(.*)\]$/, "$1");
  return /^[\d.]+$/.test(host) || host.includes(":") ? "mesh-ca" : host;
}

/** The unverified `sub` of a JWT (the identity the upstream will see). */
function tokenSubject(token: string): string {
  try {
    const payload = JSON.parse(
      new TextDecoder().decode(
        Uint8Array.from(
          atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")),
          (c) => c.charCodeAt(0),
        ),
      ),
    );
    return String(payload.sub ?? "");
  } catch {
    return "";
  }
}

async function upstreamSource(
  mode: Extract<KeyMode, { kind: "upstream" }>,
  deps: KeySourceDeps,
): Promise<KeySource> {
  const root = await readFile("root-cert", mode.rootCert);
  const request = async (): Promise<CertAuthority> => {
    const token = (await readFile("upstream token file", mode.tokenFile)).trim();
    const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(tokenSubject(token));
    if (!sa) {
      throw new Error(
        `the token in ${mode.tokenFile} has no subject system:serviceaccount:<namespace>:<name>`,
      );
    }
    const keys = await generateKeyPair({ kind: "rsa", bits: mode.keySize });
    const csr = await createCsr({
      keys,
      uris: [spiffeId(sa[1], sa[2])],
      org: mode.org || undefined,
      isCa: true,
    });
    const r = await callUnary({
      address: mode.address,
      path: `/${CERTIFICATE_SERVICE}/CreateCertificate`,
      message: encodeMeshCertificateRequest({
        csr,
        validityDuration: Math.floor(mode.requestedTtlMs / 1000),
      }),
      ca: root,
      servername: upstreamServername(mode.address),
      headers: { authorization: `Bearer ${token}` },
    });
    if (r.status !== 0) {
      throw new Error(
        `upstream CA ${mode.address} refused the CSR (status ${r.status}): ${r.message}`,
      );
    }
    const chain = decodeMeshCertificateResponse(r.response ?? new Uint8Array());
    if (chain.length < 2) {
      throw new PkiError(`upstream CA ${mode.address} sent no certificate chain`);
    }
    const m = await loadCaMaterial({
      signingCert: chain[0],
      signingKey: await exportPrivateKey(keys.privateKey),
      certChain: chain.slice(1).join(""),
      rootCert: root,
    });
    return await newCa(m, { maxTtlMs: deps.maxTtlMs, now: deps.now, backend: deps.backend });
  };
  let current: CertAuthority;
  try {
    current = await request();
  } catch (e) {
    throw new Error(`Cannot get a CA certificate from the upstream CA: ${(e as Error).message}`);
  }
  deps.log.info(
    `CA: signing certificate from upstream ${mode.address}, valid until ${current.notAfter.toISOString()}`,
  );
  const listeners: (() => void)[] = [];
  let timer: number | undefined;
  let stopped = false;
  const now = deps.now ?? Date.now;
  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(renew, Math.max(0, Math.min(delayMs, 2 ** 31 - 1)));
  };
  const renewIn = (ca: CertAuthority) => {
    const nb = ca.material.signingCert.notBefore.getTime();
    const na = ca.notAfter.getTime();
    const grace = Math.max(deps.graceRatio * (na - nb), deps.minGraceMs);
    return na - grace - now();
  };
  const renew = async () => {
    try {
      current = await request();
      deps.log.info(
        `CA: renewed the signing certificate, valid until ${current.notAfter.toISOString()}`,
      );
      for (const l of listeners) l();
      schedule(renewIn(current));
    } catch (e) {
      deps.log.error(`CA: cannot renew the signing certificate: ${(e as Error).message}`);
      schedule(30_000);
    }
  };
  schedule(renewIn(current));
  return {
    ca: () => current,
    onChange: (cb) => listeners.push(cb),
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
