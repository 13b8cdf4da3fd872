/**
 * `meshctl register <svcname> <ip> [name:]port[:targetPort]...` (reference §5.4): registers a
 * service instance running outside the orchestrator (a VM) so the mesh sends it traffic.
 * `http:80:8081` maps service port 80 to the instance's port 8081 (a Service `targetPort`; on
 * `fs` the ServiceEntry endpoint's port).
 *
 * - `--platform orch`: creates the Service `<svcname>` when missing (the ports, no selector,
 *   `-l` labels, `-a` annotations and the service-account annotation), creates its Endpoints
 *   when missing, and adds `<ip>` to the subset with exactly these ports (or a new subset). An
 *   address already registered with these ports is not added twice.
 * - `--platform fs`: keeps a ServiceEntry `<svcname>` (host `<svcname>.<ns>.svc.cluster.local`,
 *   `MESH_INTERNAL`, `STATIC`) in `--configDir` with one endpoint per registered address, which
 *   `mesh-discovery --configDir` serves.
 * @module
 */
import type { CliContext } from "../_shared/context.ts";
import type { RegisterOptions } from "./flags.ts";
import { connect, storeTarget } from "./_config_io.ts";
import {
  addAddress,
  addEndpoint,
  newServiceEntrySpec,
  parseRegistration,
  portsText,
  type Registration,
  type ServiceEntrySpec,
  type Subset,
  unmatchedPorts,
} from "./_registration.ts";
import { openCore, retryConflicts, serviceEntrySchema } from "./_registration_io.ts";

/** Runs `meshctl register`. */
export async function run(
  opts: RegisterOptions,
  args: string[],
  ctx: CliContext,
): Promise<number> {
  const reg = parseRegistration(args, opts);
  const target = storeTarget(opts, ctx);
  return target.platform === "fs"
    ? await registerFs(reg, opts, target.path, ctx)
    : await registerOrch(reg, opts, target.path, ctx);
}

async function registerOrch(
  reg: Registration,
  opts: RegisterOptions,
  kubeconfig: string,
  ctx: CliContext,
): Promise<number> {
  const core = await openCore(kubeconfig, opts.namespace);
  const ns = core.namespace;
  const where = `${ns}/${reg.service}`;
  const metadata = objectMeta(reg, ns);
  const service = await core.getService(reg.service);
  if (!service) {
    await core.createService({
      metadata,
      spec: {
        ports: reg.ports.map((p) => ({
          name: p.name,
          port: p.port,
          ...(p.targetPort ? { targetPort: p.targetPort } : {}),
          protocol: "TCP",
        })),
      },
    });
    await ctx.stdout.write(`Created service ${where}\n`);
  } else {
    if (Object.keys(service.spec?.selector ?? {}).length > 0) {
      await ctx.stderr.write(
        `Warning: service ${where} has a selector: the orchestrator manages its endpoints and ` +
          `may drop this registration (register VMs with a service without selector)\n`,
      );
    }
    const missing = unmatchedPorts(service.spec?.ports ?? [], reg.ports);
    if (missing.length > 0) {
      await ctx.stderr.write(
        `Warning: service ${where} has no port named ${
          missing.map((p) => p.name).join(", ")
        }: discovery serves endpoint ports only under the service port of the same name\n`,
      );
    }
  }
  const added = await retryConflicts(async () => {
    const ep = await core.getEndpoints(reg.service);
    if (!ep) {
      await core.createEndpoints({ metadata, subsets: addAddress([], reg.ip, reg.ports).subsets });
      await ctx.stdout.write(`Created endpoints ${where}\n`);
      return true;
    }
    const next = addAddress((ep.subsets ?? []) as Subset[], reg.ip, reg.ports);
    if (next.added) await core.replaceEndpoints({ ...ep, subsets: next.subsets });
    return next.added;
  });
  await ctx.stdout.write(
    added
      ? `Registered ${reg.ip} with service ${where} (ports ${portsText(reg.ports)})\n`
      : `${reg.ip} is already registered with service ${where} (ports ${
        portsText(reg.ports)
      }); nothing changed\n`,
  );
  return 0;
}

async function registerFs(
  reg: Registration,
  opts: RegisterOptions,
  dir: string,
  ctx: CliContext,
): Promise<number> {
  const conn = await connect({ platform: "fs", path: dir });
  const ns = opts.namespace || conn.defaultNamespace;
  const opened = await conn.open({ schemas: [serviceEntrySchema()], createDir: true });
  try {
    const store = opened.store;
    const what = `service-entry ${ns}/${reg.service}`;
    const existing = await store.get("serviceentry", reg.service, ns);
    const spec = (existing?.spec as ServiceEntrySpec | undefined) ??
      newServiceEntrySpec(reg, ns);
    const next = addEndpoint(spec, reg, what);
    if (!existing) {
      await store.create({
        apiVersion: "networking.mesh.io/v1alpha3",
        kind: "ServiceEntry",
        metadata: objectMeta(reg, ns),
        spec: next.spec,
      });
      await ctx.stdout.write(`Created ${what}\n`);
    } else if (next.added) {
      await store.update({ ...existing, spec: next.spec });
    }
    await ctx.stdout.write(
      next.added
        ? `Registered ${reg.ip} with ${what} (ports ${portsText(reg.ports)})\n`
        : `${reg.ip} is already registered with ${what} (ports ${
          portsText(reg.ports)
        }); nothing changed\n`,
    );
    return 0;
  } finally {
    await opened.close();
  }
}

/** Metadata of the objects register creates: name, namespace, `-l` labels, annotations. */
function objectMeta(reg: Registration, namespace: string) {
  const meta: {
    name: string;
    namespace: string;
    labels?: Record<string, string>;
    annotations: Record<string, string>;
  } = { name: reg.service, namespace, annotations: reg.annotations };
  if (Object.keys(reg.labels).length > 0) meta.labels = reg.labels;
  return meta;
}
