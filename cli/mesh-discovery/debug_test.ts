import assert from "node:assert/strict";
import type { CliContext } from "../_shared/context.ts";
import { run } from "./debug.ts";

/** A fake discovery monitoring port: adsz and syncz answer `[]`, edsz 404 (nothing watched). */
function fakeDiscovery() {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const url = new URL(req.url);
    const id = url.searchParams.get("proxyID");
    if (id) return new Response(`Proxy ${id} is not connected\n`, { status: 404 });
    if (url.pathname === "/debug/edsz") {
      return new Response("No EDS clusters are watched\n", { status: 404 });
    }
    return new Response("[]\n");
  });
  return { addr: `127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

function context(addr: string) {
  const out = { stdout: "", stderr: "" };
  const ctx = {
    stdout: { write: (t: string) => Promise.resolve(void (out.stdout += t)) },
    stderr: { write: (t: string) => Promise.resolve(void (out.stderr += t)) },
    env: { MESH_DISCOVERY_ADDR: addr },
  } as unknown as CliContext;
  return { ctx, out };
}

Deno.test("debug all all labels each section and never says a proxy is not connected", async () => {
  const d = fakeDiscovery();
  try {
    const { ctx, out } = context(d.addr);
    assert.equal(await run({}, ["all", "all"], ctx), 0);
    assert.equal(out.stdout, "--- ads ---\n[]\n--- eds ---\n[]\n--- syncz ---\n[]\n");
    assert.equal(out.stderr, "");
  } finally {
    await d.close();
  }
});

Deno.test("debug <proxy> all labels each section and reports a proxy that is not connected", async () => {
  const d = fakeDiscovery();
  try {
    const { ctx, out } = context(d.addr);
    assert.equal(await run({}, ["p1.default", "all"], ctx), 0);
    assert.equal(out.stdout, "--- ads ---\n--- eds ---\n--- syncz ---\n");
    assert.equal(out.stderr, "proxy not connected to this discovery instance\n".repeat(3));
    const one = context(d.addr);
    assert.equal(await run({}, ["all", "ads"], one.ctx), 0);
    assert.equal(one.out.stdout, "[]\n", "a single type has no label");
  } finally {
    await d.close();
  }
});

Deno.test("debugPages() refuses names inherited from Object, like any unknown type", async () => {
  const { debugPages } = await import("./debug.ts");
  assert.deepEqual(debugPages("eds"), ["edsz"]);
  for (const type of ["constructor", "toString", "nope"]) {
    assert.throws(() => debugPages(type), {
      name: "UsageError",
      message:
        `"${type}" is not a supported debugging config type (valid types: ads, eds, syncz, all)`,
    });
  }
});

Deno.test("debug --discoveryAddress wins over MESH_DISCOVERY_ADDR", async () => {
  const d = fakeDiscovery();
  try {
    const { ctx, out } = context("127.0.0.1:1"); // the variable points nowhere
    assert.equal(await run({ discoveryAddress: d.addr }, ["all", "ads"], ctx), 0);
    assert.equal(out.stdout, "[]\n");
  } finally {
    await d.close();
  }
});

Deno.test("debug names --discoveryAddress and MESH_DISCOVERY_ADDR when discovery cannot be reached", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const addr = `127.0.0.1:${(listener.addr as Deno.NetAddr).port}`;
  listener.close(); // a port nothing listens on
  const { ctx } = context(addr);
  await assert.rejects(run({}, ["all", "ads"], ctx), (e: Error) => {
    assert.match(e.message, new RegExp(`^Cannot reach discovery at ${addr}: `));
    assert.match(
      e.message,
      /\(set the address with --discoveryAddress <host>:<port> or the environment variable MESH_DISCOVERY_ADDR \(default 127\.0\.0\.1:9093\)\)$/,
    );
    return true;
  });
});
