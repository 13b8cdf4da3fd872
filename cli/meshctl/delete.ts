/**
 * `meshctl delete <type> <name> [<name>...]` and `meshctl delete -f FILE`: deletes objects by
 * type and names (in `-n` or the default namespace), or every object a file names (standard
 * input for `-f -`, or when neither a file nor arguments are given and input is piped; on a
 * terminal that is a usage error). Failures are collected and reported at the end (exit 1).
 *
 * The two forms print differently, as the reference does (§5.2): by names `Deleted config:
 * <type as typed> <name>`, by file `Deleted config: <type>/<ns>/<name>`.
 * @module
 */
import { UsageError } from "../_shared/context.ts";
import type { DeleteOptions } from "./flags.ts";
import {
  applyEach,
  connect,
  type MeshctlContext,
  objectPath,
  readObjects,
  resolveType,
  schemasOf,
  storeTarget,
} from "./_config_io.ts";

/** Runs `meshctl delete`. */
export async function run(
  opts: DeleteOptions,
  args: string[],
  ctx: MeshctlContext,
): Promise<number> {
  if (opts.file !== "" && args.length > 0) {
    throw new UsageError("delete takes no arguments when the file option is used");
  }
  if (opts.file === "" && args.length > 0) return await byName(opts, args, ctx);
  return await byFile(opts, ctx);
}

async function byName(
  opts: DeleteOptions,
  args: string[],
  ctx: MeshctlContext,
): Promise<number> {
  if (args.length < 2) throw new UsageError("provide configuration type and name or -f option");
  const [typeArg, ...names] = args;
  const schema = resolveType(typeArg);
  const target = storeTarget(opts, ctx);
  const conn = await connect(target);
  const namespace = opts.namespace || conn.defaultNamespace;
  const opened = await conn.open({ schemas: [schema], namespace });
  return await applyEach(ctx, opened, names, async (store, name) => {
    await store.delete(schema.type, name, namespace);
    return `Deleted config: ${typeArg} ${name}\n`;
  }, (name, err) => `cannot delete ${name}: ${(err as Error).message}`);
}

async function byFile(opts: DeleteOptions, ctx: MeshctlContext): Promise<number> {
  const read = await readObjects("delete", opts, ctx, "identity", "<type> <name>, ");
  if (typeof read === "number") return read;
  const { conn, objects } = read;
  const opened = await conn.open({ schemas: schemasOf(objects) });
  return await applyEach(
    ctx,
    opened,
    objects,
    async (store, { object, schema }) => {
      await store.delete(schema.type, object.metadata.name, object.metadata.namespace!);
      return `Deleted config: ${objectPath(schema, object)}\n`;
    },
    ({ object, schema }, err) =>
      `cannot delete ${objectPath(schema, object)}: ${(err as Error).message}`,
  );
}
