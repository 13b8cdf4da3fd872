/**
 * The `rbac` adapter: authorization instances decided against the ServiceRoles and
 * ServiceRoleBindings of the configuration (`lib/rbac`).
 * @module
 */

import { decide } from "../../../lib/rbac/mod.ts";
import { Params } from "./params.ts";
import { type Adapter, Code } from "./types.ts";

const str = (v: unknown) => (typeof v === "string" ? v : "");
const strMap = (v: unknown): Record<string, string> =>
  Object.fromEntries(
    Object.entries((v ?? {}) as Record<string, unknown>).map(([k, x]) => [k, String(x)]),
  );

/** rbac: authorization. */
export const rbac: Adapter = {
  kind: "rbac",
  templates: ["authorization"],
  build(spec, env, object) {
    const p = new Params(spec, object).only(["config_store_url", "cache_duration"]);
    const validDurationMs = p.durationMs("cache_duration", 60_000);
    return {
      check(inst) {
        const s = (inst.value.subject ?? {}) as Record<string, unknown>;
        const a = (inst.value.action ?? {}) as Record<string, unknown>;
        const { roles, bindings } = env.rbac();
        const d = decide(roles, bindings, {
          subject: { user: str(s.user), groups: str(s.groups), properties: strMap(s.properties) },
          action: {
            namespace: str(a.namespace),
            service: str(a.service),
            method: str(a.method),
            path: str(a.path),
            properties: strMap(a.properties),
          },
        });
        env.log.debug(`${object}: ${inst.name}: ${d.allowed ? "allow" : "deny"} (${d.reason})`);
        return {
          status: d.allowed
            ? { code: Code.OK }
            : { code: Code.PERMISSION_DENIED, message: "RBAC: permission denied." },
          validDurationMs,
          validUseCount: 10_000,
        };
      },
    };
  },
};
