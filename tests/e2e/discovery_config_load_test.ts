/**
 * End-to-end: a running mesh-discovery keeps serving while it loads a large configuration. A
 * file of 5000 documents dropped into `--configDir` is read, parsed and validated in slices
 * (lib/process/slice.ts); `/ready`, REST xDS and ADS keep answering meanwhile. A single document of 4 MiB, which
 * the YAML parser would take in one step, is refused without being parsed (`MAX_DOCUMENT_BYTES`),
 * naming it, while `/ready`, REST xDS (`/v3/discovery:clusters`) and ADS (a new stream asking for
 * CDS) keep answering.
 * The bound is loose on purpose (a loaded 2-core box): a load that holds the event loop for its
 * whole parse (seconds here) fails it, a sliced one passes with a wide margin. The 200 ms target
 * is `deno task bench config_load`'s.
 */

import assert from "node:assert/strict";
import { waitUntil } from "../harness/procs.ts";
import { type Probe, probeUntil as probe, virtualService } from "./_config_load.ts";
import { http, type RunningDiscovery, startDiscovery } from "./discovery_harness.ts";

/** Probes until `done()` holds; every probe must succeed. */
const probeUntil = (
  d: RunningDiscovery,
  done: () => Promise<boolean>,
  what: string,
  kinds?: readonly Probe[],
) =>
  probe(d, done, {
    what,
    kinds,
    pauseMs: 50,
    deadlineMs: 180_000,
    pollMs: 500,
    adsTimeoutMs: 30_000,
    check: true,
  });

const DOCUMENTS = 5000;
/** Longest a probe may take while the configuration loads. */
const MAX_PROBE_MS = 1500;
function assertResponsive(slowest: Record<Probe, number>) {
  for (const [p, ms] of Object.entries(slowest)) {
    assert.ok(
      ms < MAX_PROBE_MS,
      `${p} took ${Math.round(ms)} ms during the load (at most ${MAX_PROBE_MS})`,
    );
  }
}

async function withDiscovery(fn: (d: RunningDiscovery, dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "mesh-cfgload-" });
  const d = await startDiscovery(["--configDir", dir, "--registries", "Mock"]);
  try {
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
    await fn(d, dir);
  } finally {
    await d.proc.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

async function writeAtomic(dir: string, name: string, text: string) {
  await Deno.writeTextFile(`${dir}/.${name}.tmp`, text);
  await Deno.rename(`${dir}/.${name}.tmp`, `${dir}/${name}`);
}

Deno.test(`mesh-discovery answers /ready, REST xDS and ADS while it loads a ${DOCUMENTS}-document configuration`, async () => {
  await withDiscovery(async (d, dir) => {
    await writeAtomic(
      dir,
      "all.yaml",
      Array.from({ length: DOCUMENTS }, (_, i) => virtualService(i)).join("---\n"),
    );
    const slowest = await probeUntil(
      d,
      async () => {
        const res = await http(`http://${d.http}/debug/configz`);
        return JSON.parse(res.body).length === DOCUMENTS + 1; // the listing ends with {}
      },
      "the configuration in force",
    );
    assertResponsive(slowest);
  });
});

Deno.test("mesh-discovery refuses a 4 MiB document without parsing it and keeps answering", async () => {
  await withDiscovery(async (d, dir) => {
    // One VirtualService whose http routes make it ~4 MiB.
    const routes: string[] = [];
    let size = 0;
    for (let i = 0; size < 4 * 1024 * 1024 - 512; i++) {
      const r = `  - match: [{uri: {prefix: /api/${i}}}]\n` +
        `    route: [{destination: {host: svc-${i}.default.svc.cluster.local, port: {number: 80}}}]\n`;
      routes.push(r);
      size += r.length;
    }
    const text = virtualService(0).replace(/ {2}http:\n[\s\S]*$/, `  http:\n${routes.join("")}`);
    await writeAtomic(dir, "big.yaml", text);
    const slowest = await probeUntil(
      d,
      () =>
        Promise.resolve(
          /big\.yaml document 1: \d+ bytes \(from line 1\) is more than the 262144-byte limit of one document/
            .test(d.proc.output()),
        ),
      "the document refused",
    );
    assertResponsive(slowest);
    const configz = JSON.parse((await http(`http://${d.http}/debug/configz`)).body);
    assert.equal(configz.length, 1, "nothing of it applies");
  });
});
