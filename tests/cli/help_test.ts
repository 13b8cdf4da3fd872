import assert from "node:assert/strict";
import type { CommandSpec } from "../../cli/_shared/command.ts";
import { meshctlSchemas } from "../../lib/model/mod.ts";
import { PROGRAMS, runInProcess, runProgram } from "./_run.ts";
import { SPEC_ALIASES, SPEC_FLAGS, type SpecFlag, type SpecType } from "./spec_flags.ts";

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * Help text with each wrapped description joined back onto its flag's (or command's) line:
 * continuation lines are indented to the description column, flag lines by 2 or 6 spaces.
 */
const unwrap = (help: string) => help.replace(/\n {10,}(?=\S)/g, " ");

/**
 * The type word `--help` shows after the flag name for each spec type (cobra/pflag's words);
 * boolean flags show none.
 */
const HELP_TYPE: Record<SpecType, string> = {
  string: "string",
  int: "int",
  uint: "uint",
  uint16: "uint16",
  float32: "float32",
  duration: "duration",
  boolean: "",
  "string slice": "strings",
  "string array": "stringArray",
};

/** Finds the help line of `--name` and checks its short form, type and default text. */
function checkFlag(help: string, where: string, [name, short, def, type]: SpecFlag) {
  const line = help.split("\n").find((l) =>
    new RegExp(`^\\s*(-[A-Za-z], )?--${escape(name)}( \\S+)?\\s{2,}`).test(l)
  );
  assert.ok(line, `${where}: --${name} missing from help`);
  if (short) {
    assert.match(line, new RegExp(`^\\s*-${short}, --${escape(name)}\\b`), `${where}: -${short}`);
  } else assert.doesNotMatch(line, /^\s*-[A-Za-z], /, `${where}: --${name} has no short form`);
  const shown = new RegExp(`--${escape(name)}(?: (\\S+))?\\s{2,}`).exec(line)?.[1] ?? "";
  assert.equal(shown, HELP_TYPE[type], `${where}: --${name} has type ${type}: ${line}`);
  if (def) {
    assert.ok(line.endsWith(`(default: ${def})`), `${where}: --${name} default ${def}: ${line}`);
  } else assert.ok(!line.includes("(default:"), `${where}: --${name} shows no default: ${line}`);
}

