import assert from "node:assert/strict";
import type { ConfigObject } from "../model/types.ts";
import { waitUntil } from "../process/mod.ts";
import { createMemoryStore } from "../store/mod.ts";
import {
  convertServiceEntries,
  createServiceEntryRegistry,
  instancesOnlyChange,
} from "./serviceentry.ts";

function se(name: string, spec: Record<string, unknown>, namespace = "default"): ConfigObject {
  return {
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "ServiceEntry",
    metadata: { name, namespace },
    spec,
  };
}

Deno.test("convertServiceEntries() makes one service per host and address", () => {
  const { services } = convertServiceEntries([
    se("db", {
      hosts: ["db.internal", "db2.internal"],
      addresses: ["10.0.0.5", "192.168.0.0/16"],
      ports: [{ number: 3306, name: "tcp", protocol: "TCP" }],
      location: "MESH_INTERNAL",
      resolution: "STATIC",
      endpoints: [{ address: "10.0.0.6" }],
    }),
  ]);
  assert.deepEqual(services.map((s) => [s.hostname, s.address]), [
    ["db.internal", "10.0.0.5"],
    ["db.internal", "192.168.0.0/16"],
    ["db2.internal", "10.0.0.5"],
    ["db2.internal", "192.168.0.0/16"],
  ]);
  assert.equal(services[0].meshExternal, false);
  assert.equal(services[0].resolution, "ClientSideLB");
  assert.equal(services[0].registry, "ServiceEntry");
});

Deno.test("convertServiceEntries() maps resolution and location, MESH_EXTERNAL by default", () => {
  const { services, instances } = convertServiceEntries([
    se("none", { hosts: ["a.com"], ports: [{ number: 443, name: "https", protocol: "HTTPS" }] }),
    se("dns", {
      hosts: ["b.com"],
      ports: [{ number: 80, name: "http", protocol: "HTTP" }],
      resolution: "DNS",
    }),
    // NONE ignores the endpoints it is given; STATIC without endpoints has none
    se("none-eps", {
      hosts: ["c.com"],
      ports: [{ number: 80, name: "http", protocol: "HTTP" }],
      endpoints: [{ address: "10.9.9.9" }],
    }),
    se("static", {
      hosts: ["d.com"],
      ports: [{ number: 80, name: "http", protocol: "HTTP" }],
      resolution: "STATIC",
    }),
  ]);
  assert.deepEqual(services.map((s) => [s.hostname, s.address, s.resolution, s.meshExternal]), [
    ["a.com", "0.0.0.0", "Passthrough", true],
    ["b.com", "0.0.0.0", "DNSLB", true],
    ["c.com", "0.0.0.0", "Passthrough", true],
    ["d.com", "0.0.0.0", "ClientSideLB", true],
  ]);
  // NONE has no endpoints; DNS without endpoints resolves the host itself.
  assert.deepEqual(
    instances.map((i) => [i.hostname, i.address, i.port, i.servicePort.protocol, i.locality]),
    [["b.com", "b.com", 80, "HTTP", ""]],
  );
});

Deno.test("convertServiceEntries() takes endpoint ports by port name, else the service port", () => {
  const { instances } = convertServiceEntries([
    se("web", {
      hosts: ["web.mesh"],
      ports: [{ number: 80, name: "http", protocol: "HTTP" }, {
        number: 9000,
        name: "grpc",
        protocol: "GRPC",
      }],
      resolution: "STATIC",
      location: "MESH_INTERNAL",
      endpoints: [
        { address: "127.0.0.1", ports: { http: 18080 }, labels: { version: "v1" } },
        { address: "unix:///var/run/web.sock" },
      ],
    }),
  ]);
  assert.deepEqual(instances.map((i) => [i.address, i.servicePort.name, i.port, i.labels]), [
    ["127.0.0.1", "http", 18080, { version: "v1" }],
    ["127.0.0.1", "grpc", 9000, { version: "v1" }],
    ["unix:///var/run/web.sock", "http", 80, {}],
    ["unix:///var/run/web.sock", "grpc", 9000, {}],
  ]);
});

