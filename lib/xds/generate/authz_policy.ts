/**
 * AuthorizationPolicy (`security.mesh.io/v1beta1`, `security.istio.io/v1beta1`/`v1`) → RBAC HTTP
 * filters of a workload's inbound listener, as Istio builds them: one filter per action, in the
 * order AUDIT (Envoy action `LOG`), DENY, ALLOW. A policy applies to the workloads of its
 * namespace its `selector.matchLabels` selects (no selector: all of them); a policy in the root
 * namespace `mesh-system` applies to every workload. Each rule becomes one Envoy policy named
 * `ns[<ns>]-policy[<name>]-rule[<i>]`: `to` operations and destination conditions are its
 * permissions, `from` sources and the other conditions its principals.
 *
 * ALLOW: when at least one ALLOW policy applies, a request must match one of their rules (an
 * ALLOW policy without rules denies everything); the policies of Istio 0.8's ServiceRoles
 * (rbac.ts) join the same ALLOW filter. DENY: a request matching a rule is denied first.
 *
 * Proxyless gRPC servers (gRFC A41) get DENY and ALLOW only (no `LOG` action); request
 * principals and `request.auth.*` conditions never match there (gRPC has no JWT filter).
 * @module
 */

import type { ConfigObject, Service, ServiceInstance } from "../../model/types.ts";
import { EXT_TYPE_URLS } from "../protos.ts";
import type { PushContext, XdsResource } from "../types.ts";
import { hostNamespace } from "./util.ts";
import { ROOT_NAMESPACE, selectorMatches } from "./peer_authn.ts";
import { cidr, principalName, wildcardMatcher } from "./rbac.ts";
import { JWT_AUTHN_FILTER, JWT_PAYLOAD_KEY, jwtAuthnFilter } from "./request_authn.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

/** Names of the RBAC filters by action (gRPC wants filter names unique within a listener). */
export const AUTHZ_FILTER_NAMES = {
  AUDIT: "envoy.filters.http.rbac.audit",
  DENY: "envoy.filters.http.rbac.deny",
  ALLOW: "envoy.filters.http.rbac",
} as const;

const ANY_ID = { any: true };
const NEVER_ID = { not_id: { any: true } };

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];

function orIds(ids: Any[]): Any {
  return ids.length === 1 ? ids[0] : { or_ids: { ids } };
}
function orRules(rules: Any[]): Any {
  return rules.length === 1 ? rules[0] : { or_rules: { rules } };
}
function andIds(ids: Any[]): Any {
  if (ids.length === 0) return ANY_ID;
  return ids.length === 1 ? ids[0] : { and_ids: { ids } };
}
function andRules(rules: Any[]): Any {
  if (rules.length === 0) return { any: true };
  return rules.length === 1 ? rules[0] : { and_rules: { rules } };
}

function regexEscape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** A namespace (`*`, `pre*`, `*suf` allowed) → a principal matching the peer's SPIFFE id. */
function namespaceId(ns: string): Any {
  const pattern = ns === "*" ? "[^/]+" : ns.split("*").map(regexEscape).join("[^/]*");
  return {
    authenticated: { principal_name: { safe_regex: { regex: `.*/ns/${pattern}/.*` } } },
  };
}

function peerId(p: string): Any {
  return { authenticated: { principal_name: wildcardMatcher(principalName(p)) } };
}

function headerId(name: string, v: string): Any {
  // `*`: the header is present (with any value, empty too), as Istio writes it
  if (v === "*") return { header: { name: name.toLowerCase(), present_match: true } };
  return { header: { name: name.toLowerCase(), string_match: wildcardMatcher(v) } };
}

function remoteIp(v: string): Any {
  const d = cidr(v).direct_remote_ip;
  return { remote_ip: d };
}

/** A matcher on the JWT payload the `jwt_authn` filter leaves in dynamic metadata. */
function claimId(path: string[], v: string, proxyless: boolean): Any {
  if (proxyless) return NEVER_ID;
  const sm = wildcardMatcher(v);
  const at = {
    filter: JWT_AUTHN_FILTER,
    path: [{ key: JWT_PAYLOAD_KEY }, ...path.map((key) => ({ key }))],
  };
  return orIds([
    { metadata: { ...at, value: { string_match: sm } } },
    { metadata: { ...at, value: { list_match: { one_of: { string_match: sm } } } } },
  ]);
}

/** `iss/sub` (`*` any, `iss/*`) → a match on both claims. */
function requestPrincipalId(v: string, proxyless: boolean): Any {
  if (proxyless) return NEVER_ID;
  if (v === "*") {
    return {
      metadata: {
        filter: JWT_AUTHN_FILTER,
        path: [{ key: JWT_PAYLOAD_KEY }, { key: "iss" }],
        value: { present_match: true },
      },
    };
  }
  const slash = v.lastIndexOf("/");
  const iss = slash < 0 ? v : v.slice(0, slash);
  const sub = slash < 0 ? "*" : v.slice(slash + 1);
  return andIds([
    claimId(["iss"], iss, false),
    ...(sub === "*" ? [] : [claimId(["sub"], sub, false)]),
  ]);
}

