import assert from "node:assert/strict";
import {
  defaultInjectConfig,
  defaultMeshConfig,
  defaultProxyConfig,
  parseInjectConfig,
  parseMeshConfig,
} from "./mod.ts";

Deno.test("defaultMeshConfig() has the code defaults with mesh names", () => {
  const mc = defaultMeshConfig();
  assert.equal(mc.ingressClass, "mesh");
  assert.equal(mc.ingressControllerMode, "STRICT");
  assert.equal(mc.authPolicy, "NONE");
  assert.equal(mc.proxyListenPort, 15001);
  assert.equal(mc.proxyHttpPort, 0);
  assert.equal(mc.connectTimeout, "1s");
  assert.equal(mc.rdsRefreshDelay, "1s");
  assert.equal(mc.enableTracing, true);
  assert.equal(mc.accessLogFile, "/dev/stdout");
  assert.deepEqual(mc.outboundTrafficPolicy, { mode: "REGISTRY_ONLY" });
  assert.deepEqual(mc.defaultConfig, {
    configPath: "/etc/mesh/proxy",
    binaryPath: "/usr/local/bin/proxy-binary",
    serviceCluster: "mesh-proxy",
    drainDuration: "2s",
    parentShutdownDuration: "3s",
    discoveryAddress: "mesh-discovery:15007",
    discoveryRefreshDelay: "1s",
    zipkinAddress: "",
    connectTimeout: "1s",
    statsdUdpAddress: "",
    proxyAdminPort: 15000,
    availabilityZone: "",
    controlPlaneAuthPolicy: "NONE",
    customConfigFile: "",
    statNameLength: 0,
    concurrency: 0,
    proxyBootstrapTemplatePath: "",
    interceptionMode: "REDIRECT",
  });
});

Deno.test("parseMeshConfig() gives the defaults for an empty document", () => {
  assert.deepEqual(parseMeshConfig("", "mesh"), defaultMeshConfig());
  assert.deepEqual(parseMeshConfig("# only a comment\n", "mesh"), defaultMeshConfig());
});

Deno.test("parseMeshConfig() overlays the file and keeps proxy defaults not given", () => {
  const mc = parseMeshConfig(
    `
authPolicy: MUTUAL_TLS
mtlsExcludedServices: ["kubernetes.default.svc.cluster.local"]
ingressService: mesh-ingress
rdsRefreshDelay: 10s
defaultConfig:
  drainDuration: 45s
  parentShutdownDuration: 1m0s
  discoveryAddress: mesh-discovery.mesh-system:15005
  zipkinAddress: tracera.mesh-system:9411
  connectTimeout: 10s
  controlPlaneAuthPolicy: MUTUAL_TLS
`,
    "configmap mesh-system/mesh",
  );
  assert.equal(mc.authPolicy, "MUTUAL_TLS");
  assert.deepEqual(mc.mtlsExcludedServices, ["kubernetes.default.svc.cluster.local"]);
  assert.equal(mc.ingressService, "mesh-ingress");
  assert.equal(mc.ingressClass, "mesh");
  assert.equal(mc.rdsRefreshDelay, "10s");
  assert.deepEqual(mc.defaultConfig, {
    ...defaultProxyConfig(),
    drainDuration: "45s",
    parentShutdownDuration: "1m0s",
    discoveryAddress: "mesh-discovery.mesh-system:15005",
    zipkinAddress: "tracera.mesh-system:9411",
    connectTimeout: "10s",
    controlPlaneAuthPolicy: "MUTUAL_TLS",
  });
});

Deno.test("parseMeshConfig() normalizes durations to Go form and copies mixerAddress", () => {
  const mc = parseMeshConfig(
    "mixerAddress: mesh-policy:9091\ndefaultConfig: {parentShutdownDuration: 90s}\n",
    "m",
  );
  assert.equal(mc.defaultConfig.parentShutdownDuration, "1m30s");
  assert.equal(mc.mixerCheckServer, "mesh-policy:9091");
  assert.equal(mc.mixerReportServer, "mesh-policy:9091");
});

