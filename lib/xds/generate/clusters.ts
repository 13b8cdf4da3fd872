/**
 * CDS: outbound (per service port and DestinationRule subset), inbound (per proxy instance),
 * BlackHoleCluster and PassthroughCluster.
 * @module
 */

import type { Protocol, Service, ServiceInstance, ServicePort } from "../../model/types.ts";
import { EXT_TYPE_URLS } from "../protos.ts";
import type { Proxy, PushContext, XdsResource } from "../types.ts";
import { ringHashCrashes } from "../node.ts";
import { hostPortKey, indexOf } from "./context.ts";
import { meshMtlsUpstream, mtlsModeOf, upstreamTlsSocket } from "./security.ts";
import { withCertDir } from "./cert_dir.ts";
import { withClientCredential } from "./credentials.ts";
import { isProxyless, proxylessUpstreamTls } from "./grpc_tls.ts";
import {
  durationOf,
  endpointAddress,
  inboundClusterName,
  isHttp2Protocol,
  isHttpProtocol,
  isUnixAddress,
  msToDuration,
  outboundClusterName,
  socketAddress,
} from "./util.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

/** Name of the cluster that drops traffic. */
export const BLACKHOLE_CLUSTER = "BlackHoleCluster";
/** Name of the cluster that forwards to the original destination. */
export const PASSTHROUGH_CLUSTER = "PassthroughCluster";

/** Envoy's upper bound for `ring_hash_lb_config.minimum_ring_size` (8M entries). */
export const MAX_RING_SIZE = 8_388_608;

const EDS_CONFIG = { ads: {}, resource_api_version: "V3" };

/** The traffic policy applying to a port: `portLevelSettings` entry replaces the policy. */
export function policyForPort(policy: Any, port: ServicePort): Any {
  if (!policy || typeof policy !== "object") return undefined;
  const pls = Array.isArray(policy.portLevelSettings) ? policy.portLevelSettings : [];
  const hit = pls.find((p: Any) =>
    p?.port?.number === port.port || (p?.port?.name && p.port.name === port.name)
  );
  return hit ?? policy;
}

function applyLb(cluster: Any, lb: Any): void {
  if (!lb || typeof lb !== "object") return;
  if (lb.consistentHash) {
    cluster.lb_policy = "RING_HASH";
    const min = lb.consistentHash.minimumRingSize;
    if (typeof min === "number" && min > 0) {
      // Envoy rejects the whole CDS update above 8M (cluster.proto: lte 8388608); the schema
      // refuses such values, this guards configs that bypassed it.
      const value = Math.min(Math.floor(min), MAX_RING_SIZE);
      cluster.ring_hash_lb_config = { minimum_ring_size: { value } };
    }
    return;
  }
  switch (lb.simple) {
    case "LEAST_CONN":
    case "LEAST_REQUEST":
      cluster.lb_policy = "LEAST_REQUEST";
      break;
    case "RANDOM":
      cluster.lb_policy = "RANDOM";
      break;
    case "ROUND_ROBIN":
      cluster.lb_policy = "ROUND_ROBIN";
      break;
    case "PASSTHROUGH":
      cluster.type = "ORIGINAL_DST";
      cluster.lb_policy = "CLUSTER_PROVIDED";
      delete cluster.eds_cluster_config;
      delete cluster.load_assignment;
      break;
  }
}

/**
 * Applies a connection pool; returns its `h2UpgradePolicy` (`UPGRADE`: HTTP/1.1 ports are
 * spoken to upstream as HTTP/2) when set.
 */
