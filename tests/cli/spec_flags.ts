/**
 * Every flag of every command, written by hand from the spec text
 * (/work/shared/spec/mesh-reference.md), NOT derived from the code: program → command path →
 * [flag, short form ("" when none), default as the spec writes it ("" for "empty" / "off"),
 * type as the spec writes it].
 *
 * Where the spec writes a placeholder default, the concrete value is used and noted.
 * @module
 */

/** A flag type as the spec writes it. */
export type SpecType =
  | "string"
  | "int"
  | "uint"
  | "uint16"
  | "float32"
  | "duration"
  | "boolean"
  | "string slice"
  | "string array";

/** [flag name without dashes, short letter or "", default text or "", spec type]. */
export type SpecFlag = readonly [string, string, string, SpecType];

const L = (): SpecFlag[] => [
  ["log_as_json", "", "", "boolean"],
  ["log_caller", "", "", "string"],
  ["log_output_level", "", "default:info", "string"],
  ["log_rotate", "", "", "string"],
  ["log_rotate_max_age", "", "30", "int"],
  ["log_rotate_max_backups", "", "1000", "int"],
  ["log_rotate_max_size", "", "104857600", "int"],
  ["log_stacktrace_level", "", "default:none", "string"],
  ["log_target", "", "[stdout]", "string array"],
];
const I = (): SpecFlag[] => [
  ["ctrlz_address", "", "127.0.0.1", "string"],
  ["ctrlz_port", "", "9876", "uint16"],
];
const PROBE = (): SpecFlag[] => [
  ["interval", "", "0s", "duration"],
  ["probe-path", "", "", "string"],
];
const SHORT: SpecFlag = ["short", "s", "", "boolean"];

const DISCOVERY: SpecFlag[] = [
  ["appNamespace", "a", "", "string"],
  ["platformcConfig", "", "", "string"],
  ["clusterRegistriesConfigMap", "", "", "string"],
  ["clusterRegistriesNamespace", "", "mesh-system", "string"],
  ["configDir", "", "", "string"],
  ["regaserverInterval", "", "2s", "duration"],
  ["regaserverURL", "", "", "string"],
  ["regbserverInterval", "", "2s", "duration"],
  ["regbserverURL", "", "", "string"],
  ["discovery_cache", "", "", "boolean"],
  ["domain", "", "cluster.local", "string"],
  ["grpcAddr", "", ":15010", "string"],
  ["secureGrpcAddr", "", ":15012", "string"],
  ["orchconfig", "", "", "string"],
  ["meshConfig", "", "/etc/mesh/config/mesh", "string"],
  ["monitoringPort", "", "9093", "int"],
  ["namespace", "n", "", "string"],
  ["port", "", "8080", "int"],
  ["profile", "", "", "boolean"],
  ["registries", "", "[Orchestrator]", "string slice"],
  ["resync", "", "1m0s", "duration"],
  ["webhookEndpoint", "", "", "string"],
];

const INJECTOR: SpecFlag[] = [
  ["caCertFile", "", "/etc/mesh/certs/root-cert.pem", "string"],
  ["healthCheckFile", "", "", "string"],
  ["healthCheckInterval", "", "0s", "duration"],
  ["injectConfig", "", "/etc/mesh/inject/config", "string"],
  ["orchconfig", "", "", "string"],
  ["meshConfig", "", "/etc/mesh/config/mesh", "string"],
  ["port", "", "443", "int"],
  ["tlsCertFile", "", "/etc/mesh/certs/cert-chain.pem", "string"],
  ["tlsKeyFile", "", "/etc/mesh/certs/key.pem", "string"],
  ["webhookConfigName", "", "mesh-sidecar-injector", "string"],
  // spec: `sidecar-injector.<mesh_domain>`; mesh domain = mesh.io
  ["webhookName", "", "sidecar-injector.mesh.io", "string"],
];

