/**
 * Deadlines (`grpc-timeout`) and `--maxConcurrentStreams` as a client sees them: a Check or
 * Report slower than its deadline ends with DEADLINE_EXCEEDED; the stream limit is the
 * SETTINGS_MAX_CONCURRENT_STREAMS the server advertises and a stream over it is refused.
 */

import assert from "node:assert/strict";
import { Flag, frame, FrameType } from "../../lib/grpc/h2/frames.ts";
import { grpcTimeoutMs, listenGrpc } from "../../lib/grpc/mod.ts";
import { grpcFrame, grpcRequest, RawClient } from "../../lib/grpc/testing.ts";
import { DEFAULT_MANIFEST } from "../../lib/expr/mod.ts";
import { compress, MIXER_SERVICE, mixerCodec } from "../../lib/mixer/mod.ts";
import { Code } from "./adapters/mod.ts";
import { mixerHandlers } from "./grpc.ts";
import { Pool } from "./pool.ts";
import type { Snapshot } from "./runtime.ts";
import { startTestServer } from "./_testutil.ts";
import { quietLogger as quiet } from "../../lib/log/testing.ts";

const noMetrics = { check() {}, report() {} };
const SETTINGS_MAX_CONCURRENT_STREAMS = 3;
const REFUSED_STREAM = 7;

/** A policy API whose one check adapter takes `adapterMs`, with a grpc-js client. */
async function slowServer(adapterMs: number) {
  const codec = await mixerCodec();
  const timers = new Set<number>();
  let adapterCalls = 0, adapterDone = 0;
  const slow = <T>(v: T) =>
    new Promise<T>((resolve) => {
      const t = setTimeout(() => {
        timers.delete(t);
        adapterDone++;
        resolve(v);
      }, adapterMs);
      timers.add(t);
    });
  const snapshot = {
    preprocess: (bag: unknown) => Promise.resolve(bag),
    check: (_bag: unknown, run: (f: () => unknown) => Promise<unknown>) =>
      run(() => {
        adapterCalls++;
        return slow({ status: { code: 0 }, validDurationMs: 10_000, validUseCount: 200 });
      }),
    quota: () => Promise.reject(new Error("no quota")),
    report: (_bag: unknown, run: (f: () => unknown) => Promise<unknown>) =>
      run(() => slow(undefined)),
  } as unknown as Snapshot;
  const server = await listenGrpc({
    host: "127.0.0.1",
    port: 0,
    handlers: mixerHandlers({
      codec,
      api: new Pool(8),
      adapters: new Pool(8),
      snapshot: () => snapshot,
      metrics: noMetrics,
      log: quiet,
      maxMessageSize: 1 << 20,
    }),
  });
  const grpc = await import("../../lib/deps/grpc.ts");
  // deno-lint-ignore no-explicit-any
  const pkg = grpc.loadPackageDefinition(codec.definition) as any;
  const client = new pkg.mesh.mixer.v1.Mixer(
    `127.0.0.1:${server.port}`,
    grpc.credentials.createInsecure(),
  );
  const call = (method: string, req: unknown, timeoutMs?: number) =>
    new Promise<{ code: number; details?: string }>((resolve) => {
      const opts = timeoutMs === undefined ? {} : { deadline: Date.now() + timeoutMs };
      client[method](
        req,
        opts,
        (err: { code: number; details: string } | null) =>
          resolve(err ? { code: err.code, details: err.details } : { code: 0 }),
      );
    });
  return {
    port: server.port,
    call,
    calls: () => ({ adapterCalls, adapterDone }),
    async close() {
      for (const t of timers) clearTimeout(t);
      client.close();
      await server.close(14, "bye", 500);
    },
  };
}

const attrs = { attributes: compress({ "source.name": "a" }, DEFAULT_MANIFEST) };

Deno.test("grpc-timeout values are parsed in every unit, and malformed ones are named", () => {
  const t = (v: string) => grpcTimeoutMs([["grpc-timeout", v]]);
  assert.equal(grpcTimeoutMs([]), undefined);
  assert.equal(t("2H"), 7_200_000);
  assert.equal(t("3M"), 180_000);
  assert.equal(t("5S"), 5000);
  assert.equal(t("250m"), 250);
  assert.equal(t("1500u"), 1.5);
  assert.equal(t("99999999n"), 99.999999);
  for (const bad of ["", "5", "S", "123456789S", "1.5S", "-1S", "5s", "5 S"]) {
    assert.throws(() => t(bad), /malformed grpc-timeout header/, bad);
  }
});

