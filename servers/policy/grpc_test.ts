/**
 * The Check handler as the transport sees it: the answer's message and its trailers are handed
 * over together (one write to the socket), and a call that ends before its answer is not written.
 */

import assert from "node:assert/strict";
import type { Buffer } from "node:buffer";
import type { GrpcCall } from "../../lib/grpc/mod.ts";
import { DEFAULT_MANIFEST } from "../../lib/expr/mod.ts";
import { compress, MIXER_SERVICE, mixerCodec } from "../../lib/mixer/mod.ts";
import { mixerHandlers } from "./grpc.ts";
import { Pool } from "./pool.ts";
import type { Snapshot } from "./runtime.ts";

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

/** A call that records what the handler does; `send` stays pending until `written()`. */
function fakeCall() {
  const events: string[] = [];
  let written = () => {};
  const call = {
    path: `/${MIXER_SERVICE}/Check`,
    headers: [],
    peer: "ipv4:127.0.0.1:1",
    onMessage: (_m: Buffer) => {},
    onEnd: () => {},
    onCancel: (_why: string) => {},
    send(parts: readonly Uint8Array[]) {
      events.push(`send ${parts.length}`);
      return new Promise<void>((resolve) => written = resolve);
    },
    end(status: number) {
      events.push(`end ${status}`);
    },
  } as unknown as GrpcCall;
  return { call, events, written: () => written() };
}

async function handlers() {
  const snapshot = {
    preprocess: (bag: unknown) => Promise.resolve(bag),
    check: () => Promise.resolve({ status: { code: 0 }, validDurationMs: 1000, validUseCount: 5 }),
  } as unknown as Snapshot;
  return mixerHandlers({
    codec: await mixerCodec(),
    api: new Pool(2),
    adapters: new Pool(2),
    snapshot: () => snapshot,
    metrics: { check() {}, report() {} },
    log: quiet,
    maxMessageSize: 1 << 20,
  });
}

Deno.test("a Check's trailers are queued with its answer, before the answer is written", async () => {
  const codec = await mixerCodec();
  const check = (await handlers()).get(`/${MIXER_SERVICE}/Check`)!;
  const { call, events, written } = fakeCall();
  check(call);
  const req = codec.encodeCheckRequest({
    attributes: compress({ "source.name": "a" }, DEFAULT_MANIFEST),
  });
  call.onMessage(req);
  call.onEnd();
  await new Promise((r) => setTimeout(r, 0)); // the handler's work is all microtasks
  assert.deepEqual(events, ["send 1", "end 0"]);
  written();
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(events, ["send 1", "end 0"]);
});
