import assert from "node:assert/strict";
import { levelEnabled, parseLevels, parseScopes } from "./levels.ts";

const SCOPES = ["ads", "default"];
const FLAG = "--log_output_level";

Deno.test("parseLevels() reads the scoped form", () => {
  assert.deepEqual(parseLevels("ads:debug,default:info", SCOPES, FLAG), {
    ads: "debug",
    default: "info",
  });
});

Deno.test("parseLevels() applies a plain level to every scope", () => {
  assert.deepEqual(parseLevels("debug", SCOPES, FLAG), { ads: "debug", default: "debug" });
  assert.deepEqual(parseLevels("warn", ["adapters", "api", "attributes", "default"], FLAG), {
    adapters: "warn",
    api: "warn",
    attributes: "warn",
    default: "warn",
  });
});

Deno.test("parseLevels() applies a plain level to the scopes not named, in any order", () => {
  assert.deepEqual(parseLevels("debug,ads:info", SCOPES, FLAG), { ads: "info", default: "debug" });
  assert.deepEqual(parseLevels("ads:info,debug", SCOPES, FLAG), { ads: "info", default: "debug" });
  const policy = ["adapters", "api", "attributes", "default"];
  assert.deepEqual(parseLevels("api:debug,warn", policy, FLAG), {
    adapters: "warn",
    api: "debug",
    attributes: "warn",
    default: "warn",
  });
});

Deno.test("parseLevels() lets later elements win for the same scope", () => {
  assert.deepEqual(parseLevels("ads:debug, ads:none", SCOPES, FLAG), { ads: "none" });
  assert.deepEqual(parseLevels("debug,error", SCOPES, FLAG), { ads: "error", default: "error" });
});

Deno.test("parseLevels() returns only the scopes named when the value is scoped", () => {
  assert.deepEqual(parseLevels("default:error", SCOPES, FLAG), { default: "error" });
});

Deno.test("parseLevels() rejects an unknown level naming the flag", () => {
  assert.throws(
    () => parseLevels("verbose", SCOPES, FLAG),
    {
      message:
        'Invalid value "verbose" for --log_output_level: unknown level "verbose" (want debug, info, warn, error or none)',
    },
  );
});

Deno.test("parseLevels() rejects an unknown scope listing the known ones", () => {
  assert.throws(
    () => parseLevels("foo:info", SCOPES, "--log_stacktrace_level"),
    {
      message:
        'Invalid value "foo:info" for --log_stacktrace_level: unknown scope "foo" (scopes: ads, default)',
    },
  );
});

Deno.test("parseLevels() rejects empty values and elements", () => {
  assert.throws(() => parseLevels("", SCOPES, FLAG), { message: /empty value/ });
  assert.throws(() => parseLevels("ads:info,,", SCOPES, FLAG), { message: /empty element/ });
});

Deno.test("parseScopes() reads --log_caller and rejects unknown scopes", () => {
  assert.deepEqual(parseScopes("", SCOPES, "--log_caller"), []);
  assert.deepEqual(parseScopes("ads,default,ads", SCOPES, "--log_caller"), ["ads", "default"]);
  assert.throws(() => parseScopes("ads,x", SCOPES, "--log_caller"), {
    message: 'Invalid value "ads,x" for --log_caller: unknown scope "x" (scopes: ads, default)',
  });
});

Deno.test("levelEnabled() passes records at or above the threshold and nothing at none", () => {
  assert.equal(levelEnabled("debug", "debug"), true);
  assert.equal(levelEnabled("debug", "info"), false);
  assert.equal(levelEnabled("error", "warn"), true);
  assert.equal(levelEnabled("error", "none"), false);
});
