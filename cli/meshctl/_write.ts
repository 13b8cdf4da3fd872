/**
 * The common path of `meshctl create` and `meshctl replace`: read the input, check every
 * document, then write each object and report it.
 * @module
 */
import type { CommonOptions } from "./flags.ts";
import {
  connect,
  fail,
  type MeshctlContext,
  objectPath,
  parseInput,
  readInput,
  schemasOf,
  storeTarget,
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
  const target = storeTarget(opts, ctx);
  const input = await readInput(opts.file, ctx);
  const conn = await connect(target);
  const { objects, problems } = parseInput(input.label, input.text, {
    flagNamespace: opts.namespace,
    defaultNamespace: conn.defaultNamespace,
    check: "full",
  });
  if (problems.length > 0) {
    return await fail(ctx, [
      ...problems,
      `${input.label}: ${problems.length} problem${
        problems.length === 1 ? "" : "s"
      } found; nothing was ${past(op)}`,
    ]);
  }
  if (objects.length === 0) throw new Error(`nothing to ${op}`);

  const opened = await conn.open({ schemas: schemasOf(objects), createDir: true });
  const failures: string[] = [];
  try {
    const { errors } = opened.problems();
    if (errors.length > 0) return await fail(ctx, errors);
    for (const { object, schema } of objects) {
      const what = objectPath(schema, object);
      try {
        const stored = op === "create"
          ? await opened.store.create(object)
          : await opened.store.update(object);
        const rv = stored.metadata.resourceVersion ?? "";
        // an Ingress sent to the orchestrator is converted to the version it serves: say so
        const as = stored.apiVersion !== object.apiVersion ? ` (as ${stored.apiVersion})` : "";
        await ctx.stdout.write(
          op === "create"
            ? `Created config ${what} at revision ${rv}${as}\n`
            : `Updated config ${what} to revision ${rv}${as}\n`,
        );
      } catch (err) {
        failures.push(writeFailure(op, what, err));
      }
    }
  } finally {
    await opened.close();
  }
  return failures.length > 0 ? await fail(ctx, failures) : 0;
}

function past(op: "create" | "replace"): string {
  return op === "create" ? "created" : "replaced";
}
