/**
 * mesh-policy and mesh_ca with `--workers 2`, as users run them: every call on a connection of
 * its own (the kernel spreads connections over the worker isolates), all answered; `/metrics`
 * counts every call once, whichever worker served it; a configuration change reaches every
 * worker.
 */
import assert from "node:assert/strict";
import { decodeMeshCertificateResponse } from "../../lib/pki/ca_messages.ts";
import { csrFor } from "../../servers/ca/_testutil.ts";
import { createCertificateH2, selfSignedCaArgs, testIssuer } from "../harness/ca_client.ts";
import { denyConfig, freshCheck, policyAddresses, policyServerArgs } from "../harness/policy.ts";
import type { RawClient } from "../../lib/grpc/testing.ts";
import { h2AnsweredIn, idleConnectionsAttack, tlsAnsweredIn } from "../harness/listener_metrics.ts";
import {
  freePort,
  type SpawnOptions,
  spawnProgram,
  waitUntil,
  withTempDir,
} from "../harness/procs.ts";

/** One Check on a new connection (see {@link freshCheck}); its status code. */
async function check(address: string, source: string): Promise<number> {
  return (await freshCheck(address, { "source.name": source })).precondition.status.code ?? 0;
}

/** mesh-policy --workers 2 denying `source.name == "bad"` (`dir/config`), once its API serves. */
async function policyOnWorkers(dir: string, opts: SpawnOptions = {}) {
  await Deno.mkdir(`${dir}/config`);
  await Deno.writeTextFile(`${dir}/config/deny.yaml`, denyConfig('source.name == "bad"'));
  const server = spawnProgram(
    "mesh-policy",
    policyServerArgs(`${dir}/config`, "--workers", "2"),
    opts,
  );
  try {
    await server.waitFor(/Policy API listening on \S+ in 2 worker isolates/, 120_000);
  } catch (e) {
    await server[Symbol.asyncDispose]();
    throw e;
  }
  return server;
}

/**
 * mesh_ca --workers 2 with a self-signed CA in `dir` that trusts a test issuer's tokens, once its
 * signing API and monitoring listener are up.
 */
async function caOnWorkers(dir: string, opts: SpawnOptions = {}) {
  const issuer = await testIssuer();
  const grpcPort = freePort(), monitoringPort = freePort();
  const ca = spawnProgram(
    "mesh_ca",
    await selfSignedCaArgs(
      dir,
      issuer,
      { grpc: grpcPort, monitoring: monitoringPort },
      "--workers",
      "2",
    ),
    opts,
  );
  try {
    await ca.waitFor(/gRPC signing API listening on \S+ \(TLS\) in 2 worker isolates/, 120_000);
    await ca.waitFor(/monitoring listening on /, 30_000);
  } catch (e) {
    await ca[Symbol.asyncDispose]();
    throw e;
  }
  const root = await Deno.readTextFile(`${dir}/store/ca-cert.pem`);
  return { ca, issuer, grpcPort, monitoringPort, root };
}

const sum = (text: string, re: RegExp) =>
  [...text.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);

Deno.test("mesh-policy --workers 2 on port 0: every Check answered, counted once in /metrics, and a config change reaches every new connection", async () => {
  await withTempDir(async (dir) => {
    await using server = await policyOnWorkers(dir);
    const { address, monitoring } = await policyAddresses(server, 30_000);
    const n = 16;
    for (let i = 0; i < n; i++) {
      assert.equal(await check(address, "bad"), 7);
      assert.equal(await check(address, "good"), 0);
    }
    const metrics = async () => await (await fetch(`http://${monitoring}/metrics`)).text();
    let text = await metrics();
    assert.equal(sum(text, /^mesh_policy_check_total\{code="7"\} (\d+)$/gm), n, text);
    assert.equal(sum(text, /^mesh_policy_check_total\{code="0"\} (\d+)$/gm), n, text);

    await Deno.writeTextFile(`${dir}/config/deny.yaml`, denyConfig('source.name == "worse"'));
    await waitUntil(async () => (await check(address, "bad")) === 0, 30_000, "the reload");
    const denied = sum(await metrics(), /^mesh_policy_check_total\{code="7"\} (\d+)$/gm);
    // Every new connection (16, over both workers) sees the new rule.
    for (let i = 0; i < n; i++) {
      assert.equal(await check(address, "bad"), 0);
      assert.equal(await check(address, "worse"), 7);
    }
    text = await metrics();
    assert.equal(sum(text, /^mesh_policy_check_total\{code="7"\} (\d+)$/gm), denied + n, text);
    assert.equal((await server.stop()).code, 0);
  });
});

