/**
 * AuthorizationPolicy decisions (`security.mesh.io`, `security.istio.io` v1beta1/v1) for
 * `meshctl experimental rbac can`, with the semantics of the generated RBAC filters
 * (lib/xds/generate/authz_policy.ts): a matching DENY rule denies; else, when an ALLOW policy
 * (or a ServiceRole naming the service) applies, a request must match one of them; else it is
 * allowed.
 *
 * The request's attributes: `source.principal` is the subject user
 * (`cluster.local/ns/default/sa/world`) unless a subject property sets it; `source.namespace`
 * is a subject property or read from the principal (`/ns/<ns>/`); `source.ip`, `remote.ip`,
 * `request.auth.principal` (`<iss>/<sub>`), `request.auth.audiences`, `request.auth.presenter`
 * and `request.auth.claims[<name>]` are subject properties; `request.headers[<name>]`,
 * `destination.port`, `destination.ip`, `connection.sni` and `destination.labels[<name>]` are
 * action properties. Workload selectors compare `destination.labels[...]`, where `app` defaults
 * to the service's short name. `to.operation.hosts` compare the service name.
 *
 * @example
 * ```ts
 * import { decideAuthz } from "./authz_policy.ts";
 * const d = decideAuthz([], [], [], {
 *   subject: { user: "cluster.local/ns/default/sa/world", groups: "", properties: {} },
 *   action: { namespace: "default", service: "hello", method: "GET", path: "/", properties: {} },
 * });
 * d.allowed; // true: no policy applies
 * ```
 * @module
 */

import type { ConfigObject } from "../model/types.ts";
import { decide, type RbacDecision, type RbacRequest, stringMatch } from "./mod.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

/** The namespace whose policies apply to every workload. */
const ROOT_NAMESPACE = "mesh-system";

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];

function inCidr(cidr: string, ip: string): boolean {
  const [net, lenText] = cidr.split("/");
  const toBits = (a: string): string | undefined => {
    const parts = a.split(".");
    if (parts.length !== 4) return undefined; // IPv6: compared as written
    return parts.map((p) => Number(p).toString(2).padStart(8, "0")).join("");
  };
  const a = toBits(net), b = toBits(ip);
  if (!a || !b) return net === ip;
  const len = lenText === undefined ? 32 : Number(lenText);
  return a.slice(0, len) === b.slice(0, len);
}

/** The attributes of a request, by condition key. */
function attributes(req: RbacRequest): (key: string) => string | undefined {
  const sp = req.subject.properties;
  const ap = req.action.properties;
  const principal = sp["source.principal"] ?? (req.subject.user || undefined);
  const ns = sp["source.namespace"] ?? /\/ns\/([^/]+)\//.exec(principal ?? "")?.[1];
  return (key) => {
    if (key === "source.principal") return principal;
    if (key === "source.namespace") return ns;
    const header = /^request\.headers\[(.+)\]$/.exec(key);
    if (header) {
      const name = header[1].toLowerCase();
      const k = Object.keys(ap).find((x) => x.toLowerCase() === `request.headers[${name}]`);
      return k === undefined ? undefined : ap[k];
    }
    return sp[key] ?? ap[key];
  };
}

function labelsOf(req: RbacRequest): Record<string, string> {
  const out: Record<string, string> = { app: req.action.service.split(".")[0] };
  for (const [k, v] of Object.entries(req.action.properties)) {
    const m = /^destination\.labels\[(.+)\]$/.exec(k);
    if (m) out[m[1]] = v;
  }
  return out;
}

/** `values` any / `notValues` none, of one attribute (`match` compares one pattern). */
function fieldOk(
  values: string[],
  notValues: string[],
  v: string | undefined,
  match: (pattern: string, v: string) => boolean = stringMatch,
): boolean {
  if (values.length && (v === undefined || !values.some((p) => match(p, v)))) return false;
  if (notValues.length && v !== undefined && notValues.some((p) => match(p, v))) return false;
  return true;
}

