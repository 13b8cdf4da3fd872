/**
 * The Check handler as the transport sees it: the answer's message and its trailers are handed
 * over together (one write to the socket), and a call that ends before its answer is not written.
 */

import assert from "node:assert/strict";
import { recordingCall } from "../../lib/grpc/testing.ts";
import { DEFAULT_MANIFEST } from "../../lib/expr/mod.ts";
import { compress, MIXER_SERVICE, mixerCodec } from "../../lib/mixer/mod.ts";
import { mixerHandlers } from "./grpc.ts";
import { Pool } from "./pool.ts";
import type { Snapshot } from "./runtime.ts";
import { quietLogger as quiet } from "../../lib/log/testing.ts";

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
  const { call, events, written } = recordingCall(`/${MIXER_SERVICE}/Check`);
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
