/**
 * TLS of proxyless gRPC workloads (gRFC A29): contexts that take certificates from the
 * bootstrap's certificate provider instance `default` (mesh-agent `--proxyless` writes a
 * `file_watcher` provider over the workload certificate files), and which nodes are proxyless.
 * @module
 */

import { EXT_TYPE_URLS } from "../protos.ts";
import { GRPC_CERT_PROVIDER } from "../grpc_bootstrap.ts";
import { isProxylessGrpc } from "../node.ts";
import type { Proxy, XdsResource } from "../types.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

/**
 * True for a proxyless gRPC workload: node metadata `GENERATOR: grpc` (what mesh-agent
 * `--proxyless` writes, as Istio's `grpc-agent` template does) or a gRPC xDS client.
 */
export function isProxyless(proxy: Proxy): boolean {
  if (isProxylessGrpc(proxy.metadata)) return true;
  const kind = proxy.client?.kind;
  return kind === "grpc-core" || kind === "grpc-js" || kind === "grpc-go" || kind === "grpc-java";
}

/** A CertificateProviderPluginInstance of the bootstrap's `default` provider. */
function providerInstance(): XdsResource {
  return { instance_name: GRPC_CERT_PROVIDER };
}

/**
 * DownstreamTlsContext of a proxyless server: certificate and client validation from provider
 * `default`, client certificate required.
 */
export function proxylessDownstreamTls(): XdsResource {
  return {
    name: "envoy.transport_sockets.tls",
    typed_config: {
      "@type": EXT_TYPE_URLS.downstreamTls,
      common_tls_context: {
        tls_certificate_provider_instance: providerInstance(),
        validation_context: { ca_certificate_provider_instance: providerInstance() },
      },
      require_client_certificate: { value: true },
    },
  };
}

/**
 * UpstreamTlsContext of a proxyless client: its certificate and the server's validation from
 * provider `default`, the server's certificate must carry one of `sans` (SPIFFE URIs; any
 * certificate of the mesh CA when empty).
 */
export function proxylessUpstreamTls(sans: readonly string[]): XdsResource {
  const vc: Any = { ca_certificate_provider_instance: providerInstance() };
  if (sans.length) vc.match_subject_alt_names = sans.map((s) => ({ exact: s }));
  return {
    name: "envoy.transport_sockets.tls",
    typed_config: {
      "@type": EXT_TYPE_URLS.upstreamTls,
      common_tls_context: {
        tls_certificate_provider_instance: providerInstance(),
        validation_context: vc,
      },
    },
  };
}
