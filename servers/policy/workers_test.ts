import assert from "node:assert/strict";
import { DEFAULT_MANIFEST, type Value } from "../../lib/expr/mod.ts";
import { compress, mixerCodec } from "../../lib/mixer/mod.ts";
import { freshCheck } from "../../tests/harness/policy.ts";
import { waitUntil } from "../../tests/harness/procs.ts";
import { obj, startTestServer, type TestServer } from "./_testutil.ts";

const QUOTA = "requestcount.quota.mesh-system";

const denyRule = (source: string) =>
  obj("rule", "deny-bad", {
    match: `source.name == "${source}"`,
    actions: [{ handler: "deny.denier", instances: ["nothing.checknothing"] }],
  });

/** `mesh_policy_check_total` (every code) of each worker. */
async function checksPerWorker(s: TestServer): Promise<number[]> {
  return (await s.handle.workerMetrics()).map((json) => {
    const m = (json as { name: string; values: { value: number }[] }[])
      .find((x) => x.name === "mesh_policy_check_total");
    return (m?.values ?? []).reduce((n, v) => n + v.value, 0);
  });
}

/** Checks `attrs` on new connections until every worker answered one; each must answer `code`. */
async function everyWorkerAnswers(s: TestServer, attrs: Record<string, Value>, code: number) {
  const before = await checksPerWorker(s);
  assert.equal(before.length, 2);
  await waitUntil(
    async () => {
      const r = await freshCheck(s.handle.addresses.grpc, attrs);
      assert.equal(r.precondition.status.code ?? 0, code, JSON.stringify(attrs));
      return (await checksPerWorker(s)).every((n, i) => n > before[i]);
    },
    60_000,
    "every worker to answer a Check",
  );
}

Deno.test("start() with workers 2 on port 0: every worker answers Checks, a config change reaches every worker, Reports and quotas are counted once", async () => {
  const s = await startTestServer([
    obj("denier", "deny", { status: { code: 7, message: "blocked" } }),
    obj("checknothing", "nothing", {}),
    denyRule("bad"),
    obj("memquota", "handler", {
      quotas: [{ name: QUOTA, max_amount: 3, valid_duration: "60s" }],
    }),
    obj("quota", "requestcount", { dimensions: { source: 'source.name | "unknown"' } }),
    obj("rule", "quota", {
      actions: [{ handler: "handler.memquota", instances: ["requestcount.quota"] }],
    }),
  ], { workers: 2 });
  try {
    assert.equal(s.handle.workers, 2);
    assert.match(s.handle.addresses.grpc, /^127\.0\.0\.1:[1-9]\d*$/);
    await everyWorkerAnswers(s, { "source.name": "bad" }, 7);
    await everyWorkerAnswers(s, { "source.name": "good" }, 0);

    // A config change: once reload() resolved, every worker has it.
    await s.store.update(denyRule("worse"));
    await s.handle.reload();
    await everyWorkerAnswers(s, { "source.name": "bad" }, 0);
    await everyWorkerAnswers(s, { "source.name": "worse" }, 7);

    // Quotas are one process-wide counter: 5 requests of 1 over new connections, 3 granted.
    let granted = 0;
    for (let i = 0; i < 5; i++) {
      const r = await freshCheck(s.handle.addresses.grpc, { "source.name": "q" }, {
        deduplication_id: `q${i}`,
        quotas: { [QUOTA]: { amount: 1, best_effort: false } },
      });
      granted += Number(r.quotas![QUOTA].granted_amount ?? 0);
    }
    assert.equal(granted, 3);

    // Reports reach the control isolate's prometheus handler; /metrics sums the workers' Checks.
    await s.report([{
      "context.protocol": "http",
      "response.code": 200,
      "destination.service": "a.b.svc.cluster.local",
    }]);
    const own = (await checksPerWorker(s)).reduce((a, b) => a + b, 0);
    const text = await (await fetch(`http://${s.handle.addresses.monitoring}/metrics`)).text();
    const total = [...text.matchAll(/^mesh_policy_check_total\{code="\d+"\} (\d+)$/gm)]
      .reduce((n, m) => n + Number(m[1]), 0);
    assert.equal(total, own + 5, text); // the workers' Checks, and the 5 quota Checks
    assert.match(text, /^mesh_policy_report_total\{code="0"\} 1$/m);
    assert.match(text, /^mesh_request_count\{.*\} 1$/m);
    // the workers' health (their own registries have no pools: not counted twice)
    assert.match(text, /^mesh_worker_isolates\{pool="policy API worker"\} 2$/m);
    assert.match(text, /^mesh_worker_restarts_total\{pool="policy API worker"\} 0$/m);
  } finally {
    await s.close();
  }
  // closed: the workers no longer hold the port
  const port = Number(s.handle.addresses.grpc.split(":")[1]);
  await assert.rejects(
    Deno.connect({ hostname: "127.0.0.1", port }),
    Deno.errors.ConnectionRefused,
  );
});

