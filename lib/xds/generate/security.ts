/**
 * Peer authentication (mTLS) decisions and TLS contexts (§7.4, §1.8).
 * @module
 */

import type { Service, ServiceInstance, ServicePort } from "../../model/types.ts";
import { EXT_TYPE_URLS } from "../protos.ts";
import type { PushContext, XdsResource } from "../types.ts";
import { hostNamespace, resolveShortName, WORKLOAD_CERTS } from "./util.ts";
import { peerAuthnModeOf } from "./peer_authn.ts";

/** Peer mTLS requirement of a service port. */
export type MtlsMode = "NONE" | "STRICT" | "PERMISSIVE";

// deno-lint-ignore no-explicit-any
type Any = any;

function portSelected(ports: unknown, port: ServicePort): boolean {
  if (!Array.isArray(ports) || ports.length === 0) return true;
  return ports.some((p: Any) => p?.number === port.port || (p?.name && p.name === port.name));
}

function modeOfPolicy(spec: Any): MtlsMode {
  const peers = Array.isArray(spec?.peers) ? spec.peers : [];
  const m = peers.find((p: Any) => p && typeof p === "object" && "mtls" in p);
  if (!m) return "NONE";
  const mtls = m.mtls ?? {};
  if (mtls.allowTls === true || mtls.mode === "PERMISSIVE" || mtls.mode === "TLS_PERMISSIVE") {
    return "PERMISSIVE";
  }
  return "STRICT";
}

/**
 * mTLS mode of a service port (of `instance`, for a server): a PeerAuthentication that decides
 * (workload > namespace > mesh, see peer_authn.ts) wins over Istio 0.8's Policy; else a Policy in the host's namespace targeting the host (and port)
 * wins over a namespace-wide Policy; without a Policy the service attribute
 * `auth.mesh.io/<port>` (`NONE`|`MUTUAL_TLS`) applies, then the mesh `authPolicy`.
 * Mesh-external services are never mTLS.
 */
export function mtlsModeOf(
  ctx: PushContext,
  svc: Service,
  port: ServicePort,
  instance?: ServiceInstance,
): MtlsMode {
  if (svc.meshExternal) return "NONE";
  const peer = peerAuthnModeOf(ctx, svc, port, instance);
  if (peer) return peer;
  const ns = svc.namespace || hostNamespace(svc.hostname);
  let nsWide: Any | undefined;
  for (const p of ctx.configs.policies ?? []) {
    if ((p.metadata.namespace ?? "") !== ns) continue;
    const spec = p.spec as Any;
    const targets = Array.isArray(spec?.targets) ? spec.targets : [];
    if (targets.length === 0) {
      nsWide ??= spec;
      continue;
    }
    for (const t of targets) {
      if (typeof t?.name !== "string") continue;
      if (resolveShortName(t.name, ns, ctx.domain) !== svc.hostname) continue;
      if (portSelected(t.ports, port)) return modeOfPolicy(spec);
    }
  }
  if (nsWide) return modeOfPolicy(nsWide);
  const attr = svc.attributes?.[`auth.mesh.io/${port.port}`];
  if (attr === "MUTUAL_TLS") return "STRICT";
  if (attr === "NONE") return "NONE";
  return ctx.meshConfig.authPolicy === "MUTUAL_TLS" ? "STRICT" : "NONE";
}

/** SAN matchers for SPIFFE URIs. */
export function spiffeSanMatchers(sans: string[]): Any[] {
  return sans.map((s) => ({ san_type: "URI", matcher: { exact: s } }));
}

/**
 * UpstreamTlsContext transport socket. `certs` defaults to the workload certificates (mesh mTLS).
 */
export function upstreamTlsSocket(opts: {
  certChain?: string;
  privateKey?: string;
  caCertificates?: string;
  sans?: string[];
  sni?: string;
  alpn?: string[];
}): XdsResource {
  const common: Any = {};
  if (opts.certChain && opts.privateKey) {
    common.tls_certificates = [{
      certificate_chain: { filename: opts.certChain },
      private_key: { filename: opts.privateKey },
    }];
  }
  if (opts.caCertificates || opts.sans?.length) {
    const vc: Any = {};
    if (opts.caCertificates) vc.trusted_ca = { filename: opts.caCertificates };
    if (opts.sans?.length) vc.match_typed_subject_alt_names = spiffeSanMatchers(opts.sans);
    common.validation_context = vc;
  }
  if (opts.alpn?.length) common.alpn_protocols = opts.alpn;
  const ctx: Any = { "@type": EXT_TYPE_URLS.upstreamTls, common_tls_context: common };
  if (opts.sni) ctx.sni = opts.sni;
  return { name: "envoy.transport_sockets.tls", typed_config: ctx };
}

/**
 * ALPN values that mark mesh mTLS: client sidecars offer them (`istio`, plus `h2` on HTTP/2
 * ports) and PERMISSIVE inbound listeners route only connections offering them to the mTLS chain.
 */
export const MESH_MTLS_ALPN = ["istio"] as const;

/**
 * Upstream socket for mesh mTLS (ISTIO_MUTUAL, or mesh/Policy mutual TLS): workload certs, SPIFFE
 * SANs of the service, ALPN `istio` (`istio`, `h2` for HTTP/2 ports).
 */
export function meshMtlsUpstream(sans: string[], http2: boolean, sni?: string): XdsResource {
  return upstreamTlsSocket({
    certChain: WORKLOAD_CERTS.chain,
    privateKey: WORKLOAD_CERTS.key,
    caCertificates: WORKLOAD_CERTS.root,
    sans,
    sni,
    alpn: http2 ? [...MESH_MTLS_ALPN, "h2"] : [...MESH_MTLS_ALPN],
  });
}

/** DownstreamTlsContext transport socket. */
export function downstreamTlsSocket(opts: {
  certChain: string;
  privateKey: string;
  caCertificates?: string;
  requireClientCertificate: boolean;
  sans?: string[];
  alpn?: string[];
}): XdsResource {
  const common: Any = {
    tls_certificates: [{
      certificate_chain: { filename: opts.certChain },
      private_key: { filename: opts.privateKey },
    }],
  };
  if (opts.caCertificates) {
    common.validation_context = { trusted_ca: { filename: opts.caCertificates } };
    if (opts.sans?.length) {
      common.validation_context.match_typed_subject_alt_names = spiffeSanMatchers(opts.sans);
    }
  }
  if (opts.alpn?.length) common.alpn_protocols = opts.alpn;
  const ctx: Any = { "@type": EXT_TYPE_URLS.downstreamTls, common_tls_context: common };
  if (opts.requireClientCertificate) ctx.require_client_certificate = { value: true };
  return { name: "envoy.transport_sockets.tls", typed_config: ctx };
}

/** Downstream socket of an mTLS inbound filter chain (workload certs, ALPN h2/http1.1). */
export function meshMtlsDownstream(requireClientCertificate: boolean): XdsResource {
  return downstreamTlsSocket({
    certChain: WORKLOAD_CERTS.chain,
    privateKey: WORKLOAD_CERTS.key,
    caCertificates: WORKLOAD_CERTS.root,
    requireClientCertificate,
    alpn: ["h2", "http/1.1"],
  });
}
