import assert from "node:assert/strict";
import { type FakeKube, startFakeKube } from "../../tests/harness/fake_kube.ts";
import { waitUntil } from "../../tests/harness/procs.ts";
import { createClusterRegistries } from "./multicluster.ts";
import { createOrchestratorRegistry } from "./orchestrator.ts";
import { logFile } from "./_testutil.ts";

function seed(kube: FakeKube, svc: string, ip: string) {
  kube.upsert({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: svc, namespace: "default" },
    spec: { ports: [{ name: "http", port: 80 }] },
  });
  kube.upsert({
    apiVersion: "v1",
    kind: "Endpoints",
    metadata: { name: svc, namespace: "default" },
    subsets: [{ addresses: [{ ip }], ports: [{ name: "http", port: 8080 }] }],
  });
}

function configMap(kube: FakeKube, data: Record<string, string>) {
  kube.upsert({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "clusters", namespace: "mesh-system" },
    data,
  });
}

/** The multicluster registry of config map mesh-system/clusters on `local`. */
function clusters(
  local: FakeKube,
  extra: Partial<Parameters<typeof createClusterRegistries>[0]> = {},
) {
  return createClusterRegistries({
    kubeconfigPath: local.kubeconfigPath,
    configMapName: "clusters",
    namespace: "mesh-system",
    domain: "cluster.local",
    resyncMs: 0,
    ...extra,
  });
}

Deno.test("createClusterRegistries() runs one registry per config map key and follows changes", async () => {
  await using local = await startFakeKube();
  await using east = await startFakeKube();
  await using west = await startFakeKube();
  seed(east, "shared", "10.10.0.1");
  seed(east, "east-only", "10.10.0.2");
  seed(west, "shared", "10.20.0.1");
  configMap(local, {
    east: east.kubeconfig(),
    west: west.kubeconfig(),
    broken: "clusters: [unclosed",
    empty: "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n",
  });
  const mc = await clusters(local);
  const changes: string[] = [];
  const sets: string[][] = [];
  mc.onChange((k) => changes.push(k));
  mc.onClustersChange((ids) => sets.push(ids));
  try {
    await mc.start();
    assert.deepEqual(mc.registries().map((r) => r.clusterId), ["east", "west"]);
    assert.deepEqual(mc.errors().map((e) => e.cluster), ["broken", "empty"]);
    assert.match(
      mc.errors()[0].message,
      /^Cluster "broken" in config map mesh-system\/clusters: invalid kubeconfig: /,
    );
    assert.equal(
      mc.errors()[1].message,
      'Cluster "empty" in config map mesh-system/clusters: invalid kubeconfig: no current ' +
        'context with a cluster ("")',
    );
    assert.deepEqual(mc.services().map((s) => s.hostname), [
      "east-only.default.svc.cluster.local",
      "shared.default.svc.cluster.local",
    ]);
    // Endpoints of a service present in both clusters are merged.
    assert.deepEqual(
      mc.instances().filter((i) => i.hostname.startsWith("shared.")).map((i) => i.address),
      ["10.10.0.1", "10.20.0.1"],
    );
    // ...and handed out by hostname from every cluster (what an endpoints event compares)
    assert.deepEqual(
      mc.instancesOf!(new Set(["shared.default.svc.cluster.local"])).map((i) => i.address),
      ["10.10.0.1", "10.20.0.1"],
    );

    // A remote endpoints change comes through as an endpoints change.
    seed(west, "shared", "10.20.0.9");
    await waitUntil(() => mc.instances().some((i) => i.address === "10.20.0.9"), 5000, "west");
    assert.deepEqual(changes, ["endpoints"]);

    // Dropping a key stops that cluster's registry; fixing a key starts it.
    changes.length = 0;
    configMap(local, { east: east.kubeconfig(), broken: west.kubeconfig() });
    await waitUntil(
      () => mc.registries().map((r) => r.clusterId).join() === "broken,east",
      5000,
      "the new cluster set",
    );
    assert.deepEqual(mc.errors(), []);
    assert.deepEqual(sets.at(-1), ["broken", "east"]);
    assert.ok(changes.includes("services"));
    await waitUntil(() => west.watchCount === 5, 5000, "one registry (five watches) on west");

    // Deleting the config map removes every remote cluster.
    local.remove("configmaps", "mesh-system", "clusters");
    await waitUntil(() => mc.registries().length === 0, 5000, "no clusters");
    assert.deepEqual(mc.services(), []);
    await waitUntil(() => east.watchCount === 0, 5000, "east watches to close");
  } finally {
    await mc.stop();
  }
  await waitUntil(() => west.watchCount === 0, 5000, "west watches to close");
});

