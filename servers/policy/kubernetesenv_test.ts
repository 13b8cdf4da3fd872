/**
 * Attribute generation with the kubernetesenv adapter against the fake API server: pod UIDs and
 * IPs become source.* / destination.* attributes that rules match on (Check) and instances read
 * (Report); lookups are cached; on the fs platform it generates nothing.
 */

import assert from "node:assert/strict";
import { parseIp } from "../../lib/expr/mod.ts";
import { loadKubeConfig } from "../../lib/kube/mod.ts";
import { startFakeKube } from "../../tests/harness/fake_kube.ts";
import { parsePodUid } from "./adapters/kubernetesenv.ts";
import { eventually, obj, startTestServer } from "./_testutil.ts";

const pod = (name: string, ns: string, ip: string, labels: Record<string, string>, sa: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: ns, labels },
  spec: { serviceAccountName: sa, containers: [{ name: "app", image: "app" }] },
  status: { podIP: ip, hostIP: "192.168.0.7" },
});

/** The 0.8 `kubeattrgenrulerule` shape, a denier on generated attributes, a stdio log. */
const config = (bindings?: Record<string, string>) => [
  obj("kubernetesenv", "handler", { cache_refresh_duration: "1h" }),
  obj("kubernetes", "attributes", {
    source_uid: 'source.uid | ""',
    source_ip: 'source.ip | ip("0.0.0.0")',
    destination_uid: 'destination.uid | ""',
    destination_ip: 'destination.ip | ip("0.0.0.0")',
    ...(bindings ? { attribute_bindings: bindings } : {}),
  }),
  obj("rule", "kubeattrgenrulerule", {
    actions: [{ handler: "handler.kubernetesenv", instances: ["attributes.kubernetes"] }],
  }),
  obj("denier", "deny", { status: { code: 7, message: "v1 may not call ratings" } }),
  obj("checknothing", "nothing", {}),
  obj("rule", "deny-v1", {
    match: 'source.labels["version"] == "v1" && ' +
      'destination.serviceAccount == "bookinfo-ratings" && destination.namespace == "shop"',
    actions: [{ handler: "deny.denier", instances: ["nothing.checknothing"] }],
  }),
  obj("stdio", "out", {}),
  obj("logentry", "access", {
    severity: '"info"',
    variables: {
      source: 'source.service | "unknown"',
      destination: 'destination.service | "unknown"',
      sa: 'source.serviceAccount | "unknown"',
    },
  }),
  obj("rule", "log", { actions: [{ handler: "out.stdio", instances: ["access.logentry"] }] }),
];

Deno.test("pod UIDs are parsed as kubernetes://<pod>.<namespace>", () => {
  assert.deepEqual(parsePodUid("kubernetes://reviews-v1-7f9c.shop"), {
    name: "reviews-v1-7f9c",
    namespace: "shop",
  });
  assert.deepEqual(parsePodUid("kubernetes://a.b.c.ns"), { name: "a.b.c", namespace: "ns" });
  assert.equal(parsePodUid("reviews.shop"), undefined);
  assert.equal(parsePodUid("kubernetes://noNamespace"), undefined);
});

