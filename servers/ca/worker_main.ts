/**
 * One worker isolate of mesh_ca's signing API (`--workers` > 1): it serves the API on the port
 * shared with the other workers (SO_REUSEPORT), signs with its own copy of the CA key, counts
 * its calls in its own registry, and asks the control isolate to review orchestrator tokens.
 * The control isolate tells it about a new CA key (`setCa`) and server certificate (`setTls`),
 * collects its metrics (`metrics`) and closes it (`close`). See `workers.ts`.
 * @module
 */
/// <reference lib="deno.worker" />

import type { GrpcListener } from "../../lib/grpc/mod.ts";
import { CertAuthority, loadCaMaterial, selectSigningBackend } from "../../lib/pki/mod.ts";
import { serveControl } from "../../lib/workers/mod.ts";
import { startSigningServer } from "./grpc.ts";
import { type CaMetrics, createCaMetrics } from "./monitoring.ts";
import { createAuthenticator, type TokenReviewResult } from "./signer.ts";
import type { CaKeyUpdate, CaWorkerInit } from "./workers.ts";

let grpc: GrpcListener | undefined;
let metrics: CaMetrics | undefined;
let ca: CertAuthority | undefined;
let init: CaWorkerInit | undefined;
const te = new TextEncoder();

/** A CA from the control isolate's key material, with this worker's signing backend. */
async function authority(update: CaKeyUpdate): Promise<CertAuthority> {
  const backend = selectSigningBackend(init!.backend, { libraries: init!.libcrypto });
  const next = new CertAuthority(await loadCaMaterial(update.material), {
    maxTtlMs: init!.maxTtlMs,
    backend,
  });
  await next.ready();
  return next;
}

const tls = (t: CaKeyUpdate["tls"]) => ({
  cert: te.encode(t.cert),
  key: te.encode(t.key),
  ca: te.encode(t.ca),
});

serveControl<CaWorkerInit>(async ({ arg, index, count }, link) => {
  init = arg;
  metrics = await createCaMetrics(false);
  ca = await authority(arg.keys);
  const log = link.logger("default");
  const tokenReview = arg.tokenReview
    ? (token: string) => link.channel.request<TokenReviewResult>("tokenReview", token)
    : undefined;
  grpc = await startSigningServer({
    host: arg.host,
    port: arg.port,
    tls: arg.keys.tls,
    ca: () => ca!,
    auth: createAuthenticator({ ca: () => ca!, tokenReview, jwks: arg.jwks }),
    policy: arg.policy,
    metrics,
    log,
    reusePort: { index, of: count },
  });
  metrics.listeners.push(grpc);
  return { port: grpc.port };
}, {
  async setCa(a) {
    ca = await authority(a as CaKeyUpdate);
    grpc?.setTls(tls((a as CaKeyUpdate).tls));
  },
  setTls(a) {
    grpc?.setTls(tls(a as CaKeyUpdate["tls"]));
  },
  metrics: () => metrics?.json(),
  async close(graceMs) {
    await grpc?.close(14, "Server is shutting down", graceMs as number);
  },
});
