/**
 * `meshctl experimental metrics` without `--prometheus`: Prometheus is found through the
 * orchestrator (the fake API server) as the running app=prometheus pod of the mesh namespace,
 * and queried at its pod IP and container port (a fake Prometheus query API on 127.0.0.1).
 */

import assert from "node:assert/strict";
import { startFakeKube } from "../harness/fake_kube.ts";
import { meshctl } from "./_meshctl.ts";

function fakePrometheus() {
  const seen: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const u = new URL(req.url);
    if (u.pathname !== "/api/v1/query") return new Response("not found", { status: 404 });
    const q = u.searchParams.get("query") ?? "";
    seen.push(q);
    const v = q.startsWith("sum(rate(mesh_request_count{") && !q.includes("response_code")
      ? "4"
      : "0";
    return Response.json({
      status: "success",
      data: { resultType: "vector", result: [{ metric: {}, value: [0, v] }] },
    });
  });
  return { seen, port: server.addr.port, server };
}

const promPod = (ns: string, name: string, port: number, phase = "Running") => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: ns, labels: { app: "prometheus" } },
  spec: { containers: [{ name: "prometheus", image: "prom", ports: [{ containerPort: port }] }] },
  status: { phase, podIP: "127.0.0.1" },
});

Deno.test("meshctl experimental metrics finds Prometheus as the app=prometheus pod of the mesh namespace", async () => {
  await using kube = await startFakeKube();
  const prom = fakePrometheus();
  const c = ["-c", kube.kubeconfigPath];
  try {
    // No Prometheus pod yet.
    const none = await meshctl(["experimental", "metrics", "ratings", ...c]);
    assert.equal(none.code, 1);
    assert.equal(
      none.stderr,
      "Error: no running prometheus pods (app=prometheus) in mesh-system\n",
    );

    // A pending pod and one in another namespace are not used; the running one is.
    kube.upsert({ apiVersion: "v1", kind: "Namespace", metadata: { name: "monitoring" } });
    kube.upsert(promPod("mesh-system", "prometheus-pending", 1, "Pending"));
    kube.upsert(promPod("monitoring", "prometheus-other", 2));
    kube.upsert(promPod("mesh-system", "prometheus-7d9f", prom.port));
    const r = await meshctl(["experimental", "metrics", "ratings", ...c]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      "      SERVICE    TOTAL RPS    ERROR RPS  P50 LATENCY  P90 LATENCY  P99 LATENCY\n" +
        "      ratings        4.000        0.000           0s           0s           0s\n",
    );
    assert.ok(
      prom.seen.includes('sum(rate(mesh_request_count{destination_service=~"ratings.*"}[1m]))'),
      prom.seen.join("\n"),
    );
    assert.ok(
      kube.requests.some((q) =>
        q.path === "/api/v1/namespaces/mesh-system/pods" &&
        decodeURIComponent(q.search).includes("labelSelector=app=prometheus")
      ),
    );

    // -i names another mesh namespace: its pod (port 2, nothing listening) is the one asked.
    const other = await meshctl(["experimental", "metrics", "ratings", "-i", "monitoring", ...c]);
    assert.equal(other.code, 1);
    assert.match(other.stderr, /^Error: could not build metrics for service 'ratings': /);
    assert.equal(prom.seen.length, 5, "the mesh-system Prometheus was not asked again");
  } finally {
    await prom.server.shutdown();
  }
});

Deno.test("meshctl experimental metrics on -p fs needs --prometheus", async () => {
  const r = await meshctl(["experimental", "metrics", "ratings", "-p", "fs"]);
  assert.equal(r.code, 2);
  assert.equal(
    r.stderr.split("\n")[0],
    "Error: no orchestrator to find Prometheus in: give --prometheus http://host:port",
  );
});
