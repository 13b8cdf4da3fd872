/**
 * End-to-end: two mesh-discovery replicas watching one (fake) API server. Both serve xDS with the
 * same content versions; only the Lease holder writes Ingress status; killing it hands the Lease
 * over within its duration; a delta proxy moved from one replica to the other with the versions
 * it holds is sent nothing again.
 */
import assert from "node:assert/strict";
import { microTime } from "../../lib/kube/leader.ts";
import { crdManifests } from "../../lib/model/mod.ts";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { type JsonObject, startFakeKube } from "../harness/fake_kube.ts";
import { waitUntil, withTempDir } from "../harness/procs.ts";
import { adsClient } from "./_ads_client.ts";
import { type DeltaResponse, openDelta } from "./_delta_client.ts";
import { http, type RunningDiscovery, startDiscovery } from "./discovery_harness.ts";

const NODE = "sidecar~10.1.0.1~hello-1.default~default.svc.cluster.local";
const LEASE_S = 3;

const objects: JsonObject[] = [
  {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "hello", namespace: "default" },
    spec: {
      clusterIP: "10.96.0.10",
      selector: { app: "hello" },
      ports: [{ name: "http", port: 80 }],
    },
  },
  {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "hello-1", namespace: "default", labels: { app: "hello", version: "v1" } },
    spec: { serviceAccountName: "hello", containers: [{ name: "app", image: "app" }] },
    status: { podIP: "10.1.0.1" },
  },
  {
    apiVersion: "v1",
    kind: "Endpoints",
    metadata: { name: "hello", namespace: "default" },
    subsets: [{
      addresses: [{
        ip: "10.1.0.1",
        targetRef: { kind: "Pod", name: "hello-1", namespace: "default" },
      }],
      ports: [{ name: "http", port: 8080 }],
    }],
  },
  {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "mesh-ingressgateway", namespace: "mesh-system" },
    spec: { type: "LoadBalancer", ports: [{ name: "http", port: 80 }] },
    status: { loadBalancer: { ingress: [{ ip: "203.0.113.7" }] } },
  },
  {
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: {
      name: "web",
      namespace: "default",
      annotations: { "kubernetes.io/ingress.class": "mesh" },
    },
    spec: {
      rules: [{
        host: "web.example.com",
        http: {
          paths: [{
            path: "/",
            pathType: "Prefix",
            backend: { service: { name: "hello", port: { number: 80 } } },
          }],
        },
      }],
    },
  },
];

/** What a delta stream holds after its responses: name → version, per type. */
function holdings(responses: readonly DeltaResponse[]): Map<string, Record<string, string>> {
  const out = new Map<string, Record<string, string>>();
  for (const r of responses) {
    const held = out.get(r.type_url) ?? {};
    for (const x of r.resources) held[x.name] = x.version;
    for (const n of r.removed_resources) delete held[n];
    out.set(r.type_url, held);
  }
  return out;
}

