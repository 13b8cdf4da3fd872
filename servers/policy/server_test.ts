import { Buffer } from "node:buffer";
import assert from "node:assert/strict";
import { eventually, obj, startTestServer } from "./_testutil.ts";

const http = {
  "context.protocol": "http",
  "destination.service": "ratings.default.svc.cluster.local",
};

Deno.test("Check answers OK, 10 s and 200 uses when no rule applies, with referenced attributes", async () => {
  const s = await startTestServer();
  try {
    const res = await s.check({ "source.name": "a" });
    assert.equal(res.precondition.status.code ?? 0, 0);
    assert.equal(Number(res.precondition.valid_duration.seconds), 10);
    assert.equal(res.precondition.valid_use_count, 200);
  } finally {
    await s.close();
  }
});

Deno.test("Check applies a denier through a rule whose match holds, and the smallest validity", async () => {
  const s = await startTestServer([
    obj("denier", "deny", {
      status: { code: 7, message: "Not allowed" },
      valid_duration: "2s",
      valid_use_count: 5,
    }),
    obj("checknothing", "nothing", {}),
    obj("rule", "deny-reviews", {
      match: 'source.name == "reviews" && request.headers["x-user"] != "admin"',
      actions: [{ handler: "deny.denier", instances: ["nothing.checknothing"] }],
    }),
  ]);
  try {
    const denied = await s.check({
      "source.name": "reviews",
      "request.headers": { "x-user": "bob" },
    });
    assert.equal(denied.precondition.status.code, 7);
    assert.equal(denied.precondition.status.message, "Not allowed");
    assert.equal(Number(denied.precondition.valid_duration.seconds), 2);
    assert.equal(denied.precondition.valid_use_count, 5);
    const names = denied.precondition.referenced_attributes!.attribute_matches.map((m) =>
      m.condition
    );
    assert.ok(names.includes("EXACT"));
    const admin = await s.check({
      "source.name": "reviews",
      "request.headers": { "x-user": "admin" },
    });
    assert.equal(admin.precondition.status.code ?? 0, 0);
    const other = await s.check({ "source.name": "ratings" });
    assert.equal(other.precondition.status.code ?? 0, 0);
  } finally {
    await s.close();
  }
});

Deno.test("Check allocates quotas only when the precondition is OK, deduplicating by id", async () => {
  const s = await startTestServer([
    obj("memquota", "handler", {
      quotas: [{ name: "requestcount.quota.mesh-system", max_amount: 3, valid_duration: "60s" }],
    }),
    obj("quota", "requestcount", { dimensions: { source: 'source.name | "unknown"' } }),
    obj("rule", "quota", {
      actions: [{ handler: "handler.memquota", instances: ["requestcount.quota"] }],
    }),
    obj("denier", "deny", {}),
    obj("checknothing", "nothing", {}),
    obj("rule", "deny-bad", {
      match: 'source.name == "bad"',
      actions: [{ handler: "deny.denier", instances: ["nothing.checknothing"] }],
    }),
  ]);
  try {
    const q = (id: string, amount: number, best = false) => ({
      deduplication_id: id,
      quotas: { "requestcount.quota.mesh-system": { amount, best_effort: best } },
    });
    const granted = async (id: string, amount: number, best = false) =>
      Number(
        (await s.check({ "source.name": "a" }, q(id, amount, best)))
          .quotas!["requestcount.quota.mesh-system"].granted_amount ?? 0,
      );
    assert.equal(await granted("r1", 2), 2);
    assert.equal(await granted("r1", 2), 2, "a repeated id is not charged twice");
    assert.equal(await granted("r2", 2), 0, "not best effort: all or nothing");
    assert.equal(await granted("r3", 2, true), 1, "best effort: what is left");
    assert.equal(await granted("r4", 1, true), 0);
    const bad = await s.check({ "source.name": "bad" }, q("r5", 1));
    assert.equal(bad.precondition.status.code, 9);
    assert.deepEqual(bad.quotas ?? {}, {});
    // A quota nobody handles is granted in full.
    const free = await s.check({}, { quotas: { other: { amount: 7 } } });
    assert.equal(Number(free.quotas!.other.granted_amount), 7);
  } finally {
    await s.close();
  }
});

