/**
 * mesh-discovery's ADS transport from the outside: independent HTTP/2 implementations (`nghttp`,
 * `h2load` from Debian's nghttp2-client) with gRPC-framed requests, every attack class of
 * lib/grpc/testing.ts against the real ADS port while a normal ADS client probes on another
 * connection, and `/ready` plus `mesh_xds_accepting` while the listener is out of descriptors.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  ADS_PATH,
  ATTACKS,
  discoveryRequest,
  grpcFrame,
  RawClient,
  rssOf,
  startProbe,
  sustain,
} from "../../lib/grpc/testing.ts";
import { waitUntil, withTempDir } from "../harness/procs.ts";
import {
  DISCOVERY_SCRIPT,
  http,
  type RunningDiscovery,
  startDiscovery,
} from "./discovery_harness.ts";

const NODE = "sidecar~127.0.0.1~probe.default~default.svc.cluster.local";
const MB = 1024 * 1024;

async function run(cmd: string, args: string[]): Promise<{ code: number; out: string }> {
  const r = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  return { code: r.code, out: dec.decode(r.stdout) + dec.decode(r.stderr) };
}

const GRPC_HEADERS = ["-H", "content-type: application/grpc", "-H", "te: trailers"];

/** Runs `fn` with `mesh-discovery discovery --registries Mock --configDir <tmp>`, ready. */
async function withDiscovery(fn: (d: RunningDiscovery, dir: string) => Promise<void>) {
  await withTempDir(async (dir) => {
    const d = await startDiscovery(["--registries", "Mock", "--configDir", dir]);
    try {
      await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
      await fn(d, dir);
    } finally {
      await d.proc.stop();
    }
  });
}

Deno.test("nghttp and h2load (nghttp2) get ADS responses with gRPC-framed requests", async () => {
  await withDiscovery(async (d, dir) => {
    {
      const body = `${dir}/cds.bin`;
      await Deno.writeFile(body, grpcFrame(discoveryRequest(NODE)));
      const url = `http://${d.grpc}${ADS_PATH}`;
      const n = await run("nghttp", ["-v", "-n", ...GRPC_HEADERS, "-d", body, url]);
      assert.equal(n.code, 0, n.out);
      // nghttp half-closes with its DATA: ADS ends the call OK (as grpc-js servers do), after
      // nghttp's PRIORITY tree, SETTINGS, HEADERS and DATA were all accepted.
      assert.match(n.out, /recv \(stream_id=13\) grpc-status: 0/);
      assert.match(
        n.out,
        /recv SETTINGS frame[^\n]*\n\s+\(niv=4\)[\s\S]*MAX_CONCURRENT_STREAMS\(0x03\):100/,
      );
      assert.doesNotMatch(n.out, /recv (GOAWAY|RST_STREAM)/);
      const h = await run("h2load", [
        "-n",
        "200",
        "-c",
        "4",
        "-m",
        "10",
        ...GRPC_HEADERS,
        "-d",
        body,
        url,
      ]);
      assert.equal(h.code, 0, h.out);
      assert.match(h.out, /requests: 200 total, 200 started, 200 done, 200 succeeded, 0 failed/);
    }
  });
});

Deno.test("mesh-discovery answers every attack class on ADS while a normal ADS client keeps getting responses", async (t) => {
  await withDiscovery(async (d) => {
    const port = Number(d.grpc.split(":").pop());
    const request = discoveryRequest(NODE);
    for (const attack of ATTACKS) {
      await t.step(attack.name, async () => {
        const before = rssOf(d.proc.pid);
        let peak = before;
        const sampler = setInterval(() => (peak = Math.max(peak, rssOf(d.proc.pid))), 50);
        const probe = await startProbe(port, ADS_PATH, request, 50);
        let result;
        try {
          // Repeated for a second at least, reconnecting whenever the server cuts it off.
          result = await sustain(attack, port, { path: ADS_PATH, request }, 1000);
        } finally {
          clearInterval(sampler);
        }
        const { latencies, failures } = await probe.stop();
        for (const a of result.answers.keys()) assert.match(a, attack.expect);
        assert.ok(peak - before < 256 * MB, `server RSS grew ${(peak - before) / MB} MB`);
        assert.deepEqual(failures, []);
        assert.ok(latencies.length > 0, "the ADS probe got no response during the attack");
        assert.ok(Math.max(...latencies) < 10_000, `ADS probe waited ${Math.max(...latencies)} ms`);
      });
    }
  });
});

Deno.test("out of file descriptors, /ready and mesh_xds_accepting say ADS cannot accept, then recover", async () => {
  await withTempDir((dir) => outOfDescriptors(dir));
});

async function outOfDescriptors(dir: string) {
  // The program under `ulimit -n`: a little above what it uses idle.
  const args = [
    "run",
    "-A",
    DISCOVERY_SCRIPT,
    "discovery",
    "--registries",
    "Mock",
    "--port",
    "0",
    "--grpcAddr",
    "127.0.0.1:0",
    "--secureGrpcAddr",
    "",
    "--monitoringPort",
    "0",
    "--ctrlz_port",
    "0",
    "--meshConfig",
    "/nonexistent/mesh-config",
    "--configDir",
    dir,
  ];
  const child = new Deno.Command("/bin/sh", {
    args: ["-c", `ulimit -n 96 && exec "$0" "$@"`, Deno.execPath(), ...args],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let log = "";
  const dec = new TextDecoder();
  const drain = async (s: ReadableStream<Uint8Array>) => {
    for await (const c of s) log += dec.decode(c);
  };
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  const cs: RawClient[] = [];
  try {
    await waitUntil(() => /listening http=/.test(log), 20_000);
    const m = /listening http=\S+:(\d+) grpc=\S+:(\d+)/.exec(log)!;
    const web = `127.0.0.1:${m[1]}`, port = Number(m[2]);
    await waitUntil(async () => (await http(`http://${web}/ready`)).status === 200, 10_000);
    const metric = async () =>
      /^mesh_xds_accepting (\d)/m.exec((await http(`http://${web}/metrics`)).body)?.[1];
    assert.equal(await metric(), "1");
    for (let i = 0; i < 120; i++) cs.push(await RawClient.connect(port));
    // (the config directory's scan may fail first, for the same reason: /ready tells both)
    await waitUntil(
      async () => /ADS cannot accept connections/.test((await http(`http://${web}/ready`)).body),
      15_000,
    );
    const r = await http(`http://${web}/ready`);
    assert.equal(r.status, 503);
    assert.match(r.body, /^not ready: .*ADS cannot accept connections/);
    assert.equal(await metric(), "0");
    assert.match(log, /ADS: cannot accept connections: /);
    await Promise.all(cs.splice(0).map((c) => c.close()));
    await waitUntil(async () => (await http(`http://${web}/ready`)).status === 200, 15_000);
    assert.equal(await metric(), "1");
    const c = await RawClient.connect(port);
    cs.push(c);
    await c.write(Buffer.alloc(0));
    assert.ok(await c.until(() => c.settings().size > 0, 5000), "ADS does not accept again");
  } finally {
    await Promise.all(cs.map((c) => c.close()));
    child.kill("SIGTERM");
    await child.status;
    await drained;
  }
}
