/**
 * End-to-end: `mesh-discovery discovery` writes header matchers in the form the requesting client
 * reads, told by the node's user agent — over REST xDS (`POST /v3/discovery:routes`, proto3 JSON
 * names in either spelling) and over ADS (the first request's `Node`).
 */

import assert from "node:assert/strict";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { waitUntil } from "../harness/procs.ts";
import { adsClient } from "./_ads_client.ts";
import { http, post, startDiscovery } from "./discovery_harness.ts";

const NODE = "sidecar~127.0.1.1~client.default~default.svc.cluster.local";
const ROUTE = "echo.test.example:7070";

const CONFIG = `apiVersion: networking.istio.io/v1alpha3
kind: ServiceEntry
metadata: {name: echo, namespace: default}
spec:
  hosts: [echo.test.example]
  ports: [{number: 7070, name: grpc, protocol: GRPC}]
  location: MESH_INTERNAL
  resolution: STATIC
  endpoints: [{address: 127.0.0.1}]
---
apiVersion: networking.istio.io/v1alpha3
kind: VirtualService
metadata: {name: echo, namespace: default}
spec:
  hosts: [echo.test.example]
  http:
    - match: [{headers: {x-canary: {exact: "yes"}}}]
      route: [{destination: {host: echo.test.example}}]
`;

// deno-lint-ignore no-explicit-any
type Any = any;

const headersOf = (rc: Any) => rc.virtual_hosts[0].routes[0].match.headers;

Deno.test("mesh-discovery writes string_match for Envoy 1.20+ and exact_match for gRPC and unknown clients, over REST and ADS", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-disc-forms-" });
  await Deno.writeTextFile(`${dir}/echo.yaml`, CONFIG);
  const d = await startDiscovery(["--registries", "Mock", "--configDir", dir]);
  try {
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
    const rest = async (node: Record<string, unknown>) => {
      const r = await post(`http://${d.http}/v3/discovery:routes`, {
        node: { id: NODE, ...node },
        resource_names: [ROUTE],
      });
      assert.equal(r.status, 200, r.body);
      return headersOf(JSON.parse(r.body).resources[0]);
    };
    const envoy = { major_number: 1, minor_number: 27, patch: 0 };
    assert.deepEqual(
      await rest({ user_agent_name: "envoy", user_agent_build_version: { version: envoy } }),
      [{ name: "x-canary", string_match: { exact: "yes" } }],
    );
    assert.deepEqual(
      await rest({
        userAgentName: "envoy",
        userAgentBuildVersion: { version: { majorNumber: 1, minorNumber: 19 } },
      }),
      [{ name: "x-canary", exact_match: "yes" }],
    );
    assert.deepEqual(
      await rest({
        userAgentName: "gRPC C-core linux Python",
        userAgentVersion: "C-core 29.0.0 Python 1.51.1",
      }),
      [{ name: "x-canary", exact_match: "yes" }],
    );
    assert.deepEqual(await rest({}), [{ name: "x-canary", exact_match: "yes" }]);

    // ADS: an Envoy and a gRPC client asking for the same route.
    const client = adsClient(d.grpc);
    const seen: Any[] = [];
    try {
      for (const user_agent_name of ["envoy", "gRPC Go"]) {
        const stream = client.open();
        try {
          const node = user_agent_name === "envoy"
            ? { id: NODE, user_agent_name, user_agent_build_version: { version: envoy } }
            : { id: NODE, user_agent_name, user_agent_version: "1.60.1" };
          stream.send({ node, type_url: TYPE_URLS.route, resource_names: [ROUTE] });
          const res = await stream.next(TYPE_URLS.route);
          seen.push(headersOf(res.resources[0]));
        } finally {
          await stream.close();
        }
      }
    } finally {
      client.close();
    }
    // decoded with proto-loader: the oneof says which field is set
    assert.deepEqual(
      seen.map((hs) => hs.map((h: Any) => [h.header_match_specifier, h[h.header_match_specifier]])),
      [[["string_match", { exact: "yes", match_pattern: "exact" }]], [["exact_match", "yes"]]],
    );
  } finally {
    await d.proc.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
