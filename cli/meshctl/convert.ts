/**
 * `meshctl experimental convert-networking-config -f <file>... [-o <out>]`: converts legacy
 * routing configuration (RouteRule, DestinationPolicy, EgressRule) and Ingress objects to
 * VirtualService, DestinationRule, ServiceEntry and Gateway (lib/convert, reference §5.8).
 *
 * Every input document is validated first (one line per problem, nothing converted); other
 * kinds are refused with `unsupported kind: <Kind>, ...`. Imperfect conversions print
 * `Warning:` lines on stderr. The outputs are validated too: when one is invalid the output is
 * still written (it is a starting point to edit) and the command fails listing the problems.
 * `-o -` (default) is standard output; a file is written atomically.
 * @module
 */
import { basename, dirname, isAbsolute, resolve } from "node:path";
import { type CliContext, UsageError } from "../_shared/context.ts";
import { parseAllDocuments, stringify } from "../../lib/deps/yaml.ts";
import { firstErrorLine } from "../../lib/model/errors.ts";
import { type ConfigObject, formatIssue, normalizeObject } from "../../lib/model/mod.ts";
import { convertConfigs, CONVERTIBLE_KINDS } from "../../lib/convert/mod.ts";
import type { ConvertOptions } from "./flags.ts";
import { fail, osReason } from "./_config_io.ts";

/** Runs `meshctl experimental convert-networking-config`. */
export async function run(opts: ConvertOptions, args: string[], ctx: CliContext): Promise<number> {
  void args; // none declared: the runner refuses any
  const files = opts.filenames;
  if (files.length === 0) {
    throw new UsageError("no input: give -f <file> (repeatable; - for standard input)");
  }
  if (files.includes("-") && files.length > 1) {
    throw new UsageError("-f - (standard input) cannot be combined with other files");
  }
  const inputs: ConfigObject[] = [];
  const problems: string[] = [];
  const unsupported = new Set<string>();
  for (const file of files) {
    const { label, text } = await readInput(file, ctx);
    const docs = parseAllDocuments(text);
    (Array.isArray(docs) ? docs : [docs]).forEach((doc, i) => {
      const where = `${label} document ${i + 1}`;
      if (doc.errors.length > 0) {
        problems.push(`${where}: cannot parse YAML: ${firstErrorLine(doc.errors[0].message)}`);
        return;
      }
      const raw = doc.toJS();
      if (raw === null || raw === undefined) return;
      const kind = (raw as { kind?: unknown }).kind;
      if (typeof kind === "string" && !CONVERTIBLE_KINDS.includes(kind)) {
        unsupported.add(kind);
        return;
      }
      const r = normalizeObject(raw, where, { defaultNamespace: "default" });
      if (r.object) inputs.push(r.object);
      else problems.push(...r.issues.map((is) => `${where}: ${formatIssue(is)}`));
    });
  }
  if (unsupported.size > 0) {
    problems.unshift(
      `unsupported kind: ${[...unsupported].join(", ")} (want ${CONVERTIBLE_KINDS.join(", ")})`,
    );
  }
  if (problems.length > 0) return await fail(ctx, [...problems, "nothing was converted"]);
  if (inputs.length === 0) throw new Error("nothing to convert: the input has no documents");

  const { configs, warnings } = convertConfigs(inputs);
  for (const w of warnings) await ctx.stderr.write(`Warning: ${w}\n`);
  // YAML 1.1 quoting ("yes", "on" stay strings for kubectl and other YAML 1.1 readers)
  const text = configs.map((c) => stringify(c, { lineWidth: 0, version: "1.1" })).join("---\n");
  if (opts.output === "-") await ctx.stdout.write(text);
  else {await writeAtomic(
      isAbsolute(opts.output) ? opts.output : resolve(ctx.cwd, opts.output),
      text,
    );}
  const invalid = configs.flatMap((c) =>
    normalizeObject(c, c.metadata.name).issues.map(formatIssue)
  );
  if (invalid.length > 0) {
    return await fail(ctx, [`output config(s) are invalid: ${invalid.join("; ")}`]);
  }
  return 0;
}

async function readInput(file: string, ctx: CliContext): Promise<{ label: string; text: string }> {
  if (file === "-") return { label: "stdin", text: await new Response(ctx.stdin).text() };
  try {
    return {
      label: file,
      text: await Deno.readTextFile(isAbsolute(file) ? file : resolve(ctx.cwd, file)),
    };
  } catch (err) {
    const reason = err instanceof Deno.errors.NotFound ? "no such file" : osReason(err);
    throw new Error(`Cannot read ${JSON.stringify(file)}: ${reason}`);
  }
}

/** Writes `text` to `path` through a temp file in the same directory, then renames it. */
async function writeAtomic(path: string, text: string): Promise<void> {
  const tmp = `${dirname(path)}/.${basename(path)}.tmp-${crypto.randomUUID().slice(0, 8)}`;
  try {
    await Deno.writeTextFile(tmp, text);
    await Deno.rename(tmp, path);
  } catch (err) {
    await Deno.remove(tmp).catch(() => {});
    throw new Error(`Cannot write ${JSON.stringify(path)}: ${osReason(err)}`);
  }
}