function applyConnectionPool(cluster: Any, cp: Any, http: Any): string | undefined {
  if (!cp || typeof cp !== "object") return undefined;
  const t: Any = {};
  if (typeof cp.http?.http2MaxRequests === "number") {
    t.max_requests = { value: cp.http.http2MaxRequests };
  }
  if (typeof cp.http?.http1MaxPendingRequests === "number") {
    t.max_pending_requests = { value: cp.http.http1MaxPendingRequests };
  }
  if (typeof cp.http?.maxRetries === "number") t.max_retries = { value: cp.http.maxRetries };
  if (typeof cp.tcp?.maxConnections === "number") {
    t.max_connections = { value: cp.tcp.maxConnections };
  }
  if (Object.keys(t).length) cluster.circuit_breakers = { thresholds: [t] };
  if (
    typeof cp.http?.maxRequestsPerConnection === "number" && cp.http.maxRequestsPerConnection > 0
  ) {
    http.common_http_protocol_options = {
      max_requests_per_connection: { value: cp.http.maxRequestsPerConnection },
    };
  }
  const idle = durationOf(cp.http?.idleTimeout);
  if (idle) {
    http.common_http_protocol_options = {
      ...http.common_http_protocol_options,
      idle_timeout: idle,
    };
  }
  const ct = durationOf(cp.tcp?.connectTimeout);
  if (ct) cluster.connect_timeout = ct;
  return typeof cp.http?.h2UpgradePolicy === "string" ? cp.http.h2UpgradePolicy : undefined;
}

/**
 * Outlier detection: Istio 0.8's `http: {consecutiveErrors...}` or today's top-level fields
 * (`consecutive5xxErrors`, `consecutiveGatewayErrors` and the deprecated top-level
 * `consecutiveErrors` (gateway errors: 502, 503, 504), local-origin failures, `minHealthPercent`
 * → the cluster's panic threshold). Gateway and local-origin ejections are enforced (Envoy's
 * default enforcement for them is 0%).
 */
function applyOutlier(cluster: Any, od: Any): void {
  if (!od || typeof od !== "object") return;
  const h = od.http && typeof od.http === "object" ? od.http : od;
  const o: Any = {};
  if (h === od.http && typeof h.consecutiveErrors === "number") {
    o.consecutive_5xx = { value: h.consecutiveErrors };
  }
  if (typeof od.consecutive5xxErrors === "number") {
    o.consecutive_5xx = { value: od.consecutive5xxErrors };
    if (od.consecutive5xxErrors === 0) o.enforcing_consecutive_5xx = { value: 0 };
  }
  const gateway = od.consecutiveGatewayErrors ??
    (h !== od.http ? od.consecutiveErrors : undefined);
  if (typeof gateway === "number") {
    o.consecutive_gateway_failure = { value: gateway };
    o.enforcing_consecutive_gateway_failure = { value: gateway > 0 ? 100 : 0 };
  }
  if (od.splitExternalLocalOriginErrors === true) {
    o.split_external_local_origin_errors = true;
    if (typeof od.consecutiveLocalOriginFailures === "number") {
      o.consecutive_local_origin_failure = { value: od.consecutiveLocalOriginFailures };
      o.enforcing_consecutive_local_origin_failure = { value: 100 };
    }
  }
  if (typeof od.minHealthPercent === "number") {
    cluster.common_lb_config = {
      ...cluster.common_lb_config,
      healthy_panic_threshold: { value: od.minHealthPercent },
    };
  }
  const iv = durationOf(h.interval);
  if (iv) o.interval = iv;
  const be = durationOf(h.baseEjectionTime);
  if (be) o.base_ejection_time = be;
  if (typeof h.maxEjectionPercent === "number") {
    o.max_ejection_percent = { value: h.maxEjectionPercent };
  }
  if (Object.keys(o).length || od.http) cluster.outlier_detection = o;
}

function applyTls(
  cluster: Any,
  tls: Any,
  svc: Service,
  port: ServicePort,
  proxyless: boolean,
): boolean {
  if (!tls || typeof tls !== "object" || !tls.mode) return false;
  tls = withClientCredential(tls); // credentialName: the mounted Secret's files
  const sans: string[] = Array.isArray(tls.subjectAltNames) ? tls.subjectAltNames : [];
  switch (tls.mode) {
    case "DISABLE":
      delete cluster.transport_socket;
      return true;
    case "SIMPLE":
      cluster.transport_socket = upstreamTlsSocket({
        caCertificates: tls.caCertificates,
        sans,
        sni: tls.sni,
      });
      return true;
    case "MUTUAL":
      cluster.transport_socket = upstreamTlsSocket({
        certChain: tls.clientCertificate,
        privateKey: tls.privateKey,
        caCertificates: tls.caCertificates,
        sans,
        sni: tls.sni,
      });
      return true;
    case "ISTIO_MUTUAL":
    case "MESH_MUTUAL":
      // proxyless gRPC clients take their certificates from the bootstrap's provider
      if (proxyless) {
        cluster.transport_socket = proxylessUpstreamTls(sans.length ? sans : svc.serviceAccounts);
        return true;
      }
      cluster.transport_socket = meshMtlsUpstream(
        sans.length ? sans : svc.serviceAccounts,
        isHttp2Protocol(port.protocol),
        tls.sni,
      );
      return true;
  }
  return false;
}

