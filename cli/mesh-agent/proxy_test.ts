import assert from "node:assert/strict";
import {
  freePort,
  runProgram,
  spawnProgram,
  waitUntil,
  withTempDir,
} from "../../tests/harness/procs.ts";
import { STANDIN_BINARY, standinEvents } from "../../tests/harness/proxy_standin.ts";

const POD = { POD_NAME: "web-1", POD_NAMESPACE: "shop", INSTANCE_IP: "10.1.2.3" };

Deno.test("mesh-agent proxy runs the proxy and drains it on SIGTERM, exiting 0", async () => {
  await withTempDir(async (dir) => {
    const admin = freePort();
    const agent = spawnProgram("mesh-agent", [
      "proxy",
      "router",
      "--configPath",
      dir,
      "--binaryPath",
      STANDIN_BINARY,
      "--proxyAdminPort",
      String(admin),
      "--drainDuration",
      "500ms",
      "--parentShutdownDuration",
      "1s",
    ], { env: POD });
    try {
      await waitUntil(async () => {
        const r = await fetch(`http://127.0.0.1:${admin}/server_info`).catch(() => null);
        await r?.body?.cancel();
        return r?.ok ?? false;
      }, 20_000);
      const start = standinEvents(dir)[0];
      assert.equal(
        start.args![start.args!.indexOf("--service-node") + 1],
        "router~10.1.2.3~web-1.shop~shop.svc.cluster.local",
      );
      agent.kill("SIGTERM");
      const s = await agent.status;
      assert.equal(s.code, 0, agent.output());
      const evs = standinEvents(dir);
      assert.deepEqual(evs.map((e) => e.event), ["start", "drain", "exit"]);
      assert.equal(evs[2].code, 0);
      assert.ok(
        !(await Array.fromAsync(Deno.readDir(dir))).some((e) => e.name.startsWith("envoy-rev")),
      );
    } finally {
      await agent.stop();
    }
  });
});

Deno.test("mesh-agent proxy names what it cannot derive and exits 2", async () => {
  const r = await runProgram("mesh-agent", ["proxy", "--controlPlaneAuthPolicy", "TLS"], {
    clearEnv: true,
  });
  assert.equal(r.code, 2);
  assert.equal(r.stdout, "");
  assert.match(
    r.stderr,
    /^Error: --ip is empty and INSTANCE_IP is not set: cannot tell the proxy's IP; /,
  );
  assert.match(r.stderr, /POD_NAME or POD_NAMESPACE is not set/);
  assert.match(
    r.stderr,
    /Invalid value "TLS" for --controlPlaneAuthPolicy: want NONE or MUTUAL_TLS/,
  );
});

Deno.test("mesh-agent proxy exits 1 with one line when the proxy binary cannot start", async () => {
  await withTempDir(async (dir) => {
    const r = await runProgram("mesh-agent", [
      "proxy",
      "--configPath",
      dir,
      "--binaryPath",
      `${dir}/no-such-proxy`,
    ], { env: POD });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      new RegExp(`Error: Cannot start the proxy ${dir}/no-such-proxy: .*\\n$`),
    );
  });
});

Deno.test("mesh-agent proxy refuses a --templateFile whose bootstrap Envoy would reject", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(
      `${dir}/t.yaml`,
      "node: { id: [[ .NodeID | toJson ]], cluster: [[ .Cluster ]] }\nadmin: { adress: x }\n",
    );
    const r = await runProgram("mesh-agent", [
      "proxy",
      "--configPath",
      `${dir}/proxy`,
      "--binaryPath",
      STANDIN_BINARY,
      "--templateFile",
      `${dir}/t.yaml`,
    ], { env: POD, cwd: dir });
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      /^Error: Invalid bootstrap: Bootstrap\.admin\.adress: unknown field of envoy\.config\.bootstrap\.v3\.Admin\n$/m,
    );
    assert.deepEqual(standinEvents(`${dir}/proxy`), []);
  });
});

Deno.test("mesh-agent proxy accepts every flag the injector's built-in template passes", async () => {
  const { builtinTemplate, defaultTemplateParams, Injector } = await import(
    "../../lib/inject/mod.ts"
  );
  const { defaultMeshConfig } = await import("../../lib/model/meshconfig.ts");
  const injector = new Injector({
    policy: "enabled",
    template: builtinTemplate({ ...defaultTemplateParams(), tag: "test" }),
    meshConfig: {
      ...defaultMeshConfig(),
      defaultConfig: { ...defaultMeshConfig().defaultConfig, statsdUdpAddress: "localhost:9125" },
    },
  });
  const pod = injector.inject({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "web-1", labels: { app: "web" } },
    spec: { containers: [{ name: "web", image: "web" }] },
  });
  const containers = pod.spec.containers as { name: string; args?: string[] }[];
  const args = containers.find((c) => c.name === "mesh-proxy")?.args ?? [];
  assert.ok(args.includes("--statsdUdpAddress"), args.join(" "));
  await withTempDir(async (dir) => {
    // every flag parses and validates: the agent gets as far as starting the (missing) binary
    const at = args.indexOf("--binaryPath");
    const run = [...args];
    run[at + 1] = `${dir}/no-such-proxy`;
    run[args.indexOf("--configPath") + 1] = dir;
    const r = await runProgram("mesh-agent", run, { env: POD });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^Error: Cannot start the proxy .*no-such-proxy: /);
  });
});

Deno.test("mesh-agent proxy waits for an unreachable mesh_ca, logging why, and still stops on SIGTERM", async () => {
  await withTempDir(async (dir) => {
    const agent = spawnProgram("mesh-agent", [
      "proxy",
      "--configPath",
      `${dir}/proxy`,
      "--binaryPath",
      STANDIN_BINARY,
    ], { env: { ...POD, MESH_CERT_DIR: `${dir}/certs`, MESH_CA_ADDRESS: "127.0.0.1:1" } });
    try {
      await agent.waitFor(
        /cannot get a workload certificate from mesh_ca .*Cannot read the CA root .*root-cert\.pem/,
        20_000,
      );
      agent.kill("SIGTERM");
      assert.equal((await agent.status).code, 0, agent.output());
      assert.deepEqual(standinEvents(`${dir}/proxy`), []);
    } finally {
      await agent.stop();
    }
  });
});
