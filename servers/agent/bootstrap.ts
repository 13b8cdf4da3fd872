/**
 * The proxy's bootstrap: an Envoy v3 `Bootstrap` document in proto3 JSON (what Envoy reads with
 * `-c`), generated from the {@link AgentConfig} or rendered from `--templateFile`, and checked by
 * encoding it with Envoy's Bootstrap proto ({@link checkBootstrap}).
 * @module
 */

import { formatProtoDuration } from "../../lib/flags/duration.ts";
import type { AgentConfig, HostPort } from "./config.ts";
import { isIp } from "../../lib/xds/node.ts";
import { EXT_TYPE_URLS } from "../../lib/xds/protos.ts";
import { resolve as resolvePath } from "node:path";
import { CERT_DIR_METADATA_KEY, certDirOf } from "../../lib/xds/generate/cert_dir.ts";

/**
 * The node metadata `CERT_DIR` for a certificate directory: the absolute directory when it is
 * not discovery's default `/etc/certs`, else undefined (a relative directory is resolved
 * against the working directory, as the proxy resolves it).
 */
export function certDirMetadata(certDir: string): string | undefined {
  return certDirOf({ metadata: { [CERT_DIR_METADATA_KEY]: resolvePath(certDir) } });
}

/** Name of the static cluster carrying ADS (`--bootstrapv2`) or the SDS-over-gRPC of EDS. */
export const XDS_GRPC_CLUSTER = "xds-grpc";
/** Name of the static cluster REST-JSON xDS polls (discovery's HTTP port). */
export const XDS_HTTP_CLUSTER = "xds-http";
/** Name of the static cluster reaching the agent's SDS socket. */
export const SDS_CLUSTER = "sds-grpc";
/** File name of the agent's SDS socket inside `--configPath`. */
export const SDS_SOCKET = "sds.sock";
/** SDS resource names: the workload certificate and the root. */
export const SDS_CERT = "default";
/** SDS name of the root certificate. */
export const SDS_ROOT = "ROOTCA";
/** File names of the workload certificate inside the certificate directory. */
export const CERT_FILES = {
  chain: "cert-chain.pem",
  key: "key.pem",
  root: "root-cert.pem",
} as const;

/** The `.proto` files (under `envoy-api/`) a bootstrap's messages and extensions come from. */
export const BOOTSTRAP_PROTO_FILES: readonly string[] = [
  "envoy/config/bootstrap/v3/bootstrap.proto",
  "envoy/config/metrics/v3/stats.proto",
  "envoy/config/trace/v3/zipkin.proto",
];

const BOOTSTRAP_TYPE = "envoy.config.bootstrap.v3.Bootstrap";

type Json = Record<string, unknown>;

/** A proto3 JSON duration (`"1.500s"`) from milliseconds (lib/flags's). */
export const protoDuration = formatProtoDuration;

function socketAddress(hp: HostPort, protocol?: "UDP"): Json {
  return {
    socket_address: {
      address: hp.host,
      port_value: hp.port,
      ...(protocol ? { protocol } : {}),
    },
  };
}

function upstreamCluster(name: string, hp: HostPort, connectTimeoutMs: number, h2: boolean): Json {
  return {
    name,
    type: isIp(hp.host) ? "STATIC" : "STRICT_DNS",
    connect_timeout: protoDuration(connectTimeoutMs),
    lb_policy: "ROUND_ROBIN",
    load_assignment: {
      cluster_name: name,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: socketAddress(hp) } }] }],
    },
    ...(h2
      ? {
        typed_extension_protocol_options: {
          "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
            "@type": EXT_TYPE_URLS.httpProtocolOptions,
            explicit_http_config: { http2_protocol_options: {} },
          },
        },
      }
      : {}),
  };
}

function sdsConfig(): Json {
  return {
    resource_api_version: "V3",
    api_config_source: {
      api_type: "GRPC",
      transport_api_version: "V3",
      grpc_services: [{ envoy_grpc: { cluster_name: SDS_CLUSTER } }],
    },
  };
}

