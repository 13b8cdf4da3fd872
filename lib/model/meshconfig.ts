/**
 * Mesh configuration (MeshConfig with its default ProxyConfig) and the sidecar injection
 * configuration: types, code defaults, YAML parsing with validation.
 * @module
 */
import { firstErrorLine } from "./errors.ts";
import { parse as parseYaml } from "../deps/yaml.ts";
import {
  arr,
  bool,
  duration,
  enumOf,
  int,
  type Issue,
  obj,
  type ObjectSchema,
  port,
  str,
  validate,
} from "./dsl.ts";
import { checkHostPort, formatDuration, parseDurationMs } from "./values.ts";

/** How ingress objects are selected (§ ingress class). */
export type IngressControllerMode = "OFF" | "DEFAULT" | "STRICT";
/** Mesh-wide authentication between sidecars. */
export type AuthPolicy = "NONE" | "MUTUAL_TLS";
/** Authentication between the proxy and the control plane. */
export type ControlPlaneAuthPolicy = "NONE" | "MUTUAL_TLS" | "INHERIT";
/** Traffic capture mode of the sidecar. */
export type InterceptionMode = "REDIRECT" | "TPROXY";
/** What the sidecar does with traffic to unknown destinations. */
export type OutboundTrafficPolicyMode = "REGISTRY_ONLY" | "ALLOW_ANY" | "VIRTUAL_SERVICE_ONLY";

/** Proxy configuration (`defaultConfig` of the mesh configuration). Durations are Go-style strings. */
export interface ProxyConfig {
  configPath: string;
  binaryPath: string;
  serviceCluster: string;
  drainDuration: string;
  parentShutdownDuration: string;
  discoveryAddress: string;
  discoveryRefreshDelay: string;
  zipkinAddress: string;
  connectTimeout: string;
  statsdUdpAddress: string;
  proxyAdminPort: number;
  availabilityZone: string;
  controlPlaneAuthPolicy: ControlPlaneAuthPolicy;
  customConfigFile: string;
  statNameLength: number;
  concurrency: number;
  proxyBootstrapTemplatePath: string;
  interceptionMode: InterceptionMode;
}

/** Mesh configuration (config map `mesh`, key `mesh`). Durations are Go-style strings (`1s`, `1m0s`). */
export interface MeshConfig {
  mixerCheckServer: string;
  mixerReportServer: string;
  /** Deprecated: copied into both servers when they are empty. */
  mixerAddress: string;
  disablePolicyChecks: boolean;
  proxyListenPort: number;
  /** 0 = disabled. */
  proxyHttpPort: number;
  connectTimeout: string;
  ingressClass: string;
  ingressService: string;
  ingressControllerMode: IngressControllerMode;
  authPolicy: AuthPolicy;
  mtlsExcludedServices: string[];
  rdsRefreshDelay: string;
  enableTracing: boolean;
  accessLogFile: string;
  outboundTrafficPolicy: { mode: OutboundTrafficPolicyMode };
  defaultConfig: ProxyConfig;
}

/** The code default of the proxy configuration. */
export function defaultProxyConfig(): ProxyConfig {
  return {
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
  };
}

/** The code default of the mesh configuration (used when no file is given). */
export function defaultMeshConfig(): MeshConfig {
  return {
    mixerCheckServer: "",
    mixerReportServer: "",
    mixerAddress: "",
    disablePolicyChecks: false,
    proxyListenPort: 15001,
    proxyHttpPort: 0,
    connectTimeout: "1s",
    ingressClass: "mesh",
    ingressService: "",
    ingressControllerMode: "STRICT",
    authPolicy: "NONE",
    mtlsExcludedServices: [],
    rdsRefreshDelay: "1s",
    enableTracing: true,
    accessLogFile: "/dev/stdout",
    outboundTrafficPolicy: { mode: "REGISTRY_ONLY" },
    defaultConfig: defaultProxyConfig(),
  };
}

