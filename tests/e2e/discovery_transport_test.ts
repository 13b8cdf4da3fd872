/**
 * mesh-discovery's ADS transport from the outside: independent HTTP/2 implementations (`nghttp`,
 * `h2load` from Debian's nghttp2-client) with gRPC-framed requests, every attack class of
 * lib/grpc/testing.ts against the real ADS port while a normal ADS client probes on another
 * connection, and `/ready` plus `mesh_xds_accepting` while the listener is out of descriptors.
 */
import assert from "node:assert/strict";
import {
  ADS_PATH,
  ATTACKS,
  discoveryRequest,
  grpcFrame,
  grpcRequest,
  RawClient,
  rssOf,
  startProbe,
  sustain,
} from "../../lib/grpc/testing.ts";
import { frame, FrameType } from "../../lib/grpc/h2/frames.ts";
import { MessageBuilder } from "../../lib/protowire/mod.ts";
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

/** Runs `fn` with `mesh-discovery discovery --registries Mock --configDir <tmp> ...extra`, ready. */
async function withDiscovery(
  fn: (d: RunningDiscovery, dir: string) => Promise<void>,
  extra: string[] = [],
) {
  await withTempDir(async (dir) => {
    const d = await startDiscovery(["--registries", "Mock", "--configDir", dir, ...extra]);
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
      assert.doesNotMatch(d.proc.output(), /reused read buffers/, "node:net reads by default");
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

Deno.test("with --grpcReusedReads ADS reads into reused buffers and answers requests that span many reads", async () => {
  await withDiscovery(async (d) => {
    assert.match(d.proc.output(), /ADS: listening on [^\n]*plaintext, reused read buffers\)/);
    // CDS requests of ~120 kB (an unknown field the decoder skips) on open streams: 8 DATA frames
    // of 16 kB each, sent in one write with the other streams', so frames and their headers
    // straddle the server's 16 kB reads
    const node = new MessageBuilder().string(1, NODE, true).finish();
    const request = (i: number) =>
      grpcFrame(
        new MessageBuilder().message(2, node)
          .string(4, "type.googleapis.com/envoy.config.cluster.v3.Cluster", true)
          .string(99, String(i).repeat(120_000), true).finish(),
      );
    const c = await RawClient.connect(Number(d.grpc.split(":")[1]));
    try {
      await c.send(FrameType.SETTINGS, 0, 0);
      await c.send(FrameType.WINDOW_UPDATE, 0, 0, new Uint8Array([0, 0x10, 0, 0])); // +1 MiB
      const ids = [1, 3, 5];
      const parts: Uint8Array[] = [];
      for (const id of ids) {
        const body = request(id);
        assert.ok(body.length > 100_000, `${body.length} bytes`);
        parts.push(c.headersFrame(id, grpcRequest(ADS_PATH)));
        for (let at = 0; at < body.length; at += 16_384) {
          parts.push(frame(FrameType.DATA, 0, id, body.subarray(at, at + 16_384)));
        }
      }
      await c.write(...parts);
      // each stream is answered (a DATA frame: its CDS response), none reset, no GOAWAY
      assert.ok(await c.until(() => ids.every((id) => c.dataOn(id) > 0), 20_000), "answered");
      assert.equal(c.resets().size, 0);
      assert.equal(c.goaway, undefined);
    } finally {
      c.socket.destroy();
    }
  }, ["--grpcReusedReads"]);
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

for (const workers of [1, 2]) {
  Deno.test(`idle connections up to the descriptor limit${workers > 1 ? ", --workers 2" : ""}: ADS keeps accepting and stays ready, another address is answered within 1 s, every new client within 1 s after; /metrics counts what was refused and shed`, async () => {
    await withTempDir((dir) => outOfDescriptors(dir, workers));
  });
}

async function outOfDescriptors(dir: string, workers: number) {
  // The program under `ulimit -n 1024`, 1100 idle connections (no preface) from 127.0.0.1 and
  // 127.0.0.3 (issue 27): the descriptor reserve and the bound per address keep it accepting.
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
    "--workers",
    String(workers),
  ];
  const child = new Deno.Command("/bin/sh", {
    args: ["-c", `ulimit -n 1024 && exec "$0" "$@"`, Deno.execPath(), ...args],
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
    const answeredIn = async (localAddress: string) => {
      const t0 = performance.now();
      const c = await RawClient.connect(port, { localAddress });
      cs.push(c);
      const ok = await c.until(() => c.settings().size > 0, 5000) && await c.roundTrip(5000);
      return ok ? performance.now() - t0 : -1;
    };
    const attackers: RawClient[] = [];
    const silent = (localAddress: string) =>
      RawClient.connect(port, { preface: false, localAddress }).then((c) => {
        attackers.push(c);
        cs.push(c);
      }, () => {});
    for (let i = 0; i < 1100; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) => silent((i + j) % 2 ? "127.0.0.3" : "127.0.0.1")),
      );
    }
    const during: number[] = [];
    for (let i = 0; i < 5; i++) {
      during.push(await answeredIn("127.0.0.2"));
      assert.equal((await http(`http://${web}/ready`)).status, 200);
      assert.equal(await metric(), "1");
    }
    assert.ok(during.every((ms) => ms >= 0 && ms < 1000), `during: ${during.join(", ")} ms`);
    assert.match(log, /ADS: (refused|closed) \d+ connection\(s\)/);
    // what the log tells, /metrics counts (summed over the workers, whose state it reads within
    // a second)
    const told = (what: string) => new RegExp(`ADS: ${what} \\d+ connection\\(s\\)`).test(log);
    let counts = "";
    await waitUntil(
      async () => {
        const metrics = (await http(`http://${web}/metrics`)).body;
        const count = (name: string) =>
          Number(new RegExp(`^mesh_xds_${name}_connections (\\S+)$`, "m").exec(metrics)?.[1]);
        const [refused, shed] = [count("refused"), count("shed")];
        counts = `refused ${refused}, shed ${shed}, throttled ${count("throttled")}`;
        return refused > 0 === told("refused") && shed > 0 === told("closed") &&
          count("throttled") === 0;
      },
      5000,
      "/metrics to count what the log tells",
      100,
    ).catch((e) => {
      throw new Error(`${(e as Error).message}: ${counts}`);
    });
    await Promise.all(attackers.map((c) => c.close()));
    const after: number[] = [];
    for (let i = 0; i < 10; i++) after.push(await answeredIn("127.0.0.1"));
    assert.ok(after.every((ms) => ms >= 0 && ms < 1000), `after: ${after.join(", ")} ms`);
    assert.doesNotMatch(log, /ADS: cannot accept connections/);
  } finally {
    await Promise.all(cs.map((c) => c.close()));
    child.kill("SIGTERM");
    await child.status;
    await drained;
  }
}

Deno.test("a burst of 1,000 connections while mesh-discovery cannot accept: the kernel queues every one (listen backlog), none waits for a SYN retry", async () => {
  await withTempDir(async (dir) => {
    const d = await startDiscovery(["--registries", "Mock", "--configDir", dir]);
    const port = Number(d.grpc.split(":")[1]);
    // the kernel caps the backlog at net.core.somaxconn (4096 since Linux 5.4)
    const somaxconn = Number(await Deno.readTextFile("/proc/sys/net/core/somaxconn"));
    const burst = Math.min(1000, somaxconn);
    const conns: Promise<Deno.TcpConn | undefined>[] = [];
    // stopped, the program accepts nothing: only the kernel's accept queue holds the connections
    d.proc.kill("SIGSTOP");
    try {
      for (let i = 0; i < burst; i++) {
        conns.push(Deno.connect({ hostname: "127.0.0.1", port }).catch(() => undefined));
      }
      // A connection whose SYN the kernel dropped (its accept queue full) is retried after a
      // second: within 700 ms only those the queue took are established.
      let established = 0;
      for (const c of conns) void c.then((x) => x && established++);
      await new Promise((r) => setTimeout(r, 700));
      assert.equal(established, burst, `${established} of ${burst} established while stopped`);
    } finally {
      d.proc.kill("SIGCONT");
      for (const c of await Promise.all(conns)) c?.close();
    }
    assert.equal((await http(`http://${d.http}/ready`)).status, 200);
    await d.proc.stop();
  });
});
