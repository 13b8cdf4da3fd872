/**
 * Small shared helpers of the generators: names, durations, domains, matchers.
 * @module
 */

import type { Protocol, ServicePort } from "../../model/types.ts";
import { parseDuration } from "../../flags/duration.ts";

/** `outbound|<port>|<subset>|<host>` */
export function outboundClusterName(port: number, subset: string, host: string): string {
  return `outbound|${port}|${subset}|${host}`;
}

/** `inbound|<port>||<host>` */
export function inboundClusterName(port: number, host: string): string {
  return `inbound|${port}||${host}`;
}

/** Parts of a cluster name of the form `<direction>|<port>|<subset>|<host>`. */
export interface ClusterKey {
  direction: "outbound" | "inbound";
  port: number;
  subset: string;
  host: string;
}

/** Parses `outbound|80|v1|h` / `inbound|80||h`; undefined for other names. */
export function parseClusterName(name: string): ClusterKey | undefined {
  const p = name.split("|");
  if (p.length !== 4 || (p[0] !== "outbound" && p[0] !== "inbound")) return undefined;
  const port = Number(p[1]);
  if (!Number.isInteger(port) || port <= 0 || port > 65535 || !p[3]) return undefined;
  return { direction: p[0], port, subset: p[2], host: p[3] };
}

/** Protocols served through the HTTP connection manager. */
export function isHttpProtocol(p: Protocol): boolean {
  return p === "HTTP" || p === "HTTP2" || p === "GRPC";
}

/** Protocols that need HTTP/2 upstream. */
export function isHttp2Protocol(p: Protocol): boolean {
  return p === "HTTP2" || p === "GRPC";
}

/** Protobuf Duration object. */
export interface DurationObj {
  seconds: number;
  nanos?: number;
}

/** Milliseconds → Duration object (`{seconds, nanos}`; nanos omitted when zero). */
export function msToDuration(ms: number): DurationObj {
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.round((ms - seconds * 1000) * 1e6);
  return nanos ? { seconds, nanos } : { seconds };
}

/**
 * Parses a Go-style duration (`1s`, `100ms`, `1m30s`, `1.5s`, with {@link parseDuration}) or a
 * number of seconds into milliseconds. Throws `Cannot parse duration "x": ...`, also for a
 * negative value.
 */
export function parseDurationMs(s: unknown): number {
  if (typeof s === "number" && Number.isFinite(s) && s >= 0) return s * 1000;
  if (typeof s !== "string" || s === "") {
    throw new Error(`Cannot parse duration ${JSON.stringify(s)}`);
  }
  if (s.startsWith("-")) throw new Error(`Cannot parse duration "${s}": must not be negative`);
  return parseDuration(s);
}

/** Config duration (string) → Duration object; undefined when absent. */
export function durationOf(s: unknown): DurationObj | undefined {
  if (s === undefined || s === null || s === "") return undefined;
  return msToDuration(parseDurationMs(s));
}

/**
 * Expands a short host (no dots) to `<name>.<namespace>.svc.<domain>`; other hosts unchanged.
 */
export function resolveShortName(host: string, namespace: string, domain: string): string {
  if (host === "*" || host.includes(".") || !namespace) return host;
  return `${host}.${namespace}.svc.${domain}`;
}

/**
 * The FQDN of a Gateway reference in a VirtualService of `namespace`: `mesh` as is, a short or
 * full name as {@link resolveShortName}, `<namespace>/<name>` in that namespace.
 */
export function resolveGatewayRef(ref: string, namespace: string, domain: string): string {
  if (ref === "mesh") return ref;
  const slash = ref.indexOf("/");
  if (slash < 0) return resolveShortName(ref, namespace, domain);
  return resolveShortName(ref.slice(slash + 1), ref.slice(0, slash), domain);
}

/** A Gateway server host without its namespace part (`ns/host` or `./host` → `host`). */
export function gatewayHostName(host: string): string {
  return host.slice(host.indexOf("/") + 1);
}

