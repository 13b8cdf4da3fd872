/**
 * A call's deadline (`grpc-timeout`) and its client's cancellation reach the adapter call in
 * flight: a waiting caller leaves the worker pool's queue, an adapter that waits (a listchecker
 * whose provider has not answered yet) stops, its worker is freed, and the caller gets
 * DEADLINE_EXCEEDED. Deno's sanitizers check that no timer or fetch is left behind.
 */

import assert from "node:assert/strict";
import { Flag, frame, FrameType } from "../../lib/grpc/h2/frames.ts";
import { grpcFrame, grpcRequest, RawClient } from "../../lib/grpc/testing.ts";
import { DEFAULT_MANIFEST } from "../../lib/expr/mod.ts";
import { getLogger } from "../../lib/log/mod.ts";
import { compress, MIXER_SERVICE, mixerCodec } from "../../lib/mixer/mod.ts";
import { abortable, CallError } from "./abort.ts";
import { type AdapterEnv, ADAPTERS, Code } from "./adapters/mod.ts";
import type { KubeConfig } from "../../lib/kube/mod.ts";
import { Pool } from "./pool.ts";
import { eventually, obj, startTestServer } from "./_testutil.ts";

const CHECK = `/${MIXER_SERVICE}/Check`;
const CANCEL = 8; // HTTP/2 error code of RST_STREAM

/** A handler of `kind` built with the real fetch (and `over`). */
function build(kind: string, spec: Record<string, unknown>, over: Partial<AdapterEnv> = {}) {
  return ADAPTERS.get(kind)!.build(spec, {
    log: getLogger("adapters"),
    now: Date.now,
    rbac: () => ({ roles: [], bindings: [] }),
    write: () => {},
    fetch: (...a) => fetch(...a),
    ...over,
  }, `${kind}/mesh-system/h`);
}

const deadline = () => new CallError(Code.DEADLINE_EXCEEDED, "deadline of 100 ms exceeded");

/** An HTTP server on 127.0.0.1 that never answers; it counts requests and those given up. */
function silentProvider() {
  const seen = { requests: 0, abandoned: 0 };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    seen.requests++;
    return new Promise<Response>((resolve) => {
      req.signal.addEventListener("abort", () => {
        seen.abandoned++;
        resolve(new Response("too late"));
      });
    });
  });
  return { seen, url: `http://127.0.0.1:${server.addr.port}/list`, server };
}

Deno.test("a caller waiting for a pool slot leaves the queue when its signal aborts", async () => {
  const pool = new Pool(1);
  const { promise: held, resolve: release } = Promise.withResolvers<void>();
  const first = pool.run(() => held);
  const ctl = new AbortController();
  let ran = false;
  const waiting = pool.run(() => ran = true, ctl.signal);
  assert.equal(pool.queued, 1);
  ctl.abort(deadline());
  await assert.rejects(waiting, /deadline of 100 ms exceeded/);
  assert.equal(pool.queued, 0, "the aborted caller left the queue");
  // The slot goes to the next caller, not to the one that left.
  const next = pool.run(() => "next");
  release();
  await first;
  assert.equal(await next, "next");
  assert.equal(ran, false);
  assert.equal(pool.active, 0);
  // An already aborted signal is refused at once.
  await assert.rejects(pool.run(() => 1, ctl.signal), /deadline of 100 ms exceeded/);
  assert.equal(pool.active, 0);
  // abortable() stops the wait, and leaves no listener behind when the promise wins.
  const quiet = new AbortController();
  assert.equal(await abortable(Promise.resolve(7), quiet.signal), 7);
});

Deno.test("a listchecker waiting for its provider's first answer stops when the call's signal aborts", async () => {
  const p = silentProvider();
  const h = build("listchecker", { provider_url: p.url, refresh_interval: "60s" });
  try {
    const ctl = new AbortController();
    const pending = h.check!(
      { name: "i.listentry.mesh-system", kind: "listentry", value: { value: "a" }, types: {} },
      ctl.signal,
    );
    assert.ok(pending instanceof Promise, "the check waits for the list");
    await eventually(() => p.seen.requests === 1, "the provider request");
    ctl.abort(new CallError(Code.CANCELLED, "call cancelled"));
    await assert.rejects(Promise.resolve(pending), /call cancelled/);
  } finally {
    await h.close!();
    await eventually(() => p.seen.abandoned === 1, "the provider fetch aborted by close()");
    await p.server.shutdown();
  }
});

