import assert from "node:assert/strict";
import { ConfigError, parseAddress, toConfig } from "./config.ts";
import { policyFlags } from "./_testutil.ts";
import { Pool } from "./pool.ts";

Deno.test("toConfig() takes the spec's defaults", () => {
  const c = toConfig(policyFlags());
  assert.deepEqual(c.address, { kind: "tcp", host: "0.0.0.0", port: 9091 });
  assert.equal(c.monitoringPort, 9093);
  assert.equal(c.configDefaultNamespace, "mesh-system");
  assert.equal(c.apiWorkerPoolSize, 1024);
  assert.ok(Object.isFrozen(c));
});

Deno.test("toConfig() parses --address and makes --singleThreaded use pools of one", () => {
  assert.deepEqual(parseAddress("tcp://127.0.0.1:9092"), {
    kind: "tcp",
    host: "127.0.0.1",
    port: 9092,
  });
  assert.deepEqual(parseAddress("tcp://[::1]:1"), { kind: "tcp", host: "::1", port: 1 });
  assert.deepEqual(parseAddress("unix:///run/policy.sock"), {
    kind: "unix",
    path: "/run/policy.sock",
  });
  const c = toConfig(policyFlags({ singleThreaded: true }));
  assert.equal(c.apiWorkerPoolSize, 1);
  assert.equal(c.adapterWorkerPoolSize, 1);
});

Deno.test("toConfig() lists every bad flag in one error", () => {
  assert.throws(
    () =>
      toConfig(policyFlags({
        address: "http://x",
        apiWorkerPoolSize: 0,
        maxMessageSize: 10,
        configStoreURL: "k8s://",
        configDefaultNamespace: "Bad_NS",
        trace_tracera_url: "zipkin:9411",
        livenessProbePath: "/tmp/x",
      })),
    (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      for (
        const part of [
          'invalid --address "http://x": want tcp://<host>:<port> or unix://<path>',
          "--apiWorkerPoolSize must be at least 1, got 0",
          "--maxMessageSize must be at least 1024, got 10",
          'invalid --configStoreURL "k8s://": want fs://<dir> or orch://<orchconfig path>',
          'invalid --configDefaultNamespace "Bad_NS"',
          'invalid --trace_tracera_url "zipkin:9411"',
          "--livenessProbePath needs a positive --livenessProbeInterval",
        ]
      ) assert.ok(e.message.includes(part), `${part} in ${e.message}`);
      return true;
    },
  );
});

Deno.test("Pool runs at most `size` jobs at once; later callers wait in order", async () => {
  const pool = new Pool(2);
  let running = 0, peak = 0;
  const order: number[] = [];
  await Promise.all(Array.from({ length: 6 }, (_, i) =>
    pool.run(async () => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 5));
      order.push(i);
      running--;
    })));
  assert.equal(peak, 2);
  assert.deepEqual(order, [0, 1, 2, 3, 4, 5]);
  assert.equal(pool.active, 0);
  await assert.rejects(pool.run(() => Promise.reject(new Error("boom"))), /boom/);
  assert.equal(pool.active, 0, "a failed job frees its slot");
});