/**
 * Virtual host domains of a service port as seen by a proxy in `proxyDomain` (§1.8):
 * `host`, `host:port`, short forms shared with the proxy's domain, then the VIP forms.
 *
 * @example
 * ```ts
 * import { serviceDomains } from "./util.ts";
 * serviceDomains("reviews.default.svc.cluster.local", 9080, "default.svc.cluster.local", "0.0.0.0");
 * // ["reviews.default.svc.cluster.local", "reviews.default.svc.cluster.local:9080",
 * //  "reviews", "reviews:9080", "reviews.default", "reviews.default:9080",
 * //  "reviews.default.svc", "reviews.default.svc:9080"]
 * ```
 */
export function serviceDomains(
  host: string,
  port: number,
  proxyDomain: string,
  address: string,
): string[] {
  const out = [host, `${host}:${port}`];
  const hl = host.split(".");
  const dl = proxyDomain ? proxyDomain.split(".") : [];
  let shared = 0;
  while (
    shared < hl.length - 1 && shared < dl.length &&
    hl[hl.length - 1 - shared] === dl[dl.length - 1 - shared]
  ) shared++;
  if (shared >= 2) {
    const uniq = hl.slice(0, hl.length - shared).join(".");
    const sharedLabels = hl.slice(hl.length - shared);
    for (let k = 0; k <= shared - 2; k++) {
      const v = [uniq, ...sharedLabels.slice(0, k)].join(".");
      out.push(v, `${v}:${port}`);
    }
  }
  const vip = address.endsWith("/32") ? address.slice(0, -3) : address;
  if (vip && vip !== "0.0.0.0" && !vip.includes("/")) out.push(vip, `${vip}:${port}`);
  return out;
}

/** Istio StringMatch (`{exact}|{prefix}|{regex}`) → Envoy StringMatcher; undefined if empty. */
export function stringMatcher(m: unknown): Record<string, unknown> | undefined {
  if (!m || typeof m !== "object") return undefined;
  const o = m as Record<string, unknown>;
  if (typeof o.exact === "string") return { exact: o.exact };
  if (typeof o.prefix === "string") return { prefix: o.prefix };
  // An empty regex (a whole-value match) holds only for the empty value; Envoy refuses an empty
  // `regex` (min_len 1), so it is written as that exact match.
  if (o.regex === "") return { exact: "" };
  if (typeof o.regex === "string") return { safe_regex: { regex: o.regex } };
  if (typeof o.suffix === "string") return { suffix: o.suffix };
  return undefined;
}

/** True when every key/value of `selector` is in `labels`. */
export function labelsMatch(
  selector: Record<string, string> | undefined,
  labels: Record<string, string>,
): boolean {
  if (!selector) return true;
  for (const [k, v] of Object.entries(selector)) if (labels[k] !== v) return false;
  return true;
}

/** Socket address object. */
export function socketAddress(address: string, port: number): Record<string, unknown> {
  return { socket_address: { address, port_value: port } };
}

/** True for a unix domain socket endpoint address (`unix:///var/run/app.sock`). */
export function isUnixAddress(address: string): boolean {
  return address.startsWith("unix://");
}

/**
 * Address of an endpoint: `unix://<path>` → an Envoy `Pipe` (`{pipe: {path}}`, no port); anything
 * else → a socket address.
 */
export function endpointAddress(address: string, port: number): Record<string, unknown> {
  if (isUnixAddress(address)) return { pipe: { path: address.slice("unix://".length) } };
  return socketAddress(address, port);
}

/** Finds a service port by number or name selector (`{number}`/`{name}`). */
export function findPort(ports: ServicePort[], sel: unknown): ServicePort | undefined {
  if (!sel || typeof sel !== "object") return undefined;
  const s = sel as { number?: unknown; name?: unknown };
  if (typeof s.number === "number") return ports.find((p) => p.port === s.number);
  if (typeof s.name === "string") return ports.find((p) => p.name === s.name);
  return undefined;
}

/** Stable string compare for sorting. */
export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Workload certificate files (§8.2). */
export const WORKLOAD_CERTS = {
  chain: "/etc/certs/cert-chain.pem",
  key: "/etc/certs/key.pem",
  root: "/etc/certs/root-cert.pem",
} as const;

/** Namespace of a service host: the 2nd DNS label (`h.ns.svc...`), or empty. */
export function hostNamespace(host: string): string {
  return host.split(".")[1] ?? "";
}
