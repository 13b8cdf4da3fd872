import assert from "node:assert/strict";
import { Params } from "./params.ts";
import { parseIp } from "../../../lib/expr/mod.ts";
import { getLogger } from "../../../lib/log/mod.ts";
import { ConfigIssue } from "../templates.ts";
import { type AdapterEnv, ADAPTERS, type Handler, type Instance } from "./mod.ts";
import { expandTemplate } from "./statsd.ts";

function env(
  over: Partial<AdapterEnv> = {},
): AdapterEnv & { lines: string[]; clock: { t: number } } {
  const lines: string[] = [];
  const clock = { t: 1_000_000 };
  return {
    log: getLogger("adapters"),
    now: () => clock.t,
    rbac: () => ({ roles: [], bindings: [] }),
    write: (s, l) => lines.push(`${s}: ${l}`),
    fetch: () => Promise.reject(new Error("no network")),
    lines,
    clock,
    ...over,
  };
}

function build(kind: string, spec: Record<string, unknown>, e = env()): Handler {
  return ADAPTERS.get(kind)!.build(spec, e, `${kind}/mesh-system/h`);
}

const inst = (
  kind: string,
  value: Instance["value"],
  name = `i.${kind}.mesh-system`,
  types = {},
): Instance => ({
  name,
  kind,
  value,
  types,
});

function issue(kind: string, spec: Record<string, unknown>): string {
  try {
    build(kind, spec);
  } catch (e) {
    assert.ok(e instanceof ConfigIssue);
    return e.message;
  }
  assert.fail("built");
}

Deno.test("denier answers its status (default FAILED_PRECONDITION, 5 s, 1000 uses) and grants no quota", async () => {
  const h = build("denier", {});
  assert.deepEqual(await h.check!(inst("checknothing", {})), {
    status: { code: 9, message: "" },
    validDurationMs: 5000,
    validUseCount: 1000,
  });
  assert.equal(
    (await h.quota!(inst("quota", {}), { amount: 3, bestEffort: true, dedupId: "" })).granted,
    0,
  );
  assert.equal(
    issue("denier", { status: { code: -1 } }),
    "denier/mesh-system/h: spec.status.code: must be a number >= 0, got -1",
  );
  assert.equal(
    issue("denier", { nope: 1 }),
    "denier/mesh-system/h: spec.nope: unknown field (want status, valid_duration, valid_use_count)",
  );
});

Deno.test("listchecker whitelists, blacklists and matches each entry type", async () => {
  const code = async (spec: Record<string, unknown>, v: unknown) =>
    (await build("listchecker", spec).check!(inst("listentry", { value: v as string }))).status;
  assert.equal((await code({ overrides: ["a", "b"] }, "a")).code, 0);
  assert.deepEqual(await code({ overrides: ["a"] }, "c"), {
    code: 5,
    message: "c is not whitelisted",
  });
  assert.deepEqual(await code({ overrides: ["a"], blacklist: true }, "a"), {
    code: 7,
    message: "a is blacklisted",
  });
  assert.equal((await code({ overrides: ["a"], blacklist: true }, "c")).code, 0);
  assert.equal(
    (await code({ overrides: ["AbC"], entry_type: "CASE_INSENSITIVE_STRINGS" }, "abc")).code,
    0,
  );
  assert.equal((await code({ overrides: ["AbC"] }, "abc")).code, 5);
  const ips = { overrides: ["10.0.0.0/8", "192.168.1.1"], entry_type: "IP_ADDRESSES" };
  assert.equal((await code(ips, "10.2.3.4")).code, 0);
  assert.equal((await code(ips, parseIp("192.168.1.1"))).code, 0);
  assert.equal((await code(ips, "11.0.0.1")).code, 5);
  assert.equal((await code(ips, "not-an-ip")).code, 3);
  assert.equal(
    (await code({ overrides: ["^/api/v[0-9]+$"], entry_type: "REGEX" }, "/api/v2")).code,
    0,
  );
  assert.equal((await code({ overrides: ["a"] }, undefined)).code, 3);
  assert.equal(
    issue("listchecker", { overrides: ["10.0.0.0/33"], entry_type: "IP_ADDRESSES" }),
    'listchecker/mesh-system/h: spec.overrides: invalid IP_ADDRESSES entry "10.0.0.0/33"',
  );
  assert.match(
    issue("listchecker", { entry_type: "NUMBERS" }),
    /spec.entry_type: must be one of STRINGS/,
  );
});

