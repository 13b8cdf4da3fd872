import assert from "node:assert/strict";
import {
  bool,
  defaultText,
  duration,
  flag,
  FlagValueError,
  normalizeBoolArgs,
  optionKey,
  resolveOptions,
  string,
  stringArray,
} from "./mod.ts";

const table = [
  flag({ name: "profile", type: bool, default: false, help: "Profile." }),
  flag({ name: "short", short: "s", type: bool, default: false, help: "Short." }),
  flag({ name: "probe-path", type: string, default: "", help: "Path." }),
  flag({ name: "resync", type: duration, default: 60_000, help: "Resync." }),
  flag({ name: "log_target", type: stringArray, default: ["stdout"], help: "Targets." }),
] as const;

Deno.test("flag() rejects malformed names and short forms", () => {
  assert.throws(() => flag({ name: "--x", type: string, default: "", help: "" }), {
    message: 'Invalid flag name "--x"',
  });
  assert.throws(() => flag({ name: "x", short: "xy", type: string, default: "", help: "" }), {
    message: 'Invalid short form "xy" of flag --x',
  });
});

Deno.test("defaultText() shows the default as the spec writes it and hides empty ones", () => {
  assert.deepEqual(table.map(defaultText), ["", "", "", "1m0s", "[stdout]"]);
  const custom = flag({
    name: "orchconfig",
    type: string,
    default: "",
    defaultText: "$KUBECONFIG",
    help: "",
  });
  assert.equal(defaultText(custom), "$KUBECONFIG");
});

Deno.test("optionKey() camel-cases kebab names and keeps snake and camel case", () => {
  assert.equal(optionKey("probe-path"), "probePath");
  assert.equal(optionKey("workload-cert-grace-period-ratio"), "workloadCertGracePeriodRatio");
  assert.equal(optionKey("log_as_json"), "log_as_json");
  assert.equal(optionKey("meshNamespace"), "meshNamespace");
});

Deno.test("normalizeBoolArgs() gives bare booleans an explicit value and stops at --", () => {
  assert.deepEqual(
    normalizeBoolArgs(["--profile", "x", "-s", "--profile=false", "--", "--profile"], table),
    ["--profile=true", "x", "--short=true", "--profile=false", "--", "--profile"],
  );
});

Deno.test("resolveOptions() takes the first source holding a flag, else the default", () => {
  const leaf = new Map<string, unknown>([["resync", 1000]]);
  const parent = new Map<string, unknown>([["resync", 5], ["probe-path", "/p"]]);
  const opts = resolveOptions(table, [leaf, parent]);
  assert.deepEqual(opts, {
    profile: false,
    short: false,
    probePath: "/p",
    resync: 1000,
    log_target: ["stdout"],
  });
  assert.ok(Object.isFrozen(opts));
});

Deno.test("FlagValueError names the flag once", () => {
  assert.equal(
    new FlagValueError("port", 'Cannot parse int "x": not a whole number').message,
    'Invalid value for --port: Cannot parse int "x": not a whole number',
  );
  assert.equal(new FlagValueError("log_caller", "Bad --log_caller").message, "Bad --log_caller");
});