/** The TLS context of the proxy's connection to discovery (MUTUAL_TLS). */
function controlPlaneTls(c: AgentConfig): Json {
  const san = [{ san_type: "URI", matcher: { exact: c.discoverySan } }];
  const common: Json = c.sds
    ? {
      alpn_protocols: ["h2"],
      tls_certificate_sds_secret_configs: [{ name: SDS_CERT, sds_config: sdsConfig() }],
      combined_validation_context: {
        default_validation_context: { match_typed_subject_alt_names: san },
        validation_context_sds_secret_config: { name: SDS_ROOT, sds_config: sdsConfig() },
      },
    }
    : {
      alpn_protocols: ["h2"],
      tls_certificates: [{
        certificate_chain: { filename: `${c.certDir}/${CERT_FILES.chain}` },
        private_key: { filename: `${c.certDir}/${CERT_FILES.key}` },
      }],
      validation_context: {
        trusted_ca: { filename: `${c.certDir}/${CERT_FILES.root}` },
        match_typed_subject_alt_names: san,
      },
    };
  return {
    name: "envoy.transport_sockets.tls",
    typed_config: {
      "@type": EXT_TYPE_URLS.upstreamTls,
      sni: c.adsTarget.host,
      common_tls_context: common,
    },
  };
}

function xdsGrpcCluster(c: AgentConfig): Json {
  const cluster = upstreamCluster(XDS_GRPC_CLUSTER, c.adsTarget, c.connectTimeoutMs, true);
  cluster.circuit_breakers = {
    thresholds: ["DEFAULT", "HIGH"].map((priority) => ({
      priority,
      max_connections: 100000,
      max_pending_requests: 100000,
      max_requests: 100000,
    })),
  };
  if (c.controlPlaneAuthPolicy === "MUTUAL_TLS") cluster.transport_socket = controlPlaneTls(c);
  return cluster;
}

function sdsCluster(c: AgentConfig): Json {
  return {
    name: SDS_CLUSTER,
    type: "STATIC",
    connect_timeout: protoDuration(c.connectTimeoutMs),
    load_assignment: {
      cluster_name: SDS_CLUSTER,
      endpoints: [{
        lb_endpoints: [{
          endpoint: { address: { pipe: { path: `${c.configPath}/${SDS_SOCKET}` } } },
        }],
      }],
    },
    typed_extension_protocol_options: {
      "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
        "@type": EXT_TYPE_URLS.httpProtocolOptions,
        explicit_http_config: { http2_protocol_options: {} },
      },
    },
  };
}

function dynamicResources(c: AgentConfig): Json {
  if (c.ads) {
    return {
      lds_config: { ads: {}, resource_api_version: "V3" },
      cds_config: { ads: {}, resource_api_version: "V3" },
      ads_config: {
        api_type: "GRPC",
        transport_api_version: "V3",
        set_node_on_first_message_only: true,
        grpc_services: [{ envoy_grpc: { cluster_name: XDS_GRPC_CLUSTER } }],
      },
    };
  }
  const rest = () => ({
    resource_api_version: "V3",
    api_config_source: {
      api_type: "REST",
      transport_api_version: "V3",
      cluster_names: [XDS_HTTP_CLUSTER],
      refresh_delay: protoDuration(c.discoveryRefreshDelayMs),
      request_timeout: protoDuration(c.connectTimeoutMs),
    },
  });
  // routes and endpoints that discovery's listeners and clusters reference come over ADS
  return {
    lds_config: rest(),
    cds_config: rest(),
    ads_config: {
      api_type: "GRPC",
      transport_api_version: "V3",
      set_node_on_first_message_only: true,
      grpc_services: [{ envoy_grpc: { cluster_name: XDS_GRPC_CLUSTER } }],
    },
  };
}

