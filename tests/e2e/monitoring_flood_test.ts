/**
 * A flood of idle connections on a monitoring port runs the process out of file descriptors: Deno
 * then stops that server's accept loop for good, and its unhandled end used to kill the process.
 * mesh-policy and mesh_ca (monitoring in the main isolate) stay up, mesh-discovery's HTTP front
 * (a worker) is not started again, and each serves the port again once the connections are gone.
 */
import assert from "node:assert/strict";
import { selfSignedCaArgs, testIssuer } from "../harness/ca_client.ts";
import { startDiscovery } from "./discovery_harness.ts";
import { denyConfig, policyAddresses, policyServerArgs } from "../harness/policy.ts";
import { freePort, type ProgramProcess, spawnProgram, withTempDir } from "../harness/procs.ts";

/**
 * Opens `n` idle connections to `port` (the program runs under `ulimit -n 256`, so its server on
 * the port runs out of descriptors and stops accepting), holds them a second and closes them. Deno
 * ends the server only once its connections are gone: the program then says so, and serves the
 * port again; `/metrics` answers, and the program is still running.
 */
async function floodUntilRevived(proc: ProgramProcess, port: number, n = 400) {
  const held: Deno.TcpConn[] = [];
  try {
    for (let i = 0; i < n; i++) {
      try {
        held.push(await Deno.connect({ hostname: "127.0.0.1", port }));
      } catch {
        break; // refused or reset: the server is out of descriptors
      }
    }
    assert.ok(held.length > 200, `${held.length} connections`);
    await new Promise((r) => setTimeout(r, 1000));
  } finally {
    for (const c of held) c.close();
  }
  await proc.waitFor(
    new RegExp(`server on \\S+:${port} stopped accepting \\(.*Too many open files`),
    20_000,
  );
  await proc.waitFor(new RegExp(`server on \\S+:${port}: serving again`), 30_000);
  const r = await fetch(`http://127.0.0.1:${port}/metrics`);
  assert.equal(r.status, 200);
  await r.body?.cancel();
}

Deno.test("mesh-policy under ulimit -n 256: a flood of idle connections on --monitoringPort leaves it running; the port is served again after", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/config`);
    await Deno.writeTextFile(`${dir}/config/deny.yaml`, denyConfig('source.name == "bad"'));
    await using server = spawnProgram(
      "mesh-policy",
      policyServerArgs(`${dir}/config`, "--workers", "1"),
      { fileLimit: 256 },
    );
    const { monitoring } = await policyAddresses(server, 60_000);
    await floodUntilRevived(server, Number(monitoring.split(":").at(-1)));
    assert.equal((await server.stop()).code, 0);
  });
});

Deno.test("mesh_ca under ulimit -n 256: a flood of idle connections on --monitoring-port leaves it running; the port is served again after", async () => {
  await withTempDir(async (dir) => {
    const monitoringPort = freePort();
    await using ca = spawnProgram(
      "mesh_ca",
      await selfSignedCaArgs(
        dir,
        await testIssuer(),
        { grpc: freePort(), monitoring: monitoringPort },
        "--workers",
        "1",
      ),
      { fileLimit: 256 },
    );
    await ca.waitFor(/monitoring listening on /, 60_000);
    await floodUntilRevived(ca, monitoringPort);
    assert.equal((await ca.stop()).code, 0);
  });
});

Deno.test("mesh-discovery under ulimit -n 256: a flood of idle connections on --port; the HTTP front serves /ready again after, without being started again", async () => {
  await withTempDir(async (dir) => {
    const d = await startDiscovery(
      ["--registries", "Mock", "--configDir", dir],
      {},
      undefined,
      256,
    );
    try {
      await floodUntilRevived(d.proc, Number(d.http.split(":")[1]));
      const ready = await fetch(`http://${d.http}/ready`);
      assert.equal(ready.status, 200, await ready.text());
      const metrics = await (await fetch(`http://${d.monitoring}/metrics`)).text();
      assert.match(metrics, /^mesh_worker_restarts_total\{pool="HTTP front"\} 0$/m);
    } finally {
      await d.proc.stop();
    }
  });
});