/** `values` (any of them) and `notValues` (none of them) of one field → ids. */
function field(values: string[], notValues: string[], one: (v: string) => Any): Any[] {
  const out: Any[] = [];
  if (values.length) out.push(orIds(values.map(one)));
  if (notValues.length) out.push({ not_id: orIds(notValues.map(one)) });
  return out;
}
function fieldRules(values: string[], notValues: string[], one: (v: string) => Any): Any[] {
  const out: Any[] = [];
  if (values.length) out.push(orRules(values.map(one)));
  if (notValues.length) out.push({ not_rule: orRules(notValues.map(one)) });
  return out;
}

function sourceId(s: Any, proxyless: boolean): Any {
  return andIds([
    ...field(strings(s.principals), strings(s.notPrincipals), peerId),
    ...field(
      strings(s.requestPrincipals),
      strings(s.notRequestPrincipals),
      (v) => requestPrincipalId(v, proxyless),
    ),
    ...field(strings(s.namespaces), strings(s.notNamespaces), namespaceId),
    ...field(strings(s.ipBlocks), strings(s.notIpBlocks), cidr),
    ...field(strings(s.remoteIpBlocks), strings(s.notRemoteIpBlocks), remoteIp),
  ]);
}

function pathRule(p: string): Any {
  return p === "*" ? { any: true } : { url_path: { path: wildcardMatcher(p) } };
}

function operationRule(o: Any): Any {
  return andRules([
    ...fieldRules(strings(o.hosts), strings(o.notHosts), (h) => ({
      header: { name: ":authority", string_match: { ...wildcardMatcher(h), ignore_case: true } },
    })),
    ...fieldRules(strings(o.ports), strings(o.notPorts), (p) => ({ destination_port: Number(p) })),
    ...fieldRules(
      strings(o.methods),
      strings(o.notMethods),
      (m) =>
        m === "*" ? { any: true } : { header: { name: ":method", string_match: { exact: m } } },
    ),
    ...fieldRules(strings(o.paths), strings(o.notPaths), pathRule),
  ]);
}

/** A `when` condition on the destination → a permission; undefined for a principal's key. */
function conditionRule(key: string): ((v: string) => Any) | undefined {
  switch (key) {
    case "destination.port":
      return (v) => ({ destination_port: Number(v) });
    case "destination.ip":
      return (v) => ({ destination_ip: cidr(v).direct_remote_ip });
    case "connection.sni":
      return (v) => ({ requested_server_name: wildcardMatcher(v) });
  }
  return undefined;
}

/** A `when` condition on the source or request → a principal. */
function conditionId(key: string, proxyless: boolean): (v: string) => Any {
  const header = /^request\.headers\[(.+)\]$/.exec(key);
  if (header) return (v) => headerId(header[1], v);
  const claim = /^request\.auth\.claims\[(.+)\]$/.exec(key);
  // nested claims are written `claims[a][b]` (Istio) or `claims[a.b]`... Istio takes `][`
  if (claim) return (v) => claimId(claim[1].split("]["), v, proxyless);
  switch (key) {
    case "source.ip":
      return cidr;
    case "remote.ip":
      return remoteIp;
    case "source.namespace":
      return namespaceId;
    case "source.principal":
      return peerId;
    case "request.auth.principal":
      return (v) => requestPrincipalId(v, proxyless);
    case "request.auth.audiences":
      return (v) => claimId(["aud"], v, proxyless);
    case "request.auth.presenter":
      return (v) => claimId(["azp"], v, proxyless);
  }
  return () => NEVER_ID;
}

/** One rule → an Envoy RBAC policy (permissions, principals). */
export function rulePolicy(rule: Any, proxyless: boolean): Any {
  const perms: Any[] = [];
  const ids: Any[] = [];
  const to = Array.isArray(rule?.to) ? rule.to : [];
  if (to.length) perms.push(orRules(to.map((t: Any) => operationRule(t?.operation ?? {}))));
  const from = Array.isArray(rule?.from) ? rule.from : [];
  if (from.length) ids.push(orIds(from.map((f: Any) => sourceId(f?.source ?? {}, proxyless))));
  for (const c of Array.isArray(rule?.when) ? rule.when : []) {
    const key = String(c?.key ?? "");
    const dest = conditionRule(key);
    if (dest) perms.push(...fieldRules(strings(c.values), strings(c.notValues), dest));
    else ids.push(...field(strings(c.values), strings(c.notValues), conditionId(key, proxyless)));
  }
  return { permissions: [andRules(perms)], principals: [andIds(ids)] };
}

