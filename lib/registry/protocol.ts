/**
 * Port-protocol rules shared by the registries.
 * @module
 */
import type { Protocol } from "../model/types.ts";

const PREFIXES: Record<string, Protocol> = {
  http: "HTTP",
  http2: "HTTP2",
  grpc: "GRPC",
  https: "HTTPS",
  mongo: "MONGO",
  redis: "REDIS",
  tcp: "TCP",
  tls: "TLS",
  udp: "UDP",
};

/**
 * Protocol of an orchestrator service port from its name: the prefix before the first `-`
 * (`http-web` → HTTP, `grpc` → GRPC). A port whose orchestrator protocol is UDP is UDP; anything
 * else is TCP.
 */
export function protocolFromPortName(name: string, transport = "TCP"): Protocol {
  if (transport.toUpperCase() === "UDP") return "UDP";
  const prefix = name.toLowerCase().split("-")[0];
  const p = PREFIXES[prefix];
  return p && p !== "UDP" ? p : "TCP";
}

/** Protocol from a free-form protocol word (`http`, `GRPC`, `tcp`); unknown → TCP. */
export function parseProtocolName(value: string): Protocol {
  return PREFIXES[value.toLowerCase()] ?? "TCP";
}

/** True for protocols the proxy handles at layer 7. */
export function isHttpProtocol(p: Protocol): boolean {
  return p === "HTTP" || p === "HTTP2" || p === "GRPC";
}
