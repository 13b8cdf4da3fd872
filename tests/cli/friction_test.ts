/**
 * First-run friction (issue 14): help without side effects, errors that name what to change,
 * quiet ends when the reader of the output goes away.
 */
import assert from "node:assert/strict";
import { runInProcess } from "./_run.ts";
import { withTempDir } from "../harness/procs.ts";

const ROOT = new URL("../../", import.meta.url);

/** Runs `deno run -A <script> ...args` from the repository root. */
async function run(script: string, args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script, ...args],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("bench --help lists the benches and runs none; <name> --help describes one", async () => {
  const all = await run("bench/main.ts", ["--help"]);
  assert.equal(all.code, 0, all.stderr);
  assert.match(all.stdout, /^Usage: deno task bench \[<name>\] \[flags\]/);
  assert.match(all.stdout, /\nBenches:\n( {2}\w+\n)+/);
  assert.match(all.stdout, /\n {2}xds\n/);
  assert.doesNotMatch(all.stdout, /# bench/, "no bench started");
  const one = await run("bench/main.ts", ["xds", "--help"]);
  assert.equal(one.code, 0, one.stderr);
  assert.match(one.stdout, /^bench xds: xDS scale benchmark/);
  assert.match(one.stdout, /--proxyless-share 0\.5/, "the proxyless mix is described");
  assert.doesNotMatch(one.stdout, /# bench/, "the bench did not start");
  const bad = await run("bench/main.ts", ["nope"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^Error: unknown bench "nope" \(benches: .*xds/);
});

Deno.test("every bench file run directly answers --help without starting", async () => {
  const files: string[] = [];
  for await (const e of Deno.readDir(new URL("bench/", ROOT))) {
    if (/^[a-z][a-z0-9_]*\.ts$/.test(e.name) && !e.name.endsWith("_test.ts")) files.push(e.name);
  }
  assert.ok(files.includes("xds.ts") && files.includes("push_gc_trace.ts"), files.join(" "));
  const results = await Promise.all(
    files.map(async (f) => ({ f, r: await run(`bench/${f}`, ["--help"]) })),
  );
  for (const { f, r } of results) {
    assert.equal(r.code, 0, `${f}: ${r.stderr}`);
    // a description or a usage line, and nothing a run prints (its figures, its tables)
    assert.match(r.stdout, /^\S[^\n]{20,}/, `${f}: ${r.stdout.slice(0, 200)}`);
    assert.doesNotMatch(
      r.stdout,
      /^##? |\| --- \||# bench /m,
      `${f} started: ${r.stdout.slice(0, 300)}`,
    );
  }
});

Deno.test("no bench imports bench/main.ts back: its top-level await, loading the bench, would wait forever", async () => {
  // `deno task bench xds ...` hung with "Top-level await promise never resolved" when xds.ts took
  // helpIfAsked() from main.ts (2026-11-29 to 2026-11-30).
  const { BENCHES } = await import("../../bench/main.ts");
  const main = new URL("bench/main.ts", ROOT).href;
  const graphs = await Promise.all(
    Object.keys(BENCHES).map(async (name) => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["info", "--json", `bench/${name}.ts`],
        cwd: ROOT,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(
        out.code,
        0,
        `deno info bench/${name}.ts: ${new TextDecoder().decode(out.stderr)}`,
      );
      const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
        modules: { specifier: string }[];
      };
      return { name, specifiers: info.modules.map((m) => m.specifier) };
    }),
  );
  for (const { name, specifiers } of graphs) {
    assert.ok(specifiers.some((s) => s.endsWith(`/bench/${name}.ts`)), `${name}: its own module`);
    assert.ok(!specifiers.includes(main), `bench/${name}.ts imports bench/main.ts`);
  }
});

Deno.test("mesh-discovery debug --help lists the configuration types and the address it reads", async () => {
  const r = await runInProcess("mesh-discovery", ["debug", "--help"]);
  assert.equal(r.code, 0);
  for (const t of ["ads", "eds", "syncz", "all"]) {
    assert.match(r.stdout, new RegExp(`^    ${t} +\\S`, "m"), t);
  }
  assert.match(
    r.stdout,
    /--discoveryAddress <host>:<port>, else\nthe environment variable MESH_DISCOVERY_ADDR, else 127\.0\.0\.1:9093\./,
  );
  const bad = await runInProcess("mesh-discovery", ["debug", "all", "bogustype"]);
  assert.equal(bad.code, 2);
  assert.match(
    bad.stderr,
    /^Error: "bogustype" is not a supported debugging config type \(valid types: ads, eds, syncz, all\)\n/,
  );
});

Deno.test("flag value errors have one form: Invalid value for --<flag>: <reason>", async () => {
  for (const args of [["--port", "abc"], ["--port", "99999"], ["--grpcAddr", "x"]]) {
    const r = await runInProcess("mesh-discovery", ["discovery", ...args]);
    assert.equal(r.code, 2, `${args}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`^Error: Invalid value for ${args[0]}: `), r.stderr);
  }
});

Deno.test("a program whose output reader goes away (| head) ends quietly", async () => {
  await withTempDir(async (dir) => {
    const docs = Array.from(
      { length: 1500 },
      (_, i) =>
        `apiVersion: networking.mesh.io/v1alpha3\nkind: VirtualService\n` +
        `metadata: {name: vs-${i}, namespace: default}\nspec:\n  hosts: [h${i}]\n` +
        `  http: [{route: [{destination: {host: h${i}}}]}]\n`,
    ).join("---\n");
    await Deno.writeTextFile(`${dir}/all.yaml`, docs);
    // a real pipe into head, as a user types it; the program's stderr and status are kept
    const script = `"${Deno.execPath()}" run -A cli/meshctl.ts get virtualservices -p fs ` +
      `--configDir "${dir}" -o yaml 2>"${dir}/err"; echo $? >"${dir}/code"`;
    const out = await new Deno.Command("bash", {
      args: ["-c", `{ ${script}; } | head -1`],
      cwd: ROOT,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    }).output();
    assert.equal(new TextDecoder().decode(out.stdout), "apiVersion: networking.mesh.io/v1alpha3\n");
    assert.equal(await Deno.readTextFile(`${dir}/err`), "");
    assert.equal((await Deno.readTextFile(`${dir}/code`)).trim(), "0");
  });
});