Deno.test("a Check or Report slower than its deadline ends with DEADLINE_EXCEEDED", async () => {
  const s = await slowServer(1500);
  try {
    const check = await s.call("Check", attrs, 100);
    assert.equal(check.code, Code.DEADLINE_EXCEEDED, JSON.stringify(check));
    const report = await s.call("Report", { attributes: [attrs.attributes] }, 100);
    assert.equal(report.code, Code.DEADLINE_EXCEEDED, JSON.stringify(report));
    // The same slow adapter answers within a generous deadline, and without one.
    assert.equal((await s.call("Check", attrs, 30_000)).code, 0);
    assert.equal((await s.call("Check", attrs)).code, 0);
    // A deadline beyond the timer range (grpc-js sends 99999999H-like values) is no deadline.
    assert.equal((await s.call("Check", attrs, 30 * 86_400_000)).code, 0);
  } finally {
    await s.close();
  }
});

Deno.test("the server answers DEADLINE_EXCEEDED itself, and a malformed grpc-timeout with INVALID_ARGUMENT", async () => {
  const s = await slowServer(1500);
  const c = await RawClient.connect(s.port);
  try {
    const body = grpcFrame(
      (await mixerCodec()).encodeCheckRequest({ attributes: attrs.attributes } as never),
    );
    const path = `/${MIXER_SERVICE}/Check`;
    // Our own client, so that the status comes from the server and not from a client timer.
    await c.write(
      c.headersFrame(1, grpcRequest(path, [["grpc-timeout", "50m"]])),
      frame(FrameType.DATA, Flag.END_STREAM, 1, body),
      c.headersFrame(3, grpcRequest(path, [["grpc-timeout", "soon"]])),
      frame(FrameType.DATA, Flag.END_STREAM, 3, body),
    );
    const status = (id: number) =>
      c.headers.get(id)?.flat().find(([k]) => k === "grpc-status")?.[1];
    const message = (id: number) =>
      decodeURIComponent(c.headers.get(id)?.flat().find(([k]) => k === "grpc-message")?.[1] ?? "");
    assert.ok(await c.until(() => status(1) !== undefined && status(3) !== undefined));
    assert.equal(status(1), String(Code.DEADLINE_EXCEEDED));
    assert.match(message(1), /deadline of 50 ms exceeded/);
    assert.equal(status(3), String(Code.INVALID_ARGUMENT));
    assert.match(message(3), /malformed grpc-timeout header "soon"/);
    assert.equal(s.calls().adapterCalls, 1, "the malformed call reached no adapter");
  } finally {
    c.socket.destroy();
    await s.close();
  }
});

Deno.test("--maxConcurrentStreams is advertised in SETTINGS and a stream over it is refused", async () => {
  const s = await startTestServer([], { maxConcurrentStreams: 2 });
  const port = Number(s.handle.addresses.grpc.split(":").pop());
  const c = await RawClient.connect(port);
  try {
    assert.ok(await c.until(() => c.settings().has(SETTINGS_MAX_CONCURRENT_STREAMS)));
    assert.equal(c.settings().get(SETTINGS_MAX_CONCURRENT_STREAMS), 2);
    const path = `/${MIXER_SERVICE}/Check`;
    // Three calls left open (no END_STREAM): the third is over the limit.
    await c.write(
      c.headersFrame(1, grpcRequest(path)),
      c.headersFrame(3, grpcRequest(path)),
      c.headersFrame(5, grpcRequest(path)),
    );
    assert.ok(await c.until(() => c.resets().has(5)));
    assert.equal(c.resets().get(5), REFUSED_STREAM);
    assert.equal(c.resets().has(1) || c.resets().has(3), false);
    assert.equal(c.isClosed, false);
    // Once the limit frees up, a normal client still gets answers.
    c.socket.destroy();
    const res = await s.check({ "source.name": "a" });
    assert.equal(res.precondition.status.code ?? 0, 0);
  } finally {
    c.socket.destroy();
    await s.close();
  }
});
