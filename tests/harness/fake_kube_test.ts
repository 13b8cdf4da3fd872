import assert from "node:assert/strict";
import { parse as parseYaml } from "../../lib/deps/yaml.ts";
import {
  type FakeKube,
  type Json,
  type JsonObject,
  type KubeObject,
  startFakeKube,
} from "./fake_kube.ts";
import { runKubectl } from "./kubectl.ts";
import { waitUntil } from "./procs.ts";

const SERVICE_AND_CONFIGMAP = `apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: team-a
  labels: {app: web}
spec:
  selector: {app: web}
  ports:
  - name: http
    port: 80
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: team-a
data:
  mode: one
`;

const WIDGET_CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.mesh.io
spec:
  group: example.mesh.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
`;

async function kubectl(kube: FakeKube, args: string[], stdin?: string) {
  return await runKubectl(kube.kubeconfigPath, args, { stdin });
}

async function kubectlOk(kube: FakeKube, args: string[], stdin?: string): Promise<string> {
  const r = await kubectl(kube, args, stdin);
  assert.equal(r.code, 0, `kubectl ${args.join(" ")} failed:\n${r.stderr}`);
  return r.stdout;
}

async function api(
  kube: FakeKube,
  method: string,
  path: string,
  body?: Json,
  contentType?: string,
) {
  const headers: Record<string, string> = { ...kube.authHeaders };
  if (body !== undefined) headers["content-type"] = contentType ?? "application/json";
  const res = await fetch(`${kube.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

// ---------------------------------------------------------------------------------------------
// The real kubectl

Deno.test("kubectl create namespace adds it and get ns prints it in a table", async () => {
  await using kube = await startFakeKube();
  assert.equal(
    (await kubectlOk(kube, ["create", "namespace", "team-a"])).trim(),
    "namespace/team-a created",
  );
  const table = await kubectlOk(kube, ["get", "namespaces"]);
  const lines = table.trim().split("\n");
  assert.match(lines[0], /^NAME\s+STATUS\s+AGE$/);
  assert.ok(lines.some((l) => /^team-a\s+Active\s+\d+s$/.test(l)), table);
  assert.deepEqual(kube.objects("namespaces").map((n) => n.metadata.name), [
    "default",
    "kube-system",
    "mesh-system",
    "team-a",
  ]);
});

Deno.test("kubectl apply -f creates a Service and ConfigMap, then updates them on a second apply", async () => {
  await using kube = await startFakeKube({ namespaces: ["default", "team-a"] });
  const created = await kubectlOk(kube, ["apply", "-f", "-"], SERVICE_AND_CONFIGMAP);
  assert.equal(created, "service/web created\nconfigmap/cfg created\n");
  const svc1 = kube.get("services", "team-a", "web")!;
  assert.match(String((svc1.spec as { clusterIP: string }).clusterIP), /^10\.96\.\d+\.\d+$/);

  const changed = SERVICE_AND_CONFIGMAP.replace("port: 80", "port: 8080").replace(
    "mode: one",
    "mode: two",
  );
  const updated = await kubectlOk(kube, ["apply", "-f", "-"], changed);
  assert.equal(updated, "service/web configured\nconfigmap/cfg configured\n");
  const svc2 = kube.get("services", "team-a", "web")!;
  assert.deepEqual((svc2.spec as { ports: Json }).ports, [
    { name: "http", port: 8080, protocol: "TCP", targetPort: 8080 },
  ]);
  assert.equal(
    (svc2.spec as { clusterIP: string }).clusterIP,
    (svc1.spec as { clusterIP: string }).clusterIP,
  );
  assert.equal(svc2.metadata.uid, svc1.metadata.uid);
  assert.equal(svc2.metadata.generation, 2);
  assert.ok(Number(svc2.metadata.resourceVersion) > Number(svc1.metadata.resourceVersion));
  assert.deepEqual(kube.get("configmaps", "team-a", "cfg")!.data, { mode: "two" });
  assert.ok(
    kube.requests.some((r) =>
      r.method === "PATCH" && r.contentType.startsWith("application/strategic-merge-patch+json")
    ),
  );

  const again = await kubectlOk(kube, ["apply", "-f", "-"], changed);
  assert.equal(again, "service/web unchanged\nconfigmap/cfg unchanged\n");
});

Deno.test("kubectl get svc prints JSON, YAML and a table", async () => {
  await using kube = await startFakeKube({ namespaces: ["default", "team-a"] });
  await kubectlOk(kube, ["apply", "-f", "-"], SERVICE_AND_CONFIGMAP);

  const json = JSON.parse(
    await kubectlOk(kube, ["get", "svc", "web", "-n", "team-a", "-o", "json"]),
  );
  assert.equal(json.kind, "Service");
  assert.equal(json.apiVersion, "v1");
  assert.equal(json.metadata.name, "web");
  assert.match(json.metadata.uid, /^[0-9a-f-]{36}$/);
  assert.match(json.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

  const list = JSON.parse(await kubectlOk(kube, ["get", "svc", "-A", "-o", "json"]));
  assert.equal(list.kind, "List");
  assert.deepEqual(list.items.map((s: KubeObject) => s.metadata.name), ["web"]);

  const yaml = await kubectlOk(kube, ["get", "svc", "web", "-n", "team-a", "-o", "yaml"]);
  assert.match(yaml, /^apiVersion: v1\nkind: Service\n/);
  assert.ok(yaml.includes("\n  name: web\n"), yaml);

  const table = (await kubectlOk(kube, ["get", "svc", "-n", "team-a"])).trim().split("\n");
  assert.match(table[0], /^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE$/);
  assert.match(table[1], /^web\s+ClusterIP\s+10\.96\.\d+\.\d+\s+<none>\s+80\/TCP\s+\d+s$/);
  assert.ok(kube.requests.some((r) => r.accept.includes("as=Table")));
});

Deno.test("kubectl applies a CRD and then gets, applies and deletes objects of the new type", async () => {
  await using kube = await startFakeKube({ namespaces: ["default", "team-a"] });
  assert.equal(
    await kubectlOk(kube, ["apply", "-f", "-"], WIDGET_CRD),
    "customresourcedefinition.apiextensions.k8s.io/widgets.example.mesh.io created\n",
  );
  const none = await kubectl(kube, ["get", "widgets", "-n", "team-a"]);
  assert.equal(none.code, 0, none.stderr);
  assert.match(none.stderr, /No resources found in team-a namespace/);

  const widget = (size: number) =>
    `apiVersion: example.mesh.io/v1\nkind: Widget\nmetadata: {name: w1, namespace: team-a}\nspec: {size: ${size}}\n`;
  assert.equal(
    await kubectlOk(kube, ["apply", "-f", "-"], widget(3)),
    "widget.example.mesh.io/w1 created\n",
  );
  assert.equal(
    await kubectlOk(kube, ["apply", "-f", "-"], widget(4)),
    "widget.example.mesh.io/w1 configured\n",
  );
  const table = (await kubectlOk(kube, ["get", "wd", "-n", "team-a"])).trim().split("\n");
  assert.match(table[0], /^NAME\s+SIZE\s+AGE$/);
  assert.match(table[1], /^w1\s+4\s+\d+s$/);
  const obj = JSON.parse(
    await kubectlOk(kube, ["get", "widget", "w1", "-n", "team-a", "-o", "json"]),
  );
  assert.deepEqual(obj.spec, { size: 4 });
  assert.equal(obj.apiVersion, "example.mesh.io/v1");

  assert.equal(
    await kubectlOk(kube, ["delete", "widget", "w1", "-n", "team-a"]),
    'widget.example.mesh.io "w1" deleted\n',
  );
  assert.deepEqual(kube.objects("widgets.example.mesh.io"), []);
});

Deno.test("kubectl delete removes an object and get of a missing object exits 1 with NotFound", async () => {
  await using kube = await startFakeKube({ namespaces: ["default", "team-a"] });
  await kubectlOk(kube, ["apply", "-f", "-"], SERVICE_AND_CONFIGMAP);
  assert.equal(
    await kubectlOk(kube, ["delete", "svc", "web", "-n", "team-a"]),
    'service "web" deleted\n',
  );
  assert.equal(kube.get("services", "team-a", "web"), undefined);

  const missing = await kubectl(kube, ["get", "svc", "web", "-n", "team-a"]);
  assert.equal(missing.code, 1);
  assert.equal(missing.stderr.trim(), 'Error from server (NotFound): services "web" not found');
  const again = await kubectl(kube, ["delete", "svc", "web", "-n", "team-a"]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /NotFound.*services "web" not found/);
});

Deno.test("kubectl apply --dry-run=server reports the change and stores nothing, for built-ins and CRDs", async () => {
  // kubectl 1.20 allows a server dry run only for kinds whose PATCH operation in /openapi/v2
  // takes a `dryRun` parameter; kubectl 1.32 reads /openapi/v3.
  await using kube = await startFakeKube({ namespaces: ["default", "team-a"] });
  await kubectlOk(kube, ["apply", "-f", "-"], SERVICE_AND_CONFIGMAP + "---\n" + WIDGET_CRD);
  assert.equal(
    await kubectlOk(
      kube,
      ["apply", "--dry-run=server", "-f", "-"],
      SERVICE_AND_CONFIGMAP.replace("port: 80", "port: 8080"),
    ),
    "service/web configured (server dry run)\nconfigmap/cfg unchanged (server dry run)\n",
  );
  const widget =
    "apiVersion: example.mesh.io/v1\nkind: Widget\nmetadata: {name: w1, namespace: team-a}\nspec: {size: 1}\n";
  assert.equal(
    await kubectlOk(kube, ["apply", "--dry-run=server", "-f", "-"], widget),
    "widget.example.mesh.io/w1 created (server dry run)\n",
  );
  const ports =
    (kube.get("services", "team-a", "web")!.spec as { ports: { port: number }[] }).ports;
  assert.deepEqual(ports.map((p) => p.port), [80]);
  assert.deepEqual(kube.objects("widgets.example.mesh.io"), []);
  assert.ok(kube.requests.some((r) => r.search.includes("dryRun=All")));
});

Deno.test("kubectl wait sees a CRD established and returns once a watched object is deleted", async () => {
  await using kube = await startFakeKube();
  kube.upsert({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "c", namespace: "default" },
  });
  await kubectlOk(kube, ["apply", "-f", "-"], WIDGET_CRD);
  assert.equal(
    await kubectlOk(kube, [
      "wait",
      "--for=condition=established",
      "crd/widgets.example.mesh.io",
      "--timeout=5s",
    ]),
    "customresourcedefinition.apiextensions.k8s.io/widgets.example.mesh.io condition met\n",
  );
  const waiting = kubectl(kube, ["wait", "--for=delete", "configmap/c", "--timeout=10s"]);
  // Delete only once this kubectl watches the ConfigMap. Counting open watches is not enough: the
  // first `kubectl wait` also watched (the CRD), and under load the fake may not have seen that
  // connection close yet. Deleting before the second kubectl's first GET makes it find nothing,
  // exit 0 and print nothing: `kubectl wait --for=delete` on a missing object succeeds silently.
  await waitUntil(
    () =>
      kube.requests.some((r) =>
        r.path === "/api/v1/namespaces/default/configmaps" && r.search.includes("watch=true") &&
        r.search.includes("fieldSelector=metadata.name%3Dc") && r.status === 200
      ),
    10_000,
    "kubectl wait to watch configmap c",
  );
  kube.remove("configmaps", "default", "c");
  const done = await waiting;
  assert.equal(done.code, 0, done.stderr);
  assert.equal(done.stdout, "configmap/c condition met\n");
});

// ---------------------------------------------------------------------------------------------
// @kubernetes/client-node

async function clients(kube: FakeKube) {
  const k8s = await import("../../lib/deps/kube.ts");
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kube.kubeconfigPath);
  return { k8s, kc, core: kc.makeApiClient(k8s.CoreV1Api) };
}

