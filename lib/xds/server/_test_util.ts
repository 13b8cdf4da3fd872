/** Test helpers for the xDS server tests (not exported from mod.ts). @module */

import * as path from "node:path";
import { xdsIncludeDirs, xdsProtoRoot } from "../protos.ts";
import { ResourceCache } from "./cache.ts";
import type { Clock, XdsNode } from "./types.ts";

/** A manual clock: timers run only when {@link FakeClock.advance} passes their time. */
export class FakeClock implements Clock {
  t = 1_700_000_000_000;
  #timers = new Map<number, { at: number; fn: () => void }>();
  #id = 0;
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.#id;
    this.#timers.set(id, { at: this.t + ms, fn });
    return id;
  }
  clearTimeout(h: unknown): void {
    this.#timers.delete(h as number);
  }
  /** Moves time forward, running due timers in time order. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.#timers) if (e[1].at <= end && (!next || e[1].at < next[1].at)) next = e;
      if (!next) break;
      this.#timers.delete(next[0]);
      this.t = next[1].at;
      next[1].fn();
    }
    this.t = end;
  }
  /** Pending timers. */
  get timers(): number {
    return this.#timers.size;
  }
}

/** A parsed test proxy. */
export interface TestProxy {
  type: string;
  ip: string;
  id: string;
  domain: string;
}

/** Parses `TYPE~IP~ID~DOMAIN` like Istio (enough for the tests). */
export function parseTestNode(node: XdsNode): TestProxy {
  const parts = node.id.split("~");
  if (parts.length !== 4) throw new Error(`missing parts in the service node "${node.id}"`);
  const [type, ip, id, domain] = parts;
  if (!["sidecar", "ingress", "router"].includes(type)) {
    throw new Error(
      `invalid node type (valid types: ingress, sidecar, router in the service node "${node.id}")`,
    );
  }
  return { type, ip, id, domain };
}

/** A node for proxy `name`. */
export function node(name: string): XdsNode {
  return { id: `sidecar~10.0.0.1~${name}.default~default.svc.cluster.local` };
}

const te = new TextEncoder();

/** Opaque resource bytes. */
export function bytes(s: string): Uint8Array {
  return te.encode(s);
}

/** A cache preloaded with `[typeUrl, name, content]` triples. */
export function cacheWith(entries: [string, string, string][]): ResourceCache {
  const c = new ResourceCache();
  for (const [t, n, v] of entries) c.set(t, n, bytes(v));
  return c;
}

/**
 * Whether a TLS server on `127.0.0.1:<port>` serves HTTP/2 to a client with these credentials:
 * true when, after the handshake, the server sends its first bytes (an HTTP/2 server starts with
 * SETTINGS); false when the handshake fails or the server closes the connection instead.
 */
export async function tlsServed(
  port: number,
  opts: { ca: string; cert?: string; key?: string },
): Promise<boolean> {
  const conn = await Deno.connectTls({
    hostname: "127.0.0.1",
    port,
    caCerts: [opts.ca],
    alpnProtocols: ["h2"],
    ...(opts.cert && opts.key ? { cert: opts.cert, key: opts.key } : {}),
  });
  try {
    await conn.handshake();
    return (await conn.read(new Uint8Array(64))) !== null;
  } catch {
    return false;
  } finally {
    try {
      conn.close();
    } catch { /* already closed */ }
  }
}

/**
 * ads.proto and cluster.proto loaded by @grpc/proto-loader with `options` (and the xDS include
 * directories): the package a test client uses, independent of the server's descriptors.
 */
export async function loadAdsProtos(
  options: Record<string, unknown>,
  // deno-lint-ignore no-explicit-any
): Promise<any> {
  const loader = await import("../../deps/proto_loader.ts");
  const root = xdsProtoRoot();
  return loader.loadSync(
    ["envoy/service/discovery/v3/ads.proto", "envoy/config/cluster/v3/cluster.proto"].map((f) =>
      path.join(root, "envoy-api", f)
    ),
    { ...options, includeDirs: xdsIncludeDirs() },
  );
}
