/**
 * An independent client of mesh_ca's signing API for tests: `@grpc/grpc-js` with
 * `proto/ca.proto` loaded by `@grpc/proto-loader`, and JWT helpers (jose) for the bearer paths.
 * @module
 */

import { fileURLToPath } from "node:url";
import { callUnary, type UnaryResult } from "../../lib/grpc/mod.ts";
import { encodeMeshCertificateRequest } from "../../lib/pki/ca_messages.ts";

/** Outcome of a call: the chain on success, else the gRPC status code and message. */
export type CaCallResult =
  | { ok: true; chain: string[]; raw: Record<string, unknown> }
  | { ok: false; code: number; details: string };

/** Options of one call. */
export interface CaCallOptions {
  /** `127.0.0.1:<port>`. */
  address: string;
  /** PEM roots verifying the server. */
  root: string;
  /** Client certificate chain and key (PEM) for mTLS. */
  cert?: string;
  key?: string;
  /** `authorization: Bearer <token>`. */
  token?: string;
  /** Server name to verify (default `mesh-ca`). */
  servername?: string;
}

const PROTO = fileURLToPath(new URL("../../proto/ca.proto", import.meta.url));

// deno-lint-ignore no-explicit-any
async function client(service: string, o: CaCallOptions): Promise<any> {
  const grpc = await import("../../lib/deps/grpc.ts");
  const loader = await import("../../lib/deps/proto_loader.ts");
  const def = await loader.load(PROTO, { keepCase: true, longs: String, defaults: true });
  // deno-lint-ignore no-explicit-any
  const pkg = grpc.loadPackageDefinition(def) as any;
  const { Buffer } = await import("node:buffer");
  const creds = grpc.credentials.createSsl(
    Buffer.from(o.root),
    o.key ? Buffer.from(o.key) : null,
    o.cert ? Buffer.from(o.cert) : null,
  );
  const Ctor = pkg.mesh.v1.auth[service];
  return {
    grpc,
    c: new Ctor(o.address, creds, { "grpc.ssl_target_name_override": o.servername ?? "mesh-ca" }),
  };
}

// deno-lint-ignore no-explicit-any
type Any = any;

function call(
  grpc: Any,
  c: Any,
  method: string,
  req: unknown,
  token?: string,
): Promise<CaCallResult> {
  const md = new grpc.Metadata();
  if (token) md.set("authorization", `Bearer ${token}`);
  return new Promise((resolve) => {
    // deno-lint-ignore no-explicit-any
    c[method](req, md, { deadline: Date.now() + 10_000 }, (err: any, res: any) => {
      c.close();
      if (err) resolve({ ok: false, code: err.code, details: err.details });
      else resolve({ ok: true, chain: res.cert_chain ?? [], raw: res });
    });
  });
}

/** Calls `CreateCertificate`. */
export async function createCertificate(
  o: CaCallOptions,
  csr: string,
  validitySeconds = 0,
): Promise<CaCallResult> {
  const { grpc, c } = await client("MeshCertificateService", o);
  return await call(grpc, c, "CreateCertificate", {
    csr,
    validity_duration: String(validitySeconds),
  }, o.token);
}

/** Calls the older `HandleCSR`; `chain` is `[signed_cert, cert_chain]` on success. */
export async function handleCsr(
  o: CaCallOptions,
  req: { csr_pem: string; node_agent_credential?: string; requested_ttl_minutes?: number },
): Promise<CaCallResult> {
  const { grpc, c } = await client("MeshCAService", o);
  const { Buffer } = await import("node:buffer");
  const r = await call(grpc, c, "HandleCSR", {
    csr_pem: Buffer.from(req.csr_pem),
    node_agent_credential: Buffer.from(req.node_agent_credential ?? ""),
    requested_ttl_minutes: req.requested_ttl_minutes ?? 0,
  }, o.token);
  if (!r.ok) return r;
  const td = new TextDecoder();
  // deno-lint-ignore no-explicit-any
  const raw = r.raw as any;
  return { ok: true, chain: [td.decode(raw.signed_cert), td.decode(raw.cert_chain)], raw };
}

/** A JWKS file's content and a signer of bearer JWTs with its key. */
export interface TestIssuer {
  jwks: { keys: unknown[] };
  /** A JWT whose `sub` is `system:serviceaccount:<ns>:<sa>` (or `sub` as given). */
  token(sub: string, opts?: { expiresIn?: string }): Promise<string>;
}

/** Creates an ES256 key and the JWKS holding its public half. */
export async function testIssuer(kid = "test"): Promise<TestIssuer> {
  const jose = await import("../../lib/deps/jose.ts");
  const { publicKey, privateKey } = await jose.generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await jose.exportJWK(publicKey)), kid, alg: "ES256", use: "sig" };
  return {
    jwks: { keys: [jwk] },
    token: (sub, opts = {}) =>
      new jose.SignJWT({})
        .setProtectedHeader({ alg: "ES256", kid })
        .setSubject(sub)
        .setIssuedAt()
        .setExpirationTime(opts.expiresIn ?? "1h")
        .sign(privateKey),
  };
}

/**
 * One `CreateCertificate` (validity 1 h) through lib/grpc's `callUnary`: node:http2 on a
 * connection of its own, closed after the call. The raw result: status, message, response bytes
 * (decode the chain with `decodeMeshCertificateResponse`).
 */
export async function createCertificateH2(
  o: { address: string; root: string; token: string; csr: string; timeoutMs?: number },
): Promise<UnaryResult> {
  return await callUnary({
    address: o.address,
    path: "/mesh.v1.auth.MeshCertificateService/CreateCertificate",
    message: encodeMeshCertificateRequest({ csr: o.csr, validityDuration: 3600 }),
    ca: o.root,
    servername: "mesh-ca",
    headers: { authorization: `Bearer ${o.token}` },
    timeoutMs: o.timeoutMs,
  });
}

/**
 * `mesh_ca` arguments for a self-signed CA kept in `dir/store` that trusts `issuer`'s tokens (its
 * JWKS written to `dir/jwks.json` here), serving on `grpcPort` and `monitoringPort`, then `extra`.
 */
export async function selfSignedCaArgs(
  dir: string,
  issuer: TestIssuer,
  ports: { grpc: number; monitoring: number },
  ...extra: string[]
): Promise<string[]> {
  await Deno.writeTextFile(`${dir}/jwks.json`, JSON.stringify(issuer.jwks));
  return [
    "--self-signed-ca",
    "--local-storage-dir",
    `${dir}/store`,
    "--trusted-jwks",
    `${dir}/jwks.json`,
    "--grpc-port",
    String(ports.grpc),
    "--monitoring-port",
    String(ports.monitoring),
    ...extra,
  ];
}
