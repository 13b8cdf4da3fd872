/**
 * A plain grpc-js delta ADS (`DeltaAggregatedResources`) client for the e2e tests: send
 * requests, read responses with deadlines, see every resource name and version received.
 * @module
 */

import * as path from "node:path";
import { loadXdsProtos, xdsIncludeDirs, xdsProtoRoot } from "../../lib/xds/mod.ts";

// deno-lint-ignore no-explicit-any
type AnyObj = any;

const grpc = await import("../../lib/deps/grpc.ts");
const loader = await import("../../lib/deps/proto_loader.ts");
await loadXdsProtos();

const pkg = loader.loadSync(
  [path.join(xdsProtoRoot(), "envoy-api", "envoy/service/discovery/v3/ads.proto")],
  {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: false,
    oneofs: true,
    includeDirs: xdsIncludeDirs(),
  },
) as AnyObj;
const AdsClient = (grpc.loadPackageDefinition(pkg) as AnyObj).envoy.service.discovery.v3
  .AggregatedDiscoveryService;

/** A DeltaDiscoveryResponse: resource names and versions, removed names. */
export interface DeltaResponse {
  type_url: string;
  nonce: string;
  system_version_info: string;
  resources: { name: string; version: string }[];
  removed_resources: string[];
}

/** One delta ADS stream. */
export interface DeltaStream {
  send(req: Record<string, unknown>): void;
  /** Next response of `typeUrl` (others are kept), within `timeoutMs`. */
  next(typeUrl: string, timeoutMs?: number): Promise<DeltaResponse>;
  /** Every response received so far (also those read by next()). */
  readonly received: readonly DeltaResponse[];
  close(): Promise<void>;
}

/** Opens one delta ADS stream to `address` (insecure). */
export function openDelta(address: string): DeltaStream {
  const client = new AdsClient(address, grpc.credentials.createInsecure());
  const call = client.DeltaAggregatedResources();
  const got: DeltaResponse[] = [];
  const received: DeltaResponse[] = [];
  const waiters = new Set<() => void>();
  const { promise: ended, resolve } = Promise.withResolvers<void>();
  call.on("data", (r: AnyObj) => {
    const res: DeltaResponse = {
      type_url: r.type_url,
      nonce: r.nonce,
      system_version_info: r.system_version_info ?? "",
      resources: (r.resources ?? []).map((x: AnyObj) => ({ name: x.name, version: x.version })),
      removed_resources: r.removed_resources ?? [],
    };
    got.push(res);
    received.push(res);
    for (const w of waiters) w();
  });
  call.on("error", () => {});
  call.on("status", () => {
    resolve();
    for (const w of waiters) w();
  });
  let closed = false;
  return {
    send: (req) => call.write(req),
    received,
    async next(typeUrl, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const i = got.findIndex((r) => r.type_url === typeUrl);
        if (i >= 0) return got.splice(i, 1)[0];
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`No delta ${typeUrl} response within ${timeoutMs} ms`);
        await new Promise<void>((r) => {
          const t = setTimeout(done, left);
          function done() {
            clearTimeout(t);
            waiters.delete(done);
            r();
          }
          waiters.add(done);
        });
      }
    },
    async close() {
      if (!closed) {
        closed = true;
        call.cancel();
      }
      await ended;
      client.close();
    },
  };
}
