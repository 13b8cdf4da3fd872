/**
 * End-to-end: `mesh-discovery discovery --registries Orchestrator --orchconfig <kubeconfig>`
 * against the fake API server (mesh CRDs registered; config from the CRD objects): services,
 * endpoints and pods reach /debug/registryz and EDS, a VirtualService object changes RDS, an
 * endpoint change pushes EDS, an Ingress of the mesh class gives a router its gateway listener,
 * and a second fake cluster named in `--clusterRegistriesConfigMap` adds its endpoints.
 */

import assert from "node:assert/strict";
import { crdManifests } from "../../lib/model/mod.ts";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { type FakeKube, type JsonObject, startFakeKube } from "../harness/fake_kube.ts";
import { waitUntil } from "../harness/procs.ts";
import { adsClient } from "./_ads_client.ts";
import { http, startDiscovery } from "./discovery_harness.ts";

const HELLO = "hello.default.svc.cluster.local";
const HELLO_80 = `outbound|80||${HELLO}`;

const service = (name: string, ip: string): JsonObject => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name, namespace: "default" },
  spec: { clusterIP: ip, selector: { app: name }, ports: [{ name: "http", port: 80 }] },
});
const pod = (name: string, app: string, ip: string): JsonObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: "default", labels: { app, version: "v1" } },
  spec: { serviceAccountName: app, containers: [{ name: "app", image: "app" }] },
  status: { podIP: ip },
});
const endpoints = (name: string, pods: [string, string][]): JsonObject => ({
  apiVersion: "v1",
  kind: "Endpoints",
  metadata: { name, namespace: "default" },
  subsets: [{
    addresses: pods.map(([podName, ip]) => ({
      ip,
      targetRef: { kind: "Pod", name: podName, namespace: "default" },
    })),
    ports: [{ name: "http", port: 8080 }],
  }],
});

/** Addresses of the lb endpoints of one ClusterLoadAssignment, sorted. */
// deno-lint-ignore no-explicit-any
function edsAddresses(cla: any): string[] {
  // deno-lint-ignore no-explicit-any
  return (cla?.endpoints ?? []).flatMap((l: any) =>
    // deno-lint-ignore no-explicit-any
    (l.lb_endpoints ?? []).map((e: any) =>
      `${e.endpoint.address.socket_address.address}:${e.endpoint.address.socket_address.port_value}`
    )
  ).sort();
}

