/**
 * RequestAuthentication (`security.mesh.io/v1beta1`, `security.istio.io/v1beta1`/`v1`) → Envoy's
 * JWT authn filter (`envoy.filters.http.jwt_authn`) on a workload's inbound HTTP listeners, as
 * Istio: a request with a token from a configured issuer must carry a valid one (else 401); a
 * request without a token passes (use an AuthorizationPolicy with `requestPrincipals` to require
 * one). The verified payload is left in dynamic metadata (`envoy.filters.http.jwt_authn`,
 * key `payload`), which AuthorizationPolicy `requestPrincipals` and `request.auth.*` read.
 *
 * `jwks` is given inline; `jwksUri` is fetched by Envoy through the outbound cluster of its host
 * and port (`outbound|443||issuer.example.com`): the host must be a service of the mesh (a
 * ServiceEntry for an outside one).
 * @module
 */

import type { ConfigObject } from "../../model/types.ts";
import { EXT_TYPE_URLS } from "../protos.ts";
import type { PushContext, XdsResource } from "../types.ts";
import { ROOT_NAMESPACE, selectorMatches } from "./peer_authn.ts";
import { msToDuration, outboundClusterName } from "./util.ts";
import { parseDurationMs } from "../../model/values.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

/** The filter's name, also the dynamic-metadata namespace of the verified payload. */
export const JWT_AUTHN_FILTER = "envoy.filters.http.jwt_authn";
/** The dynamic-metadata key of the verified payload. */
export const JWT_PAYLOAD_KEY = "payload";

/** `https://host[:port]/path` → the outbound cluster Envoy fetches the key set through. */
export function jwksCluster(uri: string): string | undefined {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return undefined;
  }
  const port = u.port ? Number(u.port) : u.protocol === "https:" ? 443 : 80;
  return outboundClusterName(port, "", u.hostname);
}

/** The key-set fetch timeout: `timeout` when it parses and is positive, else 5s. */
function timeoutMs(v: unknown): number {
  const ms = typeof v === "string" ? parseDurationMs(v) : undefined;
  return ms !== undefined && ms > 0 ? ms : 5000;
}

/** One `jwtRules` entry → a JwtProvider; undefined when it has no usable key set. */
export function jwtProvider(rule: Any): Any | undefined {
  if (typeof rule?.issuer !== "string" || !rule.issuer) return undefined;
  const p: Any = { issuer: rule.issuer, payload_in_metadata: JWT_PAYLOAD_KEY };
  const aud = Array.isArray(rule.audiences)
    ? rule.audiences.filter((a: unknown) => typeof a === "string")
    : [];
  if (aud.length) p.audiences = aud;
  if (typeof rule.jwks === "string" && rule.jwks) {
    p.local_jwks = { inline_string: rule.jwks };
  } else if (typeof rule.jwksUri === "string" && rule.jwksUri) {
    const cluster = jwksCluster(rule.jwksUri);
    if (!cluster) return undefined;
    p.remote_jwks = {
      http_uri: { uri: rule.jwksUri, cluster, timeout: msToDuration(timeoutMs(rule.timeout)) },
      cache_duration: { seconds: 300 },
    };
  } else return undefined;
  const headers = Array.isArray(rule.fromHeaders) ? rule.fromHeaders : [];
  if (headers.length) {
    p.from_headers = headers.filter((h: Any) => typeof h?.name === "string").map((h: Any) => ({
      name: h.name,
      ...(typeof h.prefix === "string" && h.prefix ? { value_prefix: h.prefix } : {}),
    }));
  }
  const params = Array.isArray(rule.fromParams) ? rule.fromParams : [];
  if (params.length) p.from_params = params.filter((x: unknown) => typeof x === "string");
  const cookies = Array.isArray(rule.fromCookies) ? rule.fromCookies : [];
  if (cookies.length) p.from_cookies = cookies.filter((x: unknown) => typeof x === "string");
  if (rule.forwardOriginalToken === true) p.forward = true;
  if (typeof rule.outputPayloadToHeader === "string" && rule.outputPayloadToHeader) {
    p.forward_payload_header = rule.outputPayloadToHeader;
  }
  const claims = Array.isArray(rule.outputClaimToHeaders) ? rule.outputClaimToHeaders : [];
  if (claims.length) {
    p.claim_to_headers = claims.map((c: Any) => ({ header_name: c.header, claim_name: c.claim }));
  }
  return p;
}

/** The RequestAuthentications of a workload (its namespace's, the root namespace's), by name. */
function requestAuthnsFor(
  ctx: PushContext,
  namespace: string,
  labels: Record<string, string>,
): ConfigObject[] {
  return (ctx.configs.requestAuthentications ?? []).filter((r) => {
    const ns = r.metadata.namespace ?? "";
    return (ns === namespace || ns === ROOT_NAMESPACE) &&
      selectorMatches((r.spec as Any)?.selector, labels);
  }).sort((a, b) => {
    const ka = `${a.metadata.namespace ?? ""}/${a.metadata.name}`;
    const kb = `${b.metadata.namespace ?? ""}/${b.metadata.name}`;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
}

/**
 * The `envoy.filters.http.jwt_authn` HTTP filter of a workload (namespace, labels), undefined
 * when no RequestAuthentication with a usable rule applies. Providers are named
 * `origins-<n>`; every request may carry a token of any of them or none.
 */
export function jwtAuthnFilter(
  ctx: PushContext,
  namespace: string,
  labels: Record<string, string>,
): XdsResource | undefined {
  const providers: Record<string, Any> = {};
  let n = 0;
  for (const ra of requestAuthnsFor(ctx, namespace, labels)) {
    for (const rule of Array.isArray((ra.spec as Any)?.jwtRules) ? (ra.spec as Any).jwtRules : []) {
      const p = jwtProvider(rule);
      if (p) providers[`origins-${n++}`] = p;
    }
  }
  if (n === 0) return undefined;
  return {
    name: JWT_AUTHN_FILTER,
    typed_config: {
      "@type": EXT_TYPE_URLS.jwtAuthn,
      providers,
      rules: [{
        match: { prefix: "/" },
        requires: {
          requires_any: {
            requirements: [
              ...Object.keys(providers).map((provider_name) => ({ provider_name })),
              { allow_missing: {} },
            ],
          },
        },
      }],
    },
  };
}
