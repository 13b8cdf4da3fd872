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
  const code = await applyEach(ctx, opened, objects, async (store, { object, schema }) => {
    const what = objectPath(schema, object);
    const stored = op === "create" ? await store.create(object) : await store.update(object);
    const rv = stored.metadata.resourceVersion ?? "";
    // an Ingress sent to the orchestrator is converted to the version it serves: say so
    const as = stored.apiVersion !== object.apiVersion ? ` (as ${stored.apiVersion})` : "";
    return op === "create"
      ? `Created config ${what} at revision ${rv}${as}\n`
      : `Updated config ${what} to revision ${rv}${as}\n`;
  }, ({ object, schema }, err) => writeFailure(op, objectPath(schema, object), err));
  await warnNotServed(ctx, objects);
  return failed > 0 ? 1 : code;
}