/** The AuthorizationPolicies that apply to a workload (namespace, labels), oldest first. */
export function policiesFor(
  ctx: PushContext,
  namespace: string,
  labels: Record<string, string>,
): ConfigObject[] {
  return (ctx.configs.authorizationPolicies ?? [])
    .filter((p) => {
      const ns = p.metadata.namespace ?? "";
      return (ns === namespace || ns === ROOT_NAMESPACE) &&
        selectorMatches((p.spec as Any)?.selector, labels);
    })
    .sort((a, b) => {
      const ka = `${a.metadata.namespace ?? ""}/${a.metadata.name}`;
      const kb = `${b.metadata.namespace ?? ""}/${b.metadata.name}`;
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
}

/** Envoy RBAC `policies` of the given action's policies; undefined when none applies. */
function policiesOf(applying: ConfigObject[], action: string, proxyless: boolean) {
  const of = applying.filter((p) => ((p.spec as Any)?.action ?? "ALLOW") === action);
  if (!of.length) return undefined;
  const out: Record<string, Any> = {};
  for (const p of of) {
    const rules = Array.isArray((p.spec as Any)?.rules) ? (p.spec as Any).rules : [];
    rules.forEach((r: Any, i: number) => {
      out[`ns[${p.metadata.namespace ?? ""}]-policy[${p.metadata.name}]-rule[${i}]`] = rulePolicy(
        r ?? {},
        proxyless,
      );
    });
  }
  return out;
}

const LEGACY_FIELDS: Record<string, string> = {
  exact: "exact_match",
  prefix: "prefix_match",
  suffix: "suffix_match",
  safe_regex: "safe_regex_match",
};

/**
 * Header matchers of RBAC rules in the older oneof fields (`exact_match`...): gRPC clients
 * before gRFC A63 (C-core 1.51) NACK `string_match` (see node.ts `headerMatcherForm`).
 */
export function legacyHeaderMatchers(v: Any): Any {
  if (Array.isArray(v)) return v.map(legacyHeaderMatchers);
  if (!v || typeof v !== "object") return v;
  const out: Any = {};
  for (const [k, x] of Object.entries(v)) {
    const h = x as Any;
    if (k === "header" && h?.string_match) {
      // the older fields have no ignore_case: hosts are compared as written (lower case)
      const [kind, value] = Object.entries(h.string_match).filter(([f]) => f !== "ignore_case")[0];
      out.header = { name: h.name, [LEGACY_FIELDS[kind] ?? kind]: value };
    } else out[k] = legacyHeaderMatchers(x);
  }
  return out;
}

function rbacFilter(name: string, action: string, policies: Record<string, Any>): XdsResource {
  return {
    name,
    typed_config: { "@type": EXT_TYPE_URLS.rbac, rules: { action, policies } },
  };
}

/**
 * The authorization HTTP filters of a workload serving `svc` (its `instance`: namespace and
 * labels): the JWT authn filter of its RequestAuthentications (Envoy only), then RBAC filters
 * AUDIT, DENY, ALLOW (see the module doc). `serviceRoles` is the ALLOW config of Istio 0.8's
 * ServiceRoles for the workload (rbac.ts `rbacConfig`), merged into the ALLOW filter. With
 * `legacyHeaders` (gRPC clients before gRFC A63) header matchers use the older fields.
 */
export function authzHttpFilters(
  ctx: PushContext,
  svc: Service,
  instance: ServiceInstance | undefined,
  serviceRoles: XdsResource | undefined,
  proxyless: boolean,
  legacyHeaders = false,
): XdsResource[] {
  const ns = svc.namespace || hostNamespace(svc.hostname);
  const labels = instance?.labels ?? {};
  const out: XdsResource[] = [];
  if (!proxyless) {
    const jwt = jwtAuthnFilter(ctx, ns, labels);
    if (jwt) out.push(jwt);
  }
  const applying = policiesFor(ctx, ns, labels);
  const audit = proxyless ? undefined : policiesOf(applying, "AUDIT", proxyless);
  if (audit && Object.keys(audit).length) {
    out.push(rbacFilter(AUTHZ_FILTER_NAMES.AUDIT, "LOG", audit));
  }
  const deny = policiesOf(applying, "DENY", proxyless);
  if (deny && Object.keys(deny).length) out.push(rbacFilter(AUTHZ_FILTER_NAMES.DENY, "DENY", deny));
  const allow = policiesOf(applying, "ALLOW", proxyless);
  if (allow || serviceRoles) {
    out.push(rbacFilter(AUTHZ_FILTER_NAMES.ALLOW, "ALLOW", {
      ...(serviceRoles?.rules?.policies ?? {}),
      ...(allow ?? {}),
    }));
  }
  return legacyHeaders ? legacyHeaderMatchers(out) : out;
}
