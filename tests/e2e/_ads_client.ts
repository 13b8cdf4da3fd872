/**
 * A plain grpc-js ADS (state-of-the-world) client for the discovery e2e tests: send requests,
 * read responses with deadlines, decode resources with lib/xds.
 * @module
 */

import * as path from "node:path";
import { decodeAny, loadXdsProtos, xdsIncludeDirs, xdsProtoRoot } from "../../lib/xds/mod.ts";

// deno-lint-ignore no-explicit-any
type AnyObj = any;

const grpc = await import("../../lib/deps/grpc.ts");
const loader = await import("../../lib/deps/proto_loader.ts");
await loadXdsProtos();

const pkg = (() => {
  const root = xdsProtoRoot();
  return loader.loadSync([path.join(root, "envoy-api", "envoy/service/discovery/v3/ads.proto")], {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: false,
    oneofs: true,
    includeDirs: xdsIncludeDirs(),
  }) as AnyObj;
})();
const AdsClient = (grpc.loadPackageDefinition(pkg) as AnyObj).envoy.service.discovery.v3
  .AggregatedDiscoveryService;

/** A decoded DiscoveryResponse. */
export interface Response {
  version_info: string;
  nonce: string;
  type_url: string;
  resources: Record<string, AnyObj>[];
}

/** One ADS stream. */
export interface AdsStream {
  send(req: Record<string, unknown>): void;
  /** Next response of `typeUrl` (others are kept), within `timeoutMs`. */
  next(typeUrl: string, timeoutMs?: number): Promise<Response>;
  /** The status the stream ended with (resolves when it ends). */
  readonly status: Promise<{ code: number; details: string }>;
  close(): Promise<void>;
}

/** Connects to `address`; `creds` defaults to insecure; `options` are grpc-js channel options. */
export function adsClient(
  address: string,
  creds?: unknown,
  options: Record<string, unknown> = {},
): { open(): AdsStream; close(): void } {
  const client = new AdsClient(address, creds ?? grpc.credentials.createInsecure(), options);
  return {
    open() {
      const call = client.StreamAggregatedResources();
      const got: Response[] = [];
      const waiters = new Set<() => void>();
      const { promise: status, resolve } = Promise.withResolvers<
        { code: number; details: string }
      >();
      call.on("data", (r: AnyObj) => {
        got.push({
          version_info: r.version_info,
          nonce: r.nonce,
          type_url: r.type_url,
          resources: (r.resources ?? []).map((a: AnyObj) =>
            decodeAny({ type_url: a.type_url, value: new Uint8Array(a.value) })
          ),
        });
        for (const w of waiters) w();
      });
      call.on("error", () => {});
      call.on("status", (s: AnyObj) => {
        resolve({ code: s.code, details: s.details });
        for (const w of waiters) w();
      });
      let ended = false;
      return {
        send: (req) => call.write(req),
        async next(typeUrl, timeoutMs = 5000) {
          const deadline = Date.now() + timeoutMs;
          for (;;) {
            const i = got.findIndex((r) => r.type_url === typeUrl);
            if (i >= 0) return got.splice(i, 1)[0];
            const left = deadline - Date.now();
            if (left <= 0) throw new Error(`No ${typeUrl} response within ${timeoutMs} ms`);
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
        status,
        async close() {
          if (!ended) {
            ended = true;
            call.cancel();
          }
          await status;
        },
      };
    },
    close: () => client.close(),
  };
}

/** TLS channel credentials from PEM files. */
export async function tlsCreds(ca: string, cert?: string, key?: string): Promise<unknown> {
  const read = (p: string) => Deno.readFile(p);
  const { Buffer } = await import("node:buffer");
  return grpc.credentials.createSsl(
    Buffer.from(await read(ca)),
    key ? Buffer.from(await read(key)) : null,
    cert ? Buffer.from(await read(cert)) : null,
  );
}
