/**
 * The agent's SDS server: Envoy's Secret Discovery Service on a Unix socket in `--configPath`
 * (`sds.sock`), driven by the xDS state machine of lib/xds/server. It serves the workload
 * certificate as secret `default` (`tls_certificate`) and the root as `ROOTCA`
 * (`validation_context`); {@link SdsServer.update} pushes a rotated certificate to every connected
 * proxy, with no restart.
 * @module
 */

import type { Logger } from "../../lib/log/mod.ts";
import { SDS_CERT, SDS_ROOT } from "./bootstrap.ts";
import type { WorkloadCert } from "./certs.ts";

/** A running SDS server. */
export interface SdsServer {
  /** `unix:<path>`. */
  readonly address: string;
  /** Serves `c` from now on and pushes it to connected proxies. */
  update(c: Pick<WorkloadCert, "chain" | "key" | "root">): void;
  shutdown(): Promise<void>;
}

/** Starts the SDS server on the Unix socket `path`. */
export async function startSdsServer(path: string, log: Logger): Promise<SdsServer> {
  const { encodeAny, loadXdsProtos, TYPE_URLS } = await import("../../lib/xds/protos.ts");
  const xds = await import("../../lib/xds/server/mod.ts");
  await loadXdsProtos();
  const cache = new xds.ResourceCache();
  const server = new xds.XdsServer<string>({
    parseNode: (n) => n.id,
    resourcesFor: (_p, typeUrl, names) => cache.select(typeUrl, names),
    knownTypes: [TYPE_URLS.secret],
    wildcardTypes: [],
    debounceAfter: 10,
    debounceMax: 100,
    logger: log,
  });
  const address = `unix:${path}`;
  // a socket file left by an earlier run would make the listen fail
  await Deno.remove(path).catch(() => {});
  const ads = await xds.startAdsServer({
    address,
    server,
    services: [xds.SDS_SERVICE],
    logger: log,
  });
  return {
    address,
    update(c) {
      const inline = (s: string) => ({ inline_string: s });
      cache.set(
        TYPE_URLS.secret,
        SDS_CERT,
        encodeAny(TYPE_URLS.secret, {
          name: SDS_CERT,
          tls_certificate: { certificate_chain: inline(c.chain), private_key: inline(c.key) },
        }).value,
      );
      cache.set(
        TYPE_URLS.secret,
        SDS_ROOT,
        encodeAny(TYPE_URLS.secret, {
          name: SDS_ROOT,
          validation_context: { trusted_ca: inline(c.root) },
        }).value,
      );
      server.push({ kind: "config", types: [TYPE_URLS.secret] });
    },
    async shutdown() {
      await ads.shutdown();
      server.close();
      await Deno.remove(path).catch(() => {});
    },
  };
}