Deno.test("two mesh-discovery replicas: both serve xDS, only the Lease holder writes Ingress status, the Lease passes on when it dies, a moved proxy (delta, SotW wildcard) is resent nothing", async () => {
  await withTempDir(async (dir) => {
    await using kube = await startFakeKube({
      objects: [...crdManifests() as JsonObject[]],
    });
    for (const o of objects) kube.upsert(o);
    await Deno.writeTextFile(`${dir}/mesh`, "ingressService: mesh-ingressgateway\n");
    const replica = (name: string) =>
      startDiscovery([
        "--registries",
        "Orchestrator",
        "--orchconfig",
        kube.kubeconfigPath,
        "--meshConfig",
        `${dir}/mesh`,
        "--namespace",
        "mesh-system",
        "--ingressStatus",
        "--leaseDuration",
        `${LEASE_S}s`,
        "--leaderIdentity",
        name,
      ]);
    const replicas: RunningDiscovery[] = [];
    const streams: { close(): Promise<void> }[] = [];
    try {
      replicas.push(await replica("replica-a"), await replica("replica-b"));
      const [a, b] = replicas;
      for (const r of replicas) {
        await waitUntil(
          async () => (await http(`http://${r.http}/ready`)).status === 200,
          30_000,
          "/ready",
        );
      }
      const lease = () =>
        kube.get("leases.coordination.k8s.io", "mesh-system", "mesh-discovery-leader")?.spec as
          | { holderIdentity?: string }
          | undefined;
      await waitUntil(() => !!lease()?.holderIdentity, 30_000, "a Lease holder");
      const leaderName = lease()!.holderIdentity!;
      const [leader, follower] = leaderName === "replica-a" ? [a, b] : [b, a];
      const followerName = leaderName === "replica-a" ? "replica-b" : "replica-a";

      // Only the leader writes the Ingress status.
      const lb = () =>
        JSON.stringify(
          (kube.get("ingresses", "default", "web") as {
            status?: { loadBalancer?: { ingress?: unknown } };
          })?.status?.loadBalancer?.ingress ?? [],
        );
      await waitUntil(() => lb() === '[{"ip":"203.0.113.7"}]', 30_000, "the Ingress status");
      assert.match(leader.proc.output(), new RegExp(`${leaderName} became the leader`));
      assert.match(leader.proc.output(), /Ingress status: updated 1 Ingress/);
      assert.doesNotMatch(follower.proc.output(), /became the leader/);
      // Without the election both would sync at start and on every change: the follower would
      // log its update, or the conflict of writing the same version.
      assert.doesNotMatch(follower.proc.output(), /Ingress status/);

      // Both serve xDS, with the same content versions; a delta proxy moved from one replica to
      // the other with what it holds is resent nothing.
      const first = openDelta(follower.grpc);
      streams.push(first);
      first.send({ node: { id: NODE }, type_url: TYPE_URLS.cluster });
      const cds = await first.next(TYPE_URLS.cluster, 30_000);
      const clusters = cds.resources.map((r) => r.name);
      assert.ok(clusters.includes("outbound|80||hello.default.svc.cluster.local"), clusters.join());
      first.send({ type_url: TYPE_URLS.cluster, response_nonce: cds.nonce });
      const edsNames = clusters.filter((n) => n.startsWith("outbound|"));
      first.send({ type_url: TYPE_URLS.endpoint, resource_names_subscribe: edsNames });
      const eds = await first.next(TYPE_URLS.endpoint, 30_000);
      first.send({ type_url: TYPE_URLS.endpoint, response_nonce: eds.nonce });
      first.send({ type_url: TYPE_URLS.listener });
      const lds = await first.next(TYPE_URLS.listener, 30_000);
      first.send({ type_url: TYPE_URLS.listener, response_nonce: lds.nonce });
      await first.close();
      const held = holdings(first.received);

      const moved = openDelta(leader.grpc);
      streams.push(moved);
      moved.send({
        node: { id: NODE },
        type_url: TYPE_URLS.cluster,
        initial_resource_versions: held.get(TYPE_URLS.cluster),
      });
      moved.send({
        type_url: TYPE_URLS.endpoint,
        resource_names_subscribe: edsNames,
        initial_resource_versions: held.get(TYPE_URLS.endpoint),
      });
      moved.send({
        type_url: TYPE_URLS.listener,
        initial_resource_versions: held.get(TYPE_URLS.listener),
      });
      // A canary: a type the proxy did not hold is answered, so the stream was served (the
      // replica answers in order; by then the others would have been sent).
      moved.send({ type_url: TYPE_URLS.route, resource_names_subscribe: ["80"] });
      await moved.next(TYPE_URLS.route, 30_000);
      const resent = moved.received.filter((r) => r.type_url !== TYPE_URLS.route);
      assert.deepEqual(
        resent.map((r) => ({ type: r.type_url, names: r.resources.map((x) => x.name) })),
        [],
        "no resource resent to the moved proxy",
      );
      await moved.close();

      // SotW: a wildcard Cluster request carrying the version_info the other replica sent is
      // not answered; a Listener request without one is (the canary).
      const sotwA = adsClient(follower.grpc), sotwB = adsClient(leader.grpc);
      try {
        const s1 = sotwA.open();
        s1.send({ node: { id: NODE }, type_url: TYPE_URLS.cluster });
        const cds1 = await s1.next(TYPE_URLS.cluster, 30_000);
        await s1.close();
        const s2 = sotwB.open();
        s2.send({
          node: { id: NODE },
          type_url: TYPE_URLS.cluster,
          version_info: cds1.version_info,
        });
        s2.send({ type_url: TYPE_URLS.listener });
        await s2.next(TYPE_URLS.listener, 30_000);
        await assert.rejects(s2.next(TYPE_URLS.cluster, 0), /No .* response/, "CDS resent");
        await s2.close();
      } finally {
        sotwA.close();
        sotwB.close();
      }

      // The leader dies without releasing the Lease: the follower takes over within its
      // duration (plus a retry period), and writes the status.
      leader.proc.kill("SIGKILL");
      await leader.proc.status;
      const killedAt = Date.now();
      await waitUntil(() => lease()?.holderIdentity === followerName, 30_000, "the hand-over");
      const took = Date.now() - killedAt;
      assert.ok(took < (LEASE_S + 10) * 1000, `hand-over took ${took} ms (Lease ${LEASE_S} s)`);
      await follower.proc.waitFor(`${followerName} became the leader`, 30_000);
      kube.upsert({
        ...objects[3],
        status: { loadBalancer: { ingress: [{ ip: "203.0.113.8" }] } },
      });
      await waitUntil(() => lb() === '[{"ip":"203.0.113.8"}]', 30_000, "the new leader's status");

      // The new leader loses the Lease while it runs (another holder renewed it, as after a
      // partition): it stops writing. An Ingress whose status is then cleared, and its rules
      // changed, stays cleared (the rules' change wakes the sync at once: a writer would restore
      // the status within milliseconds).
      const leaseObj = kube.get(
        "leases.coordination.k8s.io",
        "mesh-system",
        "mesh-discovery-leader",
      ) as JsonObject;
      kube.upsert({
        ...leaseObj,
        spec: {
          ...(leaseObj.spec as JsonObject),
          holderIdentity: "replica-c",
          leaseDurationSeconds: 3600,
          renewTime: microTime(new Date()),
        },
      });
      await follower.proc.waitFor(`${followerName} is no longer the leader`, 30_000);
      assert.match(
        follower.proc.output(),
        /Lease mesh-system\/mesh-discovery-leader taken by replica-c/,
      );
      const updates = () => follower.proc.output().match(/Ingress status: updated/g)?.length ?? 0;
      const before = updates();
      const web = kube.get("ingresses", "default", "web") as JsonObject;
      const rules = JSON.parse(JSON.stringify((web.spec as JsonObject).rules));
      rules[0].host = "www.example.com";
      kube.upsert({ ...web, spec: { ...(web.spec as JsonObject), rules }, status: {} });
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(lb(), "[]", "a replica that lost the Lease wrote the status");
      assert.equal(updates(), before);
    } finally {
      for (const s of streams) await s.close().catch(() => {});
      for (const r of replicas) await r.proc.stop();
    }
  });
});
