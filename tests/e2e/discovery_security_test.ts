/**
 * End-to-end: `mesh-discovery --configDir` given today's security API as Istio users write it
 * (`security.istio.io/v1`): an Envoy sidecar's inbound listener gets the mTLS of a
 * PeerAuthentication, the JWT filter of a RequestAuthentication and the DENY and ALLOW RBAC
 * filters of AuthorizationPolicies, decoded from a real ADS response.
 */

import assert from "node:assert/strict";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { waitUntil } from "../harness/procs.ts";
import { adsClient } from "./_ads_client.ts";
import { http, startDiscovery } from "./discovery_harness.ts";
import { withDir } from "./_meshctl.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const CONFIG = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: echo, namespace: default}
spec:
  hosts: [echo.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 80, name: http, protocol: HTTP}]
  endpoints: [{address: 10.1.0.60, ports: {http: 8080}, labels: {app: echo}}]
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: mesh-system}
spec: {mtls: {mode: STRICT}}
---
apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: echo-jwt, namespace: default}
spec:
  selector: {matchLabels: {app: echo}}
  jwtRules:
  - issuer: https://issuer.example.com
    jwks: '{"keys":[]}'
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-admin, namespace: default}
spec:
  action: DENY
  rules: [{to: [{operation: {paths: ["/admin*"]}}]}]
---
apiVersion: security.istio.io/v1beta1
kind: AuthorizationPolicy
metadata: {name: echo-callers, namespace: default}
spec:
  selector: {matchLabels: {app: echo}}
  rules:
  - from: [{source: {requestPrincipals: ["https://issuer.example.com/*"]}}]
`;

Deno.test("mesh-discovery --configDir serves PeerAuthentication, RequestAuthentication and AuthorizationPolicy to an Envoy sidecar", async () => {
  await withDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/security.yaml`, CONFIG);
    const d = await startDiscovery(["--registries", "Mock", "--configDir", dir]);
    const client = adsClient(d.grpc);
    const sidecar = client.open();
    try {
      await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
      sidecar.send({
        node: {
          id: "sidecar~10.1.0.60~echo-1.default~default.svc.cluster.local",
          user_agent_name: "envoy",
          metadata: {
            fields: { labels: { structValue: { fields: { app: { stringValue: "echo" } } } } },
          },
        },
        type_url: TYPE_URLS.listener,
      });
      const lds = await sidecar.next(TYPE_URLS.listener, 5000);
      const inbound = lds.resources.find((l: Any) => l.name === "10.1.0.60_8080") as Any;
      assert.ok(inbound, `no inbound listener: ${lds.resources.map((l: Any) => l.name)}`);
      assert.equal(inbound.filter_chains.length, 1);
      const chain = inbound.filter_chains[0];
      assert.equal(chain.transport_socket?.typed_config?.require_client_certificate?.value, true);
      const hcm = chain.filters[0].typed_config;
      assert.deepEqual(hcm.http_filters.map((f: Any) => f.name), [
        "envoy.filters.http.jwt_authn",
        "envoy.filters.http.rbac.deny",
        "envoy.filters.http.rbac",
        "envoy.filters.http.router",
      ]);
      const [jwt, deny, allow] = hcm.http_filters.map((f: Any) => f.typed_config);
      assert.equal(jwt.providers["origins-0"].issuer, "https://issuer.example.com");
      assert.equal(deny.rules.action, "DENY");
      assert.deepEqual(Object.keys(deny.rules.policies), [
        "ns[default]-policy[deny-admin]-rule[0]",
      ]);
      assert.deepEqual(Object.keys(allow.rules.policies), [
        "ns[default]-policy[echo-callers]-rule[0]",
      ]);
    } finally {
      await sidecar.close().catch(() => {});
      client.close();
      const status = await d.proc.stop();
      assert.equal(status.code, 0, d.proc.output().slice(-3000));
    }
  });
});
