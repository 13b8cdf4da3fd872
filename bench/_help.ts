/**
 * The benches' `--help`: a module's comment as its description. Apart from bench/main.ts so that a
 * bench module can use it without importing bench/main.ts: main.ts loads the benches from its
 * top-level await, and a bench importing it back would wait for that await to finish, forever.
 * @module
 */

/** The module comment of the module at `url` as plain text (empty when it has none). */
export async function moduleDescription(url: string | URL): Promise<string> {
  const text = await Deno.readTextFile(new URL(url)).catch(() => "");
  const doc = /^\/\*\*([\s\S]*?)\*\//.exec(text)?.[1] ?? "";
  const lines = doc.split("\n").map((l) => l.replace(/^\s*\* ?/, "")).filter((l) =>
    l !== "@module"
  );
  return lines.join("\n").trim();
}

/**
 * For a bench module run directly (`deno run -A bench/<file>.ts --help`): prints its module
 * comment and exits, before anything is started. Call it first in the module's `import.meta.main`
 * block.
 */
export async function helpIfAsked(moduleUrl: string, args: string[] = Deno.args): Promise<void> {
  if (!args.some((a) => a === "--help" || a === "-h")) return;
  const name = new URL(moduleUrl).pathname.split("/").pop();
  console.log((await moduleDescription(moduleUrl)) || `see bench/${name}`);
  Deno.exit(0);
}
