/**
 * Workload certificates without an orchestrator: the agent asks mesh_ca's `CreateCertificate`
 * (`mesh.v1.auth.MeshCertificateService`, TLS, verifying mesh_ca with the root file) for a
 * certificate of its identity, authenticating with a bearer JWT (`MESH_CA_TOKEN_FILE`) or, for a
 * renewal without a token, with the certificate it already has (mutual TLS). It writes
 * `cert-chain.pem`, `key.pem` (0600) and `root-cert.pem` atomically and renews when half of the
 * certificate's life is gone; a failed request is retried.
 * @module
 */

import type { Logger } from "../../lib/log/mod.ts";
import type { CaConfig } from "./config.ts";
import { CERT_FILES } from "./bootstrap.ts";
import {
  decodeMeshCertificateResponse,
  encodeMeshCertificateRequest,
} from "../../lib/pki/ca_messages.ts";

/** gRPC path of CreateCertificate. */
export const CREATE_CERTIFICATE = "/mesh.v1.auth.MeshCertificateService/CreateCertificate";

/** A certificate the agent holds: PEM texts and validity. */
export interface WorkloadCert {
  readonly chain: string;
  readonly key: string;
  readonly root: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly identity: string;
}

// ---- identity ---------------------------------------------------------------------------------

/** The SPIFFE identity a bearer JWT stands for (`sub: system:serviceaccount:<ns>:<sa>`). */
export async function identityOfToken(token: string): Promise<string> {
  const { spiffeId } = await import("../../lib/pki/mod.ts");
  const part = token.split(".")[1];
  let sub: unknown;
  try {
    const b64 = part.replace(/-/g, "+").replace(/_/g, "/");
    sub = JSON.parse(atob(b64 + "=".repeat((4 - b64.length % 4) % 4))).sub;
  } catch {
    throw new Error("the token in MESH_CA_TOKEN_FILE is not a JWT");
  }
  const m = typeof sub === "string" ? /^system:serviceaccount:([^:]+):([^:]+)$/.exec(sub) : null;
  if (!m) {
    throw new Error(
      `the token's subject ${JSON.stringify(sub)} is not system:serviceaccount:<namespace>:<name>`,
    );
  }
  return spiffeId(m[1], m[2]);
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch {
    return undefined;
  }
}

/** The certificate in `dir`, when all three files are there and parse. */
export async function loadWorkloadCert(dir: string): Promise<WorkloadCert | undefined> {
  const [chain, key, root] = await Promise.all(
    [CERT_FILES.chain, CERT_FILES.key, CERT_FILES.root].map((f) => readOptional(`${dir}/${f}`)),
  );
  if (!chain || !key || !root) return undefined;
  const { parseCertificates, subjectAltNames } = await import("../../lib/pki/mod.ts");
  try {
    const leaf = parseCertificates(chain)[0];
    if (!leaf) return undefined;
    return {
      chain,
      key,
      root,
      notBefore: leaf.notBefore,
      notAfter: leaf.notAfter,
      identity: subjectAltNames(leaf).uris[0] ?? "",
    };
  } catch {
    return undefined;
  }
}

/**
 * Gets a new certificate from mesh_ca: a fresh EC P-256 key, a CSR for the identity of the token
 * (or of `current`), `CreateCertificate` with the token or `current` as the credential.
 */
export async function requestCertificate(
  ca: CaConfig,
  current: WorkloadCert | undefined,
): Promise<WorkloadCert> {
  const pki = await import("../../lib/pki/mod.ts");
  const { callUnary } = await import("../../lib/grpc/client.ts");
  let root: string;
  try {
    root = await Deno.readTextFile(ca.rootCertFile);
  } catch (e) {
    throw new Error(`Cannot read the CA root ${ca.rootCertFile}: ${(e as Error).message}`);
  }
  let token: string | undefined;
  if (ca.tokenFile) {
    try {
      token = (await Deno.readTextFile(ca.tokenFile)).trim();
    } catch (e) {
      throw new Error(`Cannot read MESH_CA_TOKEN_FILE ${ca.tokenFile}: ${(e as Error).message}`);
    }
  }
  const identity = token ? await identityOfToken(token) : current?.identity;
  if (!identity) {
    throw new Error(
      "no credential for mesh_ca: set MESH_CA_TOKEN_FILE or provide a certificate to renew",
    );
  }
  const keys = await pki.generateKeyPair({ kind: "ec" });
  const csr = await pki.createCsr({ keys, uris: [identity] });
  const r = await callUnary({
    address: ca.address,
    path: CREATE_CERTIFICATE,
    message: encodeMeshCertificateRequest({ csr, validityDuration: ca.ttlSeconds }),
    ca: root,
    servername: ca.serverName,
    ...(token
      ? { headers: { authorization: `Bearer ${token}` } }
      : { cert: current!.chain, key: current!.key }),
  });
  if (r.status !== 0) {
    throw new Error(`mesh_ca refused the certificate request (status ${r.status}): ${r.message}`);
  }
  const chain = decodeMeshCertificateResponse(r.response ?? new Uint8Array());
  if (!chain.length) throw new Error("mesh_ca answered without a certificate");
  const leaf = pki.parseCertificates(chain[0])[0];
  return {
    chain: chain.map((c) => c.endsWith("\n") ? c : c + "\n").join(""),
    key: await pki.exportPrivateKey(keys.privateKey),
    root,
    notBefore: leaf.notBefore,
    notAfter: leaf.notAfter,
    identity,
  };
}