Deno.test("mesh_ca --workers 2: every CSR on a connection of its own is signed, counted once in /metrics", async () => {
  await withTempDir(async (dir) => {
    const { ca: proc, issuer, grpcPort, monitoringPort, root } = await caOnWorkers(dir);
    await using ca = proc;
    const token = await issuer.token("system:serviceaccount:ns1:web");
    const { csr } = await csrFor("ns1", "web", { key: { kind: "ec" } });
    const n = 16;
    for (let i = 0; i < n; i++) {
      const r = await createCertificateH2({
        address: `127.0.0.1:${grpcPort}`,
        root,
        token,
        csr,
        timeoutMs: 30_000,
      });
      assert.equal(r.status, 0, r.message);
      assert.equal(decodeMeshCertificateResponse(r.response!).at(-1), root);
    }
    const text = await (await fetch(`http://127.0.0.1:${monitoringPort}/metrics`)).text();
    assert.match(
      text,
      new RegExp(`^mesh_ca_certs_issued_total\\{method="CreateCertificate"\\} ${n}$`, "m"),
    );
    assert.equal((await ca.stop()).code, 0);
  });
});

// Each worker's listener accepts up to 128 connections ahead of what it counts: the descriptor
// reserve must hold a batch per worker, or a flood runs the process out of descriptors.
Deno.test("mesh-policy --workers 2 under ulimit -n 1024: 1,100 idle connections leave the API accepting and answering, and /metrics counts what was refused or shed", async () => {
  await withTempDir(async (dir) => {
    await using server = await policyOnWorkers(dir, { fileLimit: 1024 });
    const { address, monitoring } = await policyAddresses(server, 30_000);
    const port = Number(address.split(":").at(-1));
    const cs: RawClient[] = [];
    try {
      await idleConnectionsAttack({
        port,
        monitoring,
        prefix: "mesh_policy_grpc",
        answeredIn: (from) => h2AnsweredIn(port, from, cs),
        output: () => server.output(),
      });
    } finally {
      await Promise.all(cs.map((c) => c.close()));
    }
    assert.equal(await check(address, "bad"), 7);
    assert.equal((await server.stop()).code, 0);
  });
});

Deno.test("mesh_ca --workers 2 under ulimit -n 1024: 1,100 idle connections leave the signing API accepting and answering TLS, and /metrics counts what was refused or shed", async () => {
  await withTempDir(async (dir) => {
    const { ca: proc, issuer, grpcPort, monitoringPort, root } = await caOnWorkers(dir, {
      fileLimit: 1024,
    });
    await using ca = proc;
    await idleConnectionsAttack({
      port: grpcPort,
      monitoring: `127.0.0.1:${monitoringPort}`,
      prefix: "mesh_ca_grpc",
      answeredIn: (from) => tlsAnsweredIn(grpcPort, from),
      output: () => ca.output(),
    });
    const r = await createCertificateH2({
      address: `127.0.0.1:${grpcPort}`,
      root,
      token: await issuer.token("system:serviceaccount:ns1:web"),
      csr: (await csrFor("ns1", "web", { key: { kind: "ec" } })).csr,
      timeoutMs: 30_000,
    });
    assert.equal(r.status, 0, r.message);
    assert.equal((await ca.stop()).code, 0);
  });
});
