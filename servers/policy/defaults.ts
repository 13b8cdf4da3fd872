/**
 * The default telemetry configuration (reference §4.6, Istio's helm `mixer/templates/config.yaml`
 * with our names): metric instances for request count, duration and sizes and TCP bytes, a
 * `prometheus` handler exposing them as `mesh_request_count`, `mesh_request_duration` ... and
 * the rules `promhttp` and `promtcp`. Objects of the configuration store with the same kind,
 * namespace and name replace these.
 * @module
 */

import type { ConfigObject } from "../../lib/model/types.ts";

const API = "config.mesh.io/v1alpha2";

const dims = {
  source_service: 'source.service | "unknown"',
  source_version: 'source.labels["version"] | "unknown"',
  destination_service: 'destination.service | "unknown"',
  destination_version: 'destination.labels["version"] | "unknown"',
  response_code: "response.code | 200",
  connection_mtls: "connection.mtls | false",
};
const tcpDims = {
  source_service: 'source.service | "unknown"',
  source_version: 'source.labels["version"] | "unknown"',
  destination_service: 'destination.service | "unknown"',
  destination_version: 'destination.labels["version"] | "unknown"',
  connection_mtls: "connection.mtls | false",
};
const LABELS = Object.keys(dims);
const TCP_LABELS = Object.keys(tcpDims);

/** The default objects in namespace `ns` (the `--configDefaultNamespace`). */
export function defaultTelemetry(ns: string): ConfigObject[] {
  const o = (kind: string, name: string, spec: Record<string, unknown>): ConfigObject => ({
    apiVersion: API,
    kind,
    metadata: { name, namespace: ns, labels: { "mesh-default": "true" } },
    spec,
  });
  const metric = (name: string, value: string, d: Record<string, string> = dims) =>
    o("metric", name, { value, dimensions: d, monitored_resource_type: '"UNSPECIFIED"' });
  const prom = (name: string, instance: string, kind: string, labels = LABELS, extra = {}) => ({
    name,
    instance_name: `${instance}.metric.${ns}`,
    kind,
    label_names: labels,
    ...extra,
  });
  const sizes = {
    buckets: { exponential_buckets: { num_finite_buckets: 8, scale: 1, growth_factor: 10 } },
  };
  return [
    metric("requestcount", "1"),
    metric("requestduration", "response.duration | 0ms"),
    metric("requestsize", "request.size | 0"),
    metric("responsesize", "response.size | 0"),
    metric("tcpbytesent", "connection.sent.bytes | 0", tcpDims),
    metric("tcpbytereceived", "connection.received.bytes | 0", tcpDims),
    o("prometheus", "handler", {
      metrics: [
        prom("request_count", "requestcount", "COUNTER"),
        prom("request_duration", "requestduration", "DISTRIBUTION", LABELS, {
          buckets: {
            explicit_buckets: { bounds: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] },
          },
        }),
        prom("request_size", "requestsize", "DISTRIBUTION", LABELS, sizes),
        prom("response_size", "responsesize", "DISTRIBUTION", LABELS, sizes),
        prom("tcp_bytes_sent", "tcpbytesent", "COUNTER", TCP_LABELS),
        prom("tcp_bytes_received", "tcpbytereceived", "COUNTER", TCP_LABELS),
      ],
    }),
    o("rule", "promhttp", {
      match: 'context.protocol == "http" || context.protocol == "grpc"',
      actions: [{
        handler: "handler.prometheus",
        instances: [
          "requestcount.metric",
          "requestduration.metric",
          "requestsize.metric",
          "responsesize.metric",
        ],
      }],
    }),
    o("rule", "promtcp", {
      match: 'context.protocol == "tcp"',
      actions: [{
        handler: "handler.prometheus",
        instances: ["tcpbytesent.metric", "tcpbytereceived.metric"],
      }],
    }),
  ];
}

/** `objects` over the defaults: a stored object replaces the default of the same kind/namespace/name. */
export function withDefaults(objects: readonly ConfigObject[], ns: string): ConfigObject[] {
  const k = (o: ConfigObject) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`;
  const stored = new Set(objects.map(k));
  return [...defaultTelemetry(ns).filter((d) => !stored.has(k(d))), ...objects];
}
