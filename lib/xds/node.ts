/**
 * Proxy node id parsing (`<type>~<ip>~<id>~<domain>`).
 * @module
 */

import type { Proxy, ProxyType } from "./types.ts";

const TYPES: readonly ProxyType[] = ["sidecar", "router", "ingress"];

/** True when `s` is a dotted IPv4 address or an IPv6 address. */
export function isIp(s: string): boolean {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (v4) return v4.slice(1).every((p) => Number(p) <= 255 && String(Number(p)) === p);
  if (!s.includes(":") || !/^[0-9a-fA-F:.]+$/.test(s)) return false;
  try {
    new URL(`http://[${s}]/`);
    return true;
  } catch {
    return false;
  }
}

/**
 * Parses a node id. Errors (messages of the reference):
 * `missing parts in the service node "..."` when there are not exactly 4 `~`-separated parts,
 * `invalid node type (valid types: ingress, sidecar, router in the service node "...")`,
 * `invalid IP address "..." in the service node "..."` (sidecars only).
 *
 * @example
 * ```ts
 * import { parseNodeId } from "./node.ts";
 * const p = parseNodeId("sidecar~10.1.1.0~v0.default~default.svc.cluster.local");
 * // p.type === "sidecar", p.ip === "10.1.1.0", p.id === "v0.default"
 * ```
 */
export function parseNodeId(node: string, metadata: Record<string, unknown> = {}): Proxy {
  const parts = node.split("~");
  if (parts.length !== 4) throw new Error(`missing parts in the service node "${node}"`);
  const [type, ip, id, domain] = parts;
  if (!TYPES.includes(type as ProxyType)) {
    throw new Error(
      `invalid node type (valid types: ingress, sidecar, router in the service node "${node}")`,
    );
  }
  if (type === "sidecar" && !isIp(ip)) {
    throw new Error(`invalid IP address "${ip}" in the service node "${node}"`);
  }
  return { type: type as ProxyType, ip, id, domain, metadata };
}

/** Workload labels of a proxy: `metadata.labels` when an object, else the string entries. */
export function proxyLabels(proxy: Proxy): Record<string, string> {
  const m = proxy.metadata ?? {};
  const l = m["labels"] ?? m["LABELS"];
  if (l && typeof l === "object" && !Array.isArray(l)) {
    return Object.fromEntries(
      Object.entries(l as Record<string, unknown>).filter(([, v]) => typeof v === "string"),
    ) as Record<string, string>;
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m)) {
    if (typeof v === "string" && !/^[A-Z_]+$/.test(k)) out[k] = v;
  }
  return out;
}