Deno.test("listchecker refreshes its list from provider_url", async () => {
  let list = "alpha\n# comment\nbeta\n";
  const e = env({ fetch: () => Promise.resolve(new Response(list)) });
  const h = build("listchecker", { provider_url: "http://lists/x", refresh_interval: "100ms" }, e);
  try {
    const code = async (v: string) => (await h.check!(inst("listentry", { value: v }))).status.code;
    const deadline = Date.now() + 5000;
    while ((await code("beta")) !== 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(await code("beta"), 0);
    assert.equal(await code("gamma"), 5);
    list = "gamma\n";
    while ((await code("gamma")) !== 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(await code("gamma"), 0);
    assert.equal(await code("beta"), 5);
  } finally {
    await h.close!();
  }
});

Deno.test("memquota counts in a rolling window per dimensions, with overrides and deduplication", async () => {
  const e = env();
  const h = build("memquota", {
    quotas: [{
      name: "rq.quota.mesh-system",
      max_amount: 2,
      valid_duration: "10s",
      overrides: [{ dimensions: { user: "vip" }, max_amount: 5 }],
    }],
  }, e);
  const q = (user: string, amount = 1, dedupId = "", bestEffort = false) =>
    h.quota!(inst("quota", { dimensions: { user } }, "rq.quota.mesh-system"), {
      amount,
      bestEffort,
      dedupId,
    });
  assert.equal((await q("a")).granted, 1);
  assert.equal((await q("a")).granted, 1);
  assert.equal((await q("a")).granted, 0, "window full");
  assert.equal((await q("b")).granted, 1, "other dimensions count apart");
  assert.equal((await q("vip", 5)).granted, 5, "override limit");
  e.clock.t += 10_001;
  assert.equal(
    (await q("a", 3, "", true)).granted,
    2,
    "window rolled; best effort gets what is left",
  );
  assert.equal((await q("b", 1, "d1")).granted, 1);
  assert.equal((await q("b", 1, "d1")).granted, 1, "same dedup id: same answer, not charged");
  assert.equal((await q("b", 1, "d2")).granted, 1);
  assert.equal((await q("b", 1, "d3")).granted, 0, "d1 was charged once: 2 of 2 used");
  assert.equal((await q("a")).validDurationMs, 10_000);
  const counter = build("memquota", { quotas: [{ name: "c", max_amount: 1 }] }, e);
  const takeOne = async () =>
    (await counter.quota!(inst("quota", {}, "c.quota.ns"), {
      amount: 1,
      bestEffort: false,
      dedupId: "",
    })).granted;
  assert.equal(await takeOne(), 1);
  e.clock.t += 1e9;
  assert.equal(await takeOne(), 0, "valid_duration 0 never expires");
  assert.match(
    issue("memquota", { quotas: [{ max_amount: 1 }] }),
    /spec.quotas\[0\].name: is required/,
  );
});

Deno.test("prometheus records counters, gauges and histograms with their buckets", async () => {
  const h = build("prometheus", {
    metrics: [
      {
        name: "count",
        instance_name: "c.metric.mesh-system",
        kind: "COUNTER",
        label_names: ["svc"],
      },
      { name: "gauge", namespace: "x", instance_name: "g.metric.mesh-system", kind: "GAUGE" },
      {
        name: "latency",
        instance_name: "d.metric.mesh-system",
        kind: "DISTRIBUTION",
        buckets: { linear_buckets: { num_finite_buckets: 3, width: 0.1, offset: 0 } },
      },
    ],
  });
  await h.report!([
    inst("metric", { value: 2, dimensions: { svc: "a" } }, "c.metric.mesh-system"),
    inst("metric", { value: 1, dimensions: { svc: "a" } }, "c.metric.mesh-system"),
    inst("metric", { value: 42 }, "g.metric.mesh-system"),
    inst("metric", { value: 150 }, "d.metric.mesh-system", { value: "DURATION" }),
  ]);
  const text = await h.metrics!();
  assert.match(text, /^mesh_count\{svc="a"\} 3$/m);
  assert.match(text, /^x_gauge 42$/m);
  assert.match(text, /^mesh_latency_bucket\{le="0.1"\} 0$/m);
  assert.match(text, /^mesh_latency_bucket\{le="0.2"\} 1$/m);
  assert.match(text, /^mesh_latency_sum 0.15$/m);
  assert.match(
    issue("prometheus", { metrics: [{ name: "bad-name", instance_name: "a" }] }),
    /spec.metrics\[0\].name: invalid metric name "bad-name"/,
  );
  assert.match(
    issue("prometheus", {
      metrics: [{
        name: "a",
        instance_name: "a",
        kind: "DISTRIBUTION",
        buckets: { explicit_buckets: { bounds: [2, 1] } },
      }],
    }),
    /spec.metrics\[0\].buckets.explicit_buckets.bounds: must increase/,
  );
  await h.close!();
});

Deno.test("stdio writes log entries as JSON lines with mapped severities, filtered by output_level", async () => {
  const e = env();
  const h = build("stdio", { severity_levels: { warn: "WARNING" }, output_level: "WARNING" }, e);
  await h.report!([
    inst("logentry", {
      variables: { path: "/a", code: 200 },
      severity: "info",
      timestamp: new Date(0),
    }, "acc.logentry.ns"),
    inst("logentry", {
      variables: { path: "/b", ip: parseIp("10.0.0.1")! },
      severity: "warn",
      timestamp: new Date(0),
    }, "acc.logentry.ns"),
  ]);
  assert.deepEqual(e.lines, [
    'stdout: {"level":"warning","time":"1970-01-01T00:00:00.000Z","instance":"acc.logentry.ns","path":"/b","ip":"10.0.0.1"}',
  ]);
  const dir = await Deno.makeTempDir();
  try {
    const f = build("stdio", {
      log_stream: "FILE",
      output_path: `${dir}/log`,
      output_as_json: false,
    }, e);
    await f.report!([
      inst("logentry", { variables: { a: "x" }, timestamp: new Date(0) }, "l.logentry.ns"),
    ]);
    await f.close!();
    assert.equal(
      await Deno.readTextFile(`${dir}/log`),
      "1970-01-01T00:00:00.000Z\tinfo\tl.logentry.ns\ta=x\n",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  assert.match(
    issue("stdio", { log_stream: "FILE" }),
    /spec.output_path: is required with log_stream FILE/,
  );
});

Deno.test("statsd sends metric lines over UDP named by their template", async () => {
  const dgram = await import("node:dgram");
  const sock = dgram.createSocket("udp4");
  await new Promise<void>((r) => sock.bind(0, "127.0.0.1", () => r()));
  const got = new Promise<string>((r) => sock.once("message", (m) => r(m.toString())));
  const h = build("statsd", {
    address: `127.0.0.1:${sock.address().port}`,
    prefix: "mesh.",
    metrics: {
      "c.metric.mesh-system": { type: "COUNTER", name_template: "{{.svc}}.requests" },
      "d.metric.mesh-system": { type: "DISTRIBUTION" },
    },
  });
  try {
    await h.report!([
      inst("metric", { value: 1, dimensions: { svc: "ratings" } }, "c.metric.mesh-system"),
      inst("metric", { value: 12 }, "d.metric.mesh-system"),
    ]);
    assert.equal(await got, "mesh.ratings.requests:1|c\nmesh.d:12|ms");
  } finally {
    await h.close!();
    sock.close();
  }
  assert.equal(expandTemplate("{{.a}}-{{ .b }}-{{.c}}", { a: 1, b: "x" }), "1-x-");
  assert.match(issue("statsd", { address: "nohost" }), /spec.address: want host:port/);
});

Deno.test("rbac decides authorization instances against the configuration's roles", async () => {
  const obj = (kind: string, name: string, spec: Record<string, unknown>) => ({
    apiVersion: "config.mesh.io/v1alpha2",
    kind,
    metadata: { name, namespace: "default" },
    spec,
  });
  const e = env({
    rbac: () => ({
      roles: [obj("ServiceRole", "r", { rules: [{ services: ["*"], methods: ["GET"] }] })],
      bindings: [
        obj("ServiceRoleBinding", "b", {
          subjects: [{ user: "alice" }],
          roleRef: { kind: "ServiceRole", name: "r" },
        }),
      ],
    }),
  });
  const h = build("rbac", {}, e);
  const req = (user: string, method: string) =>
    inst("authorization", {
      subject: { user },
      action: { namespace: "default", service: "s", method, path: "/" },
    });
  assert.equal((await h.check!(req("alice", "GET"))).status.code, 0);
  assert.deepEqual((await h.check!(req("alice", "POST"))).status, {
    code: 7,
    message: "RBAC: permission denied.",
  });
  assert.equal((await h.check!(req("bob", "GET"))).status.code, 7);
});

Deno.test("Params reads a field in either jsonpb spelling and refuses both at once, naming the key", () => {
  const p = new Params({ maxAmount: 3, valid_duration: "2s" }, "memquota/ns/h").only([
    "max_amount",
    "valid_duration",
  ]);
  assert.equal(p.number("max_amount", 0), 3);
  assert.equal(p.durationMs("valid_duration", 0), 2000);
  assert.throws(
    () => new Params({ maxAmount: 3, max_amount: 4 }, "memquota/ns/h").only(["max_amount"]),
    /^ConfigIssue: memquota\/ns\/h: spec\.max_amount: given twice, as "maxAmount" and "max_amount": use one spelling$/,
  );
  assert.throws(
    () => new Params({ maxAmount: "x" }, "memquota/ns/h").number("max_amount", 0),
    /spec\.maxAmount: must be a number/,
  );
});