/** The generated bootstrap (proto3 JSON) of `c`. */
export function buildBootstrap(c: AgentConfig): Json {
  const node: Json = {
    id: c.nodeId,
    cluster: c.serviceCluster,
    metadata: {
      ...c.metadata,
      MESH_ROLE: c.role,
      // where mesh mTLS contexts must name the certificate files (discovery's default: /etc/certs)
      ...(certDirMetadata(c.certDir)
        ? { [CERT_DIR_METADATA_KEY]: certDirMetadata(c.certDir) }
        : {}),
    },
  };
  if (c.availabilityZone) node.locality = { zone: c.availabilityZone };
  const clusters: Json[] = [xdsGrpcCluster(c)];
  if (!c.ads) {
    clusters.push(upstreamCluster(XDS_HTTP_CLUSTER, c.discovery, c.connectTimeoutMs, false));
  }
  if (c.sds) clusters.push(sdsCluster(c));
  const b: Json = {
    node,
    stats_config: { use_all_default_tags: false },
    admin: {
      access_log: [{
        name: "envoy.access_loggers.file",
        typed_config: { "@type": EXT_TYPE_URLS.fileAccessLog, path: "/dev/stdout" },
      }],
      address: socketAddress({ host: "127.0.0.1", port: c.proxyAdminPort }),
    },
    dynamic_resources: dynamicResources(c),
    static_resources: { clusters },
  };
  if (c.tracerBAddress) {
    clusters.push(upstreamCluster("tracerb", c.tracerBAddress, 1000, false));
    b.tracing = {
      http: {
        name: "envoy.tracers.zipkin",
        typed_config: {
          "@type": "type.googleapis.com/envoy.config.trace.v3.ZipkinConfig",
          collector_cluster: "tracerb",
          collector_endpoint: "/api/v2/spans",
          collector_endpoint_version: "HTTP_JSON",
        },
      },
    };
  }
  if (c.statsdUdpAddress) {
    b.stats_sinks = [{
      name: "envoy.stat_sinks.statsd",
      typed_config: {
        "@type": "type.googleapis.com/envoy.config.metrics.v3.StatsdSink",
        address: socketAddress(c.statsdUdpAddress, "UDP"),
      },
    }];
  }
  if (c.disableInternalTelemetry) {
    // no stats of the proxy's own workings: only the mesh's own metrics are kept
    b.stats_config = {
      use_all_default_tags: false,
      stats_matcher: { reject_all: true },
    };
  }
  return b;
}

/** The data `--templateFile` templates see (`[[ .NodeID ]]`...). */
export function templateData(c: AgentConfig): Json {
  const [podName, podNamespace] = c.id.includes(".") ? c.id.split(".", 2) : [c.id, ""];
  return {
    NodeID: c.nodeId,
    Role: c.role,
    ID: c.id,
    IP: c.ip,
    Domain: c.domain,
    PodName: podName,
    PodNamespace: podNamespace,
    Cluster: c.serviceCluster,
    Zone: c.availabilityZone,
    Meta: c.metadata,
    AdminPort: c.proxyAdminPort,
    ConfigPath: c.configPath,
    CertDir: c.certDir,
    DiscoveryHost: c.discovery.host,
    DiscoveryPort: c.discovery.port,
    AdsHost: c.adsTarget.host,
    AdsPort: c.adsTarget.port,
    ConnectTimeout: protoDuration(c.connectTimeoutMs),
    RefreshDelay: protoDuration(c.discoveryRefreshDelayMs),
    ControlPlaneAuth: c.controlPlaneAuthPolicy === "MUTUAL_TLS" ? "enable" : "",
    DisableReportCalls: c.disableInternalTelemetry ? "true" : "",
    DiscoverySAN: c.discoverySan,
  };
}

/**
 * Renders `--templateFile` (the `[[ ]]` template language of lib/inject, data
 * {@link templateData}) and parses the result as JSON or YAML. Throws naming the file.
 */
