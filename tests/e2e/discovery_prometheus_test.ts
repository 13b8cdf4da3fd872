/**
 * End-to-end: a real Prometheus server (Debian's `/usr/bin/prometheus`, installed by .ci/run)
 * scrapes mesh-discovery's monitoring port every second; its query API then reports the scrape
 * up and `mesh_xds` = the number of connected ADS clients.
 */

import assert from "node:assert/strict";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { freePort, waitUntil } from "../harness/procs.ts";
import { adsClient } from "./_ads_client.ts";
import { http, startDiscovery } from "./discovery_harness.ts";

const PROMETHEUS = Deno.env.get("PROMETHEUS_BIN") ?? "/usr/bin/prometheus";

/** Starts Prometheus scraping `target` every second; output collected for error messages. */
function startPrometheus(dir: string, port: number) {
  const child = new Deno.Command(PROMETHEUS, {
    args: [
      `--config.file=${dir}/prometheus.yml`,
      `--storage.tsdb.path=${dir}/data`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  let output = "";
  const pump = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s.pipeThrough(new TextDecoderStream())) output += chunk;
  };
  const status = Promise.all([child.status, pump(child.stdout), pump(child.stderr)]).then(([s]) =>
    s
  );
  return {
    output: () => output,
    status,
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch { /* already exited */ }
      return await status;
    },
  };
}

/** The value of the single sample of an instant query, or undefined when there is none. */
async function query(base: string, q: string): Promise<string | undefined> {
  const r = await http(`${base}/api/v1/query?query=${encodeURIComponent(q)}`);
  if (r.status !== 200) return undefined;
  const body = JSON.parse(r.body);
  assert.equal(body.status, "success", r.body);
  return body.data.result[0]?.value?.[1];
}

Deno.test("Prometheus scrapes mesh-discovery: the target is up and mesh_xds counts the connected proxies", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-prom-" });
  const d = await startDiscovery(["--registries", "Mock", "--configDir", dir]);
  const client = adsClient(d.grpc);
  const stream = client.open();
  const port = freePort();
  const target = d.monitoring;
  await Deno.writeTextFile(
    `${dir}/prometheus.yml`,
    `global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: mesh-discovery
    scrape_interval: 1s
    scrape_timeout: 1s
    static_configs:
      - targets: ["${target}"]
`,
  );
  const prom = startPrometheus(dir, port);
  const base = `http://127.0.0.1:${port}`;
  try {
    stream.send({
      node: { id: "sidecar~127.0.1.1~hello-v1.default~default.svc.cluster.local" },
      type_url: TYPE_URLS.cluster,
    });
    await stream.next(TYPE_URLS.cluster);
    await waitUntil(
      async () => (await query(base, 'up{job="mesh-discovery"}')) === "1",
      10_000,
      "Prometheus to scrape discovery (up == 1)",
      100,
    ).catch((e) => {
      throw new Error(`${e.message}\nPrometheus output:\n${prom.output().slice(-2000)}`);
    });
    await waitUntil(
      async () => (await query(base, 'mesh_xds{job="mesh-discovery"}')) === "1",
      5000,
      "mesh_xds == 1",
      100,
    );
    assert.equal(await query(base, 'mesh_services{job="mesh-discovery"}'), "2");
    // The proxy leaves: the next scrape reports no connection.
    await stream.close();
    await waitUntil(
      async () => (await query(base, 'mesh_xds{job="mesh-discovery"}')) === "0",
      5000,
      "mesh_xds == 0",
      100,
    );
  } finally {
    await stream.close().catch(() => {});
    client.close();
    const promStatus = await prom.stop();
    const status = await d.proc.stop();
    await Deno.remove(dir, { recursive: true });
    assert.equal(promStatus.code, 0, prom.output().slice(-2000));
    assert.match(prom.output(), /See you next time!/);
    assert.equal(status.code, 0, d.proc.output().slice(-2000));
  }
});