const proxyConfigSchema = obj({
  configPath: str(),
  binaryPath: str(),
  serviceCluster: str(),
  drainDuration: duration(),
  parentShutdownDuration: duration(),
  discoveryAddress: str(),
  discoveryRefreshDelay: duration(),
  zipkinAddress: str(),
  connectTimeout: duration(),
  statsdUdpAddress: str(),
  proxyAdminPort: port(),
  availabilityZone: str(),
  controlPlaneAuthPolicy: enumOf(["NONE", "MUTUAL_TLS", "INHERIT"]),
  customConfigFile: str(),
  statNameLength: int({ min: 0 }),
  concurrency: int({ min: 0 }),
  proxyBootstrapTemplatePath: str(),
  interceptionMode: enumOf(["REDIRECT", "TPROXY"]),
});

/** The DSL schema of the mesh configuration file. */
export const meshConfigSchema: ObjectSchema = obj({
  mixerCheckServer: str(),
  mixerReportServer: str(),
  mixerAddress: str(),
  disablePolicyChecks: bool(),
  proxyListenPort: port(),
  proxyHttpPort: int({ min: 0, max: 65535 }),
  connectTimeout: duration(),
  ingressClass: str(),
  ingressService: str(),
  ingressControllerMode: enumOf(["OFF", "DEFAULT", "STRICT"]),
  authPolicy: enumOf(["NONE", "MUTUAL_TLS"]),
  mtlsExcludedServices: arr(str()),
  rdsRefreshDelay: duration(),
  enableTracing: bool(),
  accessLogFile: str(),
  outboundTrafficPolicy: obj({
    mode: enumOf(["REGISTRY_ONLY", "ALLOW_ANY", "VIRTUAL_SERVICE_ONLY"]),
  }),
  defaultConfig: proxyConfigSchema,
});

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function overlay<T extends object>(base: T, raw: Record<string, unknown>): T {
  const out = { ...base } as Record<string, unknown>;
  for (const [k, v] of Object.entries(raw)) {
    if (v === null || v === undefined) continue;
    out[k] = typeof v === "string" && /Duration|Delay|Timeout$/i.test(k)
      ? formatDuration(parseDurationMs(v)!)
      : v;
  }
  return out as T;
}

const MS = 1;
const S = 1000 * MS;
const MIN = 60 * S;

function durationIn(out: Issue[], path: string, value: string, min: number, max: number): number {
  const ms = parseDurationMs(value)!;
  if (ms < min || ms > max) {
    out.push({
      path,
      reason: `must be between ${formatDuration(min)} and ${formatDuration(max)}, got ${value}`,
    });
  }
  return ms;
}

/** Checks the semantic rules of a (merged) mesh configuration; returns every problem. */
export function validateMeshConfig(mc: MeshConfig): Issue[] {
  const out: Issue[] = [];
  const pc = mc.defaultConfig;
  const p = (k: string) => `defaultConfig.${k}`;
  for (const k of ["configPath", "binaryPath", "serviceCluster", "discoveryAddress"] as const) {
    if (!pc[k]) out.push({ path: p(k), reason: "must be set" });
  }
  const drain = parseDurationMs(pc.drainDuration)!;
  const parent = parseDurationMs(pc.parentShutdownDuration)!;
  for (const [k, ms] of [["drainDuration", drain], ["parentShutdownDuration", parent]] as const) {
    if (ms < 1) out.push({ path: p(k), reason: `must be at least 1ms, got ${pc[k]}` });
    else if (ms % 1000 !== 0) {
      out.push({ path: p(k), reason: `must be a whole number of seconds, got ${pc[k]}` });
    } else if (ms > 60 * MIN) {
      out.push({ path: p(k), reason: `must be at most 1h0m0s, got ${pc[k]}` });
    }
  }
  if (drain >= 1 && parent >= 1 && parent <= drain) {
    out.push({
      path: p("parentShutdownDuration"),
      reason:
        `must be greater than drainDuration (${pc.drainDuration}), got ${pc.parentShutdownDuration}`,
    });
  }
  durationIn(out, p("discoveryRefreshDelay"), pc.discoveryRefreshDelay, 1 * S, 10 * MIN);
  durationIn(out, p("connectTimeout"), pc.connectTimeout, 1 * MS, 30 * S);
  for (const k of ["discoveryAddress", "zipkinAddress", "statsdUdpAddress"] as const) {
    if (pc[k]) {
      const bad = checkHostPort(pc[k]);
      if (bad) out.push({ path: p(k), reason: bad });
    }
  }
  durationIn(out, "connectTimeout", mc.connectTimeout, 1 * MS, 30 * S);
  durationIn(out, "rdsRefreshDelay", mc.rdsRefreshDelay, 1 * S, 10 * MIN);
  for (const k of ["mixerCheckServer", "mixerReportServer", "mixerAddress"] as const) {
    if (mc[k]) {
      const bad = checkHostPort(mc[k]);
      if (bad) out.push({ path: k, reason: bad });
    }
  }
  return out;
}

