/**
 * Today's security API on real traffic (issue 24): mesh-discovery (Mock registry, a config
 * directory) drives proxyless gRPC servers of both implementations (greeter v1: grpc-js-xds,
 * v2: gRPC C-core, `sa/greeter`) and clients (grpc-js-xds and C-core as `sa/world`, grpc-js-xds
 * as `sa/other`), each with certificates from a real mesh_ca through mesh-agent --proxyless.
 *
 * Steps, in order, on one set of processes: a namespace PeerAuthentication STRICT turns mutual
 * TLS on (servers see SPIFFE identities, a client without mesh credentials is refused); an
 * AuthorizationPolicy ALLOW for `sa/world` on the WhoAmI method lets world through and denies
 * other (PERMISSION_DENIED); a DENY policy on the principals of `sa/world` denies world too, over the ALLOW;
 * a workload PeerAuthentication DISABLE on greeter turns mutual TLS off again.
 */

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { WHOAMI_METHOD, whoAmIClientConstructor } from "../../cli/demo/whoami.ts";
import { startMeshCa, startProxylessAgent } from "../harness/mesh_agent.ts";
import { startXdsServer, type XdsServerProcess } from "../harness/proxyless.ts";
import { type CallResult, startXdsClient, type XdsClientProcess } from "../harness/xds_client.ts";
import { freeServerPort } from "../harness/procs.ts";
import { startDiscovery } from "./discovery_harness.ts";

const TARGET = "xds:///greeter.default.svc.cluster.local:7070";
const WORLD = "spiffe://cluster.local/ns/default/sa/world";

const serviceEntry = (v1Port: number, v2Port: number) =>
  `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: greeter
  namespace: default
  annotations: {alpha.mesh.io/orchestrator-serviceaccounts: greeter}
spec:
  hosts: [greeter.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 7070, name: grpc, protocol: GRPC}]
  endpoints:
  - {address: 127.0.0.1, ports: {grpc: ${v1Port}}, labels: {app: greeter, version: v1}}
  - {address: 127.0.0.1, ports: {grpc: ${v2Port}}, labels: {app: greeter, version: v2}}
`;
const STRICT = `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: default}
spec: {mtls: {mode: STRICT}}
`;
const ALLOW_WORLD = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: greeter-callers, namespace: default}
spec:
  selector: {matchLabels: {app: greeter}}
  action: ALLOW
  rules:
  - from: [{source: {principals: [cluster.local/ns/default/sa/world]}}]
    to: [{operation: {paths: ["${WHOAMI_METHOD}"]}}]
`;
const DENY_WORLD = `apiVersion: security.istio.io/v1beta1
kind: AuthorizationPolicy
metadata: {name: no-world, namespace: default}
spec:
  action: DENY
  rules:
  - from: [{source: {principals: ["*/sa/world"]}}]
`;
const DISABLE_GREETER = `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: greeter, namespace: default}
spec:
  selector: {matchLabels: {app: greeter}}
  mtls: {mode: DISABLE}
