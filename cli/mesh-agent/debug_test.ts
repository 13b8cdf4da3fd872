import assert from "node:assert/strict";
import { runProgram, withTempDir } from "../../tests/harness/procs.ts";
import { startFakeKube } from "../../tests/harness/fake_kube.ts";

/** A proxy admin port: the endpoints `debug` reads, and a failing one. */
function fakeAdmin(failing = false) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    if (failing) return new Response("admin is down", { status: 503 });
    switch (new URL(req.url).pathname) {
      case "/clusters":
        return new Response("xds-grpc::default_priority::max_connections::100000\n");
      case "/listeners":
        return new Response('["virtualInbound"]\n');
      case "/config_dump":
        return Response.json({
          configs: [
            { "@type": "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump" },
            {
              "@type": "type.googleapis.com/envoy.admin.v3.RoutesConfigDump",
              static_route_configs: [],
            },
          ],
        });
    }
    return new Response("not found", { status: 404 });
  });
  return { server, addr: `127.0.0.1:${server.addr.port}` };
}

Deno.test("mesh-agent debug prints each configuration type from the admin port", async () => {
  const { server, addr } = fakeAdmin();
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/envoy-rev0.json`, '{"node": {}}\n');
    const env = { MESH_AGENT_ADMIN_ADDRESS: addr, MESH_AGENT_CONFIG_PATH: dir };
    const clusters = await runProgram("mesh-agent", ["debug", "clusters"], { env });
    assert.equal(clusters.code, 0, clusters.stderr);
    assert.equal(clusters.stdout, "xds-grpc::default_priority::max_connections::100000\n");
    const routes = await runProgram("mesh-agent", ["debug", "routes"], { env });
    assert.deepEqual(
      JSON.parse(routes.stdout).configs.map((c: { "@type": string }) => c["@type"]),
      [
        "type.googleapis.com/envoy.admin.v3.RoutesConfigDump",
      ],
    );
    const dump = await runProgram("mesh-agent", ["debug", "config_dump"], { env });
    assert.equal(JSON.parse(dump.stdout).configs.length, 2);
    const all = await runProgram("mesh-agent", ["debug", "all"], { env });
    assert.equal(all.code, 0, all.stderr);
    assert.deepEqual(all.stdout.match(/^# \w+$/gm), [
      "# clusters",
      "# listeners",
      "# routes",
      "# static",
    ]);
    assert.match(all.stdout, new RegExp(`--- ${dir}/envoy-rev0.json\\n\\{"node": \\{\\}\\}\\n`));
  });
  await server.shutdown();
});

Deno.test("mesh-agent debug reports a bad type (exit 2) and a failing proxy (exit 1)", async () => {
  const bad = await runProgram("mesh-agent", ["debug", "secrets"]);
  assert.equal(bad.code, 2);
  assert.match(
    bad.stderr,
    /^Error: "secrets" is not a supported debugging config type \(want clusters, listeners, routes, config_dump, static, all\)\n/,
  );
  const { server, addr } = fakeAdmin(true);
  const down = await runProgram("mesh-agent", ["debug", "listeners"], {
    env: { MESH_AGENT_ADMIN_ADDRESS: addr },
  });
  assert.equal(down.code, 1);
  assert.equal(down.stderr, "Error: received 503 status from the proxy: admin is down\n");
  await server.shutdown();
});

Deno.test("meshctl proxy-config endpoint reads the proxy on fs (--admin-address) and through the orchestrator", async () => {
  const { server, addr } = fakeAdmin();
  const fs = await runProgram("meshctl", [
    "proxy-config",
    "endpoint",
    "web-1",
    "listeners",
    "-p",
    "fs",
    "--admin-address",
    addr,
  ]);
  assert.equal(fs.code, 0, fs.stderr);
  assert.equal(fs.stdout, '["virtualInbound"]\n');
  await using kube = await startFakeKube();
  kube.upsert({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "web-1", namespace: "default" },
    spec: {
      containers: [
        { name: "web", image: "web" },
        {
          name: "mesh-proxy",
          image: "proxy",
          args: ["proxy", "--proxyAdminPort", addr.split(":")[1]],
        },
      ],
    },
    status: { podIP: "127.0.0.1" },
  });
  const orch = await runProgram(
    "meshctl",
    ["pc", "endpoint", "web-1", "clusters", "-c", kube.kubeconfigPath],
  );
  assert.equal(orch.code, 0, orch.stderr);
  assert.equal(orch.stdout, "xds-grpc::default_priority::max_connections::100000\n");
  const missing = await runProgram(
    "meshctl",
    ["pc", "endpoint", "nobody", "-c", kube.kubeconfigPath],
  );
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^Error: Cannot get pod nobody in default: /);
  const badType = await runProgram("meshctl", ["pc", "endpoint", "web-1", "ads", "-p", "fs"]);
  assert.equal(badType.code, 2);
  await server.shutdown();
});

Deno.test("mesh-agent debug and meshctl proxy-config endpoint say so when the proxy is the test stand-in", async () => {
  const { spawnProgram, freePort, waitUntil } = await import("../../tests/harness/procs.ts");
  const { STANDIN_BINARY } = await import("../../tests/harness/proxy_standin.ts");
  await withTempDir(async (dir) => {
    const admin = freePort();
    await using agent = spawnProgram("mesh-agent", [
      "proxy",
      "router",
      "--configPath",
      dir,
      "--binaryPath",
      STANDIN_BINARY,
      "--proxyAdminPort",
      String(admin),
    ], { env: { POD_NAME: "web-1", POD_NAMESPACE: "shop", INSTANCE_IP: "10.1.2.3" } });
    await waitUntil(
      async () => {
        const r = await fetch(`http://127.0.0.1:${admin}/ready`).catch(() => null);
        await r?.body?.cancel();
        return r?.ok ?? false;
      },
      20_000,
      "the stand-in's admin port",
    );
    const addr = `127.0.0.1:${admin}`;
    const warning =
      `Warning: the proxy at ${addr} is proxy-standin (tests/harness/proxy-standin): a test stand-in for Envoy; it speaks no xDS and forwards nothing, so these are canned answers, not configuration received from discovery\n`;
    const debug = await runProgram("mesh-agent", ["debug", "clusters"], {
      env: { MESH_AGENT_ADMIN_ADDRESS: addr, MESH_AGENT_CONFIG_PATH: dir },
    });
    assert.equal(debug.code, 0, debug.stderr);
    assert.equal(debug.stderr, warning);
    assert.match(debug.stdout, /^# proxy-standin \(tests\/harness\/proxy-standin\): /);
    const routes = await runProgram("meshctl", [
      "proxy-config",
      "endpoint",
      "web-1",
      "routes",
      "-p",
      "fs",
      "--admin-address",
      addr,
    ]);
    assert.equal(routes.code, 0, routes.stderr);
    assert.equal(routes.stderr, warning);
    agent.kill("SIGTERM");
    assert.equal((await agent.status).code, 0);
  });
});

