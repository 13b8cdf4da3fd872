import assert from "node:assert/strict";
import type { Service, ServiceInstance } from "../model/types.ts";
import { waitUntil } from "../../tests/harness/procs.ts";
import { createPollingRegistry, getJson, type Snapshot } from "./poller.ts";

const svc = (hostname: string) => ({ hostname } as unknown as Service);
const inst = (address: string) => ({ address } as unknown as ServiceInstance);

Deno.test("createPollingRegistry() tells services changes from endpoints changes, and nothing when nothing changed", async () => {
  let next: Snapshot = { services: [], instances: [] };
  const reg = createPollingRegistry({
    name: "Test",
    intervalMs: 60_000,
    fetchSnapshot: () => Promise.resolve(structuredClone(next)),
  });
  const seen: string[] = [];
  reg.onChange((k) => seen.push(k));
  // nothing before the first poll
  assert.deepEqual([reg.services(), reg.instances()], [[], []]);
  try {
    await reg.start(); // an empty registry is no change
    assert.deepEqual(seen, []);
    next = { services: [svc("a")], instances: [inst("10.0.0.1")] };
    await reg.pollNow();
    assert.deepEqual(seen, ["services"]); // once, though both changed
    await reg.pollNow();
    assert.deepEqual(seen, ["services"]);
    next = { services: [svc("a")], instances: [inst("10.0.0.2")] };
    await reg.pollNow();
    assert.deepEqual(seen, ["services", "endpoints"]);
    assert.deepEqual(reg.instances(), [inst("10.0.0.2")]);
    next = { services: [], instances: [inst("10.0.0.2")] };
    await reg.pollNow();
    assert.deepEqual(seen, ["services", "endpoints", "services"]);
  } finally {
    await reg.stop();
  }
});

Deno.test("createPollingRegistry() polls every interval after start, and not after stop", async () => {
  let polls = 0;
  const reg = createPollingRegistry({
    name: "Test",
    intervalMs: 10,
    fetchSnapshot: () =>
      Promise.resolve(void polls++).then(() => ({ services: [], instances: [] })),
  });
  await reg.start();
  await waitUntil(() => polls >= 3, 5000, "three polls");
  await reg.stop();
  const after = polls;
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(polls, after);
});

Deno.test("createPollingRegistry() keeps polling after a failed first poll, and stop() aborts a poll", async () => {
  let fail = true;
  let aborted = false;
  const reg = createPollingRegistry({
    name: "Test",
    intervalMs: 10,
    fetchSnapshot(signal) {
      if (fail) return Promise.reject(new Error("down"));
      // hangs until aborted
      return new Promise((_, reject) =>
        signal.addEventListener("abort", () => {
          aborted = true;
          reject(new Error("aborted"));
        })
      );
    },
  });
  await reg.start(); // resolves although the poll failed
  fail = false;
  await new Promise((r) => setTimeout(r, 30)); // a poll is now hanging
  await reg.stop();
  assert.ok(aborted);
});

Deno.test("getJson() sends accept and the caller's headers, names the status and cuts a long body", async () => {
  const bodies: Record<string, string> = { "/long": "x".repeat(1000), "/empty": "" };
  const heard: Headers[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    heard.push(req.headers);
    const path = new URL(req.url).pathname;
    if (path === "/ok") return Response.json({ a: 1 });
    if (path === "/hang") { // answers only once the client has gone
      return new Promise<Response>((r) =>
        req.signal.addEventListener("abort", () => r(new Response("late")))
      );
    }
    return new Response(bodies[path], { status: 502 });
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  const never = new AbortController().signal;
  try {
    assert.deepEqual(await getJson(`${base}/ok`, never, { headers: { "x-token": "t" } }), { a: 1 });
    assert.equal(heard[0].get("accept"), "application/json");
    assert.equal(heard[0].get("x-token"), "t");
    await assert.rejects(
      getJson(`${base}/long`, never),
      (e: Error) => e.message === `GET ${base}/long: HTTP 502: ${"x".repeat(200)}`,
    );
    await assert.rejects(
      getJson(`${base}/empty`, never),
      (e: Error) => e.message === `GET ${base}/empty: HTTP 502`,
    );
    // the caller's signal ends a request that gets no answer
    const stop = new AbortController();
    const hanging = getJson(`${base}/hang`, stop.signal);
    setTimeout(() => stop.abort(new Error("stopped")), 20);
    await assert.rejects(hanging, /stopped/);
  } finally {
    await server.shutdown();
  }
});
