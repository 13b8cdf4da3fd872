/**
 * The real `mesh-policy server` as an HTTP/2 client sees it: `--maxConcurrentStreams` in the
 * SETTINGS it advertises and a stream over the limit refused; a `grpc-timeout` deadline and a
 * malformed one.
 */

import assert from "node:assert/strict";
import { Flag, frame, FrameType } from "../../lib/grpc/h2/frames.ts";
import { grpcFrame, grpcRequest, RawClient } from "../../lib/grpc/testing.ts";
import { DEFAULT_MANIFEST } from "../../lib/expr/mod.ts";
import { compress, MIXER_SERVICE, mixerCodec } from "../../lib/mixer/mod.ts";
import { spawnProgram } from "../harness/procs.ts";

const SETTINGS_MAX_CONCURRENT_STREAMS = 3;
const REFUSED_STREAM = 7;

Deno.test("mesh-policy server advertises --maxConcurrentStreams, refuses a stream over it, honours grpc-timeout", async () => {
  const server = spawnProgram("mesh-policy", [
    "server",
    "--address",
    "tcp://127.0.0.1:0",
    "--monitoringPort",
    "0",
    "--maxConcurrentStreams",
    "3",
  ]);
  let c: RawClient | undefined;
  try {
    const addr = (await server.waitFor(/Policy API listening on (\S+)/, 20_000)).split(" ").at(-1)!;
    c = await RawClient.connect(Number(addr.split(":").at(-1)));
    const raw = c;
    assert.ok(await raw.until(() => raw.settings().has(SETTINGS_MAX_CONCURRENT_STREAMS)));
    assert.equal(raw.settings().get(SETTINGS_MAX_CONCURRENT_STREAMS), 3);

    const path = `/${MIXER_SERVICE}/Check`;
    // Three calls held open (no END_STREAM) fill the limit; the fourth is refused.
    await raw.write(
      raw.headersFrame(1, grpcRequest(path)),
      raw.headersFrame(3, grpcRequest(path, [["grpc-timeout", "20m"]])),
      raw.headersFrame(5, grpcRequest(path, [["grpc-timeout", "1 second"]])),
      raw.headersFrame(7, grpcRequest(path)),
    );
    const status = (id: number) =>
      raw.headers.get(id)?.flat().find(([k]) => k === "grpc-status")?.[1];
    assert.ok(await raw.until(() => raw.resets().has(7)));
    assert.equal(raw.resets().get(7), REFUSED_STREAM);
    // The malformed deadline is answered at once, the 20 ms one when it passes (the request
    // never ends, so no adapter could answer first).
    assert.ok(await raw.until(() => status(3) !== undefined && status(5) !== undefined));
    assert.equal(status(3), "4"); // DEADLINE_EXCEEDED
    assert.equal(status(5), "3"); // INVALID_ARGUMENT
    assert.equal(status(1), undefined, "the call without a deadline waits for its request");

    // With room again, a complete Check is answered on the same connection.
    const codec = await mixerCodec();
    const body = codec.encodeCheckRequest(
      { attributes: compress({ "source.name": "a" }, DEFAULT_MANIFEST) } as never,
    );
    await raw.write(
      raw.headersFrame(9, grpcRequest(path, [["grpc-timeout", "10S"]])),
      frame(FrameType.DATA, Flag.END_STREAM, 9, grpcFrame(body)),
    );
    assert.ok(await raw.until(() => status(9) !== undefined));
    assert.equal(status(9), "0");
    assert.equal(raw.isClosed, false);
  } finally {
    c?.socket.destroy();
    await server.stop();
  }
});