export async function renderTemplate(c: AgentConfig, text: string): Promise<Json> {
  const { parseTemplate } = await import("../../lib/inject/template.ts");
  const { parse } = await import("../../lib/deps/yaml.ts");
  let out: string;
  try {
    out = parseTemplate(text).render(templateData(c));
  } catch (e) {
    throw new Error(`Cannot render --templateFile ${c.templateFile}: ${(e as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = parse(out);
  } catch (e) {
    throw new Error(
      `--templateFile ${c.templateFile} did not render to JSON or YAML: ${
        (e as Error).message.split("\n")[0]
      }`,
    );
  }
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) {
    throw new Error(`--templateFile ${c.templateFile} did not render to an object`);
  }
  return doc as Json;
}

/**
 * Checks a bootstrap (proto3 JSON) against Envoy's Bootstrap proto: converts it, runs Envoy's
 * field rules (unknown fields, types, required fields, ranges) and encodes it. Throws with every
 * problem found; resolves to the encoded size in bytes.
 */
export async function checkBootstrap(doc: Json): Promise<number> {
  const pgv = await import("../../lib/xds/pgv.ts");
  pgv.pgvLoadProtoFiles(BOOTSTRAP_PROTO_FILES);
  let obj;
  try {
    obj = pgv.pgvFromProtoJson(BOOTSTRAP_TYPE, doc);
  } catch (e) {
    throw new Error(`Invalid bootstrap: ${(e as Error).message}`);
  }
  const problems = pgv.pgvProblems(BOOTSTRAP_TYPE, obj);
  if (problems.length) throw new Error(`Invalid bootstrap: ${problems.join("; ")}`);
  try {
    return pgv.pgvEncode(BOOTSTRAP_TYPE, obj).length;
  } catch (e) {
    throw new Error(`Invalid bootstrap: ${(e as Error).message}`);
  }
}

/**
 * {@link checkBootstrap} in a short-lived worker, so the ~30 MB of loaded protos are released
 * once the check is done (the agent runs for the pod's whole life).
 */
export async function checkBootstrapInWorker(doc: Json): Promise<number> {
  const w = new Worker(new URL("./check_worker.ts", import.meta.url), { type: "module" });
  try {
    const { promise, resolve, reject } = Promise.withResolvers<{ size?: number; error?: string }>();
    w.onmessage = (e) => resolve(e.data);
    w.onerror = (e) => {
      e.preventDefault();
      reject(new Error(`bootstrap check failed: ${e.message}`));
    };
    w.postMessage(doc);
    const r = await promise;
    if (r.error !== undefined) throw new Error(r.error);
    return r.size!;
  } finally {
    w.terminate();
  }
}

/**
 * {@link checkBootstrap} without keeping its memory: in a `deno run` subprocess when the agent
 * itself runs under `deno` (the ~45 MB of loaded protos go away with it), else (a compiled
 * binary) in a worker.
 */
export async function checkBootstrapIsolated(doc: Json): Promise<number> {
  const exe = Deno.execPath();
  if (!/(^|\/)deno$/.test(exe) || !import.meta.url.startsWith("file:")) {
    return await checkBootstrapInWorker(doc);
  }
  const child = new Deno.Command(exe, {
    args: [
      "run",
      "-A",
      "--quiet",
      "--config",
      new URL("../../deno.json", import.meta.url).pathname,
      new URL("./check_main.ts", import.meta.url).pathname,
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(JSON.stringify(doc)));
  await w.close();
  const out = await child.output();
  const text = new TextDecoder().decode(out.stdout).trim();
  let r: { size?: number; error?: string };
  try {
    r = JSON.parse(text);
  } catch {
    throw new Error(
      `bootstrap check failed: ${new TextDecoder().decode(out.stderr).trim().split("\n")[0]}`,
    );
  }
  if (r.error !== undefined) throw new Error(r.error);
  return r.size!;
}
