/**
 * Every flag of every command, written by hand from the spec text
 * (/work/shared/spec/mesh-reference.md), NOT derived from the code: program → command path →
 * [flag, short form ("" when none), default as the spec writes it ("" for "empty" / "off")].
 *
 * Where the spec writes a placeholder default, the concrete value is used and noted.
 * @module
 */

/** [flag name without dashes, short letter or "", default text or ""]. */
export type SpecFlag = readonly [string, string, string];

const L = (): SpecFlag[] => [
  ["log_as_json", "", ""],
  ["log_caller", "", ""],
  ["log_output_level", "", "default:info"],
  ["log_rotate", "", ""],
  ["log_rotate_max_age", "", "30"],
  ["log_rotate_max_backups", "", "1000"],
  ["log_rotate_max_size", "", "104857600"],
  ["log_stacktrace_level", "", "default:none"],
  ["log_target", "", "[stdout]"],
];
const I = (): SpecFlag[] => [
  ["ctrlz_address", "", "127.0.0.1"],
  ["ctrlz_port", "", "9876"],
];
const PROBE = (): SpecFlag[] => [
  ["interval", "", "0s"],
  ["probe-path", "", ""],
];
const SHORT: SpecFlag = ["short", "s", ""];

const DISCOVERY: SpecFlag[] = [
  ["appNamespace", "a", ""],
  ["platformcConfig", "", ""],
  ["clusterRegistriesConfigMap", "", ""],
  ["clusterRegistriesNamespace", "", "mesh-system"],
  ["configDir", "", ""],
  ["regaserverInterval", "", "2s"],
  ["regaserverURL", "", ""],
  ["regbserverInterval", "", "2s"],
  ["regbserverURL", "", ""],
  ["discovery_cache", "", ""],
  ["domain", "", "cluster.local"],
  ["grpcAddr", "", ":15010"],
  ["secureGrpcAddr", "", ":15012"],
  ["orchconfig", "", ""],
  ["meshConfig", "", "/etc/mesh/config/mesh"],
  ["monitoringPort", "", "9093"],
  ["namespace", "n", ""],
  ["port", "", "8080"],
  ["profile", "", ""],
  ["registries", "", "[Orchestrator]"],
  ["resync", "", "1m0s"],
  ["webhookEndpoint", "", ""],
];

const INJECTOR: SpecFlag[] = [
  ["caCertFile", "", "/etc/mesh/certs/root-cert.pem"],
  ["healthCheckFile", "", ""],
  ["healthCheckInterval", "", "0s"],
  ["injectConfig", "", "/etc/mesh/inject/config"],
  ["orchconfig", "", ""],
  ["meshConfig", "", "/etc/mesh/config/mesh"],
  ["port", "", "443"],
  ["tlsCertFile", "", "/etc/mesh/certs/cert-chain.pem"],
  ["tlsKeyFile", "", "/etc/mesh/certs/key.pem"],
  ["webhookConfigName", "", "mesh-sidecar-injector"],
  // spec: `sidecar-injector.<mesh_domain>`; mesh domain = mesh.io
  ["webhookName", "", "sidecar-injector.mesh.io"],
];

const AGENT_PROXY: SpecFlag[] = [
  ["availabilityZone", "", ""],
  ["binaryPath", "", "/usr/local/bin/proxy-binary"],
  ["bootstrapv2", "", ""],
  ["concurrency", "", "0"],
  ["configPath", "", "/etc/mesh/proxy"],
  ["connectTimeout", "", "1s"],
  ["controlPlaneAuthPolicy", "", "NONE"],
  ["customConfigFile", "", ""],
  ["disableInternalTelemetry", "", ""],
  ["discoveryAddress", "", "mesh-discovery:15007"],
  ["discoveryRefreshDelay", "", "1s"],
  ["domain", "", ""],
  ["drainDuration", "", "2s"],
  ["id", "", ""],
  ["ip", "", ""],
  ["parentShutdownDuration", "", "3s"],
  ["proxyAdminPort", "", "15000"],
  ["proxyLogLevel", "", "warn"],
  ["serviceCluster", "", "mesh-proxy"],
  ["serviceregistry", "", "Orchestrator"],
  ["statsdUdpAddress", "", ""],
  ["templateFile", "", ""],
  ["tracerBAddress", "", ""],
];