/** Builds one outbound cluster (the subset's labels are only used by EDS). */
function outboundCluster(
  ctx: PushContext,
  svc: Service,
  port: ServicePort,
  subset: string,
  policies: Any[],
  instances: ServiceInstance[],
  proxyless = false,
): XdsResource {
  const name = outboundClusterName(port.port, subset, svc.hostname);
  const c: Any = { name, connect_timeout: msToDuration(ctx.meshConfig.connectTimeoutMs || 1000) };
  switch (svc.resolution) {
    case "Passthrough":
      c.type = "ORIGINAL_DST";
      c.lb_policy = "CLUSTER_PROVIDED";
      break;
    case "DNSLB":
      // Unix socket endpoints need no resolution (and Envoy resolves only socket addresses).
      if (instances.length && instances.every((i) => isUnixAddress(i.address))) {
        c.type = "STATIC";
      } else {
        c.type = "STRICT_DNS";
        c.dns_lookup_family = "V4_ONLY";
      }
      c.lb_policy = "ROUND_ROBIN";
      c.load_assignment = {
        cluster_name: name,
        endpoints: [{
          lb_endpoints: instances.map((i) => ({
            endpoint: { address: endpointAddress(i.address, i.port) },
          })),
        }],
      };
      break;
    default:
      c.type = "EDS";
      c.eds_cluster_config = { eds_config: EDS_CONFIG, service_name: name };
      c.lb_policy = "ROUND_ROBIN";
  }
  const http: Any = {};
  let tlsSet = false;
  let h2Upgrade: string | undefined;
  for (const p of policies) {
    const pol = policyForPort(p, port);
    if (!pol) continue;
    applyLb(c, pol.loadBalancer);
    h2Upgrade = applyConnectionPool(c, pol.connectionPool, http) ?? h2Upgrade;
    applyOutlier(c, pol.outlierDetection);
    if (applyTls(c, pol.tls, svc, port, proxyless)) tlsSet = true;
  }
  if (!tlsSet && !svc.meshExternal && c.type !== "ORIGINAL_DST") {
    const excluded = ctx.meshConfig.mtlsExcludedServices ?? [];
    const mode = excluded.includes(svc.hostname) ? "NONE" : mtlsModeOf(ctx, svc, port);
    // A proxyless server serves PERMISSIVE as plaintext (docs/proxyless.md): its clients follow.
    if (proxyless && mode === "STRICT") {
      c.transport_socket = proxylessUpstreamTls(svc.serviceAccounts);
    } else if (!proxyless && mode !== "NONE") {
      c.transport_socket = meshMtlsUpstream(svc.serviceAccounts, isHttp2Protocol(port.protocol));
    }
  }
  setHttpProtocolOptions(c, http, port.protocol, h2Upgrade === "UPGRADE");
  return c;
}

/**
 * Sets the cluster's upstream `HttpProtocolOptions` from the connection-pool settings already in
 * `http`: HTTP/2 (bounded concurrent streams) for HTTP/2 ports and for HTTP ports whose
 * `h2UpgradePolicy` is `UPGRADE`, HTTP/1 when a pool setting needs the options on an HTTP port;
 * nothing otherwise.
 */
function setHttpProtocolOptions(
  c: Any,
  http: Any,
  protocol: Protocol,
  h2Upgrade = false,
): void {
  if (isHttp2Protocol(protocol) || (h2Upgrade && isHttpProtocol(protocol))) {
    http.explicit_http_config = {
      http2_protocol_options: { max_concurrent_streams: { value: 1073741824 } },
    };
  } else if (http.common_http_protocol_options && isHttpProtocol(protocol)) {
    http.explicit_http_config = { http_protocol_options: {} };
  }
  if (http.explicit_http_config) {
    c.typed_extension_protocol_options = {
      "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
        "@type": EXT_TYPE_URLS.httpProtocolOptions,
        ...http,
      },
    };
  }
}