function issuesLine(what: string, label: string, issues: Issue[]): string {
  return `Invalid ${what} ${label}: ${
    issues.map((i) => i.path ? `${i.path}: ${i.reason}` : i.reason).join("; ")
  }`;
}

function parseDoc(text: string, what: string, label: string): unknown {
  try {
    return parseYaml(text);
  } catch (e) {
    // the parser's first line, without the colon that introduces its code frame
    const msg = firstErrorLine((e as Error).message);
    throw new Error(`Cannot parse ${what} ${label}: ${msg}`);
  }
}

/**
 * Parses mesh configuration YAML (camelCase proto-JSON names): starts from the defaults,
 * overlays the file, re-applies the defaults inside `defaultConfig` (so a partial proxy
 * config keeps the other defaults), copies a deprecated `mixerAddress` into empty mixer
 * servers, then validates. Throws an Error with a one-line message listing every problem
 * (`Invalid mesh configuration <label>: defaultConfig.drainDuration: ...; ...`).
 * An empty document gives the defaults.
 */
export function parseMeshConfig(yamlText: string, label: string): MeshConfig {
  const raw = parseDoc(yamlText, "mesh configuration", label) ?? {};
  const issues = validate(meshConfigSchema, raw, "");
  if (issues.length) throw new Error(issuesLine("mesh configuration", label, issues));
  const r = raw as Record<string, unknown>;
  const defaults = defaultMeshConfig();
  const mc = overlay(defaults, { ...r, defaultConfig: null, outboundTrafficPolicy: null });
  mc.defaultConfig = overlay(
    defaultProxyConfig(),
    isRecord(r.defaultConfig) ? r.defaultConfig : {},
  );
  mc.outboundTrafficPolicy = overlay(
    defaults.outboundTrafficPolicy,
    isRecord(r.outboundTrafficPolicy) ? r.outboundTrafficPolicy : {},
  );
  mc.mtlsExcludedServices = [...mc.mtlsExcludedServices];
  if (mc.mixerAddress && !mc.mixerCheckServer && !mc.mixerReportServer) {
    mc.mixerCheckServer = mc.mixerAddress;
    mc.mixerReportServer = mc.mixerAddress;
  }
  const semantic = validateMeshConfig(mc);
  if (semantic.length) throw new Error(issuesLine("mesh configuration", label, semantic));
  return mc;
}

// ---- injection configuration -------------------------------------------------------------------

/** Sidecar injection policy: inject unless a pod opts out (`enabled`), or only on opt-in. */
export type InjectionPolicy = "enabled" | "disabled";

/** Injection configuration (config map `mesh-sidecar-injector`, key `config`). */
export interface InjectConfig {
  policy: InjectionPolicy;
  /** Sidecar template (text template with `[[` `]]` delimiters). */
  template: string;
}

/** Default injection configuration: policy `enabled`, empty template. */
export function defaultInjectConfig(): InjectConfig {
  return { policy: "enabled", template: "" };
}

const injectConfigSchema = obj({ policy: enumOf(["enabled", "disabled"]), template: str() });

/**
 * Parses the injection configuration YAML (`policy: enabled|disabled`, `template: <string>`);
 * missing fields take the defaults. Throws an Error with a one-line message on bad input.
 */
export function parseInjectConfig(yamlText: string, label: string): InjectConfig {
  const raw = parseDoc(yamlText, "injection configuration", label) ?? {};
  const issues = validate(injectConfigSchema, raw, "");
  if (issues.length) throw new Error(issuesLine("injection configuration", label, issues));
  return overlay(defaultInjectConfig(), raw as Record<string, unknown>);
}