const POLICY_SERVER: SpecFlag[] = [
  ["adapterWorkerPoolSize", "", "1024"],
  ["address", "", ""],
  ["apiWorkerPoolSize", "", "1024"],
  ["configDefaultNamespace", "", "mesh-system"],
  ["configStoreURL", "", ""],
  ["livenessProbeInterval", "", "0s"],
  ["livenessProbePath", "", ""],
  ["maxConcurrentStreams", "", "1024"],
  ["maxMessageSize", "", "1048576"],
  ["monitoringPort", "", "9093"],
  ["port", "p", "9091"],
  ["profile", "", ""],
  ["readinessProbeInterval", "", "0s"],
  ["readinessProbePath", "", ""],
  ["singleThreaded", "", ""],
  ["trace_tracera_url", "", ""],
  ["trace_log_spans", "", ""],
  ["trace_tracerb_url", "", ""],
];

const MESHCTL_GLOBAL = (): SpecFlag[] => [
  ["meshNamespace", "i", "mesh-system"],
  // spec: value of the orchestrator-config environment variable, else the per-user default
  ["orchconfig", "c", "$KUBECONFIG else $HOME/.kube/config"],
  ["namespace", "n", ""],
  ["platform", "p", "orch"],
  ...L(),
];

const CA: SpecFlag[] = [
  ["append-dns-names", "", ""],
  ["cert-chain", "", ""],
  ["ca-storage-namespace", "", "mesh-system"],
  ["custom-dns-names", "", ""],
  ["enable-profiling", "", ""],
  ["grpc-host-identities", "", "mesh-ca,mesh-citadel"],
  ["grpc-hostname", "", "mesh-ca"],
  ["grpc-port", "", "8060"],
  ["key-size", "", "2048"],
  ["orch-config", "", ""],
  ["listened-namespace", "", ""],
  ["liveness-probe-interval", "", "0s"],
  ["liveness-probe-path", "", ""],
  ["max-workload-cert-ttl", "", "2160h0m0s"],
  ["monitoring-port", "", "9093"],
  ["org", "", ""],
  ["probe-check-interval", "", "30s"],
  ["requested-ca-cert-ttl", "", "8760h0m0s"],
  ["root-cert", "", ""],
  ["self-signed-ca", "", ""],
  ["self-signed-ca-cert-ttl", "", "8760h0m0s"],
  // spec: `<orchestrator>.cluster.local`
  ["self-signed-ca-org", "", "orch.cluster.local"],
  ["sign-ca-certs", "", ""],
  ["signing-cert", "", ""],
  ["signing-key", "", ""],
  ["upstream-ca-address", "", ""],
  ["workload-cert-grace-period-ratio", "", "0.5"],
  ["workload-cert-min-grace-period", "", "10m0s"],
  ["workload-cert-ttl", "", "2160h0m0s"],
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
    "context-create": [["api-server", "", ""], ["context", "", "mesh"], ...MESHCTL_GLOBAL()],
    "create": [["file", "f", ""], ...MESHCTL_GLOBAL()],
    "replace": [["file", "f", ""], ...MESHCTL_GLOBAL()],
    "delete": [["file", "f", ""], ...MESHCTL_GLOBAL()],
    "get": [["output", "o", "short"], ...MESHCTL_GLOBAL()],
    "register": [
      ["annotations", "a", "[]"],
      ["labels", "l", "[]"],
      ["serviceaccount", "s", "default"],
      ...MESHCTL_GLOBAL(),
    ],
    "deregister": MESHCTL_GLOBAL(),
    "kube-inject": [
      ["filename", "f", ""],
      ["output", "o", ""],
      ["injectConfigFile", "", ""],
      ["injectConfigMapName", "", "mesh-sidecar-injector"],
      ["meshConfigFile", "", ""],
      ["meshConfigMapName", "", "mesh"],
      ...MESHCTL_GLOBAL(),
    ],
    "proxy-config": MESHCTL_GLOBAL(),
    "gen-deploy": [
      ["debug", "", ""],
      ["chart-dir", "", "."],
      // spec: "a fixed image repository" / "a fixed pinned version tag"
      ["hyperkube-hub", "", "quay.io/coreos/hyperkube"],
      ["hyperkube-tag", "", "v1.7.6_coreos.0"],
      ["ingress-node-port", "", "0"],
      ["values", "", ""],
      ...MESHCTL_GLOBAL(),
    ],
    "experimental": MESHCTL_GLOBAL(),
    "experimental convert-networking-config": [
      ["filenames", "f", "[]"],
      ["output", "o", "-"],
      ...MESHCTL_GLOBAL(),
    ],
    "experimental metrics": MESHCTL_GLOBAL(),
    "experimental rbac": MESHCTL_GLOBAL(),
    "experimental rbac can": [
      ["user", "u", ""],
      ["groups", "g", ""],
      ["subject-properties", "s", "[]"],
      ["action-properties", "a", "[]"],
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