`;

const ok = (r: CallResult) => Object.keys(r.codes).every((c) => c === "0");
const total = (r: CallResult) => Object.values(r.codes).reduce((a, b) => a + b, 0);
const onlyPeer = (r: CallResult, peer: string) =>
  ok(r) && Object.keys(r.peers).length === 1 && (r.peers[peer] ?? 0) === total(r);
const allDenied = (r: CallResult) => r.codes["7"] === total(r);

/** One plaintext call without mesh credentials straight to `address`; resolves with its code. */
async function plainCall(address: string): Promise<number> {
  const grpc = await import("../../lib/deps/grpc.ts");
  const Client = whoAmIClientConstructor(grpc);
  const c = new Client(address, grpc.credentials.createInsecure());
  try {
    return await new Promise<number>((resolve) =>
      c.makeUnaryRequest(
        WHOAMI_METHOD,
        (v: unknown) => Buffer.from(JSON.stringify(v)),
        (b: Buffer) => JSON.parse(b.toString("utf8")),
        {},
        new grpc.Metadata(),
        { deadline: Date.now() + 3000 },
        (err: { code?: number } | null) => resolve(err ? err.code ?? 2 : 0),
      )
    );
  } finally {
    c.close();
  }
}

/**
 * Calls in batches on new connections until `ok` holds for one batch (throws with the last batch
 * after `timeoutMs`). New connections: under load a grpc-js-xds server was seen to keep serving
 * an established connection with the listener it was accepted under for over a minute after an
 * RBAC change (C-core applied it at once); what is tested here is what mesh sends.
 */
async function freshUntil(
  client: XdsClientProcess,
  ok: (r: CallResult) => boolean,
  timeoutMs: number,
): Promise<CallResult> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    await client.reset();
    const last = await client.call(TARGET, { n: 20, deadlineMs: 5000 });
    if (ok(last)) return last;
    if (Date.now() > deadline) {
      throw new Error(`not reached within ${timeoutMs} ms; last batch: ${JSON.stringify(last)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

Deno.test({
  name: "proxyless gRPC workloads obey PeerAuthentication and AuthorizationPolicy on real traffic",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-proxyless-sec-" });
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const configDir = `${dir}/config`;
    await Deno.mkdir(configDir);
    const ports = [freeServerPort(), freeServerPort()];
    await Deno.writeTextFile(`${configDir}/greeter.yaml`, serviceEntry(ports[0], ports[1]));
    const meshFile = `${dir}/mesh`;
    await Deno.writeTextFile(meshFile, "authPolicy: NONE\n");
    const discovery = await startDiscovery(
      ["--registries", "Mock", "--configDir", configDir, "--meshConfig", meshFile],
    );
    cleanups.push(() => discovery.proc.stop());
    const ca = await startMeshCa(dir, ["--monitoring-port", String(freeServerPort())]);
    cleanups.push(() => ca[Symbol.asyncDispose]());
    const workload = async (pod: string, sa: string) => {
      const agent = await startProxylessAgent({
        ca,
        dir: `${dir}/${pod}`,
        sa,
        pod,
        discovery: discovery.grpc,
      });
      cleanups.push(() => agent[Symbol.asyncDispose]());
      return agent;
    };
    const [v1, v2, world, worldCore, other] = await Promise.all([
      workload("greeter-v1", "greeter"),
      workload("greeter-v2", "greeter"),
      workload("world-1", "world"),
      workload("world-2", "world"),
      workload("other-1", "other"),
    ]);
    const servers: XdsServerProcess[] = [
      startXdsServer({
        impl: "grpc-js",
        bootstrapFile: v1.bootstrap,
        address: `127.0.0.1:${ports[0]}`,
        version: "v1",
      }),
      startXdsServer({
        impl: "grpc-core",
        bootstrapFile: v2.bootstrap,
        address: `127.0.0.1:${ports[1]}`,
        version: "v2",
      }),
    ];
    for (const s of servers) cleanups.push(() => s.close());
    const clients = {
      js: await startXdsClient({ bootstrapFile: world.bootstrap, xdsCredentials: true }),
      core: await startXdsClient({
        bootstrapFile: worldCore.bootstrap,
        xdsCredentials: true,
        impl: "grpc-core",
      }),
      other: await startXdsClient({ bootstrapFile: other.bootstrap, xdsCredentials: true }),
    };
    for (const c of Object.values(clients)) cleanups.push(() => c.close());
    await Promise.all(servers.map((s) => s.bound));
    let failed = false;
    const step = (name: string, fn: () => Promise<void>) =>
      t.step(name, async () => {
        if (failed) throw new Error("an earlier step failed");
        try {
          await fn();
        } catch (e) {
          failed = true;
          throw e;
        }
      });
    const diag = () =>
      servers.map((s) => `--- ${s.impl} server:\n${s.output().slice(-1500)}`).join("\n") +
      `\n--- discovery:\n${discovery.proc.output?.().slice(-1500) ?? ""}`;
    const both = (r: CallResult) => !!r.versions.v1 && !!r.versions.v2;

    await step("plaintext before any security object", async () => {
      for (const c of [clients.js, clients.core]) {
        await c.callUntil(TARGET, (r) => onlyPeer(r, "") && both(r), { timeoutMs: 60_000, n: 40 })
          .catch((e) => {
            throw new Error(`${e.message}\n${diag()}\n${c.stderr().slice(-1500)}`);
          });
      }
    });

    await step("a namespace PeerAuthentication STRICT turns mutual TLS on", async () => {
      await Deno.writeTextFile(`${configDir}/strict.yaml`, STRICT);
      for (const c of [clients.js, clients.core]) {
        await c.callUntil(TARGET, (r) => onlyPeer(r, WORLD) && both(r), {
          timeoutMs: 90_000,
          n: 40,
        }).catch((e) => {
          throw new Error(`${e.message}\n${diag()}\n${c.stderr().slice(-1500)}`);
        });
      }
      for (const s of servers) assert.equal(await plainCall(s.address), 14, `${s.impl} server`);
    });

    await step(
      "an AuthorizationPolicy ALLOW lets sa/world through and denies sa/other",
      async () => {
        await Deno.writeTextFile(`${configDir}/allow.yaml`, ALLOW_WORLD);
        await freshUntil(clients.other, allDenied, 90_000).catch((e) => {
          throw new Error(`${e.message}\n${diag()}`);
        });
        // both implementations deny (the split sends calls to both servers)
        const r = await clients.other.call(TARGET, { n: 100 });
        assert.deepEqual(r.codes, { "7": 100 }, JSON.stringify(r));
        for (const c of [clients.js, clients.core]) {
          const w = await c.call(TARGET, { n: 60 });
          assert.ok(onlyPeer(w, WORLD) && both(w), JSON.stringify(w));
        }
      },
    );

    await step("a DENY policy wins over the ALLOW policy", async () => {
      await Deno.writeTextFile(`${configDir}/deny.yaml`, DENY_WORLD);
      for (const c of [clients.js, clients.core]) {
        await freshUntil(c, allDenied, 90_000).catch((e) => {
          throw new Error(`${e.message}\n${diag()}\n${c.stderr().slice(-1500)}`);
        });
      }
      await Deno.remove(`${configDir}/deny.yaml`);
      await Deno.remove(`${configDir}/allow.yaml`);
      await freshUntil(clients.other, ok, 90_000);
    });

    await step(
      "a workload PeerAuthentication DISABLE over the namespace STRICT: plaintext again",
      async () => {
        await Deno.writeTextFile(`${configDir}/disable.yaml`, DISABLE_GREETER);
        for (const c of [clients.js, clients.core]) {
          await freshUntil(c, (r) => onlyPeer(r, "") && both(r), 90_000);
        }
        for (const s of servers) assert.equal(await plainCall(s.address), 0, `${s.impl} server`);
      },
    );
  } finally {
    for (const c of cleanups.reverse()) await c().catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