async function kubeFetch(kube: FakeKube, method: string, path: string, body: unknown) {
  const res = await fetch(`${kube.url}${path}`, {
    method,
    headers: { ...kube.authHeaders, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`);
}

Deno.test("mesh-discovery with the Orchestrator registry serves what the API server holds and follows its changes", async () => {
  await using kube = await startFakeKube({ objects: crdManifests() as JsonObject[] });
  kube.upsert(service("hello", "10.96.0.10"));
  kube.upsert(pod("hello-1", "hello", "10.1.0.1"));
  kube.upsert(endpoints("hello", [["hello-1", "10.1.0.1"]]));
  const d = await startDiscovery([
    "--registries",
    "Orchestrator",
    "--orchconfig",
    kube.kubeconfigPath,
  ]);
  const client = adsClient(d.grpc);
  const sidecar = client.open();
  const router = client.open();
  try {
    await waitUntil(
      async () => (await http(`http://${d.http}/ready`)).status === 200,
      10_000,
      "ready",
    );

    // The service is in the registry dump, with the pod's service account.
    const reg = JSON.parse((await http(`http://${d.monitoring}/debug/registryz`)).body);
    const hello = reg.find((s: { hostname?: string }) => s.hostname === HELLO);
    assert.ok(hello, JSON.stringify(reg));
    assert.equal(hello.address, "10.96.0.10");
    assert.equal(hello.registry, "Orchestrator");
    assert.deepEqual(hello.serviceAccounts, ["spiffe://cluster.local/ns/default/sa/hello"]);

    // EDS over ADS: the endpoint of the pod.
    sidecar.send({
      node: { id: "sidecar~10.1.0.9~client.default~default.svc.cluster.local" },
      type_url: TYPE_URLS.endpoint,
      resource_names: [HELLO_80],
    });
    const eds = await sidecar.next(TYPE_URLS.endpoint);
    assert.deepEqual(edsAddresses(eds.resources[0]), ["10.1.0.1:8080"]);
    sidecar.send({
      type_url: TYPE_URLS.endpoint,
      resource_names: [HELLO_80],
      version_info: eds.version_info,
      response_nonce: eds.nonce,
    });

    // RDS "80": the default route; then a VirtualService created as a CRD object sets a timeout.
    sidecar.send({ type_url: TYPE_URLS.route, resource_names: ["80"] });
    const rds = await sidecar.next(TYPE_URLS.route);
    const vhost = (r: typeof rds) =>
      r.resources[0].virtual_hosts.find((v: { name: string }) => v.name === `${HELLO}:80`);
    assert.ok(vhost(rds), "no hello vhost");
    assert.deepEqual(vhost(rds).routes[0].route.timeout, { seconds: "0" });
    sidecar.send({
      type_url: TYPE_URLS.route,
      resource_names: ["80"],
      version_info: rds.version_info,
      response_nonce: rds.nonce,
    });
    await kubeFetch(
      kube,
      "POST",
      "/apis/networking.mesh.io/v1alpha3/namespaces/default/virtualservices",
      {
        apiVersion: "networking.mesh.io/v1alpha3",
        kind: "VirtualService",
        metadata: { name: "hello", namespace: "default" },
        spec: {
          hosts: ["hello"],
          http: [{ route: [{ destination: { host: HELLO } }], timeout: "7s" }],
        },
      },
    );
    const rds2 = await sidecar.next(TYPE_URLS.route, 5000);
    assert.deepEqual(vhost(rds2).routes[0].route.timeout, { seconds: "7" });
    sidecar.send({
      type_url: TYPE_URLS.route,
      resource_names: ["80"],
      version_info: rds2.version_info,
      response_nonce: rds2.nonce,
    });

    // A second pod behind the service: EDS is pushed with both endpoints.
    kube.upsert(pod("hello-2", "hello", "10.1.0.2"));
    kube.upsert(endpoints("hello", [["hello-1", "10.1.0.1"], ["hello-2", "10.1.0.2"]]));
    const eds2 = await sidecar.next(TYPE_URLS.endpoint, 5000);
    assert.deepEqual(edsAddresses(eds2.resources[0]), ["10.1.0.1:8080", "10.1.0.2:8080"]);

    // An Ingress of the mesh class: a router selected by `mesh: ingress` gets port 80 and a
    // route to hello for its host.
    kube.upsert({
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
    });
    // One of another class is ignored (default mode STRICT).
    kube.upsert({
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
      metadata: { name: "other", namespace: "default" },
      spec: {
        ingressClassName: "nginx",
        defaultBackend: { service: { name: "hello", port: { number: 80 } } },
      },
    });
    const routerNode = {
      id: "router~10.1.0.50~gateway-1.mesh-system~mesh-system.svc.cluster.local",
      metadata: {
        fields: {
          labels: { structValue: { fields: { mesh: { stringValue: "ingressgateway" } } } },
        },
      },
      // an Envoy 1.27 gateway: header matchers come as string_match
      user_agent_name: "envoy",
      user_agent_build_version: { version: { major_number: 1, minor_number: 27, patch: 0 } },
    };
    await waitUntil(
      async () => {
        const r = await http(`http://${d.http}/v3/discovery:listeners`, {
          method: "POST",
          body: JSON.stringify({
            node: { id: routerNode.id, metadata: { labels: { mesh: "ingressgateway" } } },
          }),
        });
        return JSON.parse(r.body).resources.length > 0;
      },
      5000,
      "the Ingress to reach discovery",
    );
    router.send({ node: routerNode, type_url: TYPE_URLS.listener });
    const lds = await router.next(TYPE_URLS.listener);
    const l80 = lds.resources.find((l) => l.address?.socket_address?.port_value === 80);
    assert.ok(l80, `no port 80 listener: ${lds.resources.map((l) => l.name).join(",")}`);
    router.send({ type_url: TYPE_URLS.route, resource_names: ["80"] });
    const grds = await router.next(TYPE_URLS.route);
    const hosts = grds.resources[0].virtual_hosts;
    assert.equal(hosts.length, 1, JSON.stringify(hosts));
    const [route] = hosts[0].routes;
    assert.equal(hosts[0].routes.length, 1, "the nginx-class Ingress adds no route");
    assert.equal(route.match.prefix, "/");
    assert.equal(route.route.cluster, HELLO_80);
    const authority = new RegExp(route.match.headers[0].string_match.safe_regex.regex);
    assert.ok(authority.test("web.example.com") && authority.test("web.example.com:80"));
    assert.ok(!authority.test("other.example.com"));
  } finally {
    await sidecar.close().catch(() => {});
    await router.close().catch(() => {});
    client.close();
    const status = await d.proc.stop();
    assert.equal(status.code, 0, d.proc.output().slice(-3000));
  }
});