/** Writes the three files atomically (key 0600); the chain last, so watchers see a whole set. */
export async function writeWorkloadCert(dir: string, c: WorkloadCert): Promise<void> {
  const { writeFileAtomic } = await import("../../lib/pki/mod.ts");
  await writeFileAtomic(`${dir}/${CERT_FILES.key}`, c.key, 0o600);
  await writeFileAtomic(`${dir}/${CERT_FILES.root}`, c.root, 0o644);
  await writeFileAtomic(`${dir}/${CERT_FILES.chain}`, c.chain, 0o644);
}

/** When to renew: once `ratio` of the life is gone. */
export function renewAt(c: { notBefore: Date; notAfter: Date }, ratio = 0.5): number {
  const life = c.notAfter.getTime() - c.notBefore.getTime();
  return c.notBefore.getTime() + life * ratio;
}

/**
 * The agent's certificate rotation when it gets its certificate from mesh_ca (`ca` set), with the
 * log line that it waits for it; undefined when certificates are mounted files.
 */
export function agentCertRotation(
  c: { readonly ca?: CaConfig; readonly certDir: string },
  log: Logger,
  retryMs?: number,
): CertRotation | undefined {
  if (!c.ca) return undefined;
  const certs = startCertRotation({ ca: c.ca, certDir: c.certDir, log, retryMs });
  log.info("waiting for the workload certificate from mesh_ca", { address: c.ca.address });
  return certs;
}

/** Options of {@link startCertRotation}. */
export interface RotationOptions {
  readonly ca: CaConfig;
  readonly certDir: string;
  readonly log: Logger;
  /** Delay before retrying a failed request (default 5 s). */
  readonly retryMs?: number;
  /** Called after new files are written. */
  onRotate?(c: WorkloadCert): void;
}

/** A running rotation. */
export interface CertRotation {
  /** Resolves once a valid certificate is in place. */
  readonly ready: Promise<WorkloadCert>;
  /** The current certificate. */
  current(): WorkloadCert | undefined;
  stop(): void;
}

/**
 * Keeps a certificate in `certDir`: requests one at once unless a valid one (not yet at its
 * renewal time) is there, then renews at {@link renewAt}; failures are logged and retried.
 */
export function startCertRotation(o: RotationOptions): CertRotation {
  let cur: WorkloadCert | undefined;
  let timer: number | undefined;
  let stopped = false;
  const { promise: ready, resolve } = Promise.withResolvers<WorkloadCert>();
  const schedule = (ms: number) => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(run, Math.max(0, Math.min(ms, 2 ** 31 - 1)));
  };
  const run = async () => {
    try {
      const c = await requestCertificate(o.ca, cur);
      if (stopped) return;
      await Deno.mkdir(o.certDir, { recursive: true });
      await writeWorkloadCert(o.certDir, c);
      cur = c;
      o.log.info("workload certificate written", {
        identity: c.identity,
        not_after: c.notAfter.toISOString(),
      });
      resolve(c);
      o.onRotate?.(c);
      schedule(renewAt(c) - Date.now());
    } catch (e) {
      o.log.error("cannot get a workload certificate from mesh_ca", {
        error: (e as Error).message,
        retry_ms: o.retryMs ?? 5000,
      });
      schedule(o.retryMs ?? 5000);
    }
  };
  (async () => {
    cur = await loadWorkloadCert(o.certDir);
    if (cur && renewAt(cur) > Date.now()) {
      resolve(cur);
      schedule(renewAt(cur) - Date.now());
    } else schedule(0);
  })();
  return {
    ready,
    current: () => cur,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
