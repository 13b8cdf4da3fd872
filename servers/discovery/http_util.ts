/**
 * What every part of mesh-discovery's HTTP mux shares: its dependencies, answer helpers, the
 * bounded body reader and the local-peer check for debug changes.
 * @module
 */

import type { Context } from "../../lib/deps/hono.ts";
import type { Logger } from "../../lib/log/mod.ts";
import { SLICE_MS } from "../../lib/process/mod.ts";
import { isIp, type Proxy } from "../../lib/xds/mod.ts";
import type { ResourceCache } from "../../lib/xds/server/mod.ts";
import type { XdsServerView } from "../../lib/xds/server/worker_control.ts";
import type { DebugRegistry } from "./debug_registry.ts";
import type { DiscoveryMetrics } from "./metrics.ts";
import type { DiscoveryModel, DiscoveryRegistry } from "./model.ts";
import type { ProtoJson } from "../../lib/xds/json.ts";
import type { RestCache } from "./rest_xds.ts";
import type { WebhookClient } from "./webhook.ts";

/** What the mux reads. */
export interface HttpDeps {
  model: DiscoveryModel;
  server: XdsServerView<Proxy>;
  cache: ResourceCache;
  registry: DiscoveryRegistry;
  metrics: DiscoveryMetrics;
  protojson: ProtoJson;
  restCache: RestCache | null;
  /** The in-memory debug registry filled by `POST /debug/registryz|endpointz?svc=`. */
  debugRegistry: DebugRegistry;
  webhook: WebhookClient | null;
  profile: boolean;
  isReady(): boolean;
  /** Why the server is not ready (answered by `/ready` with 503), or undefined when it is. */
  notReady?(): string | undefined;
  /** Why the config pipeline is stalled (the store's view is not kept up to date), or undefined. */
  stalled?(): string | undefined;
  versionText: string;
  logger: Logger;
}

/** `v` as indented JSON. */
export const json = (v: unknown): string => JSON.stringify(v, null, 2);

/** Answers `body` with `status` (plain text unless `type` says otherwise). */
export const text = (
  c: Context,
  status: number,
  body: string,
  type = "text/plain; charset=utf-8",
): Response => c.body(body, status as 200, { "content-type": type });

/** Answers `v` as indented JSON. */
export const jsonBody = (c: Context, v: unknown, status = 200): Response =>
  text(c, status, json(v) + "\n", "application/json");

/**
 * Answers `items` (each through `map`) as the indented JSON array {@link jsonBody} would send, to
 * the byte, but encoded and sent a chunk at a time: a chunk ends after 256 KiB of text or
 * {@link SLICE_MS} of work, and the next is made when the connection has taken it. A large answer
 * (`/debug/configz` of 12,500 objects is ~5 MB, 130-180 ms in one piece) never holds the event
 * loop, so ADS, REST xDS and `/ready` are answered meanwhile.
 */
export function jsonArrayBody<T>(
  c: Context,
  items: readonly T[],
  map: (item: T, index: number) => unknown = (item) => item,
): Response {
  const encoder = new TextEncoder();
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (items.length === 0) {
        controller.enqueue(encoder.encode("[]\n"));
        return controller.close();
      }
      const start = performance.now();
      let out = next === 0 ? "[\n" : "";
      while (next < items.length && out.length < JSON_CHUNK_CHARS) {
        const batch = items.slice(next, next + JSON_BATCH).map((item, i) => map(item, next + i));
        // indented as the items of an array already: "[\n  a,\n  b\n]" without the brackets
        const text = JSON.stringify(batch, null, 2);
        out += (next > 0 ? ",\n" : "") + text.slice(2, -2);
        next += batch.length;
        if (performance.now() - start >= SLICE_MS) break;
      }
      if (next === items.length) out += "\n]\n";
      controller.enqueue(encoder.encode(out));
      if (next === items.length) controller.close();
    },
  });
  return c.body(body, 200, { "content-type": "application/json" });
}

/** Text per chunk of {@link jsonArrayBody}. */
const JSON_CHUNK_CHARS = 256 * 1024;
/** Items encoded at once by {@link jsonArrayBody}. */
const JSON_BATCH = 64;

/** The 413 answer to a body over {@link MAX_REQUEST_BYTES}. */
export const tooLarge = (c: Context): Response =>
  text(c, 413, `Request body: more than the ${MAX_REQUEST_BYTES}-byte limit\n`);

/** Largest request body read (bytes), as gRPC's default message size: larger ones get 413. */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** A request body that is too large (answered 413). */
export class BodyTooLarge extends Error {}

/**
 * The body of a request as text, reading at most `max` bytes: a declared or actual larger body
 * throws {@link BodyTooLarge} without reading the rest.
 */
export async function readBody(req: Request, max: number): Promise<string> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > max) throw new BodyTooLarge();
  if (!req.body) return "";
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > max) {
      await reader.cancel().catch(() => {});
      throw new BodyTooLarge();
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(await new Blob(chunks as BlobPart[]).arrayBuffer());
}

/**
 * The body of the request as text, at most {@link MAX_REQUEST_BYTES}, or the 413 answer when it
 * is larger; other read failures throw.
 */
export async function requestText(c: Context): Promise<string | Response> {
  try {
    return await readBody(c.req.raw, MAX_REQUEST_BYTES);
  } catch (e) {
    if (e instanceof BodyTooLarge) return tooLarge(c);
    throw e;
  }
}

/**
 * True when `host` is a loopback address: IPv4 127.0.0.0/8, IPv6 `::1` (any spelling), or an
 * IPv4-mapped `::ffff:127.x.y.z`.
 */
export function isLoopbackAddress(host: string): boolean {
  const h = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  if (/^\d+\.\d+\.\d+\.\d+$/.test(h)) return isIp(h) && h.startsWith("127.");
  if (!h.includes(":") || !isIp(h)) return false;
  const norm = new URL(`http://[${h}]/`).hostname; // canonical form, e.g. [::ffff:7f00:1]
  return norm === "[::1]" || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(norm);
}

/**
 * True when the peer of a request is on this host: a loopback TCP address or a unix socket.
 * `env` is what hono passes as the environment: Deno.serve's handler info (`remoteAddr`).
 * Unknown peers are not local.
 */
export function isLocalPeer(env: unknown): boolean {
  const addr = (env as { remoteAddr?: Deno.Addr } | undefined)?.remoteAddr;
  if (!addr) return false;
  if (addr.transport === "unix" || addr.transport === "unixpacket") return true;
  return "hostname" in addr && isLoopbackAddress(addr.hostname);
}

/** The answer to a debug change from another host. */
export const LOCAL_ONLY_MESSAGE = "debug changes are accepted from localhost only";
