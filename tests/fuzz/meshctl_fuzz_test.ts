/**
 * Fuzz test of `meshctl create -f - -p fs`: generated, mutated and hostile inputs, in process
 * (many) and as a program (a few). Asserts exit 0 or 1 with one `Error: ...` line per problem
 * (nothing forged, nothing huge), that a failed batch writes nothing, and that what was created
 * before is never lost. The seed is printed; `FUZZ_SEED=<n>` replays a run.
 */
import assert from "node:assert/strict";
import { stringify } from "../../lib/deps/yaml.ts";
import { meshctlSchemas, policySchemas } from "../../lib/model/mod.ts";
import { listFiles, meshctl, meshctlProcess, withDir } from "../e2e/_meshctl.ts";
import { documentFor, mutateText, rng, runSeed } from "./_gen.ts";

const SEED = runSeed();
console.log(`meshctl fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED})`);

const KEEP = `apiVersion: networking.mesh.io/v1alpha3
kind: DestinationRule
metadata: {name: keep, namespace: default}
spec: {host: keep}
`;

const HOSTILE = [
  "apiVersion: config.mesh.io/v1alpha2\nkind: denier\nmetadata: {name: d}\nspec:\n  custom: &c [*c]\n",
  `kind: VirtualService\nmetadata: {name: deep}\nspec: {a: ${"[".repeat(3000)}}\n`,
  'kind: "VirtualService\\nError: forged"\nmetadata: {name: "x\\nError: forged"}\nspec: {}\n',
  "[" + "a: b, ".repeat(35_000),
  "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n" +
  "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
  `kind: ServiceEntry\nmetadata: {name: se}\nspec: {hosts: [a.com], resolution: ${
    "x".repeat(1 << 20)
  }}\n`,
];

/**
 * Checks one run's output: exit 0 or 1, every stderr line one bounded `Error: `, `Warning: ` or
 * `Skipped: ` line.
 */
function checkRun(r: { code: number; stderr: string }, where: string) {
  assert.ok(r.code === 0 || r.code === 1, `${where}: exit ${r.code}: ${r.stderr.slice(0, 500)}`);
  for (const line of r.stderr.split("\n").filter((l) => l !== "")) {
    assert.match(
      line,
      /^(Error|Warning|Skipped): /,
      `${where}: a stray line: ${line.slice(0, 200)}`,
    );
    assert.ok(!line.startsWith("Error: forged"), `${where}: forged line`);
    assert.ok(line.length < 2000, `${where}: a ${line.length}-character line`);
  }
}

Deno.test(`fuzz: meshctl create -p fs takes 200 generated and hostile inputs cleanly (seed ${SEED})`, async () => {
  await withDir(async (dir) => {
    const fs = ["-p", "fs", "--configDir", dir];
    assert.equal((await meshctl(["create", "-f", "-", ...fs], { stdin: KEEP })).code, 0);
    const r = rng(SEED);
    const all = [...meshctlSchemas, ...policySchemas];
    for (let i = 0; i < 200; i++) {
      const where = `case ${i} (seed ${SEED})`;
      const docs = Array.from({ length: 1 + r.int(3) }, () => {
        const k = r.int(4);
        if (k === 0) return r.pick(HOSTILE);
        const text = stringify(documentFor(r, r.pick(all), k !== 1));
        return k === 1 ? mutateText(r, text) : text;
      });
      const before = await listFiles(dir);
      const res = await meshctl(["create", "-f", "-", ...fs], { stdin: docs.join("\n---\n") });
      checkRun(res, where);
      if (res.code !== 0 && /nothing was created/.test(res.stderr)) {
        assert.deepEqual(await listFiles(dir), before, `${where}: a refused batch wrote files`);
      }
      if (i % 50 === 0) {
        const get = await meshctl(["get", "destinationrule", "keep", ...fs]);
        assert.equal(get.code, 0, `${where}: ${get.stderr}`);
      }
    }
    const get = await meshctl(["get", "destinationrule", "keep", ...fs]);
    assert.equal(get.code, 0, get.stderr);
  });
});

Deno.test("fuzz: meshctl create as a program prints one Error line per problem for hostile input", async () => {
  await withDir(async (dir) => {
    const res = await meshctlProcess(["create", "-f", "-", "-p", "fs", "--configDir", dir], {
      stdin: HOSTILE.join("\n---\n"),
    });
    checkRun(res, "hostile batch");
    assert.equal(res.code, 1);
    const lines = res.stderr.trim().split("\n");
    assert.match(lines.at(-1)!, /^Error: stdin: \d+ problems found; nothing was created$/);
    assert.match(
      res.stderr,
      /document 1: .*contains itself \(a YAML alias inside its own anchor\)/,
    );
    assert.match(res.stderr, /document 5: cannot parse YAML: more than 100 aliases/);
    assert.deepEqual(await listFiles(dir), []);
  });
});

Deno.test("meshctl create refuses input over 4 MiB without reading it all, naming the limit", async () => {
  await withDir(async (dir) => {
    const res = await meshctl(["create", "-f", "-", "-p", "fs", "--configDir", dir], {
      stdin: KEEP + "# " + "x".repeat(5 << 20) + "\n",
    });
    assert.equal(res.code, 1);
    assert.equal(
      res.stderr,
      `Error: standard input is more than ${4 * 1024 * 1024} bytes: split it into several files\n`,
    );
    assert.deepEqual(await listFiles(dir), []);
  });
});
