/**
 * `meshctl experimental rbac can` on the fs platform (roles created with `meshctl create`), and
 * `meshctl experimental metrics` against a fake Prometheus query API (the real one is exercised
 * in tests/e2e/policy_test.ts).
 */

import assert from "node:assert/strict";
import { meshctl } from "./_meshctl.ts";

const ROLES = `apiVersion: config.mesh.io/v1alpha2
kind: ServiceRole
metadata: {name: reader, namespace: shop}
spec:
  rules:
  - services: ["products.*"]
    methods: ["GET", "HEAD"]
    paths: ["/items*"]
  - services: ["ratings"]
    methods: ["*"]
    constraints: [{key: version, values: ["v2"]}]
---
apiVersion: config.mesh.io/v1alpha2
kind: ServiceRoleBinding
metadata: {name: readers, namespace: shop}
spec:
  subjects: [{user: alice}, {group: staff}, {properties: {team: web}}]
  roleRef: {kind: ServiceRole, name: reader}
`;

Deno.test("meshctl experimental rbac can prints allow or deny from the namespace's roles (-p fs)", async () => {
  const dir = await Deno.makeTempDir();
  const fs = ["-p", "fs", "--configDir", dir];
  try {
    const c = await meshctl(["create", ...fs], { stdin: ROLES });
    assert.equal(c.code, 0, c.stderr);
    const can = async (...args: string[]) => {
      const r = await meshctl(["experimental", "rbac", "can", ...args, "-n", "shop", ...fs]);
      assert.equal(r.code, 0, r.stderr);
      return r.stdout;
    };
    assert.equal(await can("GET", "products.shop", "/items/1", "-u", "alice"), "allow\n");
    assert.equal(await can("POST", "products.shop", "/items/1", "-u", "alice"), "deny\n");
    assert.equal(await can("GET", "products.shop", "/admin", "-u", "alice"), "deny\n");
    assert.equal(await can("GET", "products.shop", "/items", "-g", "staff"), "allow\n");
    assert.equal(await can("GET", "products.shop", "/items", "-u", "bob"), "deny\n");
    assert.equal(await can("GET", "products.shop", "/items", "-s", "team=web,x=y"), "allow\n");
    assert.equal(await can("PUT", "ratings", "/", "-u", "alice", "-a", "version=v2"), "allow\n");
    assert.equal(await can("PUT", "ratings", "/", "-u", "alice", "-a", "version=v1"), "deny\n");
    // Another namespace has no roles.
    const other = await meshctl([
      "experimental",
      "rbac",
      "can",
      "GET",
      "products.shop",
      "/items",
      "-u",
      "alice",
      ...fs,
    ]);
    assert.equal(other.stdout, "deny\n");
    const bad = await meshctl([
      "experimental",
      "rbac",
      "can",
      "GET",
      "s",
      "/",
      "-a",
      "oops",
      ...fs,
    ]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^Error: Invalid action property "oops": want name=value\n/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("meshctl experimental metrics prints the table of §5.9 from Prometheus answers", async () => {
  const seen: string[] = [];
  const values: Record<string, string> = {
    "sum(rate(mesh_request_count{": "12.5",
    'response_code!="200"': "0.25",
    "histogram_quantile(0.500000": "0.0123",
    "histogram_quantile(0.900000": "0.25",
    "histogram_quantile(0.990000": "NaN",
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const q = new URL(req.url).searchParams.get("query") ?? "";
    seen.push(q);
    if (!q.includes('destination_service=~"ratings.*"')) {
      return Response.json({ status: "success", data: { resultType: "vector", result: [] } });
    }
    const key = Object.keys(values).reverse().find((k) => q.includes(k))!;
    return Response.json({
      status: "success",
      data: { resultType: "vector", result: [{ metric: {}, value: [0, values[key]] }] },
    });
  });
  try {
    const base = `http://127.0.0.1:${server.addr.port}`;
    const r = await meshctl([
      "experimental",
      "metrics",
      "ratings",
      "reviews.default",
      "--prometheus",
      base,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      "          SERVICE    TOTAL RPS    ERROR RPS  P50 LATENCY  P90 LATENCY  P99 LATENCY\n" +
        "          ratings       12.500        0.250         12ms        250ms           0s\n" +
        "  reviews.default        0.000        0.000           0s           0s           0s\n",
    );
    assert.ok(seen.includes('sum(rate(mesh_request_count{destination_service=~"ratings.*"}[1m]))'));
    assert.ok(
      seen.includes(
        'histogram_quantile(0.990000, sum(rate(mesh_request_duration_bucket{destination_service=~"ratings.*"}[1m])) by (le))',
      ),
    );
    const bad = await meshctl([
      "experimental",
      "metrics",
      "x",
      "--prometheus",
      "http://127.0.0.1:1",
    ]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^Error: could not build metrics for service 'x': /);
  } finally {
    await server.shutdown();
  }
});