const AGENT_PROXY: SpecFlag[] = [
  ["availabilityZone", "", "", "string"],
  ["binaryPath", "", "/usr/local/bin/proxy-binary", "string"],
  ["bootstrapv2", "", "", "boolean"],
  ["concurrency", "", "0", "int"],
  ["configPath", "", "/etc/mesh/proxy", "string"],
  ["connectTimeout", "", "1s", "duration"],
  ["controlPlaneAuthPolicy", "", "NONE", "string"],
  ["customConfigFile", "", "", "string"],
  ["disableInternalTelemetry", "", "", "boolean"],
  ["discoveryAddress", "", "mesh-discovery:15007", "string"],
  ["discoveryRefreshDelay", "", "1s", "duration"],
  ["domain", "", "", "string"],
  ["drainDuration", "", "2s", "duration"],
  ["id", "", "", "string"],
  ["ip", "", "", "string"],
  ["parentShutdownDuration", "", "3s", "duration"],
  ["proxyAdminPort", "", "15000", "int"],
  ["proxyLogLevel", "", "warn", "string"],
  ["serviceCluster", "", "mesh-proxy", "string"],
  ["serviceregistry", "", "Orchestrator", "string"],
  ["statsdUdpAddress", "", "", "string"],
  ["templateFile", "", "", "string"],
  ["tracerBAddress", "", "", "string"],
];

const POLICY_SERVER: SpecFlag[] = [
  ["adapterWorkerPoolSize", "", "1024", "int"],
  ["address", "", "", "string"],
  ["apiWorkerPoolSize", "", "1024", "int"],
  ["configDefaultNamespace", "", "mesh-system", "string"],
  ["configStoreURL", "", "", "string"],
  ["livenessProbeInterval", "", "0s", "duration"],
  ["livenessProbePath", "", "", "string"],
  ["maxConcurrentStreams", "", "1024", "uint"],
  ["maxMessageSize", "", "1048576", "uint"],
  ["monitoringPort", "", "9093", "uint16"],
  ["port", "p", "9091", "uint16"],
  ["profile", "", "", "boolean"],
  ["readinessProbeInterval", "", "0s", "duration"],
  ["readinessProbePath", "", "", "string"],
  ["singleThreaded", "", "", "boolean"],
  ["trace_tracera_url", "", "", "string"],
  ["trace_log_spans", "", "", "boolean"],
  ["trace_tracerb_url", "", "", "string"],
];

const MESHCTL_GLOBAL = (): SpecFlag[] => [
  ["meshNamespace", "i", "mesh-system", "string"],
  // spec: value of the orchestrator-config environment variable, else the per-user default
  ["orchconfig", "c", "$KUBECONFIG else $HOME/.kube/config", "string"],
  ["namespace", "n", "", "string"],
  ["platform", "p", "orch", "string"],
  ...L(),
];

const CA: SpecFlag[] = [
  ["append-dns-names", "", "", "boolean"],
  ["cert-chain", "", "", "string"],
  ["ca-storage-namespace", "", "mesh-system", "string"],
  ["custom-dns-names", "", "", "string"],
  ["enable-profiling", "", "", "boolean"],
  ["grpc-host-identities", "", "mesh-ca,mesh-citadel", "string"],
  ["grpc-hostname", "", "mesh-ca", "string"],
  ["grpc-port", "", "8060", "int"],
  ["key-size", "", "2048", "int"],
  ["orch-config", "", "", "string"],
  ["listened-namespace", "", "", "string"],
  ["liveness-probe-interval", "", "0s", "duration"],
  ["liveness-probe-path", "", "", "string"],
  ["max-workload-cert-ttl", "", "2160h0m0s", "duration"],
  ["monitoring-port", "", "9093", "int"],
  ["org", "", "", "string"],
  ["probe-check-interval", "", "30s", "duration"],
  ["requested-ca-cert-ttl", "", "8760h0m0s", "duration"],
  ["root-cert", "", "", "string"],
  ["self-signed-ca", "", "", "boolean"],
  ["self-signed-ca-cert-ttl", "", "8760h0m0s", "duration"],
  // spec: `<orchestrator>.cluster.local`
  ["self-signed-ca-org", "", "orch.cluster.local", "string"],
  ["sign-ca-certs", "", "", "boolean"],
  ["signing-cert", "", "", "string"],
  ["signing-key", "", "", "string"],
  ["upstream-ca-address", "", "", "string"],
  ["workload-cert-grace-period-ratio", "", "0.5", "float32"],
  ["workload-cert-min-grace-period", "", "10m0s", "duration"],
  ["workload-cert-ttl", "", "2160h0m0s", "duration"],
];