for (const [program, commands] of Object.entries(SPEC_FLAGS)) {
  Deno.test(`${program} --help lists every spec flag with its short form, type and default`, async () => {
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
      for (const f of flags) checkFlag(unwrap(r.stdout), where, f);
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

Deno.test("help [command...] prints the same text as <command...> --help and exits 0", async () => {
  const cases: [string, string[]][] = [
    ["meshctl", ["get"]],
    ["meshctl", ["experimental", "rbac", "can"]],
    ["meshctl", ["pc"]],
    ["meshctl", []],
    ["mesh-discovery", ["discovery"]],
    ["sidecar-injector", ["probe"]],
    ["mesh-agent", ["proxy"]],
    ["mesh-policy", ["crd", "all"]],
    ["mesh_ca", ["version"]],
  ];
  for (const [program, path] of cases) {
    const viaHelp = await runInProcess(program, ["help", ...path]);
    const viaFlag = await runInProcess(program, [...path, "--help"]);
    assert.equal(viaHelp.code, 0, `${program} help ${path.join(" ")}: ${viaHelp.stderr}`);
    assert.equal(viaHelp.stderr, "");
    assert.equal(viaHelp.stdout, viaFlag.stdout, `${program} help ${path.join(" ")}`);
  }
  // Flags before `help` belong to the root, as for any subcommand.
  const afterFlag = await runInProcess("meshctl", ["-n", "x", "help", "get"]);
  assert.equal(afterFlag.stdout, (await runInProcess("meshctl", ["get", "--help"])).stdout);
});

Deno.test("help names an unknown command in one line and exits 2", async () => {
  assert.deepEqual(await runInProcess("meshctl", ["help", "experimental", "nope"]), {
    code: 2,
    stdout: "",
    stderr: "Error: Unknown help topic \"experimental nope\"\nRun 'meshctl --help' for usage.\n",
  });
});

Deno.test("--help keeps an ellipsis at the end of a description before the default", async () => {
  const r = await runInProcess("meshctl", ["experimental", "rbac", "can", "--help"]);
  const line = unwrap(r.stdout).split("\n").find((l) => l.includes("--subject-properties"));
  assert.ok(line?.endsWith("name1=value1,name2=value2,... (default: [])"), line);
  // A single final period is still dropped.
  const port = unwrap((await runInProcess("mesh-discovery", ["discovery", "--help"])).stdout)
    .split("\n")
    .find((l) => l.includes("--port "));
  assert.ok(port?.endsWith("Discovery service port (default: 8080)"), port);
});

Deno.test("--help describes the level flags per the program's number of scopes", async () => {
  const single = unwrap((await runInProcess("meshctl", ["--help"])).stdout);
  assert.match(
    single,
    /--log_output_level string +Minimum level of output: a level \(debug, info, warn, error, none\), or <scope>:<level> pairs/,
  );
  assert.match(
    single,
    /--log_stacktrace_level string +Minimum level at which stack traces are captured: a level \(debug, info, warn, error, none\), or <scope>:<level> pairs/,
  );
  const multi = unwrap((await runInProcess("mesh-policy", ["server", "--help"])).stdout);
  for (const flag of ["log_output_level", "log_stacktrace_level"]) {
    const line = multi.split("\n").find((l) => l.includes(`--${flag} `));
    assert.match(
      line ?? "",
      /comma-separated <scope>:<level> pairs; a plain level applies to the scopes not named/,
    );
  }
});

Deno.test("--help of every command of every program fits in 100 columns", async () => {
  for (const [name, program] of Object.entries(PROGRAMS)) {
    const visit = async (spec: CommandSpec, path: string[]) => {
      const r = await runInProcess(name, [...path, "--help"]);
      assert.equal(r.code, 0, `${name} ${path.join(" ")}`);
      for (const line of r.stdout.split("\n")) {
        assert.ok(line.length <= 100, `${name} ${path.join(" ")} --help: ${line.length}: ${line}`);
      }
      for (const sub of spec.subcommands) await visit(sub, [...path, sub.name]);
    };
    await visit(program.root, []);
  }
});

Deno.test("meshctl --help lists commands by name and alias; arguments are in each command's help", async () => {
  const root = (await runInProcess("meshctl", ["--help"])).stdout;
  const commands = root.split("Commands:\n")[1];
  assert.match(commands, /^ {2}proxy-config\|pc +Retrieves proxy configuration/m);
  assert.match(commands, /^ {2}get +Lists all resources of a type/m);
  assert.doesNotMatch(commands, /\[options\]|<|\[type\]/);
  // descriptions start in the flags' column, not after the longest command line
  const lines = root.split("\n");
  const getColumn = lines.find((l) => l.startsWith("  get "))!.indexOf("Lists all");
  const flagColumn = lines.find((l) => l.includes("--log_rotate_max_backups"))!.indexOf("Max ");
  assert.equal(getColumn, flagColumn);
  assert.ok(flagColumn < 40, `description column ${flagColumn}`);
  const pc = (await runInProcess("meshctl", ["pc", "--help"])).stdout;
  assert.match(
    pc,
    /^Usage: meshctl proxy-config\|pc \[options\] <endpoint\|discovery> <pod-name\|mesh> \[configuration-type\]\n/,
  );
});

Deno.test("meshctl help <command> ignores the words after a command without subcommands", async () => {
  const get = await runInProcess("meshctl", ["get", "--help"]);
  for (const args of [["help", "get", "vs"], ["help", "get", "vs", "reviews"]]) {
    const r = await runInProcess("meshctl", args);
    assert.deepEqual(r, get, args.join(" "));
  }
  const del = await runInProcess("meshctl", ["help", "delete", "virtualservice", "x"]);
  assert.equal(del.stdout, (await runInProcess("meshctl", ["delete", "--help"])).stdout);
  // an unknown name where subcommands are expected is still an error
  assert.equal((await runInProcess("meshctl", ["help", "frob"])).code, 2);
});

Deno.test("meshctl get and delete help list the accepted types and examples", async () => {
  for (const command of ["get", "delete"]) {
    const help = (await runInProcess("meshctl", ["help", command])).stdout;
    const types = help.split("Types (")[1] ?? "";
    assert.ok(types, `${command}: no type list`);
    for (const s of meshctlSchemas) {
      const shown = s.shortNames.length ? `${s.type} (${s.shortNames.join(", ")})` : s.type;
      assert.match(types, new RegExp(`[ ,]${escape(shown)}[,\n]`), `${command}: ${s.type}`);
    }
    assert.match(types, /ingress \(ing\)/);
    assert.match(types, /rule, attributemanifest/);
    const examples = help.split("\nExamples:\n")[1] ?? "";
    const lines = examples.trimEnd().split("\n");
    assert.ok(lines.length >= 2 && lines.every((l) => l.includes(`meshctl `)), examples);
    assert.ok(lines.some((l) => l.trimStart().startsWith(`meshctl ${command} `)), examples);
  }
  const create = (await runInProcess("meshctl", ["create", "--help"])).stdout;
  assert.match(create, /\nExamples:\n {2}meshctl create -f routes\.yaml\n/);
});

Deno.test("meshctl -p help names both platforms", async () => {
  const help = unwrap((await runInProcess("meshctl", ["--help"])).stdout);
  assert.match(
    help,
    /\n {2}-p, --platform string +Mesh host platform: orch \(a cluster\) or fs \(a local directory, with --configDir\) \(default: orch\)\n/,
  );
});
