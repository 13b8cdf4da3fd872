import assert from "node:assert/strict";
import { ConfigError, toConfig } from "./config.ts";
import { POD_ENV, proxyFlags } from "./_test_util.ts";

function problems(f: () => unknown): readonly string[] {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    return e.problems;
  }
  assert.fail("no ConfigError");
}

Deno.test("toConfig() derives id, ip and domain from the pod's environment", () => {
  const c = toConfig(proxyFlags(), undefined, POD_ENV);
  assert.equal(c.role, "sidecar");
  assert.equal(c.id, "web-1.shop");
  assert.equal(c.ip, "10.1.2.3");
  assert.equal(c.domain, "shop.svc.cluster.local");
  assert.equal(c.nodeId, "sidecar~10.1.2.3~web-1.shop~shop.svc.cluster.local");
  assert.ok(Object.isFrozen(c));
});

Deno.test("toConfig() prefers the flags and builds the node id of each role", () => {
  const c = toConfig(
    proxyFlags({ id: "gw", ip: "10.9.9.9", domain: "mesh-system.svc.cluster.local" }),
    "ingress",
    {},
  );
  assert.equal(c.nodeId, "ingress~10.9.9.9~gw~mesh-system.svc.cluster.local");
  assert.equal(toConfig(proxyFlags(), "router", POD_ENV).nodeId.split("~")[0], "router");
});

Deno.test("toConfig() names every value it cannot derive", () => {
  assert.deepEqual(problems(() => toConfig(proxyFlags(), "sidecar", {})), [
    "--ip is empty and INSTANCE_IP is not set: cannot tell the proxy's IP",
    "--id is empty and POD_NAME or POD_NAMESPACE is not set: cannot derive the proxy ID",
    "--domain is empty and POD_NAMESPACE is not set: cannot derive the domain",
  ]);
});

Deno.test("toConfig() outside the orchestrator uses the IP as id and no domain", () => {
  const c = toConfig(proxyFlags({ serviceregistry: "Mock" }), "sidecar", {
    INSTANCE_IP: "10.0.0.7",
  });
  assert.equal(c.nodeId, "sidecar~10.0.0.7~10.0.0.7~");
});

Deno.test("toConfig() rejects bad roles, policies, addresses and levels", () => {
  const p = problems(() =>
    toConfig(
      proxyFlags({
        controlPlaneAuthPolicy: "TLS",
        discoveryAddress: "nohost",
        statsdUdpAddress: "1.2.3.4",
        proxyLogLevel: "warning",
        ip: "not-an-ip",
        concurrency: -1,
        drainDuration: 5000,
      }),
      "gateway",
      POD_ENV,
    )
  );
  assert.deepEqual(p, [
    'Invalid role "gateway": want sidecar, router or ingress',
    'Invalid value "not-an-ip" for --ip: not an IP address',
    'Invalid value "TLS" for --controlPlaneAuthPolicy: want NONE or MUTUAL_TLS',
    'Invalid value "warning" for --proxyLogLevel: want trace, debug, info, warn, err, critical, off',
    'Invalid value "nohost" for --discoveryAddress: want <host>:<port>',
    'Invalid value "1.2.3.4" for --statsdUdpAddress: want <host>:<port>',
    "Invalid value for --concurrency: must not be negative, got -1",
    "--drainDuration must not be longer than --parentShutdownDuration",
  ]);
});

