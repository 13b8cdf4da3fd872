/**
 * The gRPC xDS bootstrap of a proxyless workload (gRFC A27, with the certificate providers of
 * A29 and the server listener template of A36): what mesh-agent `--proxyless` writes to
 * `<configPath>/grpc-bootstrap.json` and what an application reads through `GRPC_XDS_BOOTSTRAP`.
 * Pure: no I/O.
 *
 * @example
 * ```ts
 * import { grpcBootstrap } from "./grpc_bootstrap.ts";
 * const doc = grpcBootstrap({
 *   serverUri: "127.0.0.1:15010",
 *   nodeId: "sidecar~10.0.0.1~web-1.shop~shop.svc.cluster.local",
 *   cluster: "web",
 *   certDir: "/etc/certs",
 * });
 * // doc.xds_servers[0].channel_creds → [{ type: "insecure" }]
 * // doc.node.metadata.GENERATOR → "grpc"
 * ```
 * @module
 */

import { GENERATOR_METADATA_KEY, GRPC_GENERATOR } from "./node.ts";
import { formatProtoDuration } from "../flags/duration.ts";

/** File name of the bootstrap inside mesh-agent's `--configPath`. */
export const GRPC_BOOTSTRAP_FILE = "grpc-bootstrap.json";
/** Name of the certificate provider instance xDS TLS contexts refer to. */
export const GRPC_CERT_PROVIDER = "default";
/** The `server_listener_resource_name_template` of the bootstrap (gRFC A36, Istio's form). */
export const GRPC_SERVER_LISTENER_TEMPLATE = "grpc/server?xds.resource.listening_address=%s";
/** Prefix of the Listener names gRPC servers ask for (the template without `%s`). */
export const GRPC_SERVER_LISTENER_PREFIX = "grpc/server?xds.resource.listening_address=";
/** Default `refresh_interval` of the file watcher certificate provider, in milliseconds. */
export const DEFAULT_CERT_REFRESH_MS = 10_000;
/** File names of the workload certificate inside the certificate directory (mesh-agent's). */
export const GRPC_CERT_FILES = {
  chain: "cert-chain.pem",
  key: "key.pem",
  root: "root-cert.pem",
} as const;

/** Locality of a node (all parts optional). */
export interface GrpcLocality {
  readonly region?: string;
  readonly zone?: string;
  readonly sub_zone?: string;
}

/** Input of {@link grpcBootstrap}. */
export interface GrpcBootstrapOptions {
  /** `host:port` of mesh-discovery's ADS (gRPC) port. */
  readonly serverUri: string;
  /**
   * Talk to discovery over TLS with the workload certificate (`--controlPlaneAuthPolicy
   * MUTUAL_TLS`): channel credentials `tls` (gRFC A65) over the files in {@link certDir}.
   * Otherwise `insecure`.
   */
  readonly tls?: boolean;
  /** Node id, `sidecar~<ip>~<id>~<domain>`. */
  readonly nodeId: string;
  /** Node cluster (`--serviceCluster`). */
  readonly cluster: string;
  /** Node metadata (from `MESH_META_*`); the proxyless marker is added. */
  readonly metadata?: Readonly<Record<string, string>>;
  /** Node locality; empty parts are left out. */
  readonly locality?: GrpcLocality;
  /** Directory of `cert-chain.pem`, `key.pem`, `root-cert.pem`. */
  readonly certDir: string;
  /** `refresh_interval` of the file watcher (default {@link DEFAULT_CERT_REFRESH_MS}). */
  readonly refreshIntervalMs?: number;
}

/**
 * Builds the bootstrap document:
 * - `xds_servers[0]`: `server_uri`, `channel_creds` (`insecure`, or `tls` with the workload
 *   certificate files), `server_features: ["xds_v3"]`;
 * - `node`: id, cluster, metadata with `GENERATOR: "grpc"`, locality (`{}` when unknown:
 *   grpc-js-xds refuses a node without one);
 * - `certificate_providers.default`: `file_watcher` over the certificate files;
 * - `server_listener_resource_name_template`: `grpc/server?xds.resource.listening_address=%s`.
 */
export function grpcBootstrap(o: GrpcBootstrapOptions): Record<string, unknown> {
  const dir = o.certDir.replace(/\/+$/, "") || "/";
  const file = (name: string) => `${dir === "/" ? "" : dir}/${name}`;
  const refresh = formatProtoDuration(o.refreshIntervalMs ?? DEFAULT_CERT_REFRESH_MS);
  const files = {
    certificate_file: file(GRPC_CERT_FILES.chain),
    private_key_file: file(GRPC_CERT_FILES.key),
    ca_certificate_file: file(GRPC_CERT_FILES.root),
  };
  const locality = Object.fromEntries(
    Object.entries(o.locality ?? {}).filter(([, v]) => typeof v === "string" && v !== ""),
  );
  // grpc-js-xds refuses a node without a locality: it is always there, empty when unknown
  const node: Record<string, unknown> = {
    id: o.nodeId,
    cluster: o.cluster,
    metadata: { ...o.metadata, [GENERATOR_METADATA_KEY]: GRPC_GENERATOR },
    locality,
  };
  return {
    xds_servers: [{
      server_uri: o.serverUri,
      channel_creds: [
        o.tls ? { type: "tls", config: { ...files, refresh_interval: refresh } } : {
          type: "insecure",
        },
      ],
      server_features: ["xds_v3"],
    }],
    node,
    certificate_providers: {
      [GRPC_CERT_PROVIDER]: {
        plugin_name: "file_watcher",
        config: { ...files, refresh_interval: refresh },
      },
    },
    server_listener_resource_name_template: GRPC_SERVER_LISTENER_TEMPLATE,
  };
}