/**
 * One policy worker whose forwarded calls (Reports) run `report` in this isolate, and a Mixer
 * client of its port; both closed after `fn`.
 */
async function withReportWorker(
  report: (body: Uint8Array, signal: AbortSignal) => Promise<Uint8Array>,
  fn: (
    // deno-lint-ignore no-explicit-any
    c: any,
    workers: import("./workers.ts").PolicyWorkers,
  ) => Promise<void>,
): Promise<void> {
  const { startPolicyWorkers } = await import("./workers.ts");
  const { toConfig } = await import("./mod.ts");
  const { policyFlags } = await import("./_testutil.ts");
  const { Pool } = await import("./pool.ts");
  const { getLogger } = await import("../../lib/log/mod.ts");
  const workers = await startPolicyWorkers({
    count: 1,
    host: "127.0.0.1",
    port: 0,
    config: toConfig(policyFlags({ port: 0, monitoringPort: 0 })),
    objects: () => ({ objects: [], generation: 1 }),
    work: { check: report, report },
    api: new Pool(4),
    write: () => {},
    log: getLogger("default"),
  });
  const grpc = await import("../../lib/deps/grpc.ts");
  // deno-lint-ignore no-explicit-any
  const pkg = grpc.loadPackageDefinition((await mixerCodec()).definition) as any;
  const c = new pkg.mesh.mixer.v1.Mixer(
    `127.0.0.1:${workers.port}`,
    grpc.credentials.createInsecure(),
  );
  try {
    await fn(c, workers);
  } finally {
    c.close();
    await workers.close(0);
  }
}

/** A Report of `source.name` `source` on `c`: the call's status code and details (0: OK). */
// deno-lint-ignore no-explicit-any
function reportOn(c: any, source: string, deadlineMs = 10_000) {
  return new Promise<{ code: number; details?: string }>((resolve) =>
    c.Report(
      { attributes: [compress({ "source.name": source }, DEFAULT_MANIFEST)] },
      { deadline: Date.now() + deadlineMs },
      (e: { code: number; details: string } | null) => resolve(e ?? { code: 0 }),
    )
  );
}

Deno.test("startPolicyWorkers(): a forwarded Report whose call ends first (deadline) is aborted in the control isolate", async () => {
  const { CallError } = await import("./abort.ts");
  // the control isolate's Report: never answers, notes why it was stopped
  const aborted: unknown[] = [];
  const started = Promise.withResolvers<void>();
  const report = (_body: Uint8Array, signal: AbortSignal) =>
    new Promise<Uint8Array>((_resolve, reject) => {
      started.resolve();
      signal.addEventListener("abort", () => {
        aborted.push(signal.reason);
        reject(signal.reason);
      }, { once: true });
    });
  await withReportWorker(report, async (c, workers) => {
    const err = await reportOn(c, "a", 500);
    assert.equal(err.code, 4, "the client sees DEADLINE_EXCEEDED");
    await started.promise;
    await waitUntil(() => aborted.length === 1, 10_000, "the control isolate's work aborted");
    await waitUntil(() => workers.forwarding === 0, 10_000, "the aborted call to be forgotten");
    assert.ok(aborted[0] instanceof CallError, String(aborted[0]));
    // whichever ended the call first: the server's deadline timer or the client's RST_STREAM
    assert.ok(
      [1, 4].includes((aborted[0] as InstanceType<typeof CallError>).code),
      String(aborted[0]),
    );
  });
});

Deno.test("startPolicyWorkers(): a forwarded call that fails in the control isolate reaches the client with its status, or INTERNAL", async () => {
  const { CallError } = await import("./abort.ts");
  const report = (body: Uint8Array) => {
    const text = new TextDecoder().decode(body);
    if (text.includes("full")) throw new CallError(8, "quota store full");
    if (text.includes("bug")) throw new TypeError("x is undefined");
    return Promise.resolve(new Uint8Array());
  };
  await withReportWorker(report, async (c, workers) => {
    assert.deepEqual(await reportOn(c, "ok"), { code: 0 });
    const full = await reportOn(c, "full");
    assert.equal(full.code, 8);
    assert.equal(full.details, "quota store full");
    const bug = await reportOn(c, "bug");
    assert.equal(bug.code, 13);
    assert.equal(bug.details, "internal error: x is undefined");
    assert.equal(workers.forwarding, 0, "answered calls are not kept");
  });
});
