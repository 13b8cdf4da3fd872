import assert from "node:assert/strict";
import { isHttpProtocol, parseProtocolName, protocolFromPortName } from "./protocol.ts";

Deno.test("protocolFromPortName() reads the prefix before the first '-', in any case", () => {
  const cases: [string, string][] = [
    ["http", "HTTP"],
    ["http-web", "HTTP"],
    ["HTTP-web", "HTTP"],
    ["Http", "HTTP"],
    ["http2-api", "HTTP2"],
    ["HTTP2", "HTTP2"],
    ["grpc", "GRPC"],
    ["gRPC-web", "GRPC"],
    ["https-admin", "HTTPS"],
    ["mongo-db", "MONGO"],
    ["REDIS", "REDIS"],
    ["tls-passthrough", "TLS"],
    ["tcp-db", "TCP"],
    // Not a known prefix: TCP.
    ["web", "TCP"],
    ["httpx", "TCP"],
    ["web-http", "TCP"],
    ["", "TCP"],
    ["-http", "TCP"],
  ];
  for (const [name, want] of cases) assert.equal(protocolFromPortName(name), want, name);
});

Deno.test("protocolFromPortName() takes UDP only from the port's transport, never from a udp- name", () => {
  assert.equal(protocolFromPortName("udp-dns"), "TCP", "udp- on a TCP port");
  assert.equal(protocolFromPortName("UDP"), "TCP");
  assert.equal(protocolFromPortName("udp-dns", "TCP"), "TCP");
  assert.equal(protocolFromPortName("dns", "UDP"), "UDP");
  assert.equal(protocolFromPortName("http-x", "udp"), "UDP", "the transport is case-insensitive");
  assert.equal(protocolFromPortName("http-x", "SCTP"), "HTTP");
});

Deno.test("parseProtocolName() maps protocol words in any case; unknown ones are TCP", () => {
  for (
    const [word, want] of [
      ["http", "HTTP"],
      ["GRPC", "GRPC"],
      ["Http2", "HTTP2"],
      ["udp", "UDP"],
      ["tls", "TLS"],
      ["mongo", "MONGO"],
      ["quic", "TCP"],
      ["", "TCP"],
      ["http-web", "TCP"],
    ]
  ) {
    assert.equal(parseProtocolName(word), want, word);
  }
});

Deno.test("isHttpProtocol() is true for HTTP, HTTP2 and GRPC only", () => {
  for (const p of ["HTTP", "HTTP2", "GRPC"] as const) assert.equal(isHttpProtocol(p), true, p);
  for (const p of ["HTTPS", "TCP", "TLS", "UDP", "MONGO", "REDIS"] as const) {
    assert.equal(isHttpProtocol(p), false, p);
  }
});
