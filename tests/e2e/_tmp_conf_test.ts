/**
 * Conformance of mesh-discovery with the real proxyless xDS client (@grpc/grpc-js-xds): one
 * mesh-discovery program on a temp config dir, WhoAmI backends in this process on 127.0.0.1
 * port 0 (pointed at by STATIC ServiceEntries), one client subprocess for all checks.
 */

import assert from "node:assert/strict";
import { startWhoAmI, type WhoAmIBackend } from "../../cli/demo/whoami.ts";
import { spawnProgram } from "../harness/procs.ts";
import { type CallResult, share, startXdsClient } from "../harness/xds_client.ts";

const NS = "default";

function serviceEntry(name: string, eps: [WhoAmIBackend, string][]): string {
  return `apiVersion: networking.istio.io/v1alpha3
kind: ServiceEntry
metadata: {name: ${name}, namespace: ${NS}}
spec:
  hosts: [${name}.test.example]
  ports:
    - {number: 7070, name: grpc, protocol: GRPC}
  location: MESH_INTERNAL
  resolution: STATIC
  endpoints:
${
    eps.map(([b, v]) =>
      `    - {address: 127.0.0.1, ports: {grpc: ${b.port}}, labels: {version: ${v}}}`
    ).join("\n")
  }
`;
}

function destinationRule(name: string, lb = "ROUND_ROBIN"): string {
  return `apiVersion: networking.istio.io/v1alpha3
kind: DestinationRule
metadata: {name: ${name}, namespace: ${NS}}
spec:
  host: ${name}.test.example
  trafficPolicy: {loadBalancer: {simple: ${lb}}}
  subsets:
    - {name: v1, labels: {version: v1}}
    - {name: v2, labels: {version: v2}}
`;
}

function virtualService(name: string, http: string): string {
  return `apiVersion: networking.istio.io/v1alpha3
kind: VirtualService
metadata: {name: ${name}, namespace: ${NS}}
spec:
  hosts: [${name}.test.example]
  http:
${http}`;
}

const dest = (name: string, subset?: string, weight?: number) =>
  `{destination: {host: ${name}.test.example${subset ? `, subset: ${subset}` : ""}}${
    weight === undefined ? "" : `, weight: ${weight}`
  }}`;

const target = (name: string) => `xds:///${name}.test.example:7070`;

async function writeAtomic(file: string, text: string) {
  await Deno.writeTextFile(`${file}.tmp`, text);
  await Deno.rename(`${file}.tmp`, file);
}

const onlyOk = (r: CallResult) => Object.keys(r.codes).every((c) => c === "0");

