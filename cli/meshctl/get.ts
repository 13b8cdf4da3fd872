/**
 * `meshctl get <type> [<name>...] [-o short|yaml] [-A]`: lists every object of a type (in `-n`,
 * or in all namespaces when `-n` is empty or `-A` is given), or the named ones (in `-n` or the
 * default namespace). A named object that does not exist is an error (exit 1, after printing the
 * ones found), as kubectl has it; istioctl 0.8 printed `No resources found.` instead.
 * @module
 */
import { UsageError } from "../_shared/context.ts";
import { stringify } from "../../lib/deps/yaml.ts";
import { type ConfigObject, typeListText, type TypeSchema } from "../../lib/model/mod.ts";
import type { GetOptions } from "./flags.ts";
import { connect, fail, type MeshctlContext, resolveType, storeTarget } from "./_config_io.ts";

/** Output formats of `get`. */
export const OUTPUT_FORMATS = ["yaml", "short"] as const;

/** Runs `meshctl get`. */
export async function run(opts: GetOptions, args: string[], ctx: MeshctlContext): Promise<number> {
  const [typeArg, ...names] = args;
  if (!typeArg) {
    throw new UsageError(`specify the type of resource to get. Types are ${typeListText()}`);
  }
  if (!(OUTPUT_FORMATS as readonly string[]).includes(opts.output)) {
    throw new UsageError(`unknown output format ${opts.output}. Types are yaml|short`);
  }
  if (opts.allNamespaces && names.length > 0) {
    throw new UsageError("a resource cannot be retrieved by name across all namespaces");
  }
  const schema = resolveType(typeArg);
  const target = storeTarget(opts, ctx);
  const conn = await connect(target);
  // named objects: -n or the default namespace; a list: -n, or every namespace
  const namespace = names.length > 0
    ? opts.namespace || conn.defaultNamespace
    : (opts.allNamespaces ? undefined : opts.namespace || undefined);
  const opened = await conn.open({ schemas: [schema], namespace, readOnly: true });
  const objects: ConfigObject[] = [];
  const missing: string[] = [];
  try {
    const { errors, warnings } = opened.problems();
    if (errors.length > 0) return await fail(ctx, errors);
    if (warnings.length > 0) {
      await ctx.stderr.write(warnings.map((w) => `Warning: ${w}\n`).join(""));
    }
    if (names.length > 0) {
      for (const name of names) {
        const one = await opened.store.get(schema.type, name, namespace!);
        if (one) objects.push(one);
        else missing.push(`${schema.type} "${name}" not found in namespace "${namespace}"`);
      }
    } else {
      objects.push(...await opened.store.list(schema.type, namespace));
    }
  } finally {
    await opened.close();
  }
  if (objects.length > 0) {
    await ctx.stdout.write(
      opts.output === "yaml" ? yamlOutput(objects) : shortOutput(objects, schema),
    );
  }
  if (missing.length > 0) return await fail(ctx, missing);
  if (objects.length === 0) await ctx.stderr.write("No resources found.\n");
  return 0;
}

/** `yaml` output: each object in full, followed by a `---` line. Keys sorted, like the reference. */
export function yamlOutput(objects: readonly ConfigObject[]): string {
  return objects.map((o) =>
    stringify(o, { sortMapEntries: true, lineWidth: 0, aliasDuplicateObjects: false }) + "---\n"
  ).join("");
}

/** `short` output: the NAME KIND NAMESPACE table. */
export function shortOutput(objects: readonly ConfigObject[], schema: TypeSchema): string {
  // the object's own apiVersion: an Ingress in a file keeps the one it was written with
  const kind = (o: ConfigObject) =>
    o.apiVersion.includes("/")
      ? `${o.kind}.${o.apiVersion.replace("/", ".")}`
      : `${schema.kind}.${schema.group}.${schema.version}`;
  return tabwrite([
    ["NAME", "KIND", "NAMESPACE"],
    ...objects.map((o) => [o.metadata.name, kind(o), o.metadata.namespace ?? ""]),
  ]);
}

/** Options of {@link tabwrite}, as Go's `text/tabwriter`. */
export interface TabwriterOptions {
  minwidth: number;
  padding: number;
}

/**
 * Aligns rows of cells like Go's `text/tabwriter` with space padding (the reference's
 * `tabwriter.NewWriter(w, 10, 4, 3, ' ', 0)`): every cell but the last of a row is padded to its
 * column's width, `max(minwidth, widest cell + padding)`; the last cell is written as is.
 */
export function tabwrite(
  rows: readonly (readonly string[])[],
  options: TabwriterOptions = { minwidth: 10, padding: 3 },
): string {
  const width = (s: string) => [...s].length;
  const widths: number[] = [];
  for (const row of rows) {
    for (let c = 0; c < row.length - 1; c++) {
      widths[c] = Math.max(widths[c] ?? options.minwidth, width(row[c]) + options.padding);
    }
  }
  return rows.map((row) =>
    row.map((cell, c) => c < row.length - 1 ? cell + " ".repeat(widths[c] - width(cell)) : cell)
      .join("") + "\n"
  ).join("");
}
