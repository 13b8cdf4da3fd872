import assert from "node:assert/strict";
import { runInProcess, runProgram } from "./_run.ts";
import { SPEC_ALIASES, SPEC_FLAGS } from "./spec_flags.ts";

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Finds the help line of `--name` and checks its short form and default text. */
function checkFlag(help: string, where: string, [name, short, def]: readonly string[]) {
  const line = help.split("\n").find((l) =>
    new RegExp(`^\\s*(-[A-Za-z], )?--${escape(name)}( \\S+)?\\s{2,}`).test(l)
  );
  assert.ok(line, `${where}: --${name} missing from help`);
  if (short) {
    assert.match(line, new RegExp(`^\\s*-${short}, --${escape(name)}\\b`), `${where}: -${short}`);
  } else assert.doesNotMatch(line, /^\s*-[A-Za-z], /, `${where}: --${name} has no short form`);
  if (def) {
    assert.ok(line.endsWith(`(default: ${def})`), `${where}: --${name} default ${def}: ${line}`);
  } else assert.ok(!line.includes("(default:"), `${where}: --${name} shows no default: ${line}`);
}

for (const [program, commands] of Object.entries(SPEC_FLAGS)) {
  Deno.test(`${program} --help lists every spec flag with its short form and default`, async () => {
    for (const [path, flags] of Object.entries(commands)) {
      const args = [...(path ? path.split(" ") : []), "--help"];
      const r = await runInProcess(program, args);
      const where = `${program} ${args.join(" ")}`;
      assert.equal(r.code, 0, where);
      assert.equal(r.stderr, "", where);
      assert.match(
        r.stdout,
        new RegExp(`^Usage: ${escape([program, path].filter(Boolean).join(" "))}[ |]`),
      );
      for (const f of flags) checkFlag(r.stdout, where, f);
    }
  });
}

Deno.test("meshctl aliases pc and experimental m reach their commands", async () => {
  for (const [alias, target] of SPEC_ALIASES.meshctl) {
    const r = await runInProcess("meshctl", [...alias.split(" "), "--help"]);
    assert.equal(r.code, 0);
    assert.match(r.stdout, new RegExp(`^Usage: meshctl ${target}\\|`));
  }
});

Deno.test("every program prints its help as a subprocess, listing its subcommands", async () => {
  const expected: Record<string, string[]> = {
    "mesh-discovery": ["debug", "discovery", "version"],
    "sidecar-injector": ["probe", "version"],
    "mesh-agent": ["debug", "proxy", "version"],
    "mesh-policy": ["crd", "probe", "server", "version"],
    meshctl: [
      "context-create",
      "create",
      "replace",
      "delete",
      "get",
      "register",
      "deregister",
      "kube-inject",
      "proxy-config|pc",
      "gen-deploy",
      "experimental",
      "version",
    ],
    mesh_ca: ["probe", "version"],
  };
  await Promise.all(
    Object.entries(expected).map(async ([program, subs]) => {
      const r = await runProgram(program, ["--help"]);
      assert.equal(r.code, 0, program);
      assert.equal(r.stderr, "", program);
      const commands = r.stdout.split("Commands:\n")[1] ?? "";
      for (const s of subs) {
        assert.match(commands, new RegExp(`^  ${escape(s)} `, "m"), `${program} ${s}`);
      }
    }),
  );
});
