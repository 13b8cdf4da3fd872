/**
 * The default attribute vocabulary (reference §4.7: manifests `istioproxy` and `kubernetes`).
 * @module
 */

import type { AttributeManifest, ValueType } from "./types.ts";

const S: ValueType = "STRING", I: ValueType = "INT64", T: ValueType = "TIMESTAMP";
const M: ValueType = "STRING_MAP", IP: ValueType = "IP_ADDRESS", D: ValueType = "DURATION";

function all(t: ValueType, names: string[]): Record<string, ValueType> {
  return Object.fromEntries(names.map((n) => [n, t]));
}

/** Attribute name → type of the built-in vocabulary. */
export const DEFAULT_MANIFEST: AttributeManifest = Object.freeze({
  "origin.ip": IP,
  ...all(S, ["origin.uid", "origin.user"]),
  ...all(M, ["request.headers", "response.headers", "request.auth.claims"]),
  ...all(S, [
    "request.id",
    "request.host",
    "request.method",
    "request.path",
    "request.reason",
    "request.referer",
    "request.scheme",
    "request.useragent",
  ]),
  ...all(I, ["request.size", "request.total_size", "response.size", "response.total_size"]),
  "response.code": I,
  ...all(T, ["request.time", "response.time", "context.time", "context.timestamp"]),
  ...all(D, ["response.duration", "connection.duration"]),
  "connection.id": S,
  ...all(I, [
    "connection.received.bytes",
    "connection.received.bytes_total",
    "connection.sent.bytes",
    "connection.sent.bytes_total",
  ]),
  "connection.mtls": "BOOL",
  "context.protocol": S,
  ...all(S, ["api.service", "api.version", "api.operation", "api.protocol", "request.api_key"]),
  ...all(S, [
    "request.auth.principal",
    "request.auth.audiences",
    "request.auth.presenter",
    "request.auth.raw_claims",
  ]),
  ...all(S, ["source.uid", "source.user", "destination.uid"]),
  ...all(IP, ["source.ip", "destination.ip"]),
  ...all(M, ["source.labels", "destination.labels"]),
  ...all(S, [
    "source.name",
    "source.namespace",
    "source.service",
    "source.serviceAccount",
    "destination.name",
    "destination.namespace",
    "destination.service",
    "destination.serviceAccount",
  ]),
  "destination.port": I,
  "source.port": I,
});
