/**
 * The common path of `meshctl create` and `meshctl replace`: read the input, check every
 * document, then write each object and report it.
 * @module
 */
import type { CommonOptions } from "./flags.ts";
import {
  applyEach,
  type MeshctlContext,
  objectPath,
  readObjects,
  schemasOf,
  warnNotServed,
  writeFailure,
} from "./_config_io.ts";
import type { ConfigObject } from "../../lib/model/mod.ts";
import type { ConfigStore } from "../../lib/store/mod.ts";
import { carryEndpoints, type FromService } from "./_service_fs.ts";
import type { ServiceEntrySpec } from "./_registration.ts";

/**
 * Creates (`create`) or updates (`replace`) every object of `-f` (standard input when unset or
 * `-`). Nothing is written unless every document is valid. Prints `Created config
 * <type>/<ns>/<name> at revision <rv>` or `Updated config <type>/<ns>/<name> to revision <rv>`
 * per object; failures are reported at the end (exit 1).
 */
export async function writeFromInput(
  op: "create" | "replace",
  opts: CommonOptions & { file: string },
  args: string[],
  ctx: MeshctlContext,
): Promise<number> {
  // the command declares no arguments: the runner already refused any (exit 2)
  void args;
  const partial = op === "create" && !(opts as { allOrNothing?: boolean }).allOrNothing;
  const read = await readObjects(op, opts, ctx, "full", undefined, partial);
  if (typeof read === "number") return read;
  const { conn, objects, failed } = read;
  const opened = await conn.open({ schemas: schemasOf(objects), createDir: true });
  const code = await applyEach(
    ctx,
    opened,
    objects,
    async (store, { object: given, schema, fromService }) => {
      const what = objectPath(schema, given);
      const object = fromService
        ? await serviceOntoEntry(store, schema.type, given, fromService, what)
        : given;
      // a Service rewrites the ServiceEntry of its instances, created or replaced
      const stored = op === "create" && !fromService
        ? await store.create(object)
        : await store.update(object);
      const rv = stored.metadata.resourceVersion ?? "";
      // an Ingress sent to the orchestrator is converted to the version it serves: say so
      const as = fromService
        ? ` (from Service ${given.metadata.name}: the fs platform keeps Services as ServiceEntries)`
        : stored.apiVersion !== object.apiVersion
        ? ` (as ${stored.apiVersion})`
        : "";
      return op === "create"
        ? `Created config ${what} at revision ${rv}${as}\n`
        : `Updated config ${what} to revision ${rv}${as}\n`;
    },
    ({ object, schema }, err) => writeFailure(op, objectPath(schema, object), err),
  );
  await warnNotServed(ctx, objects);
  return failed > 0 ? 1 : code;
}

/**
 * The ServiceEntry a Service (fs platform) becomes: its ports, with the instances `meshctl
 * register` added to the stored entry of that name (cli/meshctl/_service_fs.ts). Throws when no
 * instance is registered yet (a static ServiceEntry needs one).
 */
async function serviceOntoEntry(
  store: ConfigStore,
  type: string,
  given: ConfigObject,
  fromService: FromService,
  what: string,
): Promise<ConfigObject> {
  const { name, namespace = "" } = given.metadata;
  const old = await store.get(type, name, namespace);
  const spec = carryEndpoints(
    given.spec as unknown as ServiceEntrySpec,
    old?.spec as ServiceEntrySpec | undefined,
    fromService,
  );
  if (!old || !spec.endpoints?.length) {
    throw new Error(
      `no instance is registered with ${what} yet: on the fs platform a Service describes the ` +
        `ports of registered instances; first run meshctl register ${name} <ip> ` +
        "<name>:<port>[:<targetPort>]",
    );
  }
  return {
    ...given,
    metadata: {
      ...old.metadata,
      ...(given.metadata.labels ? { labels: given.metadata.labels } : {}),
    },
    spec: spec as unknown as ConfigObject["spec"],
  };
}
