import assert from "node:assert/strict";
import { cgroupCpuLimit, coreCount, isPortProblem, reserveSharedPort, workerCount } from "./mod.ts";

Deno.test("cgroupCpuLimit() rounds a quota up to whole cores, and is undefined without one", () => {
  assert.equal(cgroupCpuLimit("200000 100000\n"), 2);
  assert.equal(cgroupCpuLimit("150000 100000"), 2);
  assert.equal(cgroupCpuLimit("50000 100000"), 1);
  assert.equal(cgroupCpuLimit("max 100000\n"), undefined);
  assert.equal(cgroupCpuLimit(undefined), undefined);
  assert.equal(cgroupCpuLimit("garbage"), undefined);
});

Deno.test("workerCount() takes 0 as one per core, 1 as no workers, and refuses a unix socket", () => {
  assert.deepEqual(workerCount(1), { count: 1, reason: "" });
  assert.equal(workerCount(0).count, coreCount());
  if (Deno.build.os === "linux") assert.deepEqual(workerCount(3), { count: 3, reason: "" });
  const unix = workerCount(4, { unixSocket: true });
  assert.equal(unix.count, 1);
  assert.match(unix.reason, /--workers 4: a unix socket is served by one isolate/);
});

Deno.test("reserveSharedPort() picks a free port for 0 and refuses a port held by a shared listener", async () => {
  const net = await import("node:net");
  const port = await reserveSharedPort("127.0.0.1", 0);
  assert.ok(port > 0);
  // A listener that allows sharing still makes the port "in use" for a new program.
  const held = net.createServer();
  await new Promise<void>((r) =>
    held.listen({ port, host: "127.0.0.1", reusePort: true } as { port: number }, () => r())
  );
  try {
    await assert.rejects(reserveSharedPort("127.0.0.1", port), /EADDRINUSE/);
  } finally {
    await new Promise<void>((r) => held.close(() => r()));
  }
});

Deno.test("isPortProblem() tells a port failure (no fallback) from another start failure", () => {
  assert.ok(isPortProblem("listen EADDRINUSE: address already in use 0.0.0.0:15010"));
  assert.ok(isPortProblem("listen EACCES: permission denied 0.0.0.0:80"));
  assert.ok(isPortProblem("listen EADDRNOTAVAIL: 10.9.9.9:15010"));
  assert.ok(!isPortProblem("worker signing API worker 0 did not start within 120000 ms"));
});
