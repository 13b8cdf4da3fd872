import assert from "node:assert/strict";
import { createWatchGate } from "./fake_kube_watch_gate.ts";
import { startFakeKube } from "./fake_kube.ts";
import { waitUntil } from "./procs.ts";

const obj = (name: string) => ({ metadata: { name } });

Deno.test("watch gate: passes events, holds them in order until release, drops matching ones", () => {
  const gate = createWatchGate();
  const seen: string[] = [];
  const pass = (type: string, name: string, resource = "configmaps") =>
    gate.pass(type, obj(name), () => seen.push(`${type} ${name}`), resource);
  pass("ADDED", "a");
  assert.deepEqual(seen, ["ADDED a"]);
  gate.hold();
  pass("MODIFIED", "a");
  pass("ADDED", "b");
  assert.equal(gate.held, 2);
  assert.deepEqual(seen, ["ADDED a"]);
  gate.release();
  assert.equal(gate.held, 0);
  assert.deepEqual(seen, ["ADDED a", "MODIFIED a", "ADDED b"]);
  // drop: only matching events, only `count` of them
  gate.drop({ type: "DELETED", name: "b" }, 2);
  pass("DELETED", "a");
  pass("MODIFIED", "b");
  pass("DELETED", "b");
  pass("DELETED", "b");
  pass("DELETED", "b");
  assert.equal(gate.dropped, 2);
  assert.deepEqual(seen.slice(3), ["DELETED a", "MODIFIED b", "DELETED b"]);
  // hold by name: the others go through
  gate.hold({ name: "a" });
  pass("MODIFIED", "a");
  pass("MODIFIED", "c");
  assert.deepEqual(seen.slice(6), ["MODIFIED c"]);
  gate.release();
  assert.deepEqual(seen.slice(6), ["MODIFIED c", "MODIFIED a"]);
  assert.throws(() => gate.drop({}, 0), /"count" must be a positive integer, got 0/);
});

const configMap = (name: string) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "default" },
});

Deno.test("watch gate: a drop for one resource leaves the others' events alone", () => {
  const gate = createWatchGate();
  const seen: string[] = [];
  gate.drop({ resource: "secrets" });
  gate.pass("ADDED", obj("a"), () => seen.push("configmap a"), "configmaps");
  gate.pass("ADDED", obj("a"), () => seen.push("secret a"), "secrets");
  gate.pass("ADDED", obj("b"), () => seen.push("secret b"), "secrets");
  assert.deepEqual(seen, ["configmap a", "secret b"]);
  assert.equal(gate.dropped, 1);
});

Deno.test("missEvents keeps the next changes of a resource from open watches, not from lists", async () => {
  await using kube = await startFakeKube();
  const rv = kube.resourceVersion;
  const res = await fetch(
    `${kube.url}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${rv}&timeoutSeconds=1`,
    { headers: kube.authHeaders },
  );
  await waitUntil(() => kube.watchCount === 1, 5000, "the watch to open");
  kube.missEvents("configmaps", 2);
  kube.upsert(configMap("a"));
  kube.upsert({ ...configMap("s"), kind: "Secret" }); // another resource: not counted
  kube.upsert(configMap("b"));
  kube.upsert(configMap("c"));
  const lines = (await res.text()).trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((e) => [e.type, e.object.metadata.name]), [["ADDED", "c"]]);
  // the store has them all
  for (const n of ["a", "b", "c"]) assert.ok(kube.get("configmaps", "default", n), n);
  assert.throws(
    () => kube.missEvents("configmaps", 0),
    /"count" must be a positive integer, got 0/,
  );
  assert.throws(() => kube.missEvents("nothings"), /unknown resource "nothings"/);
});
