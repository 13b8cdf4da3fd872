import assert from "node:assert/strict";
import { start, toConfig } from "./mod.ts";
import { POD_ENV, proxyFlags } from "./_test_util.ts";
import { freePort, waitUntil, withTempDir } from "../../tests/harness/procs.ts";
import {
  STANDIN_BINARY,
  type StandinEvent,
  standinEvents,
} from "../../tests/harness/proxy_standin.ts";
import type { ProxyFlags } from "./config.ts";

function config(dir: string, over: Partial<ProxyFlags> = {}, env: Record<string, string> = {}) {
  return toConfig(
    proxyFlags({
      configPath: `${dir}/proxy`,
      binaryPath: STANDIN_BINARY,
      proxyAdminPort: freePort(),
      drainDuration: 1000,
      parentShutdownDuration: 1000,
      ...over,
    }),
    "sidecar",
    { ...POD_ENV, MESH_CERT_DIR: `${dir}/certs`, ...env },
  );
}

const of = (evs: StandinEvent[], event: string, epoch?: number) =>
  evs.filter((e) => e.event === event && (epoch === undefined || e.epoch === epoch));

async function waitEvent(dir: string, event: string, epoch: number, count = 1) {
  await waitUntil(
    () => of(standinEvents(`${dir}/proxy`), event, epoch).length >= count,
    20_000,
    `stand-in ${event} of epoch ${epoch}`,
  );
}

Deno.test("start() runs epoch 0 with Envoy's command line, removes stale files, drains on shutdown", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/proxy`);
    await Deno.writeTextFile(`${dir}/proxy/envoy-rev7.json`, "{}");
    const c = config(dir, {
      concurrency: 2,
      availabilityZone: "az-1",
      statsdUdpAddress: "localhost:9125",
    });
    const h = await start(c, {});
    try {
      await h.ready;
      await waitEvent(dir, "start", 0);
      assert.deepEqual(of(standinEvents(`${dir}/proxy`), "start", 0)[0].args, [
        "-c",
        `${dir}/proxy/envoy-rev0.json`,
        "--restart-epoch",
        "0",
        "--drain-time-s",
        "1",
        "--parent-shutdown-time-s",
        "1",
        "--service-cluster",
        "mesh-proxy",
        "--service-node",
        "sidecar~10.1.2.3~web-1.shop~shop.svc.cluster.local",
        "-l",
        "warn",
        "--concurrency",
        "2",
        "--service-zone",
        "az-1",
      ]);
      assert.equal(await Deno.stat(`${dir}/proxy/envoy-rev7.json`).catch(() => null), null);
      const boot = JSON.parse(await Deno.readTextFile(`${dir}/proxy/envoy-rev0.json`));
      assert.equal(boot.node.id, c.nodeId);
      // Envoy's statsd sink takes an IP: the host is resolved at start
      assert.deepEqual(boot.stats_sinks[0].typed_config.address.socket_address, {
        address: "127.0.0.1",
        port_value: 9125,
        protocol: "UDP",
      });
      // the admin port of the bootstrap is the one the stand-in serves
      await waitUntil(async () => {
        const r = await fetch(`http://${h.addresses.admin}/server_info`).catch(() => null);
        await r?.body?.cancel();
        return r?.ok ?? false;
      });
    } finally {
      await h.shutdown();
    }
    const evs = standinEvents(`${dir}/proxy`);
    assert.deepEqual(of(evs, "drain", 0).map((e) => e.by), ["admin"]);
    assert.equal(of(evs, "exit", 0)[0].code, 0);
    assert.deepEqual(
      [...Deno.readDirSync(`${dir}/proxy`)].map((e) => e.name).filter((n) => n.startsWith("envoy")),
      [],
    );
  });
});