Deno.test("createServiceEntryRegistry() follows the store's ServiceEntries", async () => {
  const store = createMemoryStore();
  const reg = createServiceEntryRegistry(store);
  const changes: string[] = [];
  reg.onChange((k) => changes.push(k));
  await reg.start();
  try {
    assert.deepEqual(reg.services(), []);
    await store.create(se("ext", {
      hosts: ["api.example.com"],
      ports: [{ number: 443, name: "https", protocol: "HTTPS" }],
      resolution: "DNS",
    }));
    await waitUntil(() => reg.services().length > 0);
    assert.equal(reg.name, "ServiceEntry");
    assert.deepEqual(reg.services().map((s) => s.hostname), ["api.example.com"]);
    assert.deepEqual(reg.instances().map((i) => i.address), ["api.example.com"]);
    assert.ok(changes.includes("services"));
    await store.delete("serviceentry", "ext", "default");
    await waitUntil(() => reg.services().length === 0);
    assert.deepEqual(reg.services(), []);
    // stopped, it no longer follows the store
    await reg.stop();
    await store.create(se("late", {
      hosts: ["late.example.com"],
      ports: [{ number: 80, name: "http", protocol: "HTTP" }],
      resolution: "DNS",
    }));
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(reg.services(), []);
  } finally {
    await reg.stop();
    await store.close();
  }
});

Deno.test("convertServiceEntries() takes service accounts from the annotations meshctl register writes", () => {
  const vm = (annotations: Record<string, string>) => ({
    ...se("vm-web", {
      hosts: ["vm-web.shop.svc.example.org"],
      ports: [{ number: 80, protocol: "HTTP", name: "http" }],
      location: "MESH_INTERNAL",
      resolution: "STATIC",
      endpoints: [{ address: "10.0.0.5" }],
    }, "shop"),
    metadata: { name: "vm-web", namespace: "shop", annotations },
  });
  const one = convertServiceEntries(
    [vm({ "alpha.mesh.io/orchestrator-serviceaccounts": "vm-sa" })],
    "example.org",
  );
  assert.deepEqual(one.services[0].serviceAccounts, ["spiffe://example.org/ns/shop/sa/vm-sa"]);
  assert.equal(one.instances[0].serviceAccount, "spiffe://example.org/ns/shop/sa/vm-sa");
  // several accounts (either spelling, canonical ones too): the service lists them all
  const many = convertServiceEntries([vm({
    "alpha.mesh.io/orchestrator-serviceaccounts": " b-sa, a-sa,",
    "alpha.istio.io/kubernetes-serviceaccounts": "a-sa",
    "alpha.mesh.io/canonical-serviceaccounts": "other.org/ns/x/sa/y",
  })]);
  assert.deepEqual(many.services[0].serviceAccounts, [
    "spiffe://cluster.local/ns/shop/sa/a-sa",
    "spiffe://cluster.local/ns/shop/sa/b-sa",
    "spiffe://other.org/ns/x/sa/y",
  ]);
  assert.equal(many.instances[0].serviceAccount, "");
  assert.deepEqual(convertServiceEntries([vm({})]).services[0].serviceAccounts, []);
});

function we(name: string, spec: Record<string, unknown>, namespace = "default"): ConfigObject {
  return {
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "WorkloadEntry",
    metadata: { name, namespace },
    spec,
  };
}

const DETAILS = se("details-svc", {
  hosts: ["details.bookinfo.com"],
  location: "MESH_INTERNAL",
  ports: [{ number: 80, name: "http", protocol: "HTTP", targetPort: 8080 }],
  resolution: "STATIC",
  workloadSelector: { labels: { app: "details-legacy" } },
});

Deno.test("convertServiceEntries() makes the selected WorkloadEntries of its namespace endpoints", () => {
  const { services, instances } = convertServiceEntries([DETAILS], "cluster.local", [
    we("vm1", {
      address: "2.2.2.2",
      labels: { app: "details-legacy", instance: "1" },
      serviceAccount: "details-legacy",
      locality: "us-east/zone-a/sub",
      weight: 3,
    }),
    we("vm2", { address: "3.3.3.3", labels: { app: "details-legacy" }, ports: { http: 9090 } }),
    we("other-app", { address: "4.4.4.4", labels: { app: "reviews" } }),
    we("other-ns", { address: "5.5.5.5", labels: { app: "details-legacy" } }, "prod"),
  ]);
  assert.deepEqual(
    instances.map((i) => [i.address, i.port, i.locality, i.weight, i.serviceAccount]),
    [
      [
        "2.2.2.2",
        8080,
        "us-east/zone-a",
        3,
        "spiffe://cluster.local/ns/default/sa/details-legacy",
      ],
      ["3.3.3.3", 9090, "", undefined, ""],
    ],
  );
  assert.deepEqual(instances[0].labels, { app: "details-legacy", instance: "1" });
  assert.deepEqual(services[0].serviceAccounts, [
    "spiffe://cluster.local/ns/default/sa/details-legacy",
  ]);
});

