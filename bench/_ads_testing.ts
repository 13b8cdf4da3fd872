/** Helpers of the bench's tests against a real ADS server (not used by the benches). @module */

import { MessageBuilder } from "../lib/protowire/mod.ts";
import { ResourceCache } from "../lib/xds/server/cache.ts";
import { XDS_TYPES, type XdsNode } from "../lib/xds/server/types.ts";
import { startAdsServer } from "../lib/xds/server/grpc.ts";
import { XdsServer } from "../lib/xds/server/stream.ts";
import { parseTestNode, type TestProxy } from "../lib/xds/server/_test_util.ts";
import { quietLogger as quiet } from "../lib/log/testing.ts";

/** A logger that drops everything. */
export { quiet };

/** A resource whose field 1 is its name (what the simulated proxies read), and `extra`. */
export function resource(name: string, extra = ""): Uint8Array {
  const m = new MessageBuilder();
  m.string(1, name);
  if (extra) m.string(2, extra);
  return m.finish();
}

/**
 * What a simulated sidecar syncs from: a cluster and its endpoints (`10.0.0.1`) per name, listener
 * `l1` and route `route`.
 */
export function sidecarCache(names: readonly string[], route: string): ResourceCache {
  const cache = new ResourceCache();
  for (const n of names) {
    cache.set(XDS_TYPES.cluster, n, resource(n));
    cache.set(XDS_TYPES.endpoint, n, resource(n, "10.0.0.1"));
  }
  cache.set(XDS_TYPES.listener, "l1", resource("l1"));
  cache.set(XDS_TYPES.route, route, resource(route));
  return cache;
}

/**
 * A real ADS server on 127.0.0.1 serving `cache` to any sidecar (test nodes), pushing at once;
 * `close()` shuts it down.
 */
export async function startTestAds(
  cache: ResourceCache,
  parseNode: (n: XdsNode) => TestProxy = parseTestNode,
) {
  const server = new XdsServer<TestProxy>({
    parseNode,
    resourcesFor: (_p, t, n) => cache.select(t, n),
    debounceAfter: 0,
    logger: quiet,
  });
  const ads = await startAdsServer({ address: "127.0.0.1:0", server, logger: quiet });
  return {
    server,
    port: ads.port,
    close: async () => {
      await ads.shutdown();
      server.close();
    },
  };
}