Deno.test("a certificate change starts one new epoch; the parent drains and shuts down", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/certs`);
    const epochs: number[] = [];
    const h = await start(config(dir), { coalesceMs: 300, onEpoch: (n) => epochs.push(n) });
    try {
      await waitEvent(dir, "start", 0);
      // three files written one after the other: one burst, one new epoch
      for (const f of ["cert-chain.pem", "key.pem", "root-cert.pem"]) {
        await Deno.writeTextFile(`${dir}/certs/${f}`, `new ${f}`);
      }
      await waitEvent(dir, "start", 1);
      await waitEvent(dir, "exit", 0);
      const evs = standinEvents(`${dir}/proxy`);
      assert.deepEqual(of(evs, "drain", 0).map((e) => e.by), ["child"]);
      assert.equal(of(evs, "parent-shutdown", 1).length, 1);
      assert.equal(of(evs, "exit", 0)[0].code, 0);
      assert.ok(of(evs, "exit", 0)[0].t >= of(evs, "start", 1)[0].t + 1000);
      await waitUntil(() => h.supervisor.liveEpochs.join() === "1");
      assert.deepEqual(epochs, [0, 1]);
      assert.equal(await Deno.stat(`${dir}/proxy/envoy-rev0.json`).catch(() => null), null);
      assert.ok(await Deno.stat(`${dir}/proxy/envoy-rev1.json`));
    } finally {
      await h.shutdown();
    }
  });
});

Deno.test("a crashing proxy is restarted with backoff until the budget is spent", async () => {
  await withTempDir(async (dir) => {
    const h = await start(config(dir), {
      retryBudget: 2,
      retryBaseMs: 50,
      proxyEnv: { STANDIN_FAIL_AFTER_MS: "100" },
    });
    try {
      await assert.rejects(
        h.failed,
        /^Error: the proxy keeps failing \(last: epoch 0 exited with code 1\): retry budget of 2 restarts spent, giving up$/,
      );
      const starts = of(standinEvents(`${dir}/proxy`), "start", 0);
      assert.equal(starts.length, 3);
      // 50 ms, then 100 ms between a failure and the next start
      const exits = of(standinEvents(`${dir}/proxy`), "exit", 0);
      assert.ok(starts[1].t - exits[0].t >= 50);
      assert.ok(starts[2].t - exits[1].t >= 100);
      assert.deepEqual(h.supervisor.liveEpochs, []);
    } finally {
      await h.shutdown();
    }
  });
});

Deno.test("a proxy failure stops every epoch and the restart recovers", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/certs`);
    const failOnce = `${dir}/fail-once`;
    const h = await start(config(dir, { parentShutdownDuration: 30_000 }), {
      coalesceMs: 100,
      retryBaseMs: 50,
      proxyEnv: { STANDIN_FAIL_ONCE_FILE: failOnce },
    });
    try {
      await waitEvent(dir, "start", 0);
      // for epoch 1 only: epoch 0 checks the file just after its start event (CI saw it take it)
      await Deno.writeTextFile(failOnce, "1");
      await Deno.writeTextFile(`${dir}/certs/cert-chain.pem`, "x");
      // epoch 1 fails: epoch 0 (still draining) is stopped too, then epoch 0 starts afresh
      await waitEvent(dir, "start", 1);
      await waitEvent(dir, "start", 0, 2);
      await waitUntil(() => h.supervisor.liveEpochs.join() === "0");
      const evs = standinEvents(`${dir}/proxy`);
      assert.equal(of(evs, "exit", 1)[0].code, 1);
    } finally {
      await h.shutdown();
    }
  });
});

Deno.test("--customConfigFile is given to the proxy as is and left in place", async () => {
  await withTempDir(async (dir) => {
    const custom = `${dir}/my-envoy.yaml`;
    const admin = freePort();
    await Deno.writeTextFile(
      custom,
      `admin: { address: { socket_address: { address: 127.0.0.1, port_value: ${admin} } } }\n`,
    );
    const h = await start(config(dir, { customConfigFile: custom }), {
      proxyEnv: { STANDIN_RECORD_DIR: `${dir}/proxy` },
    });
    try {
      await waitEvent(dir, "start", 0);
      const s = standinEvents(`${dir}/proxy`).find((e) => e.event === "start")!;
      assert.deepEqual(s.args!.slice(0, 2), ["-c", custom]);
      assert.deepEqual(
        [...Deno.readDirSync(`${dir}/proxy`)].filter((e) => e.name.startsWith("envoy-rev")),
        [],
      );
    } finally {
      await h.shutdown();
    }
    assert.equal(await Deno.readTextFile(custom).then((t) => t.length > 0), true);
    await assert.rejects(
      start(config(dir, { customConfigFile: `${dir}/missing.yaml` }), {}),
      /^Error: Cannot read --customConfigFile .*missing\.yaml: /,
    );
  });
});