Deno.test("Report applies deltas and default words, and the default config exports mesh_request_count", async () => {
  const s = await startTestServer();
  try {
    await s.call("Report", {
      default_words: ["reviews.default.svc.cluster.local"],
      attributes: [
        {
          words: ["ratings.default.svc.cluster.local", "v1"],
          strings: { [idx("context.protocol")]: idx("http"), [idx("destination.service")]: -1 },
          int64s: { [idx("response.code")]: 200 },
          durations: { [idx("response.duration")]: { seconds: 0, nanos: 20_000_000 } },
        },
        { int64s: { [idx("response.code")]: 503 } }, // delta: same service, new code
        { strings: { [idx("destination.service")]: -1 } }, // default words: reviews
      ],
    });
    const text = await (await fetch(`http://${s.handle.addresses.monitoring}/metrics`)).text();
    const line = (svc: string, code: string) =>
      text.split("\n").find((l) =>
        l.startsWith("mesh_request_count{") && l.includes(`destination_service="${svc}"`) &&
        l.includes(`response_code="${code}"`)
      );
    assert.match(line("ratings.default.svc.cluster.local", "200") ?? "", / 1$/);
    assert.match(line("ratings.default.svc.cluster.local", "503") ?? "", / 1$/);
    assert.match(line("reviews.default.svc.cluster.local", "503") ?? "", / 1$/);
    // 20 ms in each of the three label sets: in the 0.025 s bucket, not in the 0.01 s one.
    const buckets = (le: string) =>
      text.split("\n").filter((l) => l.startsWith(`mesh_request_duration_bucket{le="${le}"`));
    assert.deepEqual(buckets("0.025").map((l) => l.split(" ").at(-1)), ["1", "1", "1"]);
    assert.deepEqual(buckets("0.01").map((l) => l.split(" ").at(-1)), ["0", "0", "0"]);
    assert.match(text, /mesh_policy_report_attribute_bags_total 3/);
  } finally {
    await s.close();
  }
});

Deno.test("Check and Report refuse unknown word indices with INVALID_ARGUMENT", async () => {
  const s = await startTestServer();
  try {
    await assert.rejects(
      s.call("Check", { attributes: { strings: { "-3": 0 } } }),
      (e: { code: number; details: string }) =>
        e.code === 3 && /beyond the message words/.test(e.details),
    );
    await assert.rejects(
      s.call("Report", { attributes: [{}, { strings: { "9999": 0 } }] }),
      (e: { code: number; details: string }) =>
        e.code === 3 && /attributes\[1\]: Word index 9999/.test(e.details),
    );
  } finally {
    await s.close();
  }
});

Deno.test("invalid configuration is rejected naming the object and field; the last good one stays", async () => {
  const s = await startTestServer([
    obj("denier", "deny", {}),
    obj("checknothing", "nothing", {}),
    obj("rule", "r", {
      match: 'source.name == "x"',
      actions: [{ handler: "deny.denier", instances: ["nothing.checknothing"] }],
    }),
  ]);
  try {
    assert.equal((await s.check({ "source.name": "x" })).precondition.status.code, 9);
    const bad = obj("rule", "r", {
      match: "source.name == 3",
      actions: [{ handler: "deny.denier", instances: ["nothing.checknothing"] }],
    });
    await s.store.update(bad);
    await eventually(() => s.handle.issues().length > 0, "the rejection");
    assert.match(
      s.handle.issues()[0].message,
      /^rule\/mesh-system\/r: spec.match: "==" between different types STRING and INT64 \(at position 12\)/,
    );
    assert.equal(
      (await s.check({ "source.name": "x" })).precondition.status.code,
      9,
      "old rule in force",
    );
    await s.store.update(
      obj("rule", "r", {
        match: 'source.name == "y"',
        actions: [{ handler: "deny.denier", instances: ["nothing.checknothing"] }],
      }),
    );
    await eventually(() => s.handle.issues().length === 0, "the reload");
    await eventually(
      async () =>
        (await s.check({ "source.name": "x" })).precondition.status.code === undefined ||
        (await s.check({ "source.name": "x" })).precondition.status.code === 0,
      "new rule",
    );
    await s.store.update(
      obj("rule", "r", {
        actions: [{ handler: "nosuch.denier", instances: ["nothing.checknothing"] }],
      }),
    );
    await eventually(() => s.handle.issues().length > 0, "the rejection");
    assert.equal(
      s.handle.issues()[0].message,
      'rule/mesh-system/r: spec.actions[0].handler: no such handler: "nosuch.denier"',
    );
    await s.store.create(obj("denier", "d2", { valid_use_count: "many" }));
    await eventually(
      () => s.handle.issues().some((i) => i.object === "denier/mesh-system/d2"),
      "the handler issue",
    );
    assert.ok(
      s.handle.issues().some((i) =>
        i.message ===
          'denier/mesh-system/d2: spec.valid_use_count: must be a number >= 0, got "many"'
      ),
    );
  } finally {
    await s.close();
  }
});

Deno.test("namespaced rules apply to their destination namespace, default-namespace rules to all", async () => {
  const s = await startTestServer([
    obj("denier", "deny", {}, "default"),
    obj("checknothing", "nothing", {}, "default"),
    obj(
      "rule",
      "r",
      { actions: [{ handler: "deny.denier", instances: ["nothing.checknothing"] }] },
      "default",
    ),
  ]);
  try {
    assert.equal((await s.check(http)).precondition.status.code, 9);
    const prod = await s.check({ "destination.service": "ratings.prod.svc.cluster.local" });
    assert.equal(prod.precondition.status.code ?? 0, 0);
  } finally {
    await s.close();
  }
});