Deno.test("convertServiceEntries() gives a selecting ServiceEntry no endpoints when no WorkloadEntry matches", () => {
  const { services, instances } = convertServiceEntries([DETAILS], "cluster.local", []);
  assert.equal(services.length, 1);
  assert.deepEqual(instances, []);
});

Deno.test("createServiceEntryRegistry() follows the store's WorkloadEntries", async () => {
  const store = createMemoryStore();
  const reg = createServiceEntryRegistry(store);
  await reg.start();
  try {
    await store.create(DETAILS);
    await waitUntil(() => reg.services().length > 0);
    assert.deepEqual(reg.instances(), []);
    await store.create(we("vm1", { address: "2.2.2.2", labels: { app: "details-legacy" } }));
    await waitUntil(() => reg.instances().length > 0);
    assert.deepEqual(reg.instances().map((i) => i.address), ["2.2.2.2"]);
  } finally {
    await reg.stop();
  }
});

const DB_PORTS = [{ number: 5432, name: "tcp", protocol: "TCP" }];
const db = (spec: Record<string, unknown>) =>
  se("db", { hosts: ["db.internal"], location: "MESH_INTERNAL", resolution: "STATIC", ...spec });

Deno.test("createServiceEntryRegistry() reports an edit of endpoints only as an endpoints change, any other as a services change", async () => {
  const store = createMemoryStore();
  const reg = createServiceEntryRegistry(store);
  const changes: string[] = [];
  // an endpoints change names the hosts whose instances changed, when it knows them
  reg.onChange((k, hosts) => changes.push(hosts ? `${k} ${[...hosts].join(" ")}` : k));
  await reg.start();
  /** The change reported for `edit` (the registry holds its result first). */
  const after = async (edit: () => Promise<unknown>, done: () => boolean) => {
    const n = changes.length;
    await edit();
    await waitUntil(() => changes.length > n && done());
    return changes.slice(n);
  };
  const current = async () => (await store.list("serviceentry"))[0];
  try {
    assert.deepEqual(
      await after(
        () => store.create(db({ ports: DB_PORTS, endpoints: [{ address: "10.0.0.1" }] })),
        () => reg.services().length === 1,
      ),
      ["services"],
    );
    // a new endpoint address: the services are the same
    assert.deepEqual(
      await after(async () => {
        const o = await current();
        await store.update({ ...o, spec: { ...o.spec, endpoints: [{ address: "10.0.0.2" }] } });
      }, () => reg.instances()[0]?.address === "10.0.0.2"),
      ["endpoints db.internal"],
    );
    assert.deepEqual(
      reg.instancesOf!(new Set(["db.internal", "other"])).map((i) => i.address),
      ["10.0.0.2"],
    );
    // an endpoint with a service account adds it to the service's (the SANs proxies check)
    assert.deepEqual(
      await after(async () => {
        const o = await current();
        await store.update({
          ...o,
          spec: { ...o.spec, endpoints: [{ address: "10.0.0.2", serviceAccount: "db" }] },
        });
      }, () => reg.services()[0]?.serviceAccounts.length === 1),
      ["services"],
    );
    // a port of the service
    assert.deepEqual(
      await after(async () => {
        const o = await current();
        await store.update({
          ...o,
          spec: {
            ...o.spec,
            ports: [...DB_PORTS, { number: 5433, name: "tcp-2", protocol: "TCP" }],
          },
        });
      }, () => reg.services()[0]?.ports.length === 2),
      ["services"],
    );
    // a WorkloadEntry no ServiceEntry selects changes no service; an orchestrator service may
    // select it, so its hosts are not named
    assert.deepEqual(
      await after(
        () => store.create(we("vm", { address: "2.2.2.2", labels: { app: "x" } })),
        () => true,
      ),
      ["endpoints"],
    );
    // an edit that changes the same host's endpoints back names it again
    assert.deepEqual(
      await after(async () => {
        const o = await current();
        await store.update({
          ...o,
          spec: { ...o.spec, endpoints: [{ address: "10.0.0.3", serviceAccount: "db" }] },
        });
      }, () => reg.instances()[0]?.address === "10.0.0.3"),
      ["endpoints db.internal"],
    );
  } finally {
    await reg.stop();
    await store.close();
  }
});

