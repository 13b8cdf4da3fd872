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
  connect,
  fail,
  type MeshctlContext,
  objectPath,
  parseInput,
  readInput,
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
  const failures: string[] = [];
  try {
    const { errors } = opened.problems();
    if (errors.length > 0) return await fail(ctx, errors);
    for (const name of names) {
      try {
        await opened.store.delete(schema.type, name, namespace);
        await ctx.stdout.write(`Deleted config: ${typeArg} ${name}\n`);
      } catch (err) {
        failures.push(`cannot delete ${name}: ${(err as Error).message}`);
      }
    }
  } finally {
    await opened.close();
  }
  return failures.length > 0 ? await fail(ctx, failures) : 0;
}

async function byFile(opts: DeleteOptions, ctx: MeshctlContext): Promise<number> {
  const target = storeTarget(opts, ctx);
  const input = await readInput(opts.file, ctx, "<type> <name>, ");
  const conn = await connect(target);
  const { objects, problems } = parseInput(input.label, input.text, {
    flagNamespace: opts.namespace,
    defaultNamespace: conn.defaultNamespace,
    check: "identity",
  });
  if (problems.length > 0) {
    return await fail(ctx, [
      ...problems,
      `${input.label}: ${problems.length} problem${
        problems.length === 1 ? "" : "s"
      } found; nothing was deleted`,
    ]);
  }
  if (objects.length === 0) throw new Error("nothing to delete");
  const opened = await conn.open({ schemas: schemasOf(objects) });
  const failures: string[] = [];
  try {
    const { errors } = opened.problems();
    if (errors.length > 0) return await fail(ctx, errors);
    for (const { object, schema } of objects) {
      const what = objectPath(schema, object);
      try {
        await opened.store.delete(schema.type, object.metadata.name, object.metadata.namespace!);
        await ctx.stdout.write(`Deleted config: ${what}\n`);
      } catch (err) {
        failures.push(`cannot delete ${what}: ${(err as Error).message}`);
      }
    }
  } finally {
    await opened.close();
  }
  return failures.length > 0 ? await fail(ctx, failures) : 0;
}
