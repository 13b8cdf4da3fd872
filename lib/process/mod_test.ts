import assert from "node:assert/strict";
import { join } from "node:path";
import { awaitReady, waitUntil } from "./mod.ts";

const SERVER = new URL("./testdata/server.ts", import.meta.url).pathname;

/** Reads the first line of a stream, then cancels the stream. */
async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  try {
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
  } finally {
    await reader.cancel();
  }
  return text.split("\n")[0];
}

/** Starts testdata/server.ts and waits for its "ready <port>" line. */
async function startServer(logFile: string, mode: string) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", SERVER, logFile, mode],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const first = await awaitReady(firstLine(child.stdout), 10_000, "test server");
  const m = /^ready (\d+)$/.exec(first);
  assert.ok(m, `unexpected first line ${JSON.stringify(first)}`);
  return { child, port: Number(m[1]) };
}

Deno.test("runUntilSignal() shuts down, flushes the log and exits 0 on SIGTERM", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const logFile = join(dir, "server.log");
    const { child, port } = await startServer(logFile, "ok");
    const res = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(await res.text(), "up");
    child.kill("SIGTERM");
    const [status, stderr] = await Promise.all([
      child.status,
      new Response(child.stderr).text(),
    ]);
    assert.equal(status.code, 0, stderr);
    const log = await Deno.readTextFile(logFile);
    assert.match(log, /\tinfo\tdefault\tsignal received, shutting down signal=SIGTERM\n/);
    assert.match(log, /\tlistener closed\n.*\tshutdown complete\n$/);
    await assert.rejects(
      Deno.connect({ hostname: "127.0.0.1", port }).then((c) => c.close()),
      Deno.errors.ConnectionRefused,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runUntilSignal() exits 1 at once on a second signal during shutdown", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const logFile = join(dir, "server.log");
    const { child } = await startServer(logFile, "hang");
    child.kill("SIGINT");
    await waitUntil(
      async () => (await Deno.readTextFile(logFile)).includes("shutting down"),
      { what: "first signal to be handled" },
    );
    child.kill("SIGTERM");
    const [status] = await Promise.all([child.status, new Response(child.stderr).text()]);
    assert.equal(status.code, 1);
    assert.match(await Deno.readTextFile(logFile), /second signal received/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("awaitReady() returns the value or fails naming what was not ready", async () => {
  assert.equal(await awaitReady(Promise.resolve(7), 1000, "x"), 7);
  await assert.rejects(awaitReady(new Promise(() => {}), 20, "mesh-discovery"), {
    message: "mesh-discovery not ready after 0.02s",
  });
});

Deno.test("waitUntil() returns the first truthy value or times out", async () => {
  let n = 0;
  assert.equal(await waitUntil(() => ++n >= 3 && n, { intervalMs: 1 }), 3);
  await assert.rejects(waitUntil(() => false, { timeoutMs: 30, intervalMs: 5, what: "nothing" }), {
    message: "timed out after 0.03s waiting for nothing",
  });
});

Deno.test("runUntilSignal() shuts down a server whose start was still pending at the signal", async () => {
  const { runUntilSignal } = await import("./mod.ts");
  const events: string[] = [];
  const note = (msg: string) => void events.push(msg);
  const logger = { debug: note, info: note, warn: note, error: note };
  const { promise: starting, resolve: started } = Promise.withResolvers<
    { shutdown(): Promise<void> }
  >();
  const run = runUntilSignal(starting, undefined, { signals: ["SIGUSR2"], logger });
  Deno.kill(Deno.pid, "SIGUSR2");
  await waitUntil(() => events.includes("signal received, shutting down"));
  started({ shutdown: () => (events.push("shutdown"), Promise.resolve()) });
  assert.equal(await run, 0);
  assert.deepEqual(events, ["signal received, shutting down", "shutdown", "shutdown complete"]);
});

Deno.test("runUntilSignal() rejects when the server fails to start", async () => {
  const { runUntilSignal } = await import("./mod.ts");
  await assert.rejects(
    runUntilSignal(Promise.reject(new Error("port in use")), undefined, { signals: ["SIGUSR2"] }),
    { message: "port in use" },
  );
});