Deno.test("mesh-discovery adds the endpoints of the remote clusters named in --clusterRegistriesConfigMap", async () => {
  await using local = await startFakeKube({ objects: crdManifests() as JsonObject[] });
  await using remote = await startFakeKube();
  local.upsert(service("hello", "10.96.0.10"));
  local.upsert(pod("hello-1", "hello", "10.1.0.1"));
  local.upsert(endpoints("hello", [["hello-1", "10.1.0.1"]]));
  remote.upsert(service("hello", "10.97.0.10"));
  remote.upsert(pod("hello-r", "hello", "10.2.0.1"));
  remote.upsert(endpoints("hello", [["hello-r", "10.2.0.1"]]));
  local.upsert({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "clusters", namespace: "mesh-system" },
    data: { "remote-1": remote.kubeconfig() },
  });
  const d = await startDiscovery([
    "--registries",
    "Orchestrator",
    "--orchconfig",
    local.kubeconfigPath,
    "--clusterRegistriesConfigMap",
    "clusters",
  ]);
  const client = adsClient(d.grpc);
  const stream = client.open();
  try {
    await waitUntil(
      async () => (await http(`http://${d.http}/ready`)).status === 200,
      10_000,
      "ready",
    );
    stream.send({
      node: { id: "sidecar~10.1.0.9~client.default~default.svc.cluster.local" },
      type_url: TYPE_URLS.endpoint,
      resource_names: [HELLO_80],
    });
    const eds = await stream.next(TYPE_URLS.endpoint);
    assert.deepEqual(edsAddresses(eds.resources[0]), ["10.1.0.1:8080", "10.2.0.1:8080"]);
    // The local cluster describes the service.
    const reg = JSON.parse((await http(`http://${d.http}/debug/registryz`)).body);
    assert.equal(
      reg.find((s: { hostname?: string }) => s.hostname === HELLO).address,
      "10.96.0.10",
    );
    stream.send({
      type_url: TYPE_URLS.endpoint,
      resource_names: [HELLO_80],
      version_info: eds.version_info,
      response_nonce: eds.nonce,
    });
    // A new remote endpoint is pushed.
    remote.upsert(pod("hello-r2", "hello", "10.2.0.2"));
    remote.upsert(endpoints("hello", [["hello-r", "10.2.0.1"], ["hello-r2", "10.2.0.2"]]));
    const eds2 = await stream.next(TYPE_URLS.endpoint, 5000);
    assert.deepEqual(edsAddresses(eds2.resources[0]), [
      "10.1.0.1:8080",
      "10.2.0.1:8080",
      "10.2.0.2:8080",
    ]);
  } finally {
    await stream.close().catch(() => {});
    client.close();
    const status = await d.proc.stop();
    assert.equal(status.code, 0, d.proc.output().slice(-3000));
  }
});