Deno.test("parseMeshConfig() rejects unknown fields and bad values with their paths", () => {
  assert.throws(
    () =>
      parseMeshConfig("authPolicy: TLS\ndefaultConfig:\n  bogus: 1\n  proxyAdminPort: 0\n", "mesh"),
    {
      message:
        'Invalid mesh configuration mesh: authPolicy: must be one of NONE, MUTUAL_TLS, got "TLS"; ' +
        "defaultConfig.bogus: unknown field (known fields: configPath, binaryPath, serviceCluster, drainDuration, " +
        "parentShutdownDuration, discoveryAddress, discoveryRefreshDelay, zipkinAddress, connectTimeout, " +
        "statsdUdpAddress, proxyAdminPort, availabilityZone, controlPlaneAuthPolicy, customConfigFile, " +
        "statNameLength, concurrency, proxyBootstrapTemplatePath, interceptionMode); " +
        "defaultConfig.proxyAdminPort: must be between 1 and 65535, got 0",
    },
  );
  assert.throws(() => parseMeshConfig("connectTimeout: 5x\n", "mesh"), {
    message:
      'Invalid mesh configuration mesh: connectTimeout: invalid duration "5x": expected a number with unit h, m, s or ms, such as "300ms", "5s", "1m30s"',
  });
  assert.throws(() => parseMeshConfig("[1, 2]\n", "mesh"), {
    message: "Invalid mesh configuration mesh: must be an object, got a list",
  });
  assert.throws(
    () => parseMeshConfig("a: [\n", "mesh"),
    /^Error: Cannot parse mesh configuration mesh: /,
  );
});

Deno.test("parseMeshConfig() applies the proxy duration, address and required-field rules", () => {
  assert.throws(
    () =>
      parseMeshConfig(
        `
rdsRefreshDelay: 20m
connectTimeout: 31s
defaultConfig:
  configPath: ""
  drainDuration: 1500ms
  parentShutdownDuration: 2h
  discoveryRefreshDelay: 500ms
  discoveryAddress: mesh-discovery
  statsdUdpAddress: "statsd:99999"
`,
        "mesh",
      ),
    {
      message: "Invalid mesh configuration mesh: defaultConfig.configPath: must be set; " +
        "defaultConfig.drainDuration: must be a whole number of seconds, got 1.5s; " +
        "defaultConfig.parentShutdownDuration: must be at most 1h0m0s, got 2h0m0s; " +
        "defaultConfig.discoveryRefreshDelay: must be between 1s and 10m0s, got 500ms; " +
        'defaultConfig.discoveryAddress: invalid address "mesh-discovery": must be <host>:<port>; ' +
        'defaultConfig.statsdUdpAddress: invalid address "statsd:99999": port "99999" must be a number between 1 and 65535; ' +
        "connectTimeout: must be between 1ms and 30s, got 31s; " +
        "rdsRefreshDelay: must be between 1s and 10m0s, got 20m0s",
    },
  );
  assert.throws(
    () =>
      parseMeshConfig("defaultConfig: {drainDuration: 5s, parentShutdownDuration: 5s}\n", "mesh"),
    {
      message:
        "Invalid mesh configuration mesh: defaultConfig.parentShutdownDuration: must be greater than drainDuration (5s), got 5s",
    },
  );
});

Deno.test("parseInjectConfig() reads policy and template with defaults", () => {
  assert.deepEqual(defaultInjectConfig(), { policy: "enabled", template: "" });
  assert.deepEqual(
    parseInjectConfig("policy: disabled\ntemplate: |\n  containers: []\n", "inject"),
    {
      policy: "disabled",
      template: "containers: []\n",
    },
  );
  assert.deepEqual(parseInjectConfig("template: x\n", "inject"), {
    policy: "enabled",
    template: "x",
  });
  assert.throws(() => parseInjectConfig("policy: on\nextra: 1\n", "inject"), {
    message:
      'Invalid injection configuration inject: policy: must be one of enabled, disabled, got "on"; ' +
      "extra: unknown field (known fields: policy, template)",
  });
});