Deno.test("the gRPC API listens on a unix socket with --address unix://", async () => {
  const dir = await Deno.makeTempDir();
  const s = await startTestServer([], { address: `unix://${dir}/policy.sock` });
  try {
    assert.equal(s.handle.addresses.grpc, `unix:${dir}/policy.sock`);
    assert.equal((await s.check({})).precondition.valid_use_count, 200);
  } finally {
    await s.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("with --apiWorkerPoolSize 1, concurrent Checks wait their turn and all succeed", async () => {
  const s = await startTestServer([], { apiWorkerPoolSize: 1, adapterWorkerPoolSize: 1 });
  try {
    const all = await Promise.all(
      Array.from({ length: 50 }, () => s.check({ "source.name": "a" })),
    );
    assert.equal(all.length, 50);
    assert.ok(all.every((r) => r.precondition.valid_use_count === 200));
  } finally {
    await s.close();
  }
});

Deno.test("a Check whose bytes are not a CheckRequest fails with INVALID_ARGUMENT naming the field", async () => {
  const s = await startTestServer();
  const grpc = await import("../../lib/deps/grpc.ts");
  const raw = new grpc.Client(s.handle.addresses.grpc, grpc.credentials.createInsecure());
  const call = (bytes: number[]) =>
    new Promise<unknown>((resolve, reject) =>
      raw.makeUnaryRequest(
        "/mesh.mixer.v1.Mixer/Check",
        (b: Uint8Array) => Buffer.from(b),
        (b: Uint8Array) => b,
        Uint8Array.from(bytes),
        (e: Error | null, r?: unknown) => (e ? reject(e) : resolve(r)),
      )
    );
  try {
    // attributes { strings: entry with a fixed64 value }: strings values are varints.
    await assert.rejects(
      call([0x0a, 0x0d, 0x12, 0x0b, 0x08, 0x01, 0x11, 1, 2, 3, 4, 5, 6, 7, 8]),
      (e: { code: number; details: string }) =>
        e.code === 3 &&
        e.details ===
          "cannot decode the request: CompressedAttributes.strings field 2 has wire type 1, want 0",
    );
    await assert.rejects(
      call([0x0a, 0x05, 0x0a]),
      (e: { code: number; details: string }) =>
        e.code === 3 &&
        e.details === "cannot decode the request: field of 5 bytes at byte 2 runs past the end",
    );
    assert.equal((await s.check({ "source.name": "ok" })).precondition.valid_use_count, 200);
  } finally {
    raw.close();
    await s.close();
  }
});

Deno.test("a request larger than --maxMessageSize fails with RESOURCE_EXHAUSTED", async () => {
  const s = await startTestServer([], { maxMessageSize: 2048 });
  try {
    await assert.rejects(
      s.check({ "source.name": "x".repeat(4096) }),
      (e: { code: number }) => e.code === 8,
    );
    assert.equal((await s.check({ "source.name": "ok" })).precondition.valid_use_count, 200);
  } finally {
    await s.close();
  }
});

import { GLOBAL_INDEX } from "../../lib/mixer/mod.ts";
function idx(w: string): number {
  return GLOBAL_INDEX.get(w)!;
}

Deno.test("the monitoring port serves /version and the server's own metrics; probe files are written", async () => {
  const dir = await Deno.makeTempDir();
  const s = await startTestServer([], {
    readinessProbePath: `${dir}/ready`,
    readinessProbeInterval: 1000,
    livenessProbePath: `${dir}/live`,
    livenessProbeInterval: 1000,
  }, { versionText: "mesh-policy 1.2.3" });
  try {
    const base = `http://${s.handle.addresses.monitoring}`;
    assert.equal(await (await fetch(`${base}/version`)).text(), "mesh-policy 1.2.3\n");
    await s.check({});
    const metrics = await (await fetch(`${base}/metrics`)).text();
    assert.match(metrics, /^mesh_policy_check_total\{code="0"\} 1$/m);
    assert.match(metrics, /^mesh_policy_config_loads_total\{result="accepted"\} 1$/m);
    const pprof = await fetch(`${base}/debug/pprof/heap`);
    assert.equal(pprof.status, 404, "profiling is off by default");
    await pprof.body?.cancel();
    await eventually(async () => {
      try {
        await Deno.stat(`${dir}/ready`);
        await Deno.stat(`${dir}/live`);
        return true;
      } catch {
        return false;
      }
    }, "the probe files");
  } finally {
    await s.close();
    await Deno.remove(dir, { recursive: true });
  }
});