const nsMatch = (p: string, v: string) => stringMatch(p, v);
const principalMatch = (p: string, v: string) =>
  stringMatch(p.replace(/^spiffe:\/\//, ""), v.replace(/^spiffe:\/\//, ""));

const requestPrincipalMatch = stringMatch;

function sourceOk(s: Any, attr: (k: string) => string | undefined): boolean {
  return fieldOk(
    strings(s.principals),
    strings(s.notPrincipals),
    attr("source.principal"),
    principalMatch,
  ) &&
    fieldOk(
      strings(s.requestPrincipals),
      strings(s.notRequestPrincipals),
      attr("request.auth.principal"),
      requestPrincipalMatch,
    ) &&
    fieldOk(strings(s.namespaces), strings(s.notNamespaces), attr("source.namespace"), nsMatch) &&
    fieldOk(strings(s.ipBlocks), strings(s.notIpBlocks), attr("source.ip"), inCidr) &&
    fieldOk(strings(s.remoteIpBlocks), strings(s.notRemoteIpBlocks), attr("remote.ip"), inCidr);
}

function operationOk(o: Any, req: RbacRequest, attr: (k: string) => string | undefined): boolean {
  const a = req.action;
  return fieldOk(
    strings(o.hosts),
    strings(o.notHosts),
    a.service,
    (p, v) =>
      stringMatch(p.toLowerCase(), v.toLowerCase()) ||
      stringMatch(p.toLowerCase(), v.split(".")[0].toLowerCase()),
  ) &&
    fieldOk(strings(o.ports), strings(o.notPorts), attr("destination.port"), (p, v) => p === v) &&
    fieldOk(strings(o.methods), strings(o.notMethods), a.method) &&
    fieldOk(strings(o.paths), strings(o.notPaths), a.path);
}

function conditionOk(c: Any, attr: (k: string) => string | undefined): boolean {
  const key = String(c?.key ?? "");
  const match = key === "source.ip" || key === "remote.ip" || key === "destination.ip"
    ? inCidr
    : key === "source.principal"
    ? principalMatch
    : stringMatch;
  return fieldOk(strings(c.values), strings(c.notValues), attr(key), match);
}

function ruleOk(r: Any, req: RbacRequest, attr: (k: string) => string | undefined): boolean {
  const from = Array.isArray(r?.from) ? r.from : [];
  if (from.length && !from.some((f: Any) => sourceOk(f?.source ?? {}, attr))) return false;
  const to = Array.isArray(r?.to) ? r.to : [];
  if (to.length && !to.some((t: Any) => operationOk(t?.operation ?? {}, req, attr))) return false;
  const when = Array.isArray(r?.when) ? r.when : [];
  return when.every((c: Any) => conditionOk(c, attr));
}

/** The first matching rule of the policies, as `<ns>/<name> rule <i>`. */
function firstMatch(
  policies: readonly ConfigObject[],
  req: RbacRequest,
  attr: (k: string) => string | undefined,
): string | undefined {
  for (const p of policies) {
    const rules = Array.isArray((p.spec as Any)?.rules) ? (p.spec as Any).rules : [];
    const i = rules.findIndex((r: Any) => ruleOk(r ?? {}, req, attr));
    if (i >= 0) return `${p.metadata.namespace ?? ""}/${p.metadata.name} rule ${i}`;
  }
  return undefined;
}

function namesService(role: ConfigObject, service: string): boolean {
  const rules = Array.isArray((role.spec as Any)?.rules) ? (role.spec as Any).rules : [];
  return rules.some((r: Any) => strings(r?.services).some((s) => stringMatch(s, service)));
}

/**
 * Decides a request against AuthorizationPolicies and Istio 0.8's ServiceRoles/bindings of the
 * action's namespace (and policies of the root namespace `mesh-system`). Without any
 * AuthorizationPolicy that applies this is {@link decide}, unchanged.
 */
export function decideAuthz(
  policies: readonly ConfigObject[],
  roles: readonly ConfigObject[],
  bindings: readonly ConfigObject[],
  req: RbacRequest,
): RbacDecision {
  const a = req.action;
  const labels = labelsOf(req);
  const applying = policies.filter((p) => {
    const ns = p.metadata.namespace ?? "";
    if (ns !== a.namespace && ns !== ROOT_NAMESPACE) return false;
    const ml = (p.spec as Any)?.selector?.matchLabels ?? {};
    return Object.entries(ml).every(([k, v]) => labels[k] === v);
  }).sort((x, y) => {
    const kx = `${x.metadata.namespace}/${x.metadata.name}`;
    const ky = `${y.metadata.namespace}/${y.metadata.name}`;
    return kx < ky ? -1 : kx > ky ? 1 : 0;
  });
  if (!applying.length) return decide(roles, bindings, req);
  const attr = attributes(req);
  const of = (action: string) =>
    applying.filter((p) => ((p.spec as Any)?.action ?? "ALLOW") === action);
  const denied = firstMatch(of("DENY"), req, attr);
  if (denied) return { allowed: false, reason: `denied by ${denied}` };
  const allows = of("ALLOW");
  const roleApplies = roles.some((r) =>
    r.metadata.namespace === a.namespace && namesService(r, a.service)
  );
  if (!allows.length && !roleApplies) return { allowed: true, reason: "no ALLOW policy applies" };
  const allowed = firstMatch(allows, req, attr);
  if (allowed) return { allowed: true, reason: `allowed by ${allowed}` };
  if (roleApplies) {
    const d = decide(roles, bindings, req);
    if (d.allowed) return d;
  }
  return { allowed: false, reason: "no ALLOW policy or role matches" };
}
