import assert from "node:assert/strict";
import { schemaByKind } from "./mod.ts";
import { checkSidecarEgressHost } from "./workload_specs.ts";

const validate = (kind: string, spec: unknown, av = "networking.istio.io/v1") =>
  schemaByKind(av, kind)!.validate(spec).map((i) => `${i.path}: ${i.reason}`);

Deno.test("Sidecar validation accepts Istio's documented examples", () => {
  assert.deepEqual(
    validate("Sidecar", {
      egress: [{ hosts: ["./*", "istio-system/*", "~/*", "*/*.example.com", "*/api.example.com"] }],
      outboundTrafficPolicy: { mode: "REGISTRY_ONLY" },
    }),
    [],
  );
  assert.deepEqual(
    validate("Sidecar", {
      workloadSelector: { labels: { app: "ratings" } },
      ingress: [{
        port: { number: 9080, protocol: "HTTP", name: "somename" },
        defaultEndpoint: "unix:///var/run/someuds.sock",
      }, { port: { number: 9081, protocol: "HTTP" }, defaultEndpoint: "127.0.0.1:8080" }],
      egress: [
        { port: { number: 9080, protocol: "HTTP", name: "egresshttp" }, hosts: ["prod-us1/*"] },
        { hosts: ["istio-system/*"] },
      ],
    }),
    [],
  );
});

Deno.test("Sidecar validation names a bad egress host, a misplaced catch-all listener and egressProxy without ALLOW_ANY", () => {
  assert.deepEqual(validate("Sidecar", { egress: [{ hosts: ["reviews"] }] }), [
    'spec.egress[0].hosts[0]: invalid egress host "reviews": want <namespace>/<dnsName> ("./*", "*/*", "mesh-system/*", "~/*")',
  ]);
  assert.deepEqual(
    validate("Sidecar", {
      egress: [{ hosts: ["*/*"] }, { port: { number: 80 }, hosts: ["./*"] }],
    }),
    ["spec.egress: the egress listener without a port must be the last one"],
  );
  assert.deepEqual(
    validate("Sidecar", {
      outboundTrafficPolicy: { mode: "REGISTRY_ONLY", egressProxy: { host: "egress" } },
    }),
    ["spec.outboundTrafficPolicy.egressProxy: needs mode ALLOW_ANY"],
  );
  assert.deepEqual(validate("Sidecar", { egress: [{}] }), ["spec.egress[0].hosts: is required"]);
  assert.match(
    validate("Sidecar", { ingress: [{ port: { number: 80 }, defaultEndpoint: "10.0.0.1:80" }] })
      .join(),
    /invalid defaultEndpoint "10.0.0.1:80"/,
  );
});

Deno.test("checkSidecarEgressHost() checks the namespace and the DNS name", () => {
  assert.equal(checkSidecarEgressHost("./*"), undefined);
  assert.equal(checkSidecarEgressHost("~/*"), undefined);
  assert.match(checkSidecarEgressHost("Bad_NS/*")!, /namespace "Bad_NS"/);
  assert.match(checkSidecarEgressHost("./a*b")!, /"\*" is allowed only/);
});

Deno.test("WorkloadEntry validation accepts a VM and requires an address without a network", () => {
  assert.deepEqual(
    validate("WorkloadEntry", {
      address: "2.2.2.2",
      ports: { http: 8080 },
      labels: { app: "details" },
      serviceAccount: "details",
      locality: "us-east/zone-a",
      weight: 2,
      network: "vm-net",
    }),
    [],
  );
  assert.deepEqual(validate("WorkloadEntry", { address: "vm1.example.com" }), []);
  assert.deepEqual(validate("WorkloadEntry", { network: "n1" }), []);
  assert.deepEqual(validate("WorkloadEntry", { labels: { app: "x" } }), [
    "spec.address: is required (unless a network is given)",
  ]);
  assert.match(validate("WorkloadEntry", { address: "a b" }).join(), /invalid address "a b"/);
  assert.match(
    validate("WorkloadEntry", { address: "1.1.1.1", ports: { HTTP: 80 } }).join(),
    /invalid port name "HTTP"/,
  );
});

Deno.test("WorkloadGroup validation takes a template without address and one probe kind", () => {
  assert.deepEqual(
    validate("WorkloadGroup", {
      metadata: { labels: { app: "reviews" } },
      template: { ports: { http: 9080 }, serviceAccount: "default" },
      probe: { initialDelaySeconds: 5, httpGet: { path: "/ready", port: 8080 } },
    }),
    [],
  );
  assert.deepEqual(validate("WorkloadGroup", {}), ["spec.template: is required"]);
  assert.deepEqual(validate("WorkloadGroup", { template: { address: "1.2.3.4" } }), [
    "spec.template.address: must be empty (each registered workload has its own)",
  ]);
});

Deno.test("RbacConfig validation takes Istio 1.0's modes and needs the list its mode names", () => {
  for (const av of ["rbac.istio.io/v1alpha1", "config.istio.io/v1alpha2"]) {
    assert.deepEqual(validate("RbacConfig", { mode: "ON" }, av), []);
    assert.deepEqual(
      validate("ClusterRbacConfig", {
        mode: "ON_WITH_INCLUSION",
        inclusion: { namespaces: ["default"] },
      }, av),
      [],
    );
    assert.deepEqual(validate("RbacConfig", { mode: "ON_WITH_EXCLUSION" }, av), [
      "spec.exclusion: is required when mode is ON_WITH_EXCLUSION",
    ]);
  }
});

Deno.test("ServiceEntry validation takes workloadSelector.labels instead of endpoints", () => {
  const se = (extra: Record<string, unknown>) =>
    validate("ServiceEntry", {
      hosts: ["details.bookinfo.com"],
      ports: [{ number: 80, name: "http", protocol: "HTTP" }],
      resolution: "STATIC",
      location: "MESH_INTERNAL",
      ...extra,
    });
  assert.deepEqual(se({ workloadSelector: { labels: { app: "details-legacy" } } }), []);
  assert.deepEqual(
    se({ workloadSelector: { labels: { app: "x" } }, endpoints: [{ address: "1.1.1.1" }] }),
    ["spec.workloadSelector: only one of workloadSelector and endpoints may be given"],
  );
});
