import assert from "node:assert/strict";
import { bool, duration, flag, string, stringArray, stringSlice } from "../../lib/flags/mod.ts";
import { command, type ProgramSpec } from "../../cli/_shared/command.ts";
import { UsageError } from "../../cli/_shared/context.ts";
import { loggingGroup, versionGroup } from "../../cli/_shared/groups.ts";
import { toLogOptions } from "../../cli/_shared/logging.ts";
import { orchconfigDefault } from "../../cli/meshctl/flags.ts";
import { runInProcess } from "./_run.ts";

const L = loggingGroup(["default", "api"]);
const globals = {
  id: "g",
  title: "Globals",
  heading: "Global flags:",
  flags: [
    flag({ name: "namespace", short: "n", type: string, default: "", help: "Namespace." }),
    flag({ name: "orchconfig", short: "c", type: string, default: "", help: "Config." }),
  ] as const,
};
const own = [
  flag({ name: "profile", type: bool, default: false, help: "Profile." }),
  flag({ name: "resync", type: duration, default: 60_000, help: "Resync." }),
  flag({ name: "labels", short: "l", type: stringSlice, default: [], help: "Labels." }),
  flag({ name: "subject-properties", short: "s", type: stringArray, default: [], help: "Props." }),
] as const;

let seen: {
  opts: Record<string, unknown>;
  args: string[];
  path: readonly string[];
  argv?: readonly string[];
} | undefined;

const test: ProgramSpec = {
  name: "t",
  logScopes: ["default", "api"],
  envDefaults: orchconfigDefault,
  root: command({
    name: "t",
    summary: "Test program.",
    groups: [globals, L],
    subcommands: [
      command({
        name: "leaf",
        summary: "Leaf.",
        args: ["<a>", "[rest...]"],
        flags: own,
        groups: [globals, L],
        load: () =>
          Promise.resolve({
            run(opts, args, ctx) {
              seen = { opts: { ...opts }, args, path: ctx.commandPath, argv: ctx.args };
              return Promise.resolve(args[0] === "fail" ? 3 : undefined);
            },
          }),
      }),
      command({
        name: "boom",
        summary: "Throws.",
        args: ["<kind>"],
        groups: [versionGroup],
        load: () =>
          Promise.resolve({
            run(_opts, args) {
              if (args[0] === "usage") throw new UsageError("Argument <kind> must be x");
              throw new Error("disk on fire\nsecond line");
            },
          }),
      }),
    ],
  }),
};

Deno.test("runCli() passes a typed options object with defaults and env defaults filled", async () => {
  seen = undefined;
  const r = await runInProcess(test, ["leaf", "x"], { KUBECONFIG: "/k/config" });
  assert.deepEqual(r, { code: 0, stdout: "", stderr: "" });
  assert.deepEqual(seen!.args, ["x"]);
  assert.deepEqual(seen!.path, ["t", "leaf"]);
  assert.deepEqual(seen!.argv, ["leaf", "x"]);
  assert.equal(seen!.opts.resync, 60_000);
  assert.equal(seen!.opts.profile, false);
  assert.deepEqual(seen!.opts.labels, []);
  assert.deepEqual(seen!.opts.log_target, ["stdout"]);
  assert.equal(seen!.opts.log_output_level, "default:info");
  assert.equal(seen!.opts.orchconfig, "/k/config");
  await runInProcess(test, ["leaf", "x"], { HOME: "/home/u" });
  assert.equal(seen!.opts.orchconfig, "/home/u/.kube/config");
});

Deno.test("runCli() merges flags given before and after the subcommand; the leaf wins", async () => {
  const r = await runInProcess(test, [
    "-n",
    "parent",
    "--log_target",
    "stderr",
    "leaf",
    "a",
    "b",
    "c",
    "--profile",
    "--resync=1.5s",
    "-l",
    "x,y",
    "--labels",
    "z",
    "-s",
    "k=v,k2=v2",
    "-s",
    "k3=v3",
    "-n",
    "child",
    "-c",
    "/explicit",
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(seen!.args, ["a", "b", "c"]);
  // ctx.args is the whole argument vector as given, flags before the subcommand included.
  assert.deepEqual(seen!.argv?.slice(0, 5), ["-n", "parent", "--log_target", "stderr", "leaf"]);
  assert.equal(seen!.opts.namespace, "child");
  assert.deepEqual(seen!.opts.log_target, ["stderr"]);
  assert.equal(seen!.opts.profile, true);
  assert.equal(seen!.opts.resync, 1500);
  assert.deepEqual(seen!.opts.labels, ["x", "y", "z"]);
  assert.deepEqual(seen!.opts.subjectProperties, ["k=v,k2=v2", "k3=v3"]);
  assert.equal(seen!.opts.orchconfig, "/explicit");
});

Deno.test("runCli() reads --flag=false for booleans and never lets a bare boolean eat an argument", async () => {
  await runInProcess(test, ["leaf", "--profile=false", "a"]);
  assert.equal(seen!.opts.profile, false);
  await runInProcess(test, ["leaf", "--profile", "a"]);
  assert.equal(seen!.opts.profile, true);
  assert.deepEqual(seen!.args, ["a"]);
});

Deno.test("runCli() returns the action's exit code and maps thrown errors to 2 and 1", async () => {
  assert.equal((await runInProcess(test, ["leaf", "fail"])).code, 3);
  assert.deepEqual(await runInProcess(test, ["boom", "usage"]), {
    code: 2,
    stdout: "",
    stderr: "Error: Argument <kind> must be x\nRun 't boom --help' for usage.\n",
  });
  assert.deepEqual(await runInProcess(test, ["boom", "other"]), {
    code: 1,
    stdout: "",
    stderr: "Error: disk on fire second line\n",
  });
});

Deno.test("toLogOptions() turns group L values into lib/log's LogOptions", () => {
  const opts = toLogOptions({
    log_as_json: true,
    log_caller: "api",
    log_output_level: "api:debug,warn",
    log_rotate: "/tmp/x.log",
    log_rotate_max_age: 30,
    log_rotate_max_backups: 1000,
    log_rotate_max_size: 104857600,
    log_stacktrace_level: "default:none",
    log_target: ["stdout", "stderr"],
  }, ["adapters", "api", "attributes", "default"]);
  assert.deepEqual(opts, {
    asJson: true,
    caller: ["api"],
    // A plain level applies to every scope the value does not name.
    outputLevels: { adapters: "warn", api: "debug", attributes: "warn", default: "warn" },
    stacktraceLevels: { default: "none" },
    rotate: "/tmp/x.log",
    rotateMaxAgeDays: 30,
    rotateMaxBackups: 1000,
    rotateMaxSizeMB: 104857600,
    targets: ["stdout", "stderr"],
    scopes: ["adapters", "api", "attributes", "default"],
  });
});
