/**
 * End-to-end: `mesh-policy server` as a process with an fs:// configuration directory, called
 * by grpc-js (Check, Report); configuration reload keeping the last good one; a real Prometheus
 * (Debian's `/usr/bin/prometheus`) scraping its monitoring port; `meshctl experimental metrics`
 * querying that Prometheus; `mesh-policy crd all`.
 */

import assert from "node:assert/strict";
import { parseAllDocuments } from "../../lib/deps/yaml.ts";
import { denyConfig, mixerClient, policyAddresses, policyServerArgs } from "../harness/policy.ts";
import { freePort, runProgram, spawnProgram, waitUntil } from "../harness/procs.ts";

const PROMETHEUS = Deno.env.get("PROMETHEUS_BIN") ?? "/usr/bin/prometheus";

Deno.test("mesh-policy server: fs:// config, reload keeping the last good config, Prometheus and meshctl metrics", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-policy-e2e-" });
  await Deno.mkdir(`${dir}/config`);
  await Deno.writeTextFile(`${dir}/config/deny.yaml`, denyConfig('source.name == "bad"'));
  const server = spawnProgram("mesh-policy", policyServerArgs(`${dir}/config`));
  let prom: Deno.ChildProcess | undefined;
  let c: Awaited<ReturnType<typeof mixerClient>> | undefined;
  try {
    const { address: grpcAddr, monitoring } = await policyAddresses(server, 20_000);
    c = await mixerClient(grpcAddr);
    const cl = c;
    await waitUntil(
      async () => (await cl.check({ "source.name": "bad" })) === 7,
      10_000,
      "the denier",
    );
    assert.equal(await c.check({ "source.name": "good" }), 0);

    // An invalid rule is rejected with its object and field; the previous rule stays.
    await Deno.writeTextFile(`${dir}/config/deny.yaml`, denyConfig("source.name == 3"));
    await server.waitFor(
      /rule\/mesh-system\/deny-bad: spec\.match: "==" between different types/,
      10_000,
    );
    assert.equal(await c.check({ "source.name": "bad" }), 7);
    await Deno.writeTextFile(`${dir}/config/deny.yaml`, denyConfig('source.name == "worse"'));
    await waitUntil(
      async () => (await cl.check({ "source.name": "bad" })) === 0,
      10_000,
      "the reload",
    );
    assert.equal(await c.check({ "source.name": "worse" }), 7);

    // Telemetry: Reports feed the default prometheus handler, scraped by a real Prometheus.
    const bags = Array.from({ length: 20 }, (_, i) => ({
      "context.protocol": "http",
      "destination.service": "ratings.default.svc.cluster.local",
      "response.code": i % 4 === 0 ? 503 : 200,
      "response.duration": 30,
    }));
    await c.report(bags);
    const port = freePort();
    await Deno.writeTextFile(
      `${dir}/prometheus.yml`,
      `global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: mesh-policy
    scrape_interval: 1s
    scrape_timeout: 1s
    static_configs: [{targets: ["${monitoring}"]}]
`,
    );
    prom = new Deno.Command(PROMETHEUS, {
      args: [
        `--config.file=${dir}/prometheus.yml`,
        `--storage.tsdb.path=${dir}/data`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      stdout: "null",
      stderr: "null",
    }).spawn();
    const base = `http://127.0.0.1:${port}`;
    const rate = async () => {
      const r = await fetch(
        `${base}/api/v1/query?query=${encodeURIComponent("mesh_request_count")}`,
      );
      const body = await r.json();
      return body.data?.result?.length ?? 0;
    };
    await waitUntil(
      async () => (await rate()) >= 2,
      30_000,
      "Prometheus to scrape mesh_request_count",
    );
    // rate() needs two samples with an increase in between: report more, then wait a scrape.
    await c.report(bags);
    let out = "";
    await waitUntil(
      async () => {
        const r = await runProgram("meshctl", [
          "experimental",
          "metrics",
          "--prometheus",
          base,
          "ratings",
          "reviews",
        ]);
        assert.equal(r.code, 0, r.stderr);
        out = r.stdout;
        const row = out.split("\n").find((l) => l.trim().startsWith("ratings"));
        // What the assertions below want: meshctl asks Prometheus for each rate and each latency
        // quantile in its own query, so one can already see the last scrape's increase while
        // another does not yet (the latency then reads 0s).
        const cols = (row ?? "").trim().split(/\s+/);
        const [total, errors] = cols.slice(1, 3).map(Number);
        return errors > 0 && errors < total && /ms$/.test(cols[3] ?? "");
      },
      30_000,
      "meshctl experimental metrics to show traffic",
    );
    const lines = out.trimEnd().split("\n");
    assert.deepEqual(lines[0].trim().split(/\s{2,}/), [
      "SERVICE",
      "TOTAL RPS",
      "ERROR RPS",
      "P50 LATENCY",
      "P90 LATENCY",
      "P99 LATENCY",
    ]);
    const ratings = lines[1].trim().split(/\s+/);
    assert.equal(ratings[0], "ratings");
    assert.ok(Number(ratings[1]) > 0, out);
    assert.ok(Number(ratings[2]) > 0 && Number(ratings[2]) < Number(ratings[1]), out);
    assert.match(ratings[3], /ms$/);
    assert.deepEqual(lines[2].trim().split(/\s+/), ["reviews", "0.000", "0.000", "0s", "0s", "0s"]);
  } finally {
    c?.close();
    if (prom) {
      prom.kill("SIGTERM");
      await prom.status;
    }
    await server.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("mesh-policy crd all prints rule, attributemanifest, the adapters, then the instances", async () => {
  const r = await runProgram("mesh-policy", ["crd", "all"]);
  assert.equal(r.code, 0, r.stderr);
  const docs = parseAllDocuments(r.stdout).map((d) => d.toJSON()).filter((d) => d);
  const names = docs.map((d) => d.spec.names.kind);
  assert.deepEqual(names.slice(0, 3), ["rule", "attributemanifest", "circonus"]);
  assert.equal(names.at(-1), "tracespan");
  assert.equal(docs.length, 31);
  assert.ok(
    docs.every((d) =>
      d.apiVersion === "apiextensions.k8s.io/v1" && d.spec.group === "config.mesh.io"
    ),
  );
  assert.equal(
    docs.find((d) => d.spec.names.kind === "denier").metadata.labels.mesh,
    "mixer-adapter",
  );
  const inst = await runProgram("mesh-policy", ["crd", "instance"]);
  assert.equal(parseAllDocuments(inst.stdout).filter((d) => d.toJSON()).length, 11);
});
