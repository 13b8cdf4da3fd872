/**
 * `meshctl experimental rbac can METHOD SERVICE PATH [-u user] [-g groups] [-s k=v,...]
 * [-a k=v,...]`: evaluates a fake request against the AuthorizationPolicies, ServiceRoles and
 * ServiceRoleBindings of the namespace (`-n`, else the default one; AuthorizationPolicies of the
 * root namespace `mesh-system` too) with the logic of `lib/rbac` and prints `allow` or `deny`.
 * No request is issued.
 * @module
 */

import { UsageError } from "../_shared/context.ts";
import { parseProperties } from "../../lib/rbac/mod.ts";
import { decideAuthz } from "../../lib/rbac/authz_policy.ts";
import { schemaByType } from "../../lib/model/mod.ts";
import type { RbacCanOptions } from "./flags.ts";
import { connect, fail, type MeshctlContext, storeTarget } from "./_config_io.ts";

/** Runs `meshctl experimental rbac can`. */
export async function run(
  opts: RbacCanOptions,
  args: string[],
  ctx: MeshctlContext,
): Promise<number> {
  const [method, service, path] = args;
  let subjectProps, actionProps;
  try {
    subjectProps = parseProperties(opts.subjectProperties, "subject property");
    actionProps = parseProperties(opts.actionProperties, "action property");
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const schemas = [
    schemaByType("servicerole")!,
    schemaByType("servicerolebinding")!,
    schemaByType("authorizationpolicy")!,
  ];
  const conn = await connect(storeTarget(opts, ctx));
  const namespace = opts.namespace || conn.defaultNamespace;
  const opened = await conn.open({ schemas, namespace });
  let roles, bindings, policies;
  try {
    const { errors } = opened.problems();
    if (errors.length > 0) return await fail(ctx, errors);
    roles = await opened.store.list("servicerole", namespace);
    bindings = await opened.store.list("servicerolebinding", namespace);
    policies = await opened.store.list("authorizationpolicy", namespace);
    if (namespace !== "mesh-system") {
      policies.push(...await opened.store.list("authorizationpolicy", "mesh-system"));
    }
  } finally {
    await opened.close();
  }
  const d = decideAuthz(policies, roles, bindings, {
    subject: { user: opts.user, groups: opts.groups, properties: subjectProps },
    action: { namespace, service, method, path, properties: actionProps },
  });
  await ctx.stdout.write(d.allowed ? "allow\n" : "deny\n");
  return 0;
}