Deno.test("kubernetesenv derives source/destination attributes from pods, rules match on them, lookups are cached", async () => {
  await using kube = await startFakeKube();
  kube.upsert({ apiVersion: "v1", kind: "Namespace", metadata: { name: "shop" } });
  kube.upsert(
    pod(
      "reviews-v1-7f9c",
      "shop",
      "10.1.0.5",
      { app: "reviews", version: "v1" },
      "bookinfo-reviews",
    ),
  );
  kube.upsert(
    pod(
      "reviews-v2-1a2b",
      "shop",
      "10.1.0.6",
      { app: "reviews", version: "v2" },
      "bookinfo-reviews",
    ),
  );
  kube.upsert(
    pod(
      "ratings-v1-3c4d",
      "shop",
      "10.1.0.9",
      { app: "ratings", version: "v1" },
      "bookinfo-ratings",
    ),
  );
  const s = await startTestServer(config(), {}, {
    kubeConfig: () => loadKubeConfig(kube.kubeconfigPath),
  });
  try {
    assert.deepEqual(s.handle.issues(), []);
    // Source by UID, destination by IP.
    const ratingsIp = parseIp("10.1.0.9")!;
    const denied = await s.check({
      "source.uid": "kubernetes://reviews-v1-7f9c.shop",
      "destination.ip": ratingsIp,
    });
    assert.equal(denied.precondition.status.code, 7);
    assert.equal(denied.precondition.status.message, "v1 may not call ratings");
    const v2 = await s.check({
      "source.uid": "kubernetes://reviews-v2-1a2b.shop",
      "destination.ip": ratingsIp,
    });
    assert.equal(v2.precondition.status.code ?? 0, 0);
    // Source by IP too; an unknown pod generates nothing (the rule needs the labels).
    const byIp = await s.check({ "source.ip": parseIp("10.1.0.5")!, "destination.ip": ratingsIp });
    assert.equal(byIp.precondition.status.code, 7);
    const unknown = await s.check({
      "source.uid": "kubernetes://gone-1.shop",
      "destination.ip": ratingsIp,
    });
    assert.equal(unknown.precondition.status.code ?? 0, 0);

    // Cached: asking again about the same pods makes no request to the API server.
    const before = kube.requests.filter((r) => r.path.includes("/pods")).length;
    assert.ok(before >= 3, `pod lookups went to the API server (${before})`);
    const again = await s.check({
      "source.uid": "kubernetes://reviews-v1-7f9c.shop",
      "destination.ip": ratingsIp,
    });
    assert.equal(again.precondition.status.code, 7);
    assert.equal(kube.requests.filter((r) => r.path.includes("/pods")).length, before);

    // Report bags are preprocessed too: the service and service account reach the log entry.
    await s.report([{
      "source.uid": "kubernetes://reviews-v2-1a2b.shop",
      "destination.ip": ratingsIp,
    }]);
    await eventually(() => s.lines.length >= 1, "a log line");
    const line = JSON.parse(s.lines[0]);
    assert.equal(line.source, "reviews.shop.svc.cluster.local");
    assert.equal(line.destination, "ratings.shop.svc.cluster.local");
    assert.equal(line.sa, "bookinfo-reviews");
  } finally {
    await s.close();
  }
});

Deno.test("attribute_bindings choose what is bound, with fallbacks; attributes the request carries stay otherwise", async () => {
  await using kube = await startFakeKube();
  kube.upsert({ apiVersion: "v1", kind: "Namespace", metadata: { name: "shop" } });
  kube.upsert(pod("web-1", "shop", "10.1.0.5", { app: "web" }, "web"));
  const s = await startTestServer(
    config({
      "source.namespace": '$out.source_namespace | "default"',
      "source.labels": "$out.source_labels | emptyStringMap()",
    }),
    {},
    { kubeConfig: () => loadKubeConfig(kube.kubeconfigPath) },
  );
  try {
    assert.deepEqual(s.handle.issues(), []);
    await s.report([{
      "source.uid": "kubernetes://web-1.shop",
      "source.service": "from-the-proxy",
    }]);
    await eventually(() => s.lines.length >= 1, "a log line");
    // source.service is not bound here: the request's own value stays.
    assert.equal(JSON.parse(s.lines[0]).source, "from-the-proxy");
  } finally {
    await s.close();
  }
});

Deno.test("on the fs platform kubernetesenv generates nothing and the request's attributes stand", async () => {
  const s = await startTestServer(config());
  try {
    assert.deepEqual(s.handle.issues(), []);
    const res = await s.check({
      "source.uid": "kubernetes://reviews-v1-7f9c.shop",
      "source.labels": { version: "v1" },
      "destination.serviceAccount": "bookinfo-ratings",
      "destination.namespace": "shop",
    });
    assert.equal(res.precondition.status.code, 7, "the request's own attributes are matched");
    const plain = await s.check({ "source.uid": "kubernetes://reviews-v1-7f9c.shop" });
    assert.equal(plain.precondition.status.code ?? 0, 0);
  } finally {
    await s.close();
  }
});

Deno.test("bad attribute_bindings are rejected naming the object and field", async () => {
  const s = await startTestServer(config({ "source.nope": "$out.source_namespace" }));
  try {
    const messages = s.handle.issues().map((i) => i.message);
    assert.ok(
      messages.some((m) =>
        m.includes("kubernetes/mesh-system/attributes") &&
        m.includes('spec.attribute_bindings.source.nope: unknown attribute "source.nope"')
      ),
      messages.join("\n"),
    );
  } finally {
    await s.close();
  }
  const t = await startTestServer(config({ "source.labels": "$out.source_namespace" }));
  try {
    const messages = t.handle.issues().map((i) => i.message).join("\n");
    assert.match(
      messages,
      /spec\.attribute_bindings\.source\.labels: is STRING, attribute "source\.labels" is STRING_MAP/,
    );
  } finally {
    await t.close();
  }
});