Deno.test("client-node lists services across and within namespaces with a list resourceVersion", async () => {
  await using kube = await startFakeKube();
  kube.upsert({ apiVersion: "v1", kind: "Service", metadata: { name: "a", namespace: "default" } });
  kube.upsert({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "b", namespace: "mesh-system" },
  });
  const { core } = await clients(kube);
  const all = await core.listServiceForAllNamespaces();
  assert.deepEqual(all.items.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`), [
    "default/a",
    "mesh-system/b",
  ]);
  assert.equal(all.metadata?.resourceVersion, String(kube.resourceVersion));
  const one = await core.listNamespacedService({ namespace: "mesh-system" });
  assert.deepEqual(one.items.map((s) => s.metadata?.name), ["b"]);
  const byName = await core.listNamespacedService({
    namespace: "default",
    fieldSelector: "metadata.name=zzz",
  });
  assert.deepEqual(byName.items, []);
});

Deno.test("client-node create of an existing object fails with ApiException code 409 AlreadyExists", async () => {
  await using kube = await startFakeKube();
  const { k8s, core } = await clients(kube);
  const body = { metadata: { name: "cfg" }, data: { a: "1" } };
  const made = await core.createNamespacedConfigMap({ namespace: "default", body });
  assert.equal(made.metadata?.name, "cfg");
  await assert.rejects(
    core.createNamespacedConfigMap({ namespace: "default", body }),
    (e: unknown) => {
      assert.ok(e instanceof k8s.ApiException);
      assert.equal(e.code, 409);
      const status = JSON.parse(e.body as string);
      assert.deepEqual(status, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: 'configmaps "cfg" already exists',
        reason: "AlreadyExists",
        details: { name: "cfg", kind: "configmaps" },
        code: 409,
      });
      return true;
    },
  );
});

type WatchEvent = { type: string; object: KubeObject };

async function watchEvents(kube: FakeKube, path: string, query: Record<string, string>) {
  const { k8s, kc } = await clients(kube);
  const events: WatchEvent[] = [];
  const ended = Promise.withResolvers<unknown>();
  const controller = await new k8s.Watch(kc).watch(
    path,
    query,
    (type: string, object: KubeObject) => events.push({ type, object }),
    (err: unknown) => ended.resolve(err),
  );
  return { events, ended: ended.promise, stop: () => controller.abort() };
}

Deno.test("client-node Watch from a resourceVersion replays and streams ADDED, MODIFIED, DELETED in order", async () => {
  await using kube = await startFakeKube();
  kube.upsert({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "before", namespace: "default" },
  });
  const from = String(kube.resourceVersion);
  // Written before the watch starts: must be replayed from history.
  kube.upsert({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "c", namespace: "default" },
    data: { v: "1" },
  });
  const w = await watchEvents(kube, "/api/v1/namespaces/default/configmaps", {
    resourceVersion: from,
  });
  await waitUntil(() => kube.watchCount === 1, 5000, "the watch to open");
  kube.upsert({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "c", namespace: "default" },
    data: { v: "2" },
  });
  kube.remove("configmaps", "default", "c");
  await waitUntil(() => w.events.length >= 3, 5000, "three watch events");
  w.stop();
  await w.ended;
  assert.deepEqual(
    w.events.map((e) => [e.type, e.object.metadata.name, (e.object.data as { v?: string })?.v]),
    [
      ["ADDED", "c", "1"],
      ["MODIFIED", "c", "2"],
      ["DELETED", "c", "2"],
    ],
  );
  const rvs = w.events.map((e) => Number(e.object.metadata.resourceVersion));
  assert.ok(rvs[0] < rvs[1] && rvs[1] < rvs[2], `resourceVersions must increase: ${rvs}`);
  assert.equal(w.events[0].object.kind, "ConfigMap");
  await waitUntil(() => kube.watchCount === 0, 5000, "the watch to close");
});

Deno.test("client-node Watch from an expired resourceVersion gets an ERROR event with 410 Expired", async () => {
  await using kube = await startFakeKube();
  const old = String(kube.resourceVersion);
  kube.upsert({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "c", namespace: "default" },
  });
  kube.expireHistory();
  const w = await watchEvents(kube, "/api/v1/namespaces/default/configmaps", {
    resourceVersion: old,
  });
  await w.ended;
  assert.equal(w.events.length, 1);
  assert.equal(w.events[0].type, "ERROR");
  const status = w.events[0].object as unknown as Record<string, Json>;
  assert.equal(status.kind, "Status");
  assert.equal(status.code, 410);
  assert.equal(status.reason, "Expired");
  assert.match(String(status.message), /^too old resource version: \d+ \(\d+\)$/);
});

Deno.test("errorWatches() ends the open watches of one resource with an ERROR event carrying the Status; endWatches() without an event", async () => {
  await using kube = await startFakeKube();
  const w = await watchEvents(kube, "/api/v1/namespaces/default/configmaps", {});
  const other = await watchEvents(kube, "/api/v1/namespaces/default/services", {});
  await waitUntil(() => kube.watchCount === 2, 5000, "both watches open");
  assert.equal(kube.errorWatches("configmaps", "etcdserver: leader changed"), 1);
  await w.ended;
  assert.equal(w.events.length, 1);
  assert.equal(w.events[0].type, "ERROR");
  const status = w.events[0].object as unknown as Record<string, Json>;
  assert.deepEqual(
    [status.kind, status.code, status.reason, status.message],
    ["Status", 500, "InternalError", "etcdserver: leader changed"],
  );
  assert.equal(kube.watchCount, 1, "the services watch stays");
  assert.equal(kube.errorWatches("configmaps", "again"), 0);
  assert.equal(kube.endWatches("services"), 1);
  assert.equal(await other.ended, null, "ended without an error");
  assert.deepEqual(other.events, []);
  assert.throws(() => kube.errorWatches("nothings", "x"), /nothings/);
  other.stop();
});

// ---------------------------------------------------------------------------------------------
// REST details

Deno.test("the fake answers Status bodies like the real API for 404, 409, 422, 405 and a missing namespace", async () => {
  await using kube = await startFakeKube();
  const notFound = await api(kube, "GET", "/api/v1/namespaces/default/services/nope");
  assert.equal(notFound.status, 404);
  assert.deepEqual(notFound.body, {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: 'services "nope" not found',
    reason: "NotFound",
    details: { name: "nope", kind: "services" },
    code: 404,
  });
  const noName = await api(kube, "POST", "/api/v1/namespaces/default/configmaps", { metadata: {} });
  assert.equal(noName.status, 422);
  assert.equal(noName.body.reason, "Invalid");
  assert.equal(
    noName.body.message,
    'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required',
  );
  assert.deepEqual(noName.body.details.causes, [{
    reason: "FieldValueRequired",
    message: "Required value: name or generateName is required",
    field: "metadata.name",
  }]);
  const noNs = await api(kube, "POST", "/api/v1/namespaces/ghost/configmaps", {
    metadata: { name: "x" },
  });
  assert.equal(noNs.status, 404);
  assert.equal(noNs.body.message, 'namespaces "ghost" not found');
  const put = await api(kube, "POST", "/api/v1/namespaces/default/configmaps/x", {
    metadata: { name: "x" },
  });
  assert.equal(put.status, 405);
  assert.equal(put.body.reason, "MethodNotAllowed");

  const made = await api(kube, "POST", "/api/v1/namespaces/default/configmaps", {
    metadata: { name: "x" },
  });
  assert.equal(made.status, 201);
  const rv = made.body.metadata.resourceVersion;
  const ok = await api(kube, "PUT", "/api/v1/namespaces/default/configmaps/x", {
    metadata: { name: "x", resourceVersion: rv },
    data: { a: "1" },
  });
  assert.equal(ok.status, 200);
  const stale = await api(kube, "PUT", "/api/v1/namespaces/default/configmaps/x", {
    metadata: { name: "x", resourceVersion: rv },
    data: { a: "2" },
  });
  assert.equal(stale.status, 409);
  assert.equal(stale.body.reason, "Conflict");
  assert.equal(
    stale.body.message,
    'Operation cannot be fulfilled on configmaps "x": the object has been modified; please apply your changes to the latest version and try again',
  );
});

/** Fields of one protobuf message by number: strings/sub-messages as bytes, varints as bigint. */
function protoFields(buf: Uint8Array): Map<number, (Uint8Array | bigint)[]> {
  const out = new Map<number, (Uint8Array | bigint)[]>();
  let i = 0;
  const varint = () => {
    let v = 0n;
    for (let shift = 0n;; shift += 7n) {
      const b = buf[i++];
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    let value: Uint8Array | bigint;
    if ((key & 7) === 0) value = varint();
    else if ((key & 7) === 2) {
      const len = Number(varint());
      value = buf.subarray(i, i + len);
      i += len;
    } else throw new Error(`unexpected wire type ${key & 7}`);
    out.set(key >>> 3, [...(out.get(key >>> 3) ?? []), value]);
  }
  return out;
}

Deno.test("/openapi/v2 answers kubectl's protobuf Accept with a gnostic Document, others with JSON", async () => {
  await using kube = await startFakeKube({ objects: [parseYaml(WIDGET_CRD) as JsonObject] });
  const widgetPath = "/apis/example.mesh.io/v1/namespaces/{namespace}/widgets/{name}";

  const json = await fetch(`${kube.url}/openapi/v2`, { headers: { accept: "application/json" } });
  assert.equal(json.headers.get("content-type"), "application/json");
  const doc = await json.json();
  assert.equal(doc.swagger, "2.0");
  const patch = doc.paths[widgetPath].patch;
  assert.deepEqual(patch["x-kubernetes-group-version-kind"], {
    group: "example.mesh.io",
    version: "v1",
    kind: "Widget",
  });
  assert.ok(patch.parameters.some((p: { name: string }) => p.name === "dryRun"));

  // Field numbers of github.com/google/gnostic openapiv2/OpenAPIv2.proto.
  const pb = await fetch(`${kube.url}/openapi/v2`, {
    headers: { accept: "application/com.github.proto-openapi.spec.v2@v1.0+protobuf" },
  });
  assert.equal(
    pb.headers.get("content-type"),
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
  );
  const dec = new TextDecoder();
  const text = (b: Uint8Array | bigint | undefined) => dec.decode(b as Uint8Array);
  const msg = (b: Uint8Array | bigint | undefined) => protoFields(b as Uint8Array);
  const document = protoFields(new Uint8Array(await pb.arrayBuffer()));
  assert.equal(text(document.get(1)?.[0]), "2.0"); // Document.swagger
  assert.equal(text(msg(document.get(2)?.[0]).get(1)?.[0]), "Kubernetes"); // Info.title
  const pathItems = msg(document.get(8)?.[0]).get(2)!.map(msg); // Paths.path: NamedPathItem
  assert.deepEqual(pathItems.map((p) => text(p.get(1)?.[0])), Object.keys(doc.paths));
  const operation = msg(
    msg(pathItems.find((p) => text(p.get(1)?.[0]) === widgetPath)!.get(2)?.[0])
      .get(8)?.[0],
  ); // PathItem.patch
  assert.equal(text(operation.get(5)?.[0]), patch.operationId);
  const extensions = operation.get(13)!.map(msg); // Operation.vendor_extension: NamedAny
  const gvk = extensions.find((e) => text(e.get(1)?.[0]) === "x-kubernetes-group-version-kind")!;
  assert.deepEqual(parseYaml(text(msg(gvk.get(2)?.[0]).get(2)?.[0])), {
    group: "example.mesh.io",
    version: "v1",
    kind: "Widget",
  }); // Any.yaml
  const queryNames = operation.get(8)!.map((item) => {
    const nonBody = msg(msg(msg(item).get(1)?.[0]).get(2)?.[0]); // ParametersItem → Parameter
    return text(msg(nonBody.get(3)?.[0]).get(4)?.[0]); // QueryParameterSubSchema.name
  });
  assert.deepEqual(queryNames, patch.parameters.map((p: { name: string }) => p.name));

  const refused = await fetch(`${kube.url}/openapi/v2`, { headers: { accept: "text/html" } });
  assert.equal(refused.status, 406);
  assert.equal((await refused.json()).reason, "NotAcceptable");
});

Deno.test("list filters by labelSelector and fieldSelector", async () => {
  await using kube = await startFakeKube();
  for (const [name, app] of [["a", "web"], ["b", "db"], ["c", "web"]]) {
    kube.upsert({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: "default", labels: { app } },
    });
  }
  const names = async (q: string) =>
    (await api(kube, "GET", `/api/v1/pods?${q}`)).body.items.map((p: KubeObject) =>
      p.metadata.name
    );
  assert.deepEqual(await names("labelSelector=app%3Dweb"), ["a", "c"]);
  assert.deepEqual(await names("labelSelector=app%20in%20(db)"), ["b"]);
  assert.deepEqual(await names("labelSelector=app!%3Dweb"), ["b"]);
  assert.deepEqual(await names("fieldSelector=metadata.name%3Dc"), ["c"]);
  assert.deepEqual(await names("fieldSelector=metadata.namespace%3Dother"), []);
  const bad = await api(kube, "GET", "/api/v1/pods?labelSelector=a%20in%20b");
  assert.equal(bad.status, 400);
});

Deno.test("patch applies merge, JSON and strategic merge patches and bumps resourceVersion", async () => {
  await using kube = await startFakeKube();
  kube.upsert({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "c", namespace: "default" },
    data: { a: "1", b: "2" },
  });
  const path = "/api/v1/namespaces/default/configmaps/c";
  const merge = await api(
    kube,
    "PATCH",
    path,
    { data: { a: null, c: "3" } },
    "application/merge-patch+json",
  );
  assert.deepEqual(merge.body.data, { b: "2", c: "3" });
  const json = await api(
    kube,
    "PATCH",
    path,
    [{ op: "replace", path: "/data/b", value: "20" }],
    "application/json-patch+json",
  );
  assert.deepEqual(json.body.data, { b: "20", c: "3" });
  assert.ok(
    Number(json.body.metadata.resourceVersion) > Number(merge.body.metadata.resourceVersion),
  );

  kube.upsert({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p", namespace: "default" },
    spec: { containers: [{ name: "app", image: "a:1" }, { name: "side", image: "s:1" }] },
  });
  const smp = await api(
    kube,
    "PATCH",
    "/api/v1/namespaces/default/pods/p",
    { spec: { containers: [{ name: "side", image: "s:2" }] } },
    "application/strategic-merge-patch+json",
  );
  assert.deepEqual(smp.body.spec.containers, [{ name: "app", image: "a:1" }, {
    name: "side",
    image: "s:2",
  }]);
  const unsupported = await api(kube, "PATCH", path, {}, "text/plain");
  assert.equal(unsupported.status, 415);
});

Deno.test("a watch on one object by fieldSelector gets only its events, bookmarks, and ends at timeoutSeconds", async () => {
  await using kube = await startFakeKube({ bookmarkIntervalMs: 60_000 });
  const rv = kube.resourceVersion;
  kube.upsert({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "mine", namespace: "default" },
  });
  kube.upsert({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "other", namespace: "default" },
  });
  const res = await fetch(
    `${kube.url}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${rv}&fieldSelector=metadata.name%3Dmine&allowWatchBookmarks=true&timeoutSeconds=1`,
  );
  assert.equal(res.status, 200);
  await waitUntil(() => kube.watchCount === 1, 5000, "the watch to open");
  kube.bookmark();
  const lines = (await res.text()).trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((e) => [e.type, e.object.metadata.name]), [
    ["ADDED", "mine"],
    ["BOOKMARK", undefined],
  ]);
  assert.equal(lines[1].object.metadata.resourceVersion, String(kube.resourceVersion));
  assert.equal(kube.watchCount, 0);
});

Deno.test("failNext makes the next matching request fail once with the given Status", async () => {
  await using kube = await startFakeKube();
  kube.failNext({ method: "GET", path: /\/configmaps$/, code: 500, message: "boom" });
  const failed = await api(kube, "GET", "/api/v1/namespaces/default/configmaps");
  assert.equal(failed.status, 500);
  assert.equal(failed.body.reason, "InternalError");
  assert.equal(failed.body.message, "boom");
  const ok = await api(kube, "GET", "/api/v1/namespaces/default/configmaps");
  assert.equal(ok.status, 200);
  assert.deepEqual(kube.requests.map((r) => r.status), [500, 200]);
});

Deno.test("a wrong bearer token gets 401, and requireToken refuses requests without one", async () => {
  await using kube = await startFakeKube({ requireToken: true });
  const wrong = await fetch(`${kube.url}/api/v1/namespaces`, {
    headers: { Authorization: "Bearer nope" },
  });
  assert.equal(wrong.status, 401);
  assert.equal((await wrong.json()).reason, "Unauthorized");
  const none = await fetch(`${kube.url}/api/v1/namespaces`);
  assert.equal(none.status, 401);
  await none.body?.cancel();
  const good = await api(kube, "GET", "/api/v1/namespaces");
  assert.equal(good.status, 200);
});