Deno.test("toConfig() derives the ADS address and discovery's identity like Istio", () => {
  const plain = toConfig(
    proxyFlags({ discoveryAddress: "mesh-discovery.mesh-system:15007" }),
    "sidecar",
    POD_ENV,
  );
  assert.deepEqual(plain.adsTarget, { host: "mesh-discovery.mesh-system", port: 15010 });
  assert.equal(
    plain.discoverySan,
    "spiffe://cluster.local/ns/mesh-system/sa/mesh-discovery-service-account",
  );
  const mtls = toConfig(
    proxyFlags({ discoveryAddress: "mesh-discovery:15007", controlPlaneAuthPolicy: "MUTUAL_TLS" }),
    "sidecar",
    POD_ENV,
  );
  assert.deepEqual(mtls.adsTarget, { host: "mesh-discovery", port: 15012 });
  assert.equal(
    mtls.discoverySan,
    "spiffe://cluster.local/ns/shop/sa/mesh-discovery-service-account",
  );
  assert.equal(mtls.sds, true);
  const direct = toConfig(proxyFlags({ discoveryAddress: "127.0.0.1:40123" }), "sidecar", POD_ENV);
  assert.deepEqual(direct.adsTarget, { host: "127.0.0.1", port: 40123 });
});

Deno.test("toConfig() copies MESH_META_* into the node metadata and reads the CA settings", () => {
  const c = toConfig(proxyFlags(), "sidecar", {
    ...POD_ENV,
    MESH_META_INTERCEPTION_MODE: "REDIRECT",
    MESH_META_APP: "web",
    MESH_META_: "ignored",
    MESH_CA_ADDRESS: "mesh-ca:8060",
    MESH_CA_TOKEN_FILE: "/var/run/token",
    MESH_CERT_DIR: "/tmp/certs",
  });
  assert.deepEqual(c.metadata, { APP: "web", INTERCEPTION_MODE: "REDIRECT" });
  assert.deepEqual(c.ca, {
    address: "mesh-ca:8060",
    rootCertFile: "/tmp/certs/root-cert.pem",
    tokenFile: "/var/run/token",
    serverName: "mesh-ca",
    ttlSeconds: 0,
  });
  assert.deepEqual(
    problems(() => toConfig(proxyFlags(), "sidecar", { ...POD_ENV, MESH_CA_ADDRESS: "x" })),
    ['Invalid value "x" for MESH_CA_ADDRESS: want <host>:<port>'],
  );
});

Deno.test("toConfig() takes --proxyless for sidecars only and turns SDS off with it", () => {
  const c = toConfig(
    proxyFlags({ proxyless: true, controlPlaneAuthPolicy: "MUTUAL_TLS" }),
    "sidecar",
    POD_ENV,
  );
  assert.equal(c.proxyless, true);
  assert.equal(c.sds, false);
  assert.equal(toConfig(proxyFlags(), "sidecar", POD_ENV).proxyless, false);
  assert.deepEqual(problems(() => toConfig(proxyFlags({ proxyless: true }), "ingress", POD_ENV)), [
    "--proxyless works with role sidecar only, not ingress",
  ]);
  assert.deepEqual(
    problems(() =>
      toConfig(proxyFlags({ proxyless: true, templateFile: "/t.yaml" }), "sidecar", POD_ENV)
    ),
    ["--templateFile configures a proxy: it cannot be used with --proxyless"],
  );
});

Deno.test("toConfig() reads MESH_CERT_REFRESH_INTERVAL as a duration and names it when bad", () => {
  assert.equal(toConfig(proxyFlags(), undefined, POD_ENV).certRefreshMs, 10_000);
  const env = { ...POD_ENV, MESH_CERT_REFRESH_INTERVAL: "1m30s" };
  assert.equal(toConfig(proxyFlags(), undefined, env).certRefreshMs, 90_000);
  const [p] = problems(() =>
    toConfig(proxyFlags(), undefined, { ...POD_ENV, MESH_CERT_REFRESH_INTERVAL: "soon" })
  );
  assert.match(p, /^Invalid value "soon" for MESH_CERT_REFRESH_INTERVAL: /);
  assert.deepEqual(
    problems(() =>
      toConfig(proxyFlags(), undefined, { ...POD_ENV, MESH_CERT_REFRESH_INTERVAL: "0s" })
    ),
    ['Invalid value "0s" for MESH_CERT_REFRESH_INTERVAL: must be positive'],
  );
});
