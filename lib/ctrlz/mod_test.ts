import assert from "node:assert/strict";
import { join } from "node:path";
import { configureLogging, defaultLogOptions, getLogger } from "../log/mod.ts";
import { startCtrlz } from "./mod.ts";

const SCOPES = ["ads", "default"];
const VERSION = {
  version: "9.9.9",
  gitRevision: "abc123",
  buildTime: "2024-01-01T00:00:00Z",
  deno: "d",
  v8: "v",
  typescript: "t",
};

/** Starts logging to a file and ctrlz on 127.0.0.1:0; cleans both up after `fn`. */
async function withCtrlz(
  fn: (base: string, logFile: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  const logFile = join(dir, "out.log");
  const logging = await configureLogging({ ...defaultLogOptions(SCOPES), targets: [logFile] });
  const ctrlz = await startCtrlz({
    address: "127.0.0.1",
    port: 0,
    program: "mesh-discovery",
    version: VERSION,
    args: ["discovery", "--port", "0"],
    scopes: SCOPES,
  });
  try {
    await fn(ctrlz.url, logFile);
  } finally {
    await ctrlz.shutdown();
    await logging.dispose();
    await Deno.remove(dir, { recursive: true });
  }
}

async function put(url: string, body: string): Promise<{ status: number; json: unknown }> {
  const r = await fetch(url, {
    method: "PUT",
    body,
    headers: { "content-type": "application/json" },
  });
  return { status: r.status, json: await r.json() };
}

Deno.test("startCtrlz() changes a scope's level so the logger emits debug records", async () => {
  await withCtrlz(async (base, logFile) => {
    const log = getLogger("ads");
    log.debug("debug before");
    const r = await put(`${base}scopej/ads`, JSON.stringify({ output_level: "debug" }));
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, {
      name: "ads",
      output_level: "debug",
      stack_trace_level: "none",
      log_callers: false,
    });
    log.debug("debug after");
    const text = await Deno.readTextFile(logFile);
    assert.equal(text.includes("debug before"), false);
    assert.match(text, /\tdebug\tads\tdebug after\n/);
  });
});

Deno.test("startCtrlz() lists scopes and answers one scope", async () => {
  await withCtrlz(async (base) => {
    const list = await (await fetch(`${base}scopej/`)).json();
    const names = list.map((s: { name: string }) => s.name);
    assert.ok(names.includes("ads") && names.includes("default"));
    const one = await (await fetch(`${base}scopej/default`)).json();
    assert.equal(one.output_level, "info");
  });
});

Deno.test("startCtrlz() answers 400 for a bad level and 404 for an unknown scope", async () => {
  await withCtrlz(async (base) => {
    const bad = await put(`${base}scopej/ads`, JSON.stringify({ output_level: "loud" }));
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.json, {
      error: 'invalid output_level "loud": want one of debug, info, warn, error, none',
    });
    const field = await put(`${base}scopej/ads`, JSON.stringify({ level: "info" }));
    assert.equal(field.status, 400);
    const notJson = await put(`${base}scopej/ads`, "{");
    assert.deepEqual(notJson, { status: 400, json: { error: "body is not valid JSON" } });
    const missing = await put(`${base}scopej/nope`, JSON.stringify({ output_level: "info" }));
    assert.deepEqual(missing, { status: 404, json: { error: 'unknown scope "nope"' } });
    const get = await fetch(`${base}scopej/nope`);
    assert.equal(get.status, 404);
    await get.body?.cancel();
  });
});

Deno.test("startCtrlz() changes levels through the HTML form", async () => {
  await withCtrlz(async (base) => {
    const form = new URLSearchParams({
      name: "default",
      output_level: "warn",
      stack_trace_level: "error",
    });
    const r = await fetch(`${base}scopeform`, { method: "POST", body: form, redirect: "manual" });
    assert.equal(r.status, 303);
    await r.body?.cancel();
    const one = await (await fetch(`${base}scopej/default`)).json();
    assert.equal(one.output_level, "warn");
    assert.equal(one.stack_trace_level, "error");
    const html = await (await fetch(base)).text();
    assert.match(html, /<h1>mesh-discovery ControlZ<\/h1>/);
    assert.match(html, /<option value="warn" selected>warn<\/option>/);
    assert.match(html, /9\.9\.9/);
  });
});

Deno.test("startCtrlz() serves process, environment, arguments and version JSON", async () => {
  await withCtrlz(async (base) => {
    const proc = await (await fetch(`${base}procj/`)).json();
    assert.equal(proc.pid, Deno.pid);
    assert.equal(typeof proc.memory.rss, "number");
    assert.equal(proc.deno, Deno.version.deno);
    const env = await (await fetch(`${base}envj/`)).json();
    assert.ok(env.some((e: { name: string }) => e.name === "PATH"));
    assert.deepEqual(await (await fetch(`${base}argsj/`)).json(), [
      "mesh-discovery",
      "discovery",
      "--port",
      "0",
    ]);
    assert.deepEqual(await (await fetch(`${base}versionj/`)).json(), VERSION);
  });
});

Deno.test("startCtrlz() rejects an invalid port and a port in use", async () => {
  await assert.rejects(
    startCtrlz({ address: "127.0.0.1", port: 70000, program: "p", args: [], scopes: [] }),
    { message: "invalid --ctrlz_port 70000: want an integer from 0 to 65535" },
  );
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const port = (listener.addr as Deno.NetAddr).port;
    await assert.rejects(
      startCtrlz({ address: "127.0.0.1", port, program: "p", args: [], scopes: [] }),
      { message: `Cannot listen on --ctrlz_port ${port} (127.0.0.1): address already in use` },
    );
  } finally {
    listener.close();
  }
});

Deno.test("startCtrlz() with address * binds and reports 0.0.0.0", async () => {
  const dir = await Deno.makeTempDir();
  const logFile = join(dir, "out.log");
  const logging = await configureLogging({ ...defaultLogOptions(SCOPES), targets: [logFile] });
  try {
    const ctrlz = await startCtrlz({ address: "*", port: 0, program: "p", args: [], scopes: [] });
    try {
      assert.equal(ctrlz.address, `0.0.0.0:${ctrlz.port}`);
      assert.equal(ctrlz.url, `http://127.0.0.1:${ctrlz.port}/`);
      assert.match(
        await Deno.readTextFile(logFile),
        new RegExp(`\tctrlz listening address=0\\.0\\.0\\.0:${ctrlz.port}\n`),
      );
      const res = await fetch(`${ctrlz.url}versionj/`);
      assert.equal(res.status, 200);
      await res.body?.cancel();
    } finally {
      await ctrlz.shutdown();
    }
  } finally {
    await logging.dispose();
    await Deno.remove(dir, { recursive: true });
  }
});