/** program → command path (space separated, "" = root) → flags. */
export const SPEC_FLAGS: Record<string, Record<string, SpecFlag[]>> = {
  "mesh-discovery": {
    "": [...L(), ...I()],
    "debug": [...L(), ...I()],
    "discovery": [...DISCOVERY, ...L(), ...I()],
    "version": [SHORT, ...L(), ...I()],
  },
  "sidecar-injector": {
    "": [...INJECTOR, ...L()],
    "probe": [...PROBE(), ...INJECTOR, ...L()],
    "version": [SHORT, ...INJECTOR, ...L()],
  },
  "mesh-agent": {
    "": L(),
    "debug": L(),
    "proxy": [...AGENT_PROXY, ...L()],
    "version": [SHORT, ...L()],
  },
  "mesh-policy": {
    "crd adapter": L(),
    "crd all": L(),
    "crd instance": L(),
    "probe": [...PROBE(), ...L()],
    "server": [...POLICY_SERVER, ...L(), ...I()],
    "version": [SHORT],
  },
  "meshctl": {
    "": MESHCTL_GLOBAL(),
    "context-create": [
      ["api-server", "", "", "string"],
      ["context", "", "mesh", "string"],
      ...MESHCTL_GLOBAL(),
    ],
    "create": [["file", "f", "", "string"], ...MESHCTL_GLOBAL()],
    "replace": [["file", "f", "", "string"], ...MESHCTL_GLOBAL()],
    "delete": [["file", "f", "", "string"], ...MESHCTL_GLOBAL()],
    "get": [["output", "o", "short", "string"], ...MESHCTL_GLOBAL()],
    "register": [
      ["annotations", "a", "[]", "string slice"],
      ["labels", "l", "[]", "string slice"],
      ["serviceaccount", "s", "default", "string"],
      ...MESHCTL_GLOBAL(),
    ],
    "deregister": MESHCTL_GLOBAL(),
    "kube-inject": [
      ["filename", "f", "", "string"],
      ["output", "o", "", "string"],
      ["injectConfigFile", "", "", "string"],
      ["injectConfigMapName", "", "mesh-sidecar-injector", "string"],
      ["meshConfigFile", "", "", "string"],
      ["meshConfigMapName", "", "mesh", "string"],
      ...MESHCTL_GLOBAL(),
    ],
    "proxy-config": MESHCTL_GLOBAL(),
    "gen-deploy": [
      ["debug", "", "", "boolean"],
      ["chart-dir", "", ".", "string"],
      // spec: "a fixed image repository" / "a fixed pinned version tag"
      ["hyperkube-hub", "", "quay.io/coreos/hyperkube", "string"],
      ["hyperkube-tag", "", "v1.7.6_coreos.0", "string"],
      ["ingress-node-port", "", "0", "uint16"],
      ["values", "", "", "string"],
      ...MESHCTL_GLOBAL(),
    ],
    "experimental": MESHCTL_GLOBAL(),
    "experimental convert-networking-config": [
      ["filenames", "f", "[]", "string slice"],
      ["output", "o", "-", "string"],
      ...MESHCTL_GLOBAL(),
    ],
    "experimental metrics": MESHCTL_GLOBAL(),
    "experimental rbac": MESHCTL_GLOBAL(),
    "experimental rbac can": [
      ["user", "u", "", "string"],
      ["groups", "g", "", "string"],
      ["subject-properties", "s", "[]", "string array"],
      ["action-properties", "a", "[]", "string array"],
      ...MESHCTL_GLOBAL(),
    ],
    "version": [SHORT, ...MESHCTL_GLOBAL()],
  },
  "mesh_ca": {
    "": [...CA, ...L()],
    "probe": [...PROBE(), ...L()],
    "version": [SHORT, ...L()],
  },
};

/** Command aliases named by the spec: program → [alias path, command path]. */
export const SPEC_ALIASES: Record<string, [string, string][]> = {
  meshctl: [["pc", "proxy-config"], ["experimental m", "experimental metrics"]],
};
