import assert from "node:assert/strict";
import { runInProcess, runProgram } from "./_run.ts";

/** Usage errors: exactly two stderr lines, nothing on stdout, exit 2. */
function assertUsage(
  r: { code: number; stdout: string; stderr: string },
  message: string | RegExp,
  hint: string,
) {
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stdout, "");
  const lines = r.stderr.split("\n");
  assert.equal(lines.length, 3, r.stderr); // two lines and the final newline
  if (typeof message === "string") assert.equal(lines[0], `Error: ${message}`);
  else assert.match(lines[0], message);
  assert.equal(lines[1], `Run '${hint} --help' for usage.`);
  assert.equal(lines[2], "");
}

Deno.test("bad flag values exit 2 with one line naming the flag and a usage hint", async () => {
  const cases: [string, string[], string, string][] = [
    [
      "mesh-discovery",
      ["discovery", "--port", "abc"],
      'Invalid value for --port: Cannot parse int "abc": not a whole number',
      "mesh-discovery discovery",
    ],
    [
      "mesh-discovery",
      ["discovery", "--resync=1x"],
      'Invalid value for --resync: Cannot parse duration "1x": unknown unit "x"',
      "mesh-discovery discovery",
    ],
    [
      "mesh-policy",
      ["server", "--ctrlz_port", "70000"],
      'Invalid value for --ctrlz_port: Cannot parse uint16 "70000": out of range 0..65535',
      "mesh-policy server",
    ],
    [
      "mesh-policy",
      ["server", "-p", "70000"],
      'Invalid value for --port: Cannot parse uint16 "70000": out of range 0..65535',
      "mesh-policy server",
    ],
    [
      "mesh-policy",
      ["server", "--maxMessageSize", "-5"],
      'Invalid value for --maxMessageSize: Cannot parse uint "-5": must not be negative',
      "mesh-policy server",
    ],
    [
      "mesh_ca",
      ["--workload-cert-grace-period-ratio", "half"],
      'Invalid value for --workload-cert-grace-period-ratio: Cannot parse float32 "half": not a number',
      "mesh_ca",
    ],
    [
      "mesh_ca",
      ["--self-signed-ca=maybe"],
      'Invalid value for --self-signed-ca: Cannot parse bool "maybe": expected true or false',
      "mesh_ca",
    ],
    [
      "meshctl",
      ["gen-deploy", "--ingress-node-port", "70000"],
      'Invalid value for --ingress-node-port: Cannot parse uint16 "70000": out of range 0..65535',
      "meshctl gen-deploy",
    ],
    [
      "sidecar-injector",
      ["probe", "--interval", "5"],
      'Invalid value for --interval: Cannot parse duration "5": missing unit (one of ns, us, µs, ms, s, m, h)',
      "sidecar-injector probe",
    ],
    [
      "mesh-discovery",
      ["--ctrlz_port", "70000", "discovery"],
      'Invalid value for --ctrlz_port: Cannot parse uint16 "70000": out of range 0..65535',
      "mesh-discovery",
    ],
  ];
  for (const [program, args, message, hint] of cases) {
    assertUsage(await runInProcess(program, args), message, hint);
  }
});

Deno.test("bad log levels, log scopes, rotation limits, targets and registries exit 2", async () => {
  const cases: [string, string[], string, string][] = [
    [
      "mesh-discovery",
      ["discovery", "--log_output_level", "foo:info"],
      'Invalid value "foo:info" for --log_output_level: unknown scope "foo" (scopes: ads, default)',
      "mesh-discovery discovery",
    ],
    [
      "mesh-policy",
      ["server", "--log_stacktrace_level=attributes:trace"],
      'Invalid value "attributes:trace" for --log_stacktrace_level: unknown level "trace" (want debug, info, warn, error or none)',
      "mesh-policy server",
    ],
    [
      "meshctl",
      ["get", "x", "--log_output_level", "ads:info"],
      'Invalid value "ads:info" for --log_output_level: unknown scope "ads" (scopes: default)',
      "meshctl get",
    ],
    [
      "mesh-agent",
      ["proxy", "--log_output_level", "verbose"],
      'Invalid value "verbose" for --log_output_level: unknown level "verbose" (want debug, info, warn, error or none)',
      "mesh-agent proxy",
    ],
    [
      "meshctl",
      ["get", "--log_rotate_max_size", "-1"],
      "Invalid value for --log_rotate_max_size: must not be negative, got -1",
      "meshctl get",
    ],
    [
      "mesh-agent",
      ["proxy", "--log_rotate_max_backups=-1"],
      "Invalid value for --log_rotate_max_backups: must not be negative, got -1",
      "mesh-agent proxy",
    ],
    [
      "mesh_ca",
      ["--log_rotate_max_age", "-3"],
      "Invalid value for --log_rotate_max_age: must not be negative, got -3",
      "mesh_ca",
    ],
    [
      "sidecar-injector",
      ["--log_target", "stderr", "--log_target", ""],
      "Invalid value for --log_target: empty target (want stdout, stderr or a file path)",
      "sidecar-injector",
    ],
    [
      "mesh-discovery",
      ["discovery", "--registries", "Orchestrator,Bogus"],
      "Invalid value for --registries: Service registry Bogus is not supported. Supported: " +
      "Orchestrator, RegistryA, RegistryB, PlatformC, Mock, ServiceEntry",
      "mesh-discovery discovery",
    ],
    [
      "mesh-policy",
      ["probe", "--log_caller", "api,nope"],
      'Invalid value "api,nope" for --log_caller: unknown scope "nope" (scopes: adapters, api, attributes, default)',
      "mesh-policy probe",
    ],
  ];
  for (const [program, args, message, hint] of cases) {
    assertUsage(await runInProcess(program, args), message, hint);
  }
});