/** The static BlackHoleCluster (no hosts, 5s connect timeout). */
export function blackHoleCluster(): XdsResource {
  return { name: BLACKHOLE_CLUSTER, type: "STATIC", connect_timeout: { seconds: 5 } };
}

/** The PassthroughCluster (original destination). */
export function passthroughCluster(ctx: PushContext): XdsResource {
  return {
    name: PASSTHROUGH_CLUSTER,
    type: "ORIGINAL_DST",
    lb_policy: "CLUSTER_PROVIDED",
    connect_timeout: msToDuration(ctx.meshConfig.connectTimeoutMs || 1000),
  };
}

/** Instances of the sidecar (address = proxy IP), in context order. */
export function proxyInstances(ctx: PushContext, proxy: Proxy): ServiceInstance[] {
  if (proxy.type !== "sidecar") return [];
  return indexOf(ctx).instancesByIp.get(proxy.ip) ?? [];
}

/**
 * Builds every cluster a proxy needs: outbound clusters for every service port (plus one per
 * DestinationRule subset), inbound clusters for a sidecar's own instances, BlackHoleCluster and
 * PassthroughCluster. UDP ports are skipped. Ordered by service hostname, then port. Clients
 * that crash on ring hash ({@link ringHashCrashes}) get round robin in its place.
 */
export function buildClusters(ctx: PushContext, proxy: Proxy): XdsResource[] {
  // workload certificates where the proxy's agent keeps them (node metadata CERT_DIR)
  const out = withCertDir(allClusters(ctx, proxy), proxy);
  if (ringHashCrashes(proxy.client)) {
    // Round robin for clients that crash on ring hash (consistent hashing is lost, calls work).
    for (const c of out) {
      if (c.lb_policy !== "RING_HASH") continue;
      delete c.lb_policy;
      delete c.ring_hash_lb_config;
    }
  }
  return out;
}

function allClusters(ctx: PushContext, proxy: Proxy): XdsResource[] {
  const idx = indexOf(ctx);
  const out: XdsResource[] = [];
  const proxyless = isProxyless(proxy);
  for (const svc of idx.services) {
    if (idx.serviceByHost.get(svc.hostname) !== svc) continue;
    const dr = idx.destinationRuleByHost.get(svc.hostname)?.spec as Any;
    for (const port of svc.ports) {
      if (port.protocol === "UDP") continue;
      const insts = svc.resolution === "DNSLB"
        ? idx.instancesByHostPort.get(hostPortKey(svc.hostname, port.port)) ?? []
        : [];
      out.push(outboundCluster(ctx, svc, port, "", [dr?.trafficPolicy], insts, proxyless));
      for (const ss of Array.isArray(dr?.subsets) ? dr.subsets : []) {
        if (typeof ss?.name !== "string" || !ss.name) continue;
        const sub = insts.filter((i) =>
          Object.entries(ss.labels ?? {}).every(([k, v]) => i.labels[k] === v)
        );
        out.push(
          outboundCluster(
            ctx,
            svc,
            port,
            ss.name,
            [dr?.trafficPolicy, ss.trafficPolicy],
            sub,
            proxyless,
          ),
        );
      }
    }
  }
  const seen = new Set<string>();
  for (const inst of proxyInstances(ctx, proxy)) {
    if (inst.servicePort.protocol === "UDP") continue;
    const name = inboundClusterName(inst.servicePort.port, inst.hostname);
    if (seen.has(name)) continue;
    seen.add(name);
    const c: Any = {
      name,
      type: "STATIC",
      connect_timeout: msToDuration(ctx.meshConfig.connectTimeoutMs || 1000),
      lb_policy: "ROUND_ROBIN",
      load_assignment: {
        cluster_name: name,
        endpoints: [{
          lb_endpoints: [{ endpoint: { address: socketAddress("127.0.0.1", inst.port) } }],
        }],
      },
    };
    const dr = idx.destinationRuleByHost.get(inst.hostname)?.spec as Any;
    const pol = policyForPort(dr?.trafficPolicy, inst.servicePort);
    const http: Any = {};
    applyConnectionPool(c, pol?.connectionPool, http);
    setHttpProtocolOptions(c, http, inst.servicePort.protocol);
    out.push(c);
  }
  out.push(blackHoleCluster(), passthroughCluster(ctx));
  return out;
}