Deno.test("createClusterRegistries() reports an unreachable cluster by key and starts without the config map", async () => {
  await using local = await startFakeKube();
  const mc = await clusters(local);
  try {
    await mc.start();
    assert.deepEqual(mc.registries(), []);
    const gone = await startFakeKube();
    const text = gone.kubeconfig();
    await gone.close();
    configMap(local, { far: text });
    await waitUntil(() => mc.errors().length === 1, 10_000, "the error for far");
    assert.match(
      mc.errors()[0].message,
      /^Cluster "far" in config map mesh-system\/clusters: Cannot start/,
    );
    assert.deepEqual(mc.registries(), []);
  } finally {
    await mc.stop();
  }
});

Deno.test("createClusterRegistries() rejects empty names", async () => {
  await assert.rejects(
    createClusterRegistries({
      configMapName: "",
      namespace: "mesh-system",
      domain: "cluster.local",
      resyncMs: 0,
    }),
    /config map name: must not be empty/,
  );
});

Deno.test("createClusterRegistries() keeps unchanged clusters running, ignores other config maps, reports only real set changes", async () => {
  await using local = await startFakeKube();
  await using east = await startFakeKube();
  await using west = await startFakeKube();
  seed(east, "a", "10.10.0.1");
  seed(west, "b", "10.20.0.1");
  configMap(local, { west: west.kubeconfig(), east: east.kubeconfig() });
  const log = await logFile();
  const mc = await clusters(local);
  const sets: string[][] = [];
  const changes: string[] = [];
  mc.onClustersChange((ids) => sets.push(ids));
  mc.onChange((k) => changes.push(k));
  try {
    await mc.start();
    const regs = mc.registries();
    assert.deepEqual(sets, [["east", "west"]]);
    // Another config map of the namespace is not the cluster list.
    local.upsert({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "other", namespace: "mesh-system" },
      data: { south: west.kubeconfig() },
    });
    // A key that cannot be used: reported, the set of running clusters is unchanged.
    const ghost =
      "apiVersion: v1\nkind: Config\ncurrent-context: ghost\ncontexts: []\nclusters: []\n";
    configMap(local, { east: east.kubeconfig(), west: west.kubeconfig(), ghost });
    await waitUntil(() => mc.errors().length === 1, 5000, "the error for ghost");
    const error = 'Cluster "ghost" in config map mesh-system/clusters: invalid kubeconfig: ' +
      'no current context with a cluster ("ghost")';
    assert.deepEqual(mc.errors(), [{ cluster: "ghost", message: error }]);
    // east's and west's registries were kept (not restarted), and nobody was told of a change
    assert.deepEqual(mc.registries().map((r) => r.clusterId), ["east", "west"]);
    assert.ok(mc.registries().every((r, i) => r === regs[i]));
    assert.deepEqual(sets, [["east", "west"]]);
    assert.deepEqual(changes, []);
    // errors() are in key order, whatever order they came in
    configMap(local, {
      east: east.kubeconfig(),
      west: west.kubeconfig(),
      ghost,
      aaa: "clusters: [",
    });
    await waitUntil(() => mc.errors().length === 2, 5000, "the error for aaa");
    assert.deepEqual(mc.errors().map((e) => e.cluster), ["aaa", "ghost"]);
    const lines = await log.lines("Multicluster");
    assert.deepEqual(lines, [
      'info default Multicluster: added the registry of cluster "east"',
      'info default Multicluster: added the registry of cluster "west"',
      `warn default Multicluster: ${error}`,
      // a key that could not be used is tried again (and reported again) on each change
      'warn default Multicluster: Cluster "aaa" in config map mesh-system/clusters: invalid kubeconfig: ' +
      "unexpected end of the stream within a flow collection (2:1)",
      `warn default Multicluster: ${error}`,
    ]);
  } finally {
    await log.close();
    await mc.stop();
  }
});