Deno.test("a kubernetesenv pod lookup and a statsd send stop when the call's signal aborts", async () => {
  // An orchestrator that never answers.
  const { promise: never } = Promise.withResolvers<KubeConfig>();
  const kube = build("kubernetesenv", {}, { kubeConfig: () => never });
  const ctl = new AbortController();
  const lookup = kube.generate!({
    name: "attributes.kubernetes.mesh-system",
    kind: "kubernetes",
    value: { source_uid: "kubernetes://reviews-v1.shop" },
    types: {},
  }, ctl.signal);
  ctl.abort(deadline());
  await assert.rejects(Promise.resolve(lookup), /deadline of 100 ms exceeded/);
  await kube.close?.();

  const statsd = build("statsd", { address: "127.0.0.1:9", metrics: { m: {} } });
  const late = AbortSignal.abort(deadline());
  await assert.rejects(
    Promise.resolve(statsd.report!([{
      name: "m.metric.mesh-system",
      kind: "metric",
      value: { value: 1 },
      types: {},
    }], late)),
    /deadline of 100 ms exceeded/,
  );
  await statsd.close?.();
});

Deno.test("a Check past its deadline stops the adapter in flight and frees its worker (--adapterWorkerPoolSize 1)", async () => {
  const p = silentProvider();
  const listentry = (name: string, value: string) => obj("listentry", name, { value });
  const s = await startTestServer([
    // "gated" requests go through a listchecker whose provider never answers.
    obj("listchecker", "slow", { provider_url: p.url, refresh_interval: "60s" }),
    listentry("gated", "source.name"),
    obj("rule", "gate", {
      match: 'source.name == "gated"',
      actions: [{ handler: "slow.listchecker", instances: ["gated.listentry"] }],
    }),
    // Other requests go through a listchecker with a fixed list: they need the one worker too.
    obj("listchecker", "fixed", { overrides: ["other"] }),
    listentry("other", "source.name"),
    obj("rule", "fixed", {
      match: 'source.name == "other"',
      actions: [{ handler: "fixed.listchecker", instances: ["other.listentry"] }],
    }),
  ], { adapterWorkerPoolSize: 1 });
  const port = Number(s.handle.addresses.grpc.split(":").pop());
  const raw = await RawClient.connect(port);
  const codec = await mixerCodec();
  const body = (name: string) =>
    grpcFrame(
      codec.encodeCheckRequest({
        attributes: compress({ "source.name": name }, DEFAULT_MANIFEST),
      } as never),
    );
  const header = (id: number, name: string) =>
    decodeURIComponent(raw.headers.get(id)?.flat().find(([k]) => k === name)?.[1] ?? "");
  const status = (id: number) => header(id, "grpc-status");
  /** Sends Check `id` for `name`; with `timeout`, waits for and returns its gRPC status. */
  const check = async (id: number, name: string, timeout?: string) => {
    await raw.write(
      raw.headersFrame(id, grpcRequest(CHECK, timeout ? [["grpc-timeout", timeout]] : [])),
      frame(FrameType.DATA, Flag.END_STREAM, id, body(name)),
    );
    if (!timeout) return "";
    assert.ok(await raw.until(() => status(id) !== ""));
    return status(id);
  };
  try {
    await eventually(() => p.seen.requests === 1, "the provider request");
    // 1: waits for the list, with a 100 ms deadline.
    assert.equal(await check(1, "gated", "100m"), String(Code.DEADLINE_EXCEEDED));
    assert.equal(header(1, "grpc-message"), "deadline of 100 ms exceeded");
    // The one adapter worker is free again: another Check gets its answer (its generous deadline
    // would pass, instead, if the worker were still held).
    assert.equal(await check(3, "other", "5S"), "0");

    // 5: holds the worker (no deadline); 7: queued behind it with a 100 ms deadline leaves the
    // queue; the client then cancels 5, which frees the worker for the next Check.
    await check(5, "gated");
    await new Promise((r) => setTimeout(r, 50)); // 5 reaches the adapter first
    assert.equal(await check(7, "other", "100m"), String(Code.DEADLINE_EXCEEDED));
    assert.equal(status(5), "", "5 still waits for the list");
    const cancel = new Uint8Array(4);
    new DataView(cancel.buffer).setUint32(0, CANCEL);
    await raw.write(frame(FrameType.RST_STREAM, 0, 5, cancel));
    assert.equal(await check(9, "other", "5S"), "0");
    const other = await s.check({ "source.name": "other" });
    assert.equal(other.precondition.status.code ?? 0, 0);
    assert.equal(p.seen.abandoned, 0, "the shared list fetch goes on for later Checks");
  } finally {
    raw.socket.destroy();
    await s.close();
    // Closing the handler aborted the fetch still waiting for the provider.
    await eventually(() => p.seen.abandoned === 1, "the provider fetch given up");
    await p.server.shutdown();
  }
});
