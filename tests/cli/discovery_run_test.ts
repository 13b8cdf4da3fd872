/**
 * Group L, group I and listen errors seen through a running `mesh-discovery discovery`
 * (a real subprocess on 127.0.0.1, free ports).
 * @module
 */

import assert from "node:assert/strict";
import { runProgram, spawnProgram, waitUntil, withTempDir } from "../harness/procs.ts";

const LISTENING = /listening http=\S+:(\d+) grpc=\S+:(\d+) monitoring=\S+:(\d+) ctrlz=\S+:(\d+)/;

/** Flags that make discovery start with no orchestrator: Mock registry, file store, port 0. */
function discoveryArgs(configDir: string, ports: Record<string, string> = {}): string[] {
  const p = { port: "0", grpcAddr: "127.0.0.1:0", monitoringPort: "0", ctrlz_port: "0", ...ports };
  return [
    "--registries",
    "Mock",
    "--configDir",
    configDir,
    "--meshConfig",
    `${configDir}/missing-mesh-config`,
    "--secureGrpcAddr",
    "",
    "--port",
    p.port,
    "--grpcAddr",
    p.grpcAddr,
    "--monitoringPort",
    p.monitoringPort,
    "--ctrlz_port",
    p.ctrlz_port,
  ];
}

Deno.test("mesh-discovery shows its arguments once, as given, and a plain debug level reaches ads", async () => {
  await withTempDir(async (dir) => {
    const args = ["--log_output_level", "debug", "discovery", ...discoveryArgs(dir)];
    const proc = spawnProgram("mesh-discovery", args);
    try {
      const m = LISTENING.exec(await proc.waitFor(LISTENING, 20_000))!;
      const [http, ctrlz] = [`http://127.0.0.1:${m[1]}`, `http://127.0.0.1:${m[4]}`];

      // ControlZ: the program name once, then the arguments exactly as given (the flag before
      // the subcommand included).
      const argsj = await (await fetch(`${ctrlz}/argsj/`)).json();
      assert.deepEqual(argsj, ["mesh-discovery", ...args]);
      const page = await (await fetch(`${ctrlz}/`)).text();
      assert.equal(page.split("mesh-discovery</th>").length, 2, "one arguments row");
      assert.ok(page.includes(`<td>&#34;--log_output_level&#34; &#34;debug&#34; &#34;discovery`));

      // A plain level applies to every scope, ads included.
      const scopes = await (await fetch(`${ctrlz}/scopej/`)).json();
      assert.deepEqual(
        scopes.map((s: { name: string; output_level: string }) => [s.name, s.output_level]),
        [["ads", "debug"], ["default", "debug"]],
      );
      await waitUntil(async () => {
        const r = await fetch(`${http}/ready`);
        await r.body?.cancel();
        return r.status === 200;
      }, 10_000);
      const push = await fetch(`${http}/debug/adsz?push=1`);
      assert.equal(await push.text(), "Pushed to 0 servers\n");
      await proc.waitFor(/\tdebug\tads\tADS: push /, 5000);
    } finally {
      await proc.stop();
    }
  });
});

/** Holds a TCP port on `hostname` while `fn` runs. */
async function withBusyPort<T>(hostname: string, fn: (port: number) => Promise<T>): Promise<T> {
  const listener = Deno.listen({ hostname, port: 0 });
  try {
    return await fn((listener.addr as Deno.NetAddr).port);
  } finally {
    listener.close();
  }
}

Deno.test("mesh-discovery names the flag of a busy port in one line and exits 1", async () => {
  await withTempDir(async (dir) => {
    const run = async (ports: Record<string, string>) => {
      const r = await runProgram("mesh-discovery", ["discovery", ...discoveryArgs(dir, ports)]);
      assert.equal(r.code, 1, r.stderr);
      return r.stderr;
    };
    await withBusyPort("127.0.0.1", (local) =>
      withBusyPort("0.0.0.0", async (any) => {
        // One after the other: four programs starting at once are slower on a small machine.
        const grpc = await run({ grpcAddr: `127.0.0.1:${local}` });
        const ctrlz = await run({ ctrlz_port: String(local) });
        const http = await run({ port: String(any) });
        const monitoring = await run({ monitoringPort: String(any) });
        assert.equal(
          grpc,
          `Error: Cannot listen on --grpcAddr 127.0.0.1:${local}: address already in use\n`,
        );
        assert.equal(
          ctrlz,
          `Error: Cannot listen on --ctrlz_port ${local} (127.0.0.1): address already in use\n`,
        );
        assert.equal(http, `Error: Cannot listen on --port ${any}: address already in use\n`);
        assert.equal(
          monitoring,
          `Error: Cannot listen on --monitoringPort ${any}: address already in use\n`,
        );
      }));
  });
});