Deno.test("createClusterRegistries() rejects an empty namespace", async () => {
  await assert.rejects(
    createClusterRegistries({
      configMapName: "clusters",
      namespace: "",
      domain: "cluster.local",
      resyncMs: 0,
    }),
    /^Error: Invalid cluster registries namespace: must not be empty$/,
  );
});

Deno.test("createClusterRegistries() logs a missing config map and failing handlers, restarts a cluster whose kubeconfig changed", async () => {
  await using local = await startFakeKube();
  await using east = await startFakeKube();
  await using east2 = await startFakeKube();
  await using west = await startFakeKube();
  seed(east, "a", "10.10.0.1");
  seed(east2, "a", "10.11.0.1");
  seed(west, "w", "10.20.0.1");
  const log = await logFile();
  const mc = await clusters(local);
  const changes: string[] = [];
  mc.onChange(() => {
    throw new Error("handler bug");
  });
  mc.onChange((k) => changes.push(k));
  try {
    await mc.start();
    assert.equal(mc.name, "Multicluster");
    configMap(local, { east: east.kubeconfig(), west: west.kubeconfig() });
    await waitUntil(() => mc.registries().length === 2, 5000, "east and west");
    assert.deepEqual(changes, ["services"]);
    const [first, westReg] = mc.registries();
    // The same key, another kubeconfig: a new registry, on the other cluster; west is kept.
    configMap(local, { east: east2.kubeconfig(), west: west.kubeconfig() });
    // (east is stopped, then its replacement started: in between, only west is there)
    await waitUntil(
      () => mc.registries().length === 2 && mc.registries()[0] !== first,
      5000,
      "the new east registry",
    );
    assert.equal(mc.registries()[1], westReg);
    assert.deepEqual(mc.instances().map((i) => i.address), ["10.11.0.1", "10.20.0.1"]);
    // The cluster set is the same, but what it serves changed: a push is needed.
    assert.deepEqual(changes, ["services", "services"]);
    await waitUntil(() => east.watchCount === 0, 5000, "the old registry's watches to close");
    // The old registry is stopped: its cluster's changes are no longer told.
    changes.length = 0;
    seed(east, "b", "10.10.0.2");
    seed(east2, "a", "10.11.0.9");
    await waitUntil(() => changes.length === 1, 5000, "the change on east2");
    assert.deepEqual(changes, ["endpoints"]);
    const lines = await log.lines("Multicluster");
    assert.deepEqual(lines, [
      "info default Multicluster: config map mesh-system/clusters not found",
      'info default Multicluster: added the registry of cluster "east"',
      'info default Multicluster: added the registry of cluster "west"',
      "error default Multicluster: change handler failed: handler bug",
      'info default Multicluster: added the registry of cluster "east"',
      "error default Multicluster: change handler failed: handler bug",
      "error default Multicluster: change handler failed: handler bug",
    ]);
  } finally {
    await log.close();
    await mc.stop();
  }
});

Deno.test("createClusterRegistries() stop() while a cluster is being added leaves nothing running", async () => {
  await using local = await startFakeKube();
  await using east = await startFakeKube();
  seed(east, "a", "10.10.0.1");
  configMap(local, {});
  const mc = await clusters(local);
  await mc.start();
  east.requests.length = 0;
  configMap(local, { east: east.kubeconfig() });
  // Stop as soon as the remote cluster is being read.
  await waitUntil(() => east.requests.length > 0, 5000, "east being read");
  await mc.stop();
  assert.deepEqual(mc.registries(), []);
  assert.deepEqual(mc.services(), []);
  await waitUntil(() => east.watchCount === 0, 5000, "no watch left on east");
});

