/**
 * Envoy filters the listener builders share: the HTTP connection manager (with RDS or an inline
 * route configuration), HTTP filter entries, the router, tcp_proxy and tls_inspector.
 * @module
 */

import { EXT_TYPE_URLS } from "../protos.ts";
import type { XdsResource } from "../types.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

/** The config source of resources fetched over the ADS stream (xDS v3). */
export const ADS_SOURCE = { ads: {}, resource_api_version: "V3" };

/** An HTTP filter entry. */
export function httpFilter(name: string, typedConfig: XdsResource): XdsResource {
  return { name, typed_config: typedConfig };
}

/** The router filter (always last). */
export function routerFilter(): XdsResource {
  return httpFilter("envoy.filters.http.router", { "@type": EXT_TYPE_URLS.router });
}

/** Options of an HTTP connection manager. */
export interface HcmOptions {
  statPrefix: string;
  /** RDS route name (mutually exclusive with `routeConfig`). */
  rds?: string;
  routeConfig?: XdsResource;
  /** Filters before the router. */
  filters?: XdsResource[];
  accessLogFile?: string;
  useRemoteAddress?: boolean;
}

/** HttpConnectionManager typed config (`@type` form). */
export function hcmConfig(o: HcmOptions): XdsResource {
  const hcm: Any = { "@type": EXT_TYPE_URLS.hcm, stat_prefix: o.statPrefix, codec_type: "AUTO" };
  if (o.rds !== undefined) {
    hcm.rds = { config_source: ADS_SOURCE, route_config_name: o.rds };
  } else hcm.route_config = o.routeConfig;
  hcm.http_filters = [...(o.filters ?? []), routerFilter()];
  if (o.accessLogFile) {
    hcm.access_log = [{
      name: "envoy.access_loggers.file",
      typed_config: { "@type": EXT_TYPE_URLS.fileAccessLog, path: o.accessLogFile },
    }];
  }
  if (o.useRemoteAddress) hcm.use_remote_address = { value: true };
  return hcm;
}

/** Network filter wrapping an HCM. */
export function hcmFilter(o: HcmOptions): XdsResource {
  return { name: "envoy.filters.network.http_connection_manager", typed_config: hcmConfig(o) };
}

/** Network filter: tcp_proxy to one cluster or weighted clusters. */
export function tcpProxyFilter(
  statPrefix: string,
  target: string | { name: string; weight: number }[],
): XdsResource {
  const cfg: Any = { "@type": EXT_TYPE_URLS.tcpProxy, stat_prefix: statPrefix };
  if (typeof target === "string") cfg.cluster = target;
  else cfg.weighted_clusters = { clusters: target };
  return { name: "envoy.filters.network.tcp_proxy", typed_config: cfg };
}

/** The tls_inspector listener filter (SNI and ALPN for filter chain matching). */
export function tlsInspectorFilter(): XdsResource {
  return {
    name: "envoy.filters.listener.tls_inspector",
    typed_config: { "@type": EXT_TYPE_URLS.tlsInspector },
  };
}
