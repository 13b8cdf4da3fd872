import assert from "node:assert/strict";
import type { Logger } from "../log/mod.ts";
import { waitUntil } from "../../tests/harness/procs.ts";
import { Channel, RemoteError, WorkerPool, type WorkerPoolOptions } from "./mod.ts";

const URL_ = new URL("./testdata/echo_worker.ts", import.meta.url);

function recorder(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const at = (l: string) => (m: string) => void lines.push(`${l} ${m}`);
  return { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/** A pool of the echo worker: one worker, tag "t", a recording logger, unless `o` says otherwise. */
function echoPool(o: Partial<WorkerPoolOptions>): Promise<WorkerPool> {
  return WorkerPool.start({
    url: URL_,
    count: 1,
    name: "echo worker",
    init: () => ({ tag: "t" }),
    log: recorder(),
    ...o,
  });
}

Deno.test("WorkerPool broadcasts to every worker, answers their requests, and reports a worker's error as RemoteError", async () => {
  const inits: number[] = [];
  const pool = await WorkerPool.start({
    url: URL_,
    count: 2,
    name: "echo worker",
    init: (i) => {
      inits.push(i);
      return { tag: `t${i}` };
    },
    handlers: { double: (n) => (n as number) * 2 },
    log: recorder(),
  });
  try {
    assert.deepEqual(inits.sort(), [0, 1]);
    const echoes = await pool.broadcast<{ echo: unknown }>("echo", { x: 1 });
    assert.deepEqual(echoes.map((e) => e?.echo), [{ x: 1 }, { x: 1 }]);
    assert.deepEqual(await pool.broadcast("ask"), [42, 42]);
    const log = recorder();
    const failing = await WorkerPool.start({
      url: URL_,
      count: 1,
      name: "f",
      init: () => ({ tag: "" }),
      log,
    });
    try {
      assert.deepEqual(await failing.broadcast("fail"), [undefined]);
      assert.match(log.lines.join("\n"), /warn f 0: fail failed: asked to fail/);
    } finally {
      await failing.close(100);
    }
    assert.ok(new RemoteError("x") instanceof Error);
  } finally {
    await pool.close(100);
  }
});

/** Ends worker 0 with `end` (a crash, a kill) and waits until a new one answers. */
async function restarted(pool: WorkerPool, end: () => unknown): Promise<void> {
  const [before] = await pool.broadcast<{ started: number }>("echo", 1);
  await end();
  await waitUntil(
    async () => {
      const [r] = await pool.broadcast<{ started: number }>("echo", 1);
      return r !== undefined && r.started !== before!.started;
    },
    30_000,
    "the worker to be started again",
  );
}

Deno.test("WorkerPool starts a worker that died again and logs why", async () => {
  const log = recorder();
  const pool = await echoPool({ restartDelayMs: 10, log });
  try {
    await restarted(pool, () => pool.broadcast("crash"));
    assert.match(
      log.lines.join("\n"),
      /error echo worker 0 failed: .*asked to crash; starting it again/,
    );
  } finally {
    await pool.close(100);
  }
});

Deno.test("WorkerPool: a worker whose restart fails is logged and started again until it starts", async () => {
  const log = recorder();
  let starts = 0;
  const died: number[] = [];
  // the second and third starts fail (as a worker that cannot bind its port yet would)
  const pool = await echoPool({
    restartDelayMs: 10,
    log,
    onDied: (i) => died.push(i),
    init: () => ({ tag: ++starts === 2 || starts === 3 ? "refuse" : "t" }),
  });
  try {
    const [before] = await pool.broadcast<{ started: number }>("echo", 1);
    pool.kill(0, "killed by the test");
    await waitUntil(
      async () => {
        const [r] = await pool.broadcast<{ started: number }>("echo", 1);
        return r !== undefined && r.started !== before!.started && starts === 4;
      },
      30_000,
      "the worker to be started a fourth time",
    );
    assert.deepEqual(log.lines.filter((l) => l.startsWith("error")), [
      "error echo worker 0 killed by the test; starting it again in 0.01 s",
      // each death soon after the start (a failed start too) doubles the delay
      "error echo worker 0: bad init; starting it again in 0.02 s",
      "error echo worker 0: bad init; starting it again in 0.04 s",
    ]);
    assert.deepEqual(died, [0, 0, 0]);
    assert.equal(pool.restarts, 3, "a failed start is counted as a restart too");
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(starts, 4, "a worker that started is not started again");
  } finally {
    await pool.close(100);
  }
});

Deno.test("WorkerPool starts a worker that died again after a second by default", async () => {
  const pool = await echoPool({});
  try {
    const t0 = performance.now();
    pool.kill(0, "killed by the test");
    await waitUntil(
      async () => (await pool.broadcast("echo", 1))[0] !== undefined,
      30_000,
      "the worker to be started again",
    );
    const took = performance.now() - t0;
    assert.ok(took >= 900, `started again after ${took.toFixed(0)} ms`);
  } finally {
    await pool.close(100);
  }
});

Deno.test("WorkerPool: a worker that keeps dying soon after its start waits longer each time; one that ran a while is started again after the first delay", async () => {
  const log = recorder();
  const pool = await echoPool({ restartDelayMs: 10, stableAfterMs: 1500, log });
  const killAndWait = () => restarted(pool, () => pool.kill(0, "killed by the test"));
  try {
    await killAndWait();
    await killAndWait();
    await killAndWait();
    await new Promise((r) => setTimeout(r, 1600)); // it ran past stableAfterMs
    await killAndWait();
    assert.deepEqual(log.lines.filter((l) => l.startsWith("error")), [
      "error echo worker 0 killed by the test; starting it again in 0.01 s",
      "error echo worker 0 killed by the test; starting it again in 0.02 s",
      "error echo worker 0 killed by the test; starting it again in 0.04 s",
      "error echo worker 0 killed by the test; starting it again in 0.01 s",
    ]);
    assert.equal(pool.restarts, 4);
  } finally {
    await pool.close(100);
  }
});

Deno.test("WorkerPool.close(): a request in flight gives undefined without a warning, and a worker that dies meanwhile is not started again", async () => {
  const log = recorder();
  const died: number[] = [];
  let inits = 0;
  const pool = await echoPool({
    count: 2,
    restartDelayMs: 10,
    log,
    onDied: (i) => died.push(i),
    init: () => (inits++, { tag: "t" }),
  });
  const waiting = pool.broadcast("wait", 60_000);
  const closed = pool.close(0);
  pool.kill(1, "killed while closing");
  await closed;
  assert.deepEqual(await waiting, [undefined, undefined]);
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(log.lines, [], "nothing is logged of a pool that closes");
  assert.deepEqual(died, []);
  assert.equal(inits, 2, "no worker is started again");
});

Deno.test("WorkerPool: an output level changed at run time (ctrlz) reaches the workers' loggers", async () => {
  const { setScopeLevel, scopeLevels } = await import("../log/mod.ts");
  const before = scopeLevels().find((s) => s.name === "default")!.outputLevel;
  setScopeLevel("default", "info");
  const log = recorder();
  const pool = await echoPool({ count: 2, log });
  try {
    await pool.broadcast("log", "first");
    await waitUntil(() => log.lines.filter((l) => l === "error error first").length === 2, 10_000);
    for (const line of ["info first", "warn warn first"]) {
      assert.equal(log.lines.filter((l) => l === line).length, 2, line);
    }
    assert.ok(!log.lines.some((l) => l.startsWith("debug")), "debug is below info");
    setScopeLevel("default", "debug");
    await pool.broadcast("log", "second");
    await waitUntil(
      () => log.lines.filter((l) => l === "debug below the level").length === 2,
      10_000,
      "each worker's debug line once the level is debug",
    );
    setScopeLevel("default", "error");
    await pool.broadcast("log", "third");
    await pool.broadcast("echo", 1); // a round trip: any line the workers sent has arrived
    assert.ok(!log.lines.includes("info third"), log.lines.join("\n"));
  } finally {
    setScopeLevel("default", before);
    await pool.close(100);
  }
});

Deno.test("WorkerPool: a scope's own output level reaches the workers: its debug lines are written while the default scope stays at info", async () => {
  const { configureLogging, defaultLogOptions, setScopeLevel } = await import("../log/mod.ts");
  const dir = await Deno.makeTempDir();
  const file = `${dir}/out.log`;
  const logging = await configureLogging({
    ...defaultLogOptions(["ads", "default"]),
    outputLevels: { ads: "info", default: "info" },
    targets: [file],
  });
  const log = recorder();
  const pool = await echoPool({ count: 2, log });
  try {
    setScopeLevel("ads", "debug"); // at run time, as ctrlz does
    await pool.broadcast("logTo", { scope: "ads", msg: "an ads debug line", level: "debug" });
    await pool.broadcast("logTo", {
      scope: "default",
      msg: "a default debug line",
      level: "debug",
    });
    await pool.broadcast("log", "marker");
    await waitUntil(() => log.lines.filter((l) => l === "info marker").length === 2, 10_000);
    await logging.dispose();
    const written = (await Deno.readTextFile(file)).split("\n").filter((l) =>
      l.includes("\tads\t")
    );
    assert.equal(written.length, 2, written.join("\n"));
    for (const l of written) assert.match(l, /\tdebug\tads\tan ads debug line$/);
    assert.ok(!log.lines.some((l) => l.includes("a default debug line")), log.lines.join("\n"));
  } finally {
    await pool.close(100);
    await logging.dispose();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("WorkerPool.kill() ends a worker as if it died: onDied first, then it is started again", async () => {
  const log = recorder();
  const died: number[] = [];
  const pool = await echoPool({ count: 2, restartDelayMs: 10, onDied: (i) => died.push(i), log });
  try {
    const before = await pool.broadcast<{ started: number }>("echo", 1);
    assert.equal(pool.running, 2);
    pool.kill(1, "killed by the test");
    pool.kill(1, "killed twice"); // before its restart: nothing more happens
    assert.deepEqual(died, [1]);
    assert.equal(pool.running, 1, "a worker waiting for its restart is not running");
    await waitUntil(
      async () => {
        const now = await pool.broadcast<{ started: number }>("echo", 1);
        return now[1] !== undefined && now[1].started !== before[1]!.started;
      },
      30_000,
      "worker 1 to be started again",
    );
    const [w0] = await pool.broadcast<{ started: number }>("echo", 1);
    assert.equal(w0!.started, before[0]!.started, "worker 0 was restarted too");
    assert.equal(pool.running, 2);
    assert.match(log.lines.join("\n"), /error echo worker 1 killed by the test; starting it again/);
    assert.doesNotMatch(log.lines.join("\n"), /killed twice/);
  } finally {
    await pool.close(100);
  }
});

Deno.test("WorkerPool.start() fails naming the worker that did not start in time or whose init failed; kill() of no worker does nothing", async () => {
  // One worker that never answers (alone, so that no other worker's start, slow on the first
  // run while its modules are type-checked, can be the one that times out).
  await assert.rejects(
    echoPool({ init: () => ({ tag: "hang" }), startTimeoutMs: 500 }),
    { message: "echo worker 0: echo worker 0 did not start within 0.5 s" },
  );
  await assert.rejects(
    echoPool({ count: 2, init: (i) => ({ tag: i === 1 ? "refuse" : "t" }) }),
    { message: "echo worker 1: bad init" },
  );
  const log = recorder();
  const pool = await echoPool({ log });
  try {
    pool.kill(5);
    assert.equal(pool.size, 1);
    assert.deepEqual((await pool.broadcast<{ echo: unknown }>("echo", 2)).map((e) => e?.echo), [2]);
    assert.deepEqual(log.lines.filter((l) => l.startsWith("error")), []);
    // The pool's logger stands for the workers' default scope only; other scopes keep their own.
    await pool.broadcast("logTo", { scope: "pool-test-other", msg: "a line of another scope" });
    await pool.broadcast("log", "marker");
    await waitUntil(() => log.lines.includes("info marker"), 10_000, "the marker line");
    assert.ok(!log.lines.some((l) => l.includes("another scope")), log.lines.join("\n"));
  } finally {
    await pool.close(100);
  }
});

Deno.test("Channel: once closed, requests and notes that still arrive from the peer are not handled", async () => {
  const { port1, port2 } = new MessageChannel();
  const a = new Channel(port1), b = new Channel(port2);
  port1.onmessage = (e) => void a.receive(e.data);
  port2.onmessage = (e) => void b.receive(e.data);
  const seen: unknown[] = [];
  a.on("note", (x) => void seen.push(x));
  a.on("ask", (x) => (seen.push(x), "answered"));
  try {
    b.notify("note", 1);
    assert.equal(await b.request("ask", 2), "answered");
    a.close("the peer died");
    b.notify("note", 3);
    const late = b.request("ask", 4);
    const unanswered = await Promise.race([
      late.then(() => false, () => false),
      new Promise((r) => setTimeout(() => r(true), 100)),
    ]);
    assert.ok(unanswered, "a closed channel answered a request");
    assert.deepEqual(seen, [1, 2]);
  } finally {
    b.close("test over");
    port1.close();
    port2.close();
  }
});

Deno.test("WorkerPool: the descriptors its workers' listeners accept count at once in the control isolate's budget", async () => {
  const { DescriptorBudget } = await import("../grpc/descriptors.ts");
  const budget = new DescriptorBudget({ source: { limit: () => 1000, open: () => 100 } });
  const pool = await echoPool({ count: 2 });
  try {
    assert.equal(budget.open, 100);
    // each worker's listeners accept 150, then close 20, before the budget measures again
    await pool.broadcast("accept", 150);
    await pool.broadcast("accept", -20);
    assert.equal(budget.open, 360);
  } finally {
    await pool.close();
  }
});
