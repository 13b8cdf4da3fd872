/**
 * The xDS relay of a proxyless agent with `--controlPlaneAuthPolicy MUTUAL_TLS` (Istio's agent
 * does the same): the application's gRPC talks plaintext to a Unix socket in `--configPath`, and
 * the agent carries each connection to discovery over mutual TLS with the workload certificate
 * (read afresh for every connection, so renewals apply), checking that discovery presents its
 * SPIFFE identity. The gRPC releases here cannot do that themselves: grpc-js-xds 1.14 and C-core
 * 1.51 accept only `insecure` and `google_default` channel credentials in a bootstrap.
 * @module
 */

import type { Logger } from "../../lib/log/mod.ts";
import { isIp } from "../../lib/xds/node.ts";
import { GRPC_CERT_FILES } from "../../lib/xds/grpc_bootstrap.ts";
import type { HostPort } from "./config.ts";

/** File name of the relay's socket inside `--configPath`. */
export const XDS_RELAY_SOCKET = "xds.sock";

/** Options of {@link startXdsRelay}. */
export interface XdsRelayOptions {
  /** Path of the Unix socket to listen on. */
  readonly socketPath: string;
  /** Discovery's TLS address. */
  readonly target: HostPort;
  /** Directory of `cert-chain.pem`, `key.pem`, `root-cert.pem`. */
  readonly certDir: string;
  /** The SPIFFE identity discovery must present. */
  readonly san: string;
  readonly log: Logger;
}

/** A running relay. */
export interface XdsRelay {
  /** `unix:///<socket path>`: the bootstrap's `server_uri`. */
  readonly uri: string;
  close(): Promise<void>;
}

/** Starts the relay; rejects when the socket cannot be created. */
export async function startXdsRelay(o: XdsRelayOptions): Promise<XdsRelay> {
  const net = await import("node:net");
  const tls = await import("node:tls");
  await Deno.remove(o.socketPath).catch(() => {});
  const open = new Set<{ destroy(): void }>();
  let logged = false;
  const server = net.createServer((down) => {
    open.add(down);
    down.pause();
    (async () => {
      const read = (f: string) => Deno.readTextFile(`${o.certDir}/${f}`);
      const [cert, key, ca] = await Promise.all([
        read(GRPC_CERT_FILES.chain),
        read(GRPC_CERT_FILES.key),
        read(GRPC_CERT_FILES.root),
      ]);
      const up = tls.connect({
        host: o.target.host,
        port: o.target.port,
        ca,
        cert,
        key,
        ALPNProtocols: ["h2"],
        ...(isIp(o.target.host) ? {} : { servername: o.target.host }),
        checkServerIdentity: (_host: string, peer: { subjectaltname?: string }) => {
          const sans = (peer.subjectaltname ?? "").split(/,\s*/);
          return sans.includes(`URI:${o.san}`) ? undefined : new Error(
            `discovery presented ${peer.subjectaltname || "no identity"}, not ${o.san}`,
          );
        },
      });
      open.add(up);
      const end = (why?: Error) => {
        if (why && !logged) {
          logged = true; // one line per failure streak, not one per reconnect
          o.log.error("xDS relay cannot reach discovery over mutual TLS", {
            target: `${o.target.host}:${o.target.port}`,
            error: why.message,
          });
        }
        down.destroy();
        up.destroy();
        open.delete(down);
        open.delete(up);
      };
      up.once("secureConnect", () => {
        logged = false;
        down.pipe(up);
        up.pipe(down);
        down.resume();
      });
      up.on("error", end);
      down.on("error", () => end());
      up.on("close", () => end());
      down.on("close", () => end());
    })().catch((e) => {
      if (!logged) {
        logged = true;
        o.log.error("xDS relay cannot read the workload certificate", {
          dir: o.certDir,
          error: (e as Error).message,
        });
      }
      down.destroy();
      open.delete(down);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.socketPath, () => resolve());
  });
  return {
    uri: `unix://${o.socketPath}`,
    async close() {
      for (const s of open) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      await Deno.remove(o.socketPath).catch(() => {});
    },
  };
}