Deno.test("createServiceEntryRegistry() names in an endpoints change only the hosts whose instances changed", async () => {
  const store = createMemoryStore();
  const reg = createServiceEntryRegistry(store);
  const changes: string[] = [];
  reg.onChange((k, hosts) => changes.push(hosts ? `${k} ${[...hosts].sort().join(" ")}` : k));
  await reg.start();
  try {
    await store.create(db({ ports: DB_PORTS, endpoints: [{ address: "10.0.0.1" }] }));
    await store.create(
      se("db2", {
        hosts: ["db2.internal"],
        location: "MESH_INTERNAL",
        resolution: "STATIC",
        ports: DB_PORTS,
        endpoints: [{ address: "10.0.0.9" }],
      }),
    );
    await waitUntil(() => reg.services().length === 2);
    changes.length = 0;
    const o = (await store.list("serviceentry")).find((x) => x.metadata.name === "db")!;
    await store.update({ ...o, spec: { ...o.spec, endpoints: [{ address: "10.0.0.2" }] } });
    await waitUntil(() => changes.length === 1);
    assert.deepEqual(changes, ["endpoints db.internal"], "db2.internal's instances are the same");
  } finally {
    await reg.stop();
    await store.close();
  }
});

Deno.test("createServiceEntryRegistry() makes one reload of the changes of one task, and lists the store only when it starts", async () => {
  const store = createMemoryStore();
  await store.create(
    se("early", { hosts: ["early.internal"], ports: DB_PORTS, resolution: "DNS" }),
  );
  await store.create(we("vm", { address: "2.2.2.2", labels: { app: "x" } }));
  const reg = createServiceEntryRegistry(store);
  const listed: string[] = [];
  const list = store.list.bind(store);
  store.list = (type: string) => {
    listed.push(type);
    return list(type);
  };
  const changes: string[] = [];
  reg.onChange((k) => changes.push(k));
  await reg.start();
  try {
    assert.deepEqual(reg.services().map((s) => s.hostname), ["early.internal"]);
    assert.deepEqual(listed.sort(), ["serviceentry", "workloadentry"]);
    const n = changes.length;
    // one task: the first change queues a reload that runs once the task is over; the others join it
    await Promise.all(
      Array.from(
        { length: 50 },
        (_, i) =>
          store.create(
            se(`s${i}`, { hosts: [`s${i}.internal`], ports: DB_PORTS, resolution: "DNS" }),
          ),
      ),
    );
    await waitUntil(() => reg.services().length === 51);
    await new Promise((r) => setTimeout(r, 50));
    assert.ok(changes.length - n <= 3, `${changes.length - n} reloads for 50 changes`);
    await store.delete("serviceentry", "early", "default");
    await waitUntil(() => reg.services().length === 50);
    assert.deepEqual(
      listed.sort(),
      ["serviceentry", "workloadentry"],
      "no listing after the start",
    );
  } finally {
    await reg.stop();
    await store.close();
  }
});

Deno.test("createServiceEntryRegistry() orders the ServiceEntries as the stores list them, by namespace then name", async () => {
  const store = createMemoryStore();
  const reg = createServiceEntryRegistry(store);
  await reg.start();
  try {
    const port = { ports: DB_PORTS, resolution: "DNS" };
    // created out of order; "a-b" sorts after "a" by namespace, though "a-b/..." < "a/..."
    const made = [["b", "e"], ["a-b", "x"], ["a", "e"], ["a", "x"], ["a", "d"], ["a-b", "a"]];
    made.push(["a", "c"], ["b", "a"], ["a", "b"], ["a", "a"]);
    for (const [ns, name] of made) {
      await store.create(se(name, { hosts: [`${name}.${ns}.internal`], ...port }, ns));
    }
    await waitUntil(() => reg.services().length === made.length);
    const want = [...made].sort(([n1, a], [n2, b]) => n1 < n2 ? -1 : n1 > n2 ? 1 : a < b ? -1 : 1)
      .map(([ns, name]) => `${name}.${ns}.internal`);
    assert.deepEqual(reg.services().map((s) => s.hostname), want);
    assert.deepEqual(
      want,
      convertServiceEntries(await store.list("serviceentry")).services.map((s) => s.hostname),
    );
  } finally {
    await reg.stop();
    await store.close();
  }
});
Deno.test("convertServiceEntries() selects a WorkloadEntry only with every label and an address of its own, and leaves out a weight of 0", () => {
  const selector = { labels: { app: "details-legacy", version: "v1" } };
  const { instances } = convertServiceEntries(
    [
      se("details-svc", { ...DETAILS.spec, workloadSelector: selector }),
      db({
        ports: DB_PORTS,
        endpoints: [{ address: "10.0.0.1", weight: 0 }, { address: "10.0.0.2", weight: 2 }],
      }),
    ],
    "cluster.local",
    [
      we("v1", { address: "2.2.2.2", labels: { app: "details-legacy", version: "v1" } }),
      we("v2", { address: "3.3.3.3", labels: { app: "details-legacy", version: "v2" } }),
      // reached through its network's gateway: no address of its own to send traffic to
      we("remote", { network: "other", labels: { app: "details-legacy", version: "v1" } }),
    ],
  );
  assert.deepEqual(instances.map((i) => [i.address, i.weight]), [
    ["2.2.2.2", undefined],
    ["10.0.0.1", undefined], // Envoy rejects a load_balancing_weight of 0
    ["10.0.0.2", 2],
  ]);
});

