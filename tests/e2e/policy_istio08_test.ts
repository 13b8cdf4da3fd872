/**
 * End-to-end: `mesh-policy server` given Istio 0.8's policy configuration as Istio's docs and
 * samples wrote it (tests/e2e/testdata/istio08/policy.yaml): camelCase handler params, a quoted
 * duration in an expression, an empty instance expression, and one bad object that is rejected
 * alone while everything else is in force. Called by grpc-js (Check with quotas, Report).
 */

import assert from "node:assert/strict";
import { DEFAULT_MANIFEST, type Value } from "../../lib/expr/mod.ts";
import { compress } from "../../lib/mixer/mod.ts";
import { mixerClient, policyAddresses, policyServerArgs } from "../harness/policy.ts";
import { spawnProgram, waitUntil } from "../harness/procs.ts";

const CONFIG = new URL("./testdata/istio08/policy.yaml", import.meta.url);

type Bag = Record<string, Value>;

/** {@link mixerClient} with `quota`: one unit of `requestcount`, deduplicated per call. */
async function client(address: string) {
  const c = await mixerClient(address);
  let calls = 0;
  return {
    ...c,
    quota: async (bag: Bag) => {
      const name = "requestcount.quota.mesh-system";
      const r = await c.call("Check", {
        attributes: compress(bag, DEFAULT_MANIFEST),
        deduplication_id: `call-${++calls}`, // as proxies do: one id per call
        quotas: { [name]: { amount: 1, best_effort: false } },
      });
      const q = (r.quotas ?? {}) as Record<string, { granted_amount?: string | number }>;
      return Number(q[name]?.granted_amount ?? 0);
    },
  };
}

Deno.test("mesh-policy server takes Istio 0.8's policy configuration as Istio wrote it", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-policy-istio08-" });
  await Deno.copyFile(CONFIG, `${dir}/policy.yaml`);
  const server = spawnProgram("mesh-policy", policyServerArgs(dir));
  let c: Awaited<ReturnType<typeof client>> | undefined;
  try {
    const { address: grpcAddr, monitoring } = await policyAddresses(server, 20_000);
    await server.waitFor(
      /Configuration loaded: \d+ rules, \d+ handlers, 2 objects rejected/,
      20_000,
    );
    const cl = c = await client(grpcAddr);

    await t.step("a bad object is rejected alone, with the rule that needs it", async () => {
      await server.waitFor(
        /rejected \(not in force\): denier\/mesh-system\/broken: spec\.valid_use_count: must be a number >= 0, got "many"/,
        10_000,
      );
      await server.waitFor(
        /rejected \(not in force\): rule\/mesh-system\/uses-broken: spec\.actions\[0\]\.handler: handler "broken\.denier" was rejected/,
        10_000,
      );
      assert.doesNotMatch(
        server.output(),
        /rejected.*(memquota|prometheus|stdio|listchecker|authorization|rbac)\//,
      );
      assert.equal(await cl.check({ "source.name": "productpage" }), 0);
      const metrics = await (await fetch(`http://${monitoring}/metrics`)).text();
      assert.match(metrics, /^mesh_policy_config_loads_total\{result="partial"\} 1$/m);
      assert.match(metrics, /^mesh_policy_config_issues 2$/m);
    });

    await t.step(
      "memquota takes maxAmount and validDuration (camelCase), overrides too",
      async () => {
        assert.deepEqual(
          [
            await cl.quota({ "source.name": "productpage" }),
            await cl.quota({ "source.name": "productpage" }),
            await cl.quota({ "source.name": "productpage" }),
          ],
          [1, 1, 0],
        );
        assert.deepEqual(
          [
            await cl.quota({ "source.name": "reviews" }),
            await cl.quota({ "source.name": "reviews" }),
          ],
          [1, 0],
        );
      },
    );

    await t.step("listchecker takes entryType (camelCase)", async () => {
      assert.notEqual(await cl.check({ "source.name": "BAD-CLIENT" }), 0);
      assert.equal(await cl.check({ "source.name": "good-client" }), 0);
    });

    await t.step(
      'a quoted duration (response.duration | "0ms") is a DURATION; prometheus takes exponentialBuckets',
      async () => {
        await cl.report([
          {
            "context.protocol": "http",
            "destination.service": "a.default.svc.cluster.local",
            "response.duration": 50,
          },
          { "context.protocol": "http", "destination.service": "a.default.svc.cluster.local" },
        ]);
        let text = "";
        await waitUntil(
          async () => {
            text = await (await fetch(`http://${monitoring}/metrics`)).text();
            return /test_latency_count\{[^}]*\} 2/.test(text);
          },
          10_000,
          "the latency histogram",
        );
        const les = [...text.matchAll(/test_latency_bucket\{le="([^"]+)"/g)].map((m) => m[1]);
        assert.deepEqual(les, ["0.1", "1", "10", "+Inf"]);
        assert.match(
          text,
          /test_latency_bucket\{le="0.1",destination="a.default.svc.cluster.local"\} 2/,
        );
      },
    );

    await t.step("stdio takes outputAsJson: false (camelCase)", async () => {
      await cl.report([{ "context.protocol": "http", "response.duration": 7 }]);
      await server.waitFor(/istio08-access/, 10_000, "stdout");
      const line = server.output().split("\n").find((l) => l.includes("istio08-access"))!;
      assert.match(line, /\tinfo\taccess\.logentry\.mesh-system\t/);
      assert.ok(!line.trimStart().startsWith("{"), line);
    });

    await t.step(
      'an empty instance expression (groups: "") is unset: the rbac rule is in force',
      async () => {
        // rbac with no ServiceRole denies; the rule applies to this destination only
        assert.notEqual(
          await cl.check({
            "destination.service": "locked.default.svc.cluster.local",
            "source.name": "x",
          }),
          0,
        );
        assert.equal(
          await cl.check({
            "destination.service": "open.default.svc.cluster.local",
            "source.name": "x",
          }),
          0,
        );
      },
    );
  } finally {
    c?.close();
    await server.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
