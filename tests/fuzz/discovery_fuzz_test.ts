/**
 * Fuzz test of a running `mesh-discovery --configDir` (process level): a campaign of generated,
 * mutated and hostile files dropped into the watched directory, and hostile REST requests.
 * Asserts that discovery stays up and ready (`/ready` answers within a bound), keeps what was
 * stored before, applies a valid change written after the campaign, and prints no forged log
 * line. The seed is printed; `FUZZ_SEED=<n>` replays a run.
 */
import assert from "node:assert/strict";
import { stringify } from "../../lib/deps/yaml.ts";
import { meshctlSchemas, policySchemas } from "../../lib/model/mod.ts";
import { waitUntil, withTempDir } from "../harness/procs.ts";
import { http, post, startDiscovery } from "../e2e/discovery_harness.ts";
import { documentFor, mutateText, rng, runSeed } from "./_gen.ts";

const SEED = runSeed();
console.log(`discovery fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED})`);

/** Bound on one `/ready` answer during the campaign (a hang detector). */
const READY_MS = 3000;

const SIDECAR = "sidecar~10.0.1.1~hello-v1.default~default.svc.cluster.local";

const vs = (name: string, host: string, prefix: string) =>
  `apiVersion: networking.mesh.io/v1alpha3
kind: VirtualService
metadata: {name: ${name}, namespace: default}
spec:
  hosts: [${host}]
  http:
  - match: [{uri: {prefix: ${prefix}}}]
    route: [{destination: {host: ${host}}}]
`;

/** Files no reader may choke on: each costs only itself. */
const HOSTILE: Record<string, string> = {
  "alias-cycle.yaml": "apiVersion: config.mesh.io/v1alpha2\nkind: denier\nmetadata: {name: d}\n" +
    "spec:\n  custom: &c [*c]\n",
  "deep.yaml": `kind: VirtualService\nmetadata: {name: deep}\nspec: {a: ${"[".repeat(3000)}}\n`,
  "deep-valid-yaml.json": `{"kind":"rule","apiVersion":"config.mesh.io/v1alpha2","metadata":` +
    `{"name":"r"},"spec":${'{"a":'.repeat(500)}1${"}".repeat(500)}}`,
  "forged.yaml": 'kind: "VirtualService\\n2026-01-01T00:00:00.000Z\\tinfo\\tdefault\\tforged"\n' +
    'metadata: {name: "x\\nError: forged"}\nspec: {}\n',
  "broken-flow.yaml": "[" + "a: b, ".repeat(35_000),
  "laughs.yaml": "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n" +
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c]\n",
  "empty-host.yaml": "kind: ServiceEntry\nmetadata: {name: se-empty}\nspec:\n  hosts: ['']\n" +
    "  ports: [{number: 443, name: https, protocol: HTTPS}]\n  resolution: DNS\n",
  "huge.yaml": "# " + "x".repeat(5 * 1024 * 1024) + "\n",
};

Deno.test(`fuzz: mesh-discovery --configDir survives a campaign of hostile files and requests (seed ${SEED})`, async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/keep.yaml`, vs("keep", "hello", "/kept"));
    const d = await startDiscovery(["--registries", "Mock", "--configDir", dir]);
    const ready = async () => {
      const t0 = performance.now();
      const r = await http(`http://${d.http}/ready`);
      const ms = performance.now() - t0;
      assert.ok(ms < READY_MS, `/ready took ${ms.toFixed(0)} ms`);
      return r;
    };
    const routes = async () => {
      const r = await post(`http://${d.http}/v3/discovery:routes`, {
        node: { id: SIDECAR },
        resource_names: ["80"],
      });
      return r.body;
    };
    try {
      await waitUntil(async () => (await ready()).status === 200, 15_000, "ready");
      assert.match(await routes(), /"\/kept"/);

      const r = rng(SEED);
      const all = [...meshctlSchemas, ...policySchemas];
      const names = Object.keys(HOSTILE);
      for (let i = 0; i < 80; i++) {
        const pick = r.int(4);
        const text = pick === 0
          ? HOSTILE[names[i % names.length]]
          : pick === 1
          ? mutateText(r, stringify(documentFor(r, r.pick(all))))
          : stringify(documentFor(r, r.pick(all), pick === 2));
        const file = pick === 0 ? names[i % names.length] : `gen-${i % 25}.yaml`;
        await Deno.writeTextFile(`${dir}/${file}`, text);
        if (i % 4 === 0) assert.equal((await ready()).status, 200, `after case ${i}`);
      }
      // hostile REST requests: too many names, a huge body, broken JSON
      const many = await post(`http://${d.http}/v3/discovery:routes`, {
        node: { id: SIDECAR },
        resource_names: Array.from({ length: 100_000 }, (_, i) => `r${i}`),
      });
      assert.equal(many.status, 400, many.body.slice(0, 200));
      assert.match(many.body, /at most \d+ per request/);
      const huge = await post(`http://${d.http}/v3/discovery:routes`, " ".repeat(50 << 20));
      assert.equal(huge.status, 413, huge.body.slice(0, 200));
      const broken = await post(`http://${d.http}/v3/discovery:clusters`, "{".repeat(100_000));
      assert.equal(broken.status, 400);
      assert.equal((await ready()).status, 200);

      // the pipeline still applies changes, and nothing stored before was lost
      await Deno.writeTextFile(`${dir}/late.yaml`, vs("late", "world", "/late"));
      await waitUntil(async () => (await routes()).includes('"/late"'), 10_000, "late VS");
      assert.match(await routes(), /"\/kept"/);
    } finally {
      const status = await d.proc.stop();
      assert.equal(status.code, 0, d.proc.output().slice(-3000));
    }
    // every line discovery printed is its own (timestamped, or a stack line of one)
    for (const line of d.proc.output().split("\n")) {
      if (line === "" || line.startsWith("\t")) continue;
      assert.match(line, /^\d{4}-\d\d-\d\dT[\d:.]+Z\t(debug|info|warn|error)\t/, line);
    }
    assert.ok(!/\tforged/.test(d.proc.output().replace(/\\t/g, "")));
  });
});