Deno.test("createClusterRegistries() reports a registry that cannot be created, per cluster", async () => {
  await using local = await startFakeKube();
  await using east = await startFakeKube();
  configMap(local, { east: east.kubeconfig() });
  const mc = await clusters(local, { endpointsSource: "both" as "auto" });
  try {
    await mc.start();
    assert.deepEqual(mc.errors(), [{
      cluster: "east",
      message: 'Cluster "east" in config map mesh-system/clusters: Invalid orchestrator ' +
        'endpoints source "both": expected auto, slices or endpoints',
    }]);
    assert.deepEqual(mc.registries(), []);
  } finally {
    await mc.stop();
  }
});

/**
 * A registry factory whose registries tell an "endpoints" change while they are being stopped
 * (a watch event racing the stop), after `gate` resolves. `threw` collects what the handlers threw.
 */
function racingFactory(gate: () => Promise<void> = () => Promise.resolve()) {
  const threw: unknown[] = [];
  const stopping: string[] = [];
  const factory: typeof createOrchestratorRegistry = async (opts) => {
    const reg = await createOrchestratorRegistry(opts);
    const handlers: ((kind: "services" | "endpoints") => void)[] = [];
    const onChange = reg.onChange.bind(reg);
    const stop = reg.stop.bind(reg);
    return Object.assign(reg, {
      onChange(h: (kind: "services" | "endpoints") => void) {
        handlers.push(h);
        onChange(h);
      },
      async stop() {
        stopping.push(opts.clusterId ?? "");
        await gate();
        for (const h of handlers) {
          try {
            h("endpoints");
          } catch (err) {
            threw.push(err);
          }
        }
        await stop();
      },
    });
  };
  return { factory, threw, stopping };
}

Deno.test("createClusterRegistries() does not forward a change of a replaced or removed cluster's registry racing its stop", async () => {
  await using local = await startFakeKube();
  await using east = await startFakeKube();
  seed(east, "a", "10.10.0.1");
  configMap(local, { east: east.kubeconfig() });
  const race = racingFactory();
  const mc = await clusters(local, { createRegistry: race.factory });
  const changes: string[] = [];
  mc.onChange((k) => changes.push(k));
  try {
    await mc.start();
    const first = mc.registries()[0];
    // Replaced: same key, another kubeconfig text.
    configMap(local, { east: `${east.kubeconfig()}\n# v2\n` });
    await waitUntil(() => mc.registries()[0] && mc.registries()[0] !== first, 10_000, "replaced");
    await waitUntil(() => changes.includes("services"), 5000, "the replacement told");
    assert.deepEqual(race.stopping, ["east"]);
    assert.deepEqual(changes, ["services"], "the old registry's late change is not forwarded");
    // Removed: its late change is not forwarded either, and the guard does not throw.
    changes.length = 0;
    configMap(local, {});
    await waitUntil(() => mc.registries().length === 0, 10_000, "removed");
    await waitUntil(() => changes.includes("services"), 5000, "the removal told");
    assert.deepEqual(changes, ["services"]);
    assert.deepEqual(race.threw, []);
  } finally {
    await mc.stop();
  }
});

Deno.test("createClusterRegistries() tells no handler of a change once stop() was called during a reconcile", async () => {
  await using local = await startFakeKube();
  await using east = await startFakeKube();
  seed(east, "a", "10.10.0.1");
  configMap(local, { east: east.kubeconfig() });
  let release!: () => void;
  const held = new Promise<void>((r) => release = r);
  const race = racingFactory(() => held);
  const mc = await clusters(local, { createRegistry: race.factory });
  const told: string[] = [];
  mc.onChange((k) => told.push(`change ${k}`));
  mc.onClustersChange((ids) => told.push(`clusters [${ids}]`));
  await mc.start();
  told.length = 0;
  // Removing east: the reconcile waits in east's stop() ...
  configMap(local, {});
  await waitUntil(() => race.stopping.length === 1, 10_000, "east being stopped");
  // ... while discovery shuts down.
  const stopped = mc.stop();
  release();
  await stopped;
  assert.deepEqual(told, [], "handlers told after stop()");
  assert.deepEqual(mc.registries(), []);
});