Deno.test("unknown flags, commands and wrong positional arguments exit 2", async () => {
  assertUsage(
    await runInProcess("meshctl", ["get", "--bogus"]),
    "Unknown option '--bogus'",
    "meshctl get",
  );
  assertUsage(
    await runInProcess("meshctl", ["get", "vs", "--outptu", "yaml"]),
    "Unknown option '--outptu' (did you mean --output?)",
    "meshctl get",
  );
  // mesh-policy version takes --short only (spec), not group L.
  assertUsage(
    await runInProcess("mesh-policy", ["version", "--log_as_json"]),
    "Unknown option '--log_as_json'",
    "mesh-policy version",
  );
  // mesh_ca probe takes the probe flags and L, not the CA flags.
  assertUsage(
    await runInProcess("mesh_ca", ["probe", "--key-size", "1"]),
    "Unknown option '--key-size'",
    "mesh_ca probe",
  );
  assertUsage(
    await runInProcess("mesh-discovery", ["debug", "only-one"]),
    "Missing required argument 'configuration-type'",
    "mesh-discovery debug",
  );
  assertUsage(
    await runInProcess("meshctl", ["deregister", "a", "b", "c"]),
    "Too many arguments for 'deregister'. Expected 2 arguments but got 3: a, b, c.",
    "meshctl deregister",
  );
  assertUsage(
    await runInProcess("meshctl", ["register", "svc", "1.2.3.4"]),
    "Missing required argument 'ports'",
    "meshctl register",
  );
  assertUsage(
    await runInProcess("meshctl", ["experimental", "rbac", "can", "GET", "svc"]),
    "Missing required argument 'PATH'",
    "meshctl experimental rbac can",
  );
  assertUsage(
    await runInProcess("meshctl", ["nope"]),
    'Unknown command "nope" for "meshctl"',
    "meshctl",
  );
  assertUsage(
    await runInProcess("meshctl", ["experimental", "nope"]),
    'Unknown command "nope" for "meshctl experimental"',
    "meshctl experimental",
  );
  assertUsage(
    await runInProcess("mesh_ca", ["serve"]),
    'Unknown command "serve" for "mesh_ca"',
    "mesh_ca",
  );
  assertUsage(
    await runInProcess("meshctl", ["get", "vs", "-n"]),
    "Option '-n, --namespace <string>' argument missing",
    "meshctl get",
  );
});

Deno.test("commands that only group subcommands print their help on stdout", async () => {
  for (
    const [program, args] of [["meshctl", []], ["meshctl", ["experimental"]], [
      "mesh-policy",
      ["crd"],
    ], ["mesh-discovery", []]] as const
  ) {
    const r = await runInProcess(program, [...args]);
    assert.equal(r.code, 0);
    assert.equal(r.stderr, "");
    assert.match(r.stdout, /^Usage: /);
    assert.match(r.stdout, /\nCommands:\n/);
  }
});

Deno.test("each program as a subprocess reports a bad value on stderr and exits 2", async () => {
  const cases: [string, string[], string][] = [
    ["mesh-discovery", ["discovery", "--resync", "1x"], "mesh-discovery discovery"],
    ["sidecar-injector", ["--port", "abc"], "sidecar-injector"],
    ["mesh-agent", ["proxy", "--drainDuration", "2"], "mesh-agent proxy"],
    ["mesh-policy", ["server", "--log_output_level", "foo:info"], "mesh-policy server"],
    ["meshctl", ["get", "--nope"], "meshctl get"],
    ["mesh_ca", ["--key-size", "big"], "mesh_ca"],
  ];
  await Promise.all(cases.map(async ([program, args, hint]) => {
    assertUsage(await runProgram(program, args), /^Error: \S/, hint);
  }));
  // a failure (not a usage error): one Error line, exit 1
  const r = await runProgram("meshctl", [
    "register",
    "svc",
    "10.0.0.1",
    "http:80",
    "-c",
    "/nonexistent/kubeconfig",
  ]);
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    /^Error: Cannot read kubeconfig "\/nonexistent\/kubeconfig": no such file .*\n$/,
  );
});
