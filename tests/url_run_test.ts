/**
 * Every program must run straight from an http:// URL, without this repository's deno.json
 * (no import map, no node_modules directory): `deno run -A https://.../cli/<program>.ts version`.
 * That breaks when a module uses a bare specifier ("yaml" instead of lib/deps/yaml.ts) or reads a
 * file next to itself through the file system instead of `import`/`fetch(new URL(..., import.meta.url))`.
 */
import assert from "node:assert/strict";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { PROGRAMS } from "../compile.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const RUN_TIMEOUT_MS = 60_000;

const CONTENT_TYPES: Record<string, string> = {
  ".ts": "application/typescript; charset=utf-8",
  ".mts": "application/typescript; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".json": "application/json; charset=utf-8",
};

/** Serves the checkout read-only, like a static file host would. */
async function serveCheckout(req: Request): Promise<Response> {
  const path = normalize(decodeURIComponent(new URL(req.url).pathname));
  const file = join(ROOT, path);
  if (!file.startsWith(ROOT) || path.split(sep).includes("node_modules")) {
    return new Response("not found\n", { status: 404 });
  }
  try {
    const body = await Deno.readFile(file);
    const type = CONTENT_TYPES[extname(file)] ?? "text/plain; charset=utf-8";
    return new Response(body, { headers: { "content-type": type } });
  } catch (err) {
    if (err instanceof Deno.errors.NotFound || err instanceof Deno.errors.IsADirectory) {
      return new Response("not found\n", { status: 404 });
    }
    return new Response(`${err}\n`, { status: 500 });
  }
}

/** Runs `deno run -A <url> version` from `cwd`, killing it after RUN_TIMEOUT_MS. */
async function runFromUrl(url: string, origin: string, cwd: string) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), RUN_TIMEOUT_MS);
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `--reload=${origin}`, url, "version"],
      cwd,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
      signal: abort.signal,
    }).output();
    const dec = new TextDecoder();
    return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("every program prints its version when run from an http:// URL without deno.json", async () => {
  const cwd = await Deno.makeTempDir({ prefix: "mesh_url_run_" });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    serveCheckout,
  );
  try {
    const origin = `http://127.0.0.1:${server.addr.port}`;
    const results = await Promise.all(
      PROGRAMS.map(async (program) => {
        const url = `${origin}/cli/${program}.ts`;
        return { program, url, ...(await runFromUrl(url, origin, cwd)) };
      }),
    );
    const failures = results
      .filter((r) => r.code !== 0 || !/^Version: \S+$/m.test(r.stdout))
      .map((r) =>
        `deno run -A ${r.url} version: exit code ${r.code}\n` +
        `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`
      );
    assert.deepEqual(failures, [], failures.join("\n\n"));
  } finally {
    await server.shutdown();
    await Deno.remove(cwd, { recursive: true });
  }
});