Deno.test("mesh-discovery drives the grpc-js-xds client: splits, matches, subsets, faults, retries, endpoints, NACKs", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-xds-conformance-" });
  const backends: WhoAmIBackend[] = [];
  const start = (version: string, failFirstAttempt = false) =>
    startWhoAmI({ host: "127.0.0.1", port: 0, version, failFirstAttempt }).then((b) => {
      backends.push(b);
      return b;
    });
  let discovery: ReturnType<typeof spawnProgram> | undefined;
  let client: Awaited<ReturnType<typeof startXdsClient>> | undefined;
  try {
    const v1 = await start("v1");
    const v2 = await start("v2");
    const v3 = await start("v3");
    const flaky = await start("v1", true);
    const both: [WhoAmIBackend, string][] = [[v1, "v1"], [v2, "v2"]];
    const files: Record<string, string> = {
      "split-se.yaml": serviceEntry("split", both),
      "split-dr.yaml": destinationRule("split"),
      "split-vs.yaml": virtualService(
        "split",
        `    - route: [${dest("split", "v1", 80)}, ${dest("split", "v2", 20)}]\n`,
      ),
      "header-se.yaml": serviceEntry("header", both),
      "header-dr.yaml": destinationRule("header"),
      "header-vs.yaml": virtualService(
        "header",
        `    - match: [{headers: {x-canary: {exact: "yes"}}}]\n` +
          `      route: [${dest("header", "v2")}]\n` +
          `    - route: [${dest("header", "v1")}]\n`,
      ),
      "subset-se.yaml": serviceEntry("subset", both),
      "subset-dr.yaml": destinationRule("subset"),
      "subset-vs.yaml": virtualService("subset", `    - route: [${dest("subset", "v2")}]\n`),
      "fault-se.yaml": serviceEntry("fault", [[v1, "v1"]]),
      "fault-vs.yaml": virtualService(
        "fault",
        `    - route: [${dest("fault")}]\n` +
          `      fault: {abort: {percent: 100, grpcStatus: PERMISSION_DENIED}}\n`,
      ),
      "retry-se.yaml": serviceEntry("retry", [[flaky, "v1"]]),
      "retry-vs.yaml": virtualService(
        "retry",
        `    - route: [${dest("retry")}]\n` +
          `      retries: {attempts: 3, perTryTimeout: 2s}\n`,
      ),
      "noretry-se.yaml": serviceEntry("noretry", [[flaky, "v1"]]),
      "eds-se.yaml": serviceEntry("eds", [[v1, "v1"]]),
      "nack-se.yaml": serviceEntry("nack", [[v1, "v1"]]),
      "nack-dr.yaml": destinationRule("nack"),
    };
    for (const [f, text] of Object.entries(files)) await Deno.writeTextFile(`${dir}/${f}`, text);

    discovery = spawnProgram("/tmp/mywork/disc_runner.ts", [
      "discovery",
      "--registries",
      "Mock",
      "--configDir",
      dir,
      "--port",
      "0",
      "--monitoringPort",
      "0",
      "--grpcAddr",
      "127.0.0.1:0",
      "--secureGrpcAddr",
      "",
      "--ctrlz_port",
      "0",
      "--ctrlz_address",
      "127.0.0.1",
    ]);
    const line = await discovery.waitFor(/listening http=\S+ grpc=\S+/, 30_000);
    const grpcPort = Number(line.match(/grpc=\S+:(\d+)/)![1]);
    const httpPort = Number(line.match(/http=\S+:(\d+)/)![1]);
    await discovery.waitFor("discovery is ready", 30_000);
    client = await startXdsClient({ grpcPort, id: "conformance" });
    const c = client;

    await t.step("a weighted route splits 80/20 within ±5% over 1000 calls", async () => {
      await c.callUntil(target("split"), (r) => onlyOk(r) && (r.versions.v2 ?? 0) > 0, {
        timeoutMs: 20_000,
      });
      const r = await c.call(target("split"), { n: 1000, concurrency: 20 });
      assert.deepEqual(r.codes, { "0": 1000 }, JSON.stringify(r));
      const p = share(r, "v1");
      assert.ok(Math.abs(p - 0.8) <= 0.05, `v1 share ${p} (${JSON.stringify(r.versions)})`);
    });

    await t.step("a header match routes to v2, other calls to v1", async () => {
      const canary = await c.call(target("header"), { n: 50, metadata: { "x-canary": "yes" } });
      assert.deepEqual(canary.versions, { v2: 50 }, JSON.stringify(canary));
      const plain = await c.call(target("header"), { n: 50, metadata: { "x-canary": "no" } });
      assert.deepEqual(plain.versions, { v1: 50 }, JSON.stringify(plain));
    });

    await t.step("a DestinationRule subset selects only its endpoints", async () => {
      const r = await c.call(target("subset"), { n: 100 });
      assert.deepEqual(r.versions, { v2: 100 }, JSON.stringify(r));
    });

    await t.step("a fault abort fails calls with its gRPC status", async () => {
      const r = await c.call(target("fault"), { n: 20 });
      assert.deepEqual(r.codes, { "7": 20 }, JSON.stringify(r)); // PERMISSION_DENIED
      assert.equal(v1.served() > 0, true);
    });

    await t.step("retries turn a failed first attempt into success", async () => {
      const r = await c.call(target("retry"), { n: 20, uniqueIds: true });
      assert.deepEqual(r.codes, { "0": 20 }, JSON.stringify(r));
      assert.deepEqual(r.attempts, { "2": 20 }, JSON.stringify(r));
      const none = await c.call(target("noretry"), { n: 20, uniqueIds: true });
      assert.deepEqual(none.codes, { "14": 20 }, JSON.stringify(none)); // UNAVAILABLE
    });

    await t.step("ServiceEntry endpoint edits add and remove backends", async () => {
      const r0 = await c.call(target("eds"), { n: 20 });
      assert.deepEqual(r0.versions, { v1: 20 }, JSON.stringify(r0));
      await writeAtomic(`${dir}/eds-se.yaml`, serviceEntry("eds", [[v1, "v1"], [v3, "v3"]]));
      await c.callUntil(target("eds"), (r) => onlyOk(r) && !!r.versions.v1 && !!r.versions.v3, {
        n: 40,
        timeoutMs: 10_000,
      });
      await writeAtomic(`${dir}/eds-se.yaml`, serviceEntry("eds", [[v3, "v3"]]));
      await c.callUntil(target("eds"), (r) => onlyOk(r) && r.versions.v3 === 40, {
        n: 40,
        timeoutMs: 10_000,
      });
    });

    await t.step("a NACKed cluster leaves traffic on the last good config", async () => {
      const before = await c.call(target("nack"), { n: 20 });
      assert.deepEqual(before.versions, { v1: 20 }, JSON.stringify(before));
      await writeAtomic(`${dir}/nack-dr.yaml`, destinationRule("nack", "LEAST_CONN"));
      const id = "conformance.default";
      let nack: Record<string, unknown> | undefined;
      const deadline = Date.now() + 10_000;
      while (!nack) {
        const res = await fetch(`http://127.0.0.1:${httpPort}/debug/syncz?proxyID=${id}`);
        const body = await res.json() as Record<string, Record<string, unknown>>[];
        nack = body.find((e) => e.cds?.nack)?.cds?.nack as Record<string, unknown> | undefined;
        if (!nack) {
          assert.ok(Date.now() < deadline, `no NACK in /debug/syncz: ${JSON.stringify(body)}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      console.log("NACK", JSON.stringify(nack));
      const after = await c.call(target("nack"), { n: 50 });
      assert.deepEqual(after.codes, { "0": 50 }, JSON.stringify(after));
      // Other resources keep updating: the split route still works.
      const split = await c.call(target("split"), { n: 100 });
      assert.deepEqual(split.codes, { "0": 100 }, JSON.stringify(split));
    });
  } finally {
    await client?.close();
    await discovery?.stop();
    for (const b of backends) await b.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
