/**
 * ServiceRole / ServiceRoleBinding (§7.5) → the `envoy.filters.http.rbac` filter of a service's
 * inbound HTTP listener.
 * @module
 */

import type { Service } from "../../model/types.ts";
import { EXT_TYPE_URLS } from "../protos.ts";
import type { PushContext, XdsResource } from "../types.ts";
import { hostNamespace } from "./util.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

/** True when a ServiceRole `services` entry names `host` (exact, short name, `*`, `pre*`, `*suf`). */
export function serviceNameMatches(pattern: string, host: string): boolean {
  if (pattern === "*" || pattern === host) return true;
  if (pattern === host.split(".")[0]) return true;
  if (pattern.endsWith("*")) return host.startsWith(pattern.slice(0, -1));
  if (pattern.startsWith("*")) return host.endsWith(pattern.slice(1));
  return false;
}

/** `*`, `pre*`, `*suf` or exact → StringMatcher. */
export function wildcardMatcher(v: string): Any {
  if (v === "*") return { safe_regex: { regex: ".+" } };
  if (v.endsWith("*")) return { prefix: v.slice(0, -1) };
  if (v.startsWith("*")) return { suffix: v.slice(1) };
  return { exact: v };
}

const NEVER = { not_rule: { any: true } };
const NEVER_ID = { not_id: { any: true } };

function orRules(rules: Any[]): Any {
  return rules.length === 1 ? rules[0] : { or_rules: { rules } };
}

function headerMatch(name: string, v: string): Any {
  return { header: { name, string_match: wildcardMatcher(v) } };
}

function permissionOf(rule: Any): Any {
  const and: Any[] = [];
  const paths = Array.isArray(rule.paths)
    ? rule.paths.filter((p: unknown) => typeof p === "string")
    : [];
  if (paths.length && !paths.includes("*")) {
    and.push(orRules(paths.map((p: string) => ({ url_path: { path: wildcardMatcher(p) } }))));
  }
  const methods = Array.isArray(rule.methods)
    ? rule.methods.filter((m: unknown) => typeof m === "string")
    : [];
  if (methods.length && !methods.includes("*")) {
    and.push(orRules(methods.map((m: string) => headerMatch(":method", m))));
  }
  for (const c of Array.isArray(rule.constraints) ? rule.constraints : []) {
    const values = Array.isArray(c?.values)
      ? c.values.filter((v: unknown) => typeof v === "string")
      : [];
    if (!values.length) continue;
    const key = String(c.key ?? "");
    const hm = /^request\.headers\[(.+)\]$/.exec(key);
    if (key === "destination.port") {
      and.push(orRules(values.map((v: string) => ({ destination_port: Number(v) }))));
    } else if (hm) {
      and.push(orRules(values.map((v: string) => headerMatch(hm[1].toLowerCase(), v))));
    } else {
      and.push(NEVER);
    }
  }
  if (and.length === 0) return { any: true };
  return and.length === 1 ? and[0] : { and_rules: { rules: and } };
}

/** An IP or CIDR block → the `direct_remote_ip` principal. */
export function cidr(v: string): Any {
  const [ip, len] = v.split("/");
  return {
    direct_remote_ip: {
      address_prefix: ip,
      prefix_len: { value: len !== undefined ? Number(len) : ip.includes(":") ? 128 : 32 },
    },
  };
}

/**
 * The peer identity Envoy compares: the URI SAN of the client certificate,
 * `spiffe://<trust domain>/ns/<ns>/sa/<sa>`. Istio writes users without the scheme
 * (`cluster.local/ns/default/sa/world`) and adds `spiffe://`; a value that already has a scheme
 * stays as written. `*` stays any; `*suffix` needs no prefix.
 */
export function principalName(v: string): string {
  if (v === "*" || v.startsWith("*") || /^[a-z][a-z0-9+.-]*:\/\//i.test(v)) return v;
  return `spiffe://${v}`;
}

function authenticated(v: string): Any {
  if (v === "*") return { any: true };
  return { authenticated: { principal_name: wildcardMatcher(principalName(v)) } };
}

function principalOf(subject: Any): Any {
  const and: Any[] = [];
  if (typeof subject.user === "string") and.push(authenticated(subject.user));
  if (typeof subject.group === "string") {
    and.push(subject.group === "*" ? { any: true } : NEVER_ID);
  }
  for (const [k, v] of Object.entries(subject.properties ?? {})) {
    if (typeof v !== "string") continue;
    const hm = /^request\.headers\[(.+)\]$/.exec(k);
    if (k === "source.principal" || k === "source.user") {
      and.push(authenticated(v));
    } else if (k === "source.namespace") {
      and.push({
        authenticated: {
          principal_name: {
            safe_regex: { regex: `.*/ns/${v.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/.*` },
          },
        },
      });
    } else if (k === "source.ip") {
      and.push(cidr(v));
    } else if (hm) {
      and.push(headerMatch(hm[1].toLowerCase(), v));
    } else {
      and.push(NEVER_ID);
    }
  }
  if (and.length === 0) return { any: true };
  return and.length === 1 ? and[0] : { and_ids: { ids: and } };
}

/**
 * RBAC filter config for a service, or undefined when no ServiceRole of the service's namespace
 * names it. Policies are named after the ServiceRole; a role without bindings grants nothing.
 */
export function rbacConfig(ctx: PushContext, svc: Service): XdsResource | undefined {
  const ns = svc.namespace || hostNamespace(svc.hostname);
  const roles = (ctx.configs.serviceRoles ?? []).filter((r) => (r.metadata.namespace ?? "") === ns)
    .sort((a, b) => a.metadata.name < b.metadata.name ? -1 : 1);
  const policies: Record<string, Any> = {};
  let applies = false;
  for (const role of roles) {
    const rules = (Array.isArray((role.spec as Any)?.rules) ? (role.spec as Any).rules : [])
      .filter((r: Any) =>
        Array.isArray(r?.services) &&
        r.services.some((s: unknown) =>
          typeof s === "string" && serviceNameMatches(s, svc.hostname)
        )
      );
    if (!rules.length) continue;
    applies = true;
    const principals: Any[] = [];
    for (const b of ctx.configs.serviceRoleBindings ?? []) {
      if ((b.metadata.namespace ?? "") !== ns) continue;
      const spec = b.spec as Any;
      if (spec?.roleRef?.name !== role.metadata.name) continue;
      if (spec.roleRef.kind && spec.roleRef.kind !== "ServiceRole") continue;
      for (const s of Array.isArray(spec.subjects) ? spec.subjects : []) {
        if (s && typeof s === "object") principals.push(principalOf(s));
      }
    }
    if (!principals.length) continue;
    policies[role.metadata.name] = { permissions: rules.map(permissionOf), principals };
  }
  if (!applies) return undefined;
  return { "@type": EXT_TYPE_URLS.rbac, rules: { action: "ALLOW", policies } };
}