Deno.test("mesh-agent debug prints no warning for a proxy that is not the stand-in", async () => {
  const { server, addr } = fakeAdmin();
  try {
    const r = await runProgram("mesh-agent", ["debug", "listeners"], {
      env: { MESH_AGENT_ADMIN_ADDRESS: addr },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, "");
  } finally {
    await server.shutdown();
  }
});

Deno.test("mesh-agent debug points a proxyless agent's user at its bootstrap instead of a proxy", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/grpc-bootstrap.json`, '{"node": {"id": "x"}}\n');
    const { freePort } = await import("../../tests/harness/procs.ts");
    const env = {
      MESH_AGENT_ADMIN_ADDRESS: `127.0.0.1:${freePort()}`,
      MESH_AGENT_CONFIG_PATH: dir,
    };
    const clusters = await runProgram("mesh-agent", ["debug", "clusters"], { env });
    assert.equal(clusters.code, 1);
    assert.match(
      clusters.stderr,
      /^Error: Cannot reach the proxy admin port at .*\(the agent in .* runs --proxyless: there is no proxy; "mesh-agent debug static" prints its gRPC bootstrap .*grpc-bootstrap\.json\)\n$/,
    );
    const st = await runProgram("mesh-agent", ["debug", "static"], { env });
    assert.equal(st.code, 0, st.stderr);
    assert.equal(st.stdout, `--- ${dir}/grpc-bootstrap.json\n{"node": {"id": "x"}}\n`);
  });
});
