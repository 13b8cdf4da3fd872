/**
 * `meshctl deregister <svcname> <ip>` (reference §5.4): removes a registered instance.
 *
 * - `--platform orch`: removes `<ip>` from every subset of the Endpoints `<svcname>` and drops
 *   subsets left empty; the Service and the Endpoints object stay.
 * - `--platform fs`: removes the endpoint from the ServiceEntry `<svcname>`; the entry is deleted
 *   with its last endpoint (a static entry without endpoints is invalid).
 *
 * A missing Endpoints object or ServiceEntry is an error (exit 1). An address that is not
 * registered changes nothing: unlike the reference, which says nothing, a `Warning:` line on
 * stderr says so (exit 0, so scripts stay idempotent).
 * @module
 */
import type { CliContext } from "../_shared/context.ts";
import type { CommonOptions } from "./flags.ts";
import { connect, storeTarget } from "./_config_io.ts";
import {
  checkIp,
  checkServiceName,
  removeAddress,
  removeEndpoint,
  type ServiceEntrySpec,
  type Subset,
} from "./_registration.ts";
import { openCore, retryConflicts, serviceEntrySchema } from "./_registration_io.ts";

/** Runs `meshctl deregister`. */
export async function run(opts: CommonOptions, args: string[], ctx: CliContext): Promise<number> {
  const [service, ip] = args;
  checkServiceName(service);
  checkIp(ip);
  const target = storeTarget(opts, ctx);
  if (target.platform === "fs") return await deregisterFs(service, ip, opts, target.path, ctx);
  const core = await openCore(target.path, opts.namespace);
  const where = `${core.namespace}/${service}`;
  const removed = await retryConflicts(async () => {
    const ep = await core.getEndpoints(service);
    if (!ep) throw new Error(`endpoints ${where} not found: nothing is registered with ${service}`);
    const next = removeAddress((ep.subsets ?? []) as Subset[], ip);
    if (next.removed) await core.replaceEndpoints({ ...ep, subsets: next.subsets });
    return next.removed;
  });
  if (!removed) return await notRegistered(ctx, ip, `service ${where}`);
  await ctx.stdout.write(`Deregistered ${ip} from service ${where}\n`);
  return 0;
}

async function notRegistered(ctx: CliContext, ip: string, what: string): Promise<number> {
  await ctx.stderr.write(`Warning: ${ip} is not registered with ${what}; nothing removed\n`);
  return 0;
}

async function deregisterFs(
  service: string,
  ip: string,
  opts: CommonOptions,
  dir: string,
  ctx: CliContext,
): Promise<number> {
  const conn = await connect({ platform: "fs", path: dir });
  const ns = opts.namespace || conn.defaultNamespace;
  const what = `service-entry ${ns}/${service}`;
  const opened = await conn.open({ schemas: [serviceEntrySchema()] });
  try {
    const store = opened.store;
    const existing = await store.get("serviceentry", service, ns);
    if (!existing) throw new Error(`${what} not found: nothing is registered with ${service}`);
    const next = removeEndpoint(existing.spec as ServiceEntrySpec, ip);
    if (!next.removed) return await notRegistered(ctx, ip, what);
    if ((next.spec.endpoints ?? []).length === 0) {
      await store.delete("serviceentry", service, ns);
      await ctx.stdout.write(
        `Deregistered ${ip} from ${what}\nDeleted ${what} (no endpoints left)\n`,
      );
    } else {
      await store.update({ ...existing, spec: next.spec });
      await ctx.stdout.write(`Deregistered ${ip} from ${what}\n`);
    }
    return 0;
  } finally {
    await opened.close();
  }
}
