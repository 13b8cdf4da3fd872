/**
 * The liveness self-check (reference §6.5): every `--probe-check-interval` the CA issues itself a
 * short-lived client certificate, then makes a real CreateCertificate call to its own gRPC port
 * with it. The probe file (`--liveness-probe-path`) is kept fresh while the last check passed and
 * removed while it failed; `mesh_ca probe` reads it.
 * @module
 */

import { callUnary } from "../../lib/grpc/mod.ts";
import type { Logger } from "../../lib/log/mod.ts";
import { startProbeUpdater } from "../../lib/probe/mod.ts";
import { type CertAuthority, createCsr, generateKeyPair, spiffeId } from "../../lib/pki/mod.ts";
import { CERTIFICATE_SERVICE } from "./grpc.ts";
import {
  decodeMeshCertificateResponse,
  encodeMeshCertificateRequest,
} from "../../lib/pki/ca_messages.ts";

/** Options of {@link startSelfCheck}. */
export interface SelfCheckOptions {
  /** `127.0.0.1:<grpc port>`. */
  address: string;
  /** A name of the server certificate. */
  servername: string;
  /** The namespace of the CA's own identity (`.../ns/<ns>/sa/mesh-ca`). */
  namespace: string;
  ca: () => CertAuthority;
  probePath: string;
  probeIntervalMs: number;
  checkIntervalMs: number;
  log: Logger;
  /** Called after each check. */
  onCheck?: (ok: boolean) => void;
}

/** One self-check: resolves with "" on success, or why it failed. */
export async function selfCheckOnce(
  o: Omit<SelfCheckOptions, "probePath" | "probeIntervalMs" | "checkIntervalMs" | "log">,
): Promise<string> {
  try {
    const ca = o.ca();
    const id = spiffeId(o.namespace, "mesh-ca");
    const client = await ca.issueWithKey({ uris: [id], ttlMs: 10 * 60_000 }, { kind: "ec" });
    const keys = await generateKeyPair({ kind: "ec" });
    const r = await callUnary({
      address: o.address,
      path: `/${CERTIFICATE_SERVICE}/CreateCertificate`,
      message: encodeMeshCertificateRequest({
        csr: await createCsr({ keys, uris: [id] }),
        validityDuration: 3600,
      }),
      ca: ca.caChain.join(""),
      servername: o.servername,
      cert: client.chain.join(""),
      key: client.keyPem,
      timeoutMs: 5000,
    });
    if (r.status !== 0) return `status ${r.status}: ${r.message}`;
    const chain = decodeMeshCertificateResponse(r.response ?? new Uint8Array());
    return chain.length >= 2 ? "" : "the response has no certificate chain";
  } catch (e) {
    return (e as Error).message;
  }
}

/** Starts the periodic self-check and the probe file updater. */
export function startSelfCheck(o: SelfCheckOptions): { stop(): Promise<void> } {
  let ok = false;
  let stopped = false;
  let timer: number | undefined;
  let lastError = "";
  let running: Promise<void> = Promise.resolve();
  const check = async () => {
    const why = await selfCheckOnce(o);
    ok = why === "";
    o.onCheck?.(ok);
    if (!ok && why !== lastError) o.log.warn(`liveness self-check failed: ${why}`);
    if (ok && lastError) o.log.info("liveness self-check passes again");
    lastError = why;
  };
  const loop = () => {
    if (stopped) return;
    running = check().finally(() => {
      if (!stopped) timer = setTimeout(loop, o.checkIntervalMs);
    });
  };
  const probe = startProbeUpdater({
    path: o.probePath,
    intervalMs: o.probeIntervalMs,
    available: () => ok,
  });
  loop();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
      await probe.stop();
    },
  };
}
