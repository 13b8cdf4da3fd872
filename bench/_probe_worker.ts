/**
 * The normal ADS client of `bench/h2_attack.ts` in a Worker: its own event loop, so the time the
 * attackers spend building frames in the bench's main thread does not count in its response
 * times. Messages in: `{port, path, request, everyMs}` to start, `"stop"` to stop; out: the
 * probe's `{latencies, failures}`.
 * @module
 */
/// <reference lib="deno.worker" />
import { type Probe, startProbe } from "../lib/grpc/testing.ts";

let probe: Probe | undefined;
self.onmessage = async (e: MessageEvent) => {
  if (e.data === "stop") {
    self.postMessage(await probe!.stop());
    return;
  }
  const { port, path, request, everyMs } = e.data;
  probe = await startProbe(port, path, request, everyMs);
  self.postMessage("started");
};
