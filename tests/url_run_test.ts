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
import { freePort, spawnProgram, waitUntil } from "./harness/procs.ts";

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

/** Serves the checkout on a free port for the length of `f`. */
async function withCheckoutServer<T>(f: (origin: string) => Promise<T>): Promise<T> {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, serveCheckout);
  try {
    return await f(`http://127.0.0.1:${server.addr.port}`);
  } finally {
    await server.shutdown();
  }
}

Deno.test("mesh-discovery and mesh_ca run their main job from an http:// URL with a fresh DENO_DIR", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh_url_main_" });
  await Deno.mkdir(`${dir}/config`);
  await Deno.mkdir(`${dir}/cwd`);
  try {
    await withCheckoutServer(async (origin) => {
      const opts = {
        cwd: `${dir}/cwd`,
        // nothing cached: every module and npm package comes from the URL and the registry
        env: { DENO_DIR: `${dir}/deno`, NO_COLOR: "1" },
        denoArgs: ["-A", "--no-config", `--reload=${origin}`],
      };
      const discovery = spawnProgram(`${origin}/cli/mesh-discovery.ts`, [
        "discovery",
        "--registries",
        "Mock",
        "--configDir",
        `${dir}/config`,
        "--meshConfig",
        `${dir}/none`,
        "--port",
        "0",
        "--grpcAddr",
        "127.0.0.1:0",
        "--secureGrpcAddr",
        "",
        "--monitoringPort",
        "0",
        "--ctrlz_port",
        "0",
      ], opts);
      try {
        const line = await discovery.waitFor(/listening http=\S+:(\d+)/, 120_000);
        const port = /http=\S+:(\d+)/.exec(line)![1];
        await waitUntil(
          async () => {
            const r = await fetch(`http://127.0.0.1:${port}/ready`);
            await r.body?.cancel();
            return r.status === 200;
          },
          20_000,
          "discovery /ready",
        );
        // REST xDS: the clusters of a Mock sidecar, encoded and printed through the descriptors
        const res = await fetch(`http://127.0.0.1:${port}/v3/discovery:clusters`, {
          method: "POST",
          body: JSON.stringify({
            node: { id: "sidecar~10.1.1.1~hello-v1.default~default.svc.cluster.local" },
          }),
        });
        const body = await res.text();
        assert.equal(res.status, 200, body);
        assert.match(body, /outbound\|80\|\|hello\.default\.svc\.cluster\.local/);
      } finally {
        await discovery.stop();
      }

      const grpcPort = freePort();
      const ca = spawnProgram(`${origin}/cli/mesh_ca.ts`, [
        "--self-signed-ca",
        "--local-storage-dir",
        `${dir}/ca`,
        "--grpc-port",
        String(grpcPort),
        "--monitoring-port",
        "0",
        "--liveness-probe-path",
        "",
      ], opts);
      try {
        await ca.waitFor(/gRPC signing API listening/, 120_000);
        const root = await Deno.readTextFile(`${dir}/ca/ca-cert.pem`);
        assert.match(root, /^-----BEGIN CERTIFICATE-----/);
        // a TLS connection to the signing API is served with a certificate from that root
        const tls = await import("node:tls");
        const authorized = await new Promise<boolean>((resolve, reject) => {
          const socket = tls.connect({
            host: "127.0.0.1",
            port: grpcPort,
            servername: "mesh-ca",
            ca: root,
            ALPNProtocols: ["h2"],
          }, () => {
            resolve(socket.authorized);
            socket.destroy();
          });
          socket.on("error", reject);
        });
        assert.ok(authorized, "the signing API's certificate does not verify against its root");
      } finally {
        await ca.stop();
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
