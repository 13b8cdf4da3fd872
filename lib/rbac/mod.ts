/**
 * RBAC decisions over ServiceRole and ServiceRoleBinding objects (reference §5.10), shared by
 * the `rbac` adapter of mesh-policy and `meshctl experimental rbac can`.
 *
 * @example
 * ```ts
 * import { decide } from "./mod.ts";
 * const d = decide([], [], {
 *   subject: { user: "alice", groups: "", properties: {} },
 *   action: { namespace: "default", service: "reviews", method: "GET", path: "/", properties: {} },
 * });
 * d.allowed; // false
 * ```
 * @module
 */

import type { ConfigObject } from "../model/types.ts";

/** One rule of a ServiceRole. */
export interface RoleRule {
  services?: string[];
  paths?: string[];
  methods?: string[];
  constraints?: { key: string; values: string[] }[];
}

/** One subject of a ServiceRoleBinding. */
export interface BindingSubject {
  user?: string;
  group?: string;
  properties?: Record<string, string>;
}

/** The request: an `authorization` instance. */
export interface RbacRequest {
  subject: { user: string; groups: string; properties: Record<string, string> };
  action: {
    namespace: string;
    service: string;
    method: string;
    path: string;
    properties: Record<string, string>;
  };
}

/** The decision and why. */
export interface RbacDecision {
  allowed: boolean;
  /** `role/binding` that allowed, or why the request was denied. */
  reason: string;
}

/** `*`, `abc*` (prefix), `*abc` (suffix), else exact. */
export function stringMatch(pattern: string, value: string): boolean {
  if (pattern === "*") return true;
  if (pattern.endsWith("*")) return value.startsWith(pattern.slice(0, -1));
  if (pattern.startsWith("*")) return value.endsWith(pattern.slice(1));
  return pattern === value;
}

const anyMatch = (patterns: string[] | undefined, v: string) =>
  (patterns ?? []).some((p) => stringMatch(p, v));

function ruleMatches(r: RoleRule, a: RbacRequest["action"]): boolean {
  if (!anyMatch(r.services, a.service)) return false;
  if (r.paths?.length && !anyMatch(r.paths, a.path)) return false;
  if (!anyMatch(r.methods, a.method)) return false;
  return (r.constraints ?? []).every((c) =>
    Object.hasOwn(a.properties, c.key) && anyMatch(c.values, a.properties[c.key])
  );
}

function subjectMatches(s: BindingSubject, sub: RbacRequest["subject"]): boolean {
  let matched = false;
  if (s.user) {
    if (s.user !== "*" && s.user !== sub.user) return false;
    matched = true;
  }
  if (s.group) {
    if (s.group !== "*" && s.group !== sub.groups) return false;
    matched = true;
  }
  const props = Object.entries(s.properties ?? {});
  if (props.length && props.every(([k, v]) => sub.properties[k] === v)) matched = true;
  return matched;
}

/**
 * Decides a request against the roles and bindings given (objects of other namespaces than the
 * action's are ignored). Missing namespace, service, path or method deny.
 */
export function decide(
  roles: readonly ConfigObject[],
  bindings: readonly ConfigObject[],
  req: RbacRequest,
): RbacDecision {
  const a = req.action;
  for (const f of ["namespace", "service", "path", "method"] as const) {
    if (!a[f]) return { allowed: false, reason: `missing action ${f}` };
  }
  for (const role of roles) {
    if (role.metadata.namespace !== a.namespace) continue;
    const rules = (role.spec.rules ?? []) as RoleRule[];
    if (!rules.some((r) => ruleMatches(r, a))) continue;
    for (const b of bindings) {
      if (b.metadata.namespace !== a.namespace) continue;
      const ref = b.spec.roleRef as { kind?: string; name?: string } | undefined;
      if (ref?.kind !== "ServiceRole" || ref.name !== role.metadata.name) continue;
      const subjects = (b.spec.subjects ?? []) as BindingSubject[];
      if (subjects.some((s) => subjectMatches(s, req.subject))) {
        return { allowed: true, reason: `${role.metadata.name}/${b.metadata.name}` };
      }
    }
  }
  return { allowed: false, reason: "no role and binding match" };
}

/** Parses `k=v,k2=v2` items (repeatable flags) into properties. */
export function parseProperties(items: readonly string[], what: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    for (const part of item.split(",")) {
      if (part === "") continue;
      const eq = part.indexOf("=");
      if (eq <= 0) throw new Error(`Invalid ${what} "${part}": want name=value`);
      out[part.slice(0, eq)] = part.slice(eq + 1);
    }
  }
  return out;
}