Deno.test("instancesOnlyChange() is true for WorkloadEntries and for ServiceEntry edits of endpoints only", () => {
  const a = db({ ports: DB_PORTS, endpoints: [{ address: "10.0.0.1" }] });
  const withMeta = (o: ConfigObject, meta: Record<string, unknown>) => ({
    ...o,
    metadata: { ...o.metadata, ...meta },
  });
  const b = withMeta(
    { ...a, spec: { ...a.spec, endpoints: [{ address: "10.0.0.2" }] } },
    { resourceVersion: "7", generation: 3 },
  );
  const edit = (object: ConfigObject, previous: ConfigObject | undefined) =>
    instancesOnlyChange({ type: "MODIFIED", object }, previous);
  assert.equal(edit(b, a), true, "endpoints, resourceVersion and generation");
  assert.equal(edit(a, a), true, "no change at all");
  assert.equal(instancesOnlyChange({ type: "ADDED", object: a }, undefined), false, "added");
  assert.equal(instancesOnlyChange({ type: "DELETED", object: a }, a), false, "deleted");
  assert.equal(edit(a, undefined), false, "not held before");
  assert.equal(edit({ ...a, spec: { ...a.spec, exportTo: ["."] } }, a), false);
  assert.equal(edit({ ...a, spec: { ...a.spec, ports: [] } }, a), false);
  assert.equal(
    edit(withMeta(a, { annotations: { "x": "y" } }), a),
    false,
    "annotations name service accounts",
  );
  assert.equal(
    edit(withMeta(a, { annotations: { "x": "z" } }), withMeta(a, { annotations: { "x": "y" } })),
    false,
    "an annotation's value",
  );
  assert.equal(edit(withMeta(a, { labels: { app: "db" } }), a), false);
  const applied = (o: ConfigObject) =>
    withMeta(o, {
      annotations: {
        "kubectl.kubernetes.io/last-applied-configuration": JSON.stringify(o.spec),
        "x": "y",
      },
    });
  assert.equal(edit(applied(b), applied(a)), true, "kubectl apply's copy of the object aside");
  assert.equal(edit(applied(b), withMeta(a, { annotations: { "x": "y" } })), true);
  assert.equal(edit(applied(b), a), false, "another annotation was added");
  const vm = we("vm", { address: "2.2.2.2" });
  assert.equal(instancesOnlyChange({ type: "ADDED", object: vm }, undefined), true, "a new one");
  assert.equal(edit({ ...vm, spec: { address: "2.2.2.3" } }, vm), true);
  assert.equal(instancesOnlyChange({ type: "DELETED", object: vm }, vm), true, "a deleted one");
  const vs: ConfigObject = { ...a, kind: "VirtualService", spec: {} };
  assert.equal(edit(vs, vs), false, "other kinds");
  assert.equal(edit(vm, vs), false, "a kind replaced by another (a key reused)");
  assert.equal(edit(vs, a), false);
});

Deno.test("createServiceEntryRegistry() keeps what its watch delivered while it listed the store", async () => {
  const store = createMemoryStore();
  const port = { ports: DB_PORTS, resolution: "DNS" };
  await store.create(se("gone", { hosts: ["gone.internal"], ...port }));
  await store.create(se("kept", { hosts: ["kept.internal"], ...port }));
  const reg = createServiceEntryRegistry(store);
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const list = store.list.bind(store);
  store.list = async (type: string) => {
    const listed = await list(type); // taken now, handed over after the changes below
    await gate;
    return listed;
  };
  const started = reg.start();
  try {
    await new Promise((r) => setTimeout(r, 10));
    await store.delete("serviceentry", "gone", "default");
    const kept = (await list("serviceentry")).find((o) => o.metadata.name === "kept")!;
    await store.update({ ...kept, spec: { ...kept.spec, hosts: ["kept2.internal"] } });
    release();
    await started;
    await waitUntil(() => reg.services().length === 1);
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(reg.services().map((s) => s.hostname), ["kept2.internal"]);
  } finally {
    await reg.stop();
    await store.close();
  }
});
