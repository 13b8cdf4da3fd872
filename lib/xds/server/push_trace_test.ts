import assert from "node:assert/strict";

const MODULE = new URL("./push_trace.ts", import.meta.url).href;

/** Runs `code` in a fresh deno with `env`, after importing the trace module as `t`. */
async function run(code: string, env: Record<string, string>): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", `const t = await import(${JSON.stringify(MODULE)});\n${code}`],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
}

Deno.test("trace() appends epoch-timed lines of the named isolate when MESH_XDS_TRACE is set", async () => {
  const dir = await Deno.makeTempDir({ prefix: "push-trace-" });
  try {
    const file = `${dir}/trace.txt`;
    const before = Date.now();
    await run(
      `t.traceIsolate("w3"); t.trace("push recv"); t.trace("push done");
       if (!t.tracing) throw new Error("not tracing");
       if (t.traced(() => 42, (v) => "query n=" + v) !== 42) throw new Error("traced() result");
       await new Promise((r) => setTimeout(r, 1300));`,
      { MESH_XDS_TRACE: file },
    );
    const lines = (await Deno.readTextFile(file)).trim().split("\n");
    const events = lines.map((l) => l.split(" ").slice(1).join(" "));
    assert.equal(events[0].startsWith("w3 origin "), true);
    assert.deepEqual(events.filter((e) => e.startsWith("w3 push")), [
      "w3 push recv",
      "w3 push done",
    ]);
    assert.match(events.find((e) => e.startsWith("w3 query")) ?? "", /^w3 query n=42 \d+\.\dms$/);
    for (const l of lines) {
      const at = Number(l.split(" ")[0]);
      assert.ok(at >= before - 5000 && at <= Date.now(), `epoch time in ${l}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tracing is off when MESH_XDS_TRACE is empty", async () => {
  await run(
    `t.traceIsolate("w0"); t.trace("push recv");
     if (t.tracing) throw new Error("tracing with an empty MESH_XDS_TRACE");
     if (t.traced(() => 7, () => "x") !== 7) throw new Error("traced() result untraced");`,
    { MESH_XDS_TRACE: "" },
  );
});

Deno.test("the last lines are written when the program exits before the next flush", async () => {
  const dir = await Deno.makeTempDir({ prefix: "push-trace-" });
  try {
    const file = `${dir}/trace.txt`;
    await run(`t.traceIsolate("main"); t.trace("last words"); Deno.exit(0);`, {
      MESH_XDS_TRACE: file,
    });
    const events = (await Deno.readTextFile(file)).trim().split("\n").map((l) =>
      l.split(" ").slice(1).join(" ")
    );
    assert.ok(events.includes("main last words"), events.join("\n"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
