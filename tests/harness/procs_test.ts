import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { V8_FLAGS } from "../../compile.ts";
import {
  defaultDenoArgs,
  freePort,
  freeServerPort,
  programScript,
  runProgram,
  spawnProgram,
  waitUntil,
  withTempDir,
} from "./procs.ts";

const SERVER = `
const stop = () => { console.log("stopping"); Deno.exit(0); };
Deno.addSignalListener("SIGTERM", stop);
console.log("ready " + Deno.args.join(","));
console.error("to stderr");
setInterval(() => {}, 1000);
`;

const STUBBORN = `
Deno.addSignalListener("SIGTERM", () => console.log("ignoring SIGTERM"));
console.log("ready");
setInterval(() => {}, 1000);
`;

Deno.test("spawnProgram() collects output, waitFor matches it and stop() ends the program with SIGTERM", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/server.ts`, SERVER);
    await using proc = spawnProgram(`${dir}/server.ts`, ["a", "b"]);
    assert.equal(await proc.waitFor(/ready \S+/, 10_000), "ready a,b");
    await proc.waitFor("to stderr", 10_000, "stderr");
    const status = await proc.stop();
    assert.equal(status.code, 0);
    assert.equal(proc.stdout(), "ready a,b\nstopping\n");
    assert.equal(proc.stderr(), "to stderr\n");
    assert.ok(proc.exited);
  });
});

Deno.test("stop() kills with SIGKILL when the program ignores SIGTERM past the grace period", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/stubborn.ts`, STUBBORN);
    const proc = spawnProgram(`${dir}/stubborn.ts`);
    await proc.waitFor("ready", 10_000);
    const status = await proc.stop(300);
    assert.equal(status.signal, "SIGKILL");
    assert.match(proc.stdout(), /ignoring SIGTERM/);
  });
});

Deno.test("waitFor() rejects with the output when the program exits before matching", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/quit.ts`, `console.log("bye"); Deno.exit(3);`);
    const proc = spawnProgram(`${dir}/quit.ts`);
    await assert.rejects(
      proc.waitFor(/never/, 10_000),
      /exited before its both matched \/never\/; output:\nbye/,
    );
    assert.equal((await proc.status).code, 3);
  });
});

Deno.test("waitFor() rejects when the deadline passes", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/server.ts`, SERVER);
    await using proc = spawnProgram(`${dir}/server.ts`);
    await assert.rejects(
      proc.waitFor((out) => out.includes("never"), 200),
      /did not match .* within 200 ms/,
    );
  });
});

Deno.test("runProgram() returns exit code and output and passes stdin and env", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(
      `${dir}/echo.ts`,
      `const input = await new Response(Deno.stdin.readable).text();
       console.log(input.toUpperCase() + Deno.env.get("GREETING"));
       Deno.exit(2);`,
    );
    const r = await runProgram(`${dir}/echo.ts`, [], { stdin: "abc", env: { GREETING: "hi" } });
    assert.deepEqual(r, { code: 2, signal: null, stdout: "ABChi\n", stderr: "" });
  });
});

Deno.test("programScript() maps a bare program name to cli/<name>.ts and keeps paths", () => {
  assert.match(programScript("meshctl"), /\/cli\/meshctl\.ts$/);
  assert.equal(programScript("./x/y.ts"), "./x/y.ts");
  assert.throws(() => programScript(""), /must not be empty/);
});

Deno.test("freeServerPort() returns a port below the ephemeral range that can be bound on every address", () => {
  const [low] = Deno.readTextFileSync("/proc/sys/net/ipv4/ip_local_port_range").split(/\s+/).map(
    Number,
  );
  for (let i = 0; i < 5; i++) {
    const port = freeServerPort();
    assert.ok(port >= 10_000 && port < low, `port ${port}, ephemeral from ${low}`);
    Deno.listen({ hostname: "0.0.0.0", port }).close();
  }
});

Deno.test("freePort() returns a port that can be bound on 127.0.0.1", () => {
  const port = freePort();
  assert.ok(port > 0 && port < 65536);
  const listener = Deno.listen({ hostname: "127.0.0.1", port });
  listener.close();
});

Deno.test("withTempDir() removes the directory even when the callback throws", async () => {
  let seen = "";
  await assert.rejects(
    withTempDir((dir) => {
      seen = dir;
      Deno.writeTextFileSync(`${dir}/f`, "x");
      throw new Error("inner");
    }),
    /inner/,
  );
  assert.notEqual(seen, "");
  assert.equal(existsSync(seen), false);
});

Deno.test("waitUntil() resolves once the predicate holds and times out naming what it waited for", async () => {
  let n = 0;
  await waitUntil(() => ++n >= 3, 1000, "n to reach 3", 1);
  assert.equal(n, 3);
  await assert.rejects(
    waitUntil(
      () => {
        throw new Error("not yet");
      },
      50,
      "nothing",
    ),
    /Timed out after 50 ms waiting for nothing: last error: not yet/,
  );
});

Deno.test("spawnProgram() runs a program of cli/ with the V8 flags it is built with, and other scripts with -A alone", () => {
  const discovery = V8_FLAGS["mesh-discovery"];
  assert.ok(discovery?.length);
  assert.deepEqual(defaultDenoArgs(programScript("mesh-discovery")), [
    "-A",
    `--v8-flags=${discovery.join(",")}`,
  ]);
  assert.deepEqual(defaultDenoArgs(programScript("mesh-policy")), [
    "-A",
    `--v8-flags=${V8_FLAGS["mesh-policy"]!.join(",")}`,
  ]);
  assert.deepEqual(defaultDenoArgs(programScript("meshctl")), ["-A"]);
  assert.deepEqual(defaultDenoArgs("/tmp/cli/mesh-discovery.ts"), ["-A"]);
  assert.deepEqual(defaultDenoArgs(programScript("cli/demo.ts")), ["-A"]);
});
