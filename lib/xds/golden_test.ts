import assert from "node:assert/strict";
import * as path from "node:path";
import { loadXdsProtos, TYPE_URLS } from "./mod.ts";
import { roundTripProblems } from "./testdata/roundtrip.ts";
import { scenarios, type Snapshot, snapshot } from "./testdata/scenarios.ts";
import { checkGolden as checkGoldenFile } from "../../tests/harness/golden.ts";

const TESTDATA = new URL("./testdata", import.meta.url).pathname;

/** The full snapshot of the golden scenario `name`. */
function scenario(name: string): Snapshot {
  const s = scenarios()[name];
  return snapshot(s.ctx, s.proxy, s.apiNames);
}

async function checkGolden(name: string, snap: Snapshot) {
  await loadXdsProtos();
  const problems = [
    ...snap.listeners.flatMap((r) => roundTripProblems(TYPE_URLS.listener, r)),
    ...snap.routes.flatMap((r) => roundTripProblems(TYPE_URLS.route, r)),
    ...snap.clusters.flatMap((r) => roundTripProblems(TYPE_URLS.cluster, r)),
    ...snap.endpoints.flatMap((r) => roundTripProblems(TYPE_URLS.endpoint, r)),
  ];
  assert.deepEqual(problems, [], "every resource encodes without losing fields");
  const file = path.join(TESTDATA, `${name}.json`);
  const text = JSON.stringify(snap, null, 2) + "\n";
  await checkGoldenFile(file, text, {
    equal: (got, want) =>
      assert.deepEqual(JSON.parse(got), JSON.parse(want), `${name}.json differs (UPDATE_GOLDEN=1)`),
  });
}

Deno.test("buildListeners/Routes/Clusters/Endpoints() match sidecar.json for a sidecar with routing rules", async () => {
  await checkGolden("sidecar", scenario("sidecar"));
});

Deno.test("builders match proxyless.json for proxyless gRPC targets", async () => {
  const snap = scenario("proxyless");
  await checkGolden("proxyless", {
    listeners: snap.listeners.filter((l) => l.api_listener),
    routes: snap.routes.filter((r) => r.name.includes(":")),
    clusters: snap.clusters.filter((c) => c.name.includes("|7070|")),
    endpoints: snap.endpoints.filter((e) => e.cluster_name.includes("|7070|")),
  });
});

Deno.test("builders match gateway.json for a router selected by a Gateway", async () => {
  const snap = scenario("gateway");
  await checkGolden("gateway", { ...snap, clusters: [], endpoints: [] });
});

Deno.test("builders match ingress.json for an ingress proxy and an Ingress object", async () => {
  const snap = scenario("ingress");
  await checkGolden("ingress", { ...snap, clusters: [], endpoints: [] });
});

Deno.test("builders match mtls.json when the mesh requires mutual TLS", async () => {
  const snap = scenario("mtls");
  await checkGolden("mtls", {
    listeners: snap.listeners.filter((l) => l.name.startsWith("10.0.2.1_")),
    routes: [],
    clusters: snap.clusters.filter((c) => c.name.includes("world")),
    endpoints: [],
  });
});

Deno.test("builders match rbac.json when a ServiceRole names the service", async () => {
  const snap = scenario("rbac");
  await checkGolden("rbac", {
    listeners: snap.listeners.filter((l) => l.name.startsWith("10.0.1.1_")),
    routes: [],
    clusters: [],
    endpoints: [],
  });
});

Deno.test("builders match serviceentry.json for CIDR addresses and unix socket endpoints", async () => {
  const snap = scenario("serviceentry");
  const ours = (n: string) => n.includes(".internal");
  await checkGolden("serviceentry", {
    listeners: snap.listeners.filter((l) => /_(3306|9091)$/.test(l.name)),
    routes: [],
    clusters: snap.clusters.filter((c) => ours(c.name)),
    endpoints: snap.endpoints.filter((e) => ours(e.cluster_name)),
  });
});
