/**
 * Pure pieces of `meshctl experimental workload bootstrap`: argument checks and the environment
 * file of mesh-agent.
 * @module
 */

import { UsageError } from "../_shared/context.ts";

/** Names of the files the command writes into `-o <dir>`. */
export const WORKLOAD_FILES = {
  root: "root-cert.pem",
  token: "token",
  jwks: "jwks.json",
  env: "mesh-agent.env",
  certs: "certs",
} as const;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const HOST_PORT = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/;

/** Checks a service account or namespace name (a DNS label); throws {@link UsageError}. */
export function checkName(what: string, name: string): void {
  if (!DNS_LABEL.test(name)) {
    throw new UsageError(
      `Invalid ${what} ${JSON.stringify(name)}: want a DNS label (lower case letters, digits, "-")`,
    );
  }
}

/** Checks `--ca-address`; throws {@link UsageError} naming the flag. */
export function checkCaAddress(v: string): void {
  const m = HOST_PORT.exec(v);
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) {
    throw new UsageError(`Invalid value ${JSON.stringify(v)} for --ca-address: want <host>:<port>`);
  }
}

/** What {@link agentEnvFile} writes. */
export interface WorkloadEnv {
  readonly serviceAccount: string;
  readonly namespace: string;
  /** Absolute output directory. */
  readonly dir: string;
  readonly caAddress: string;
  readonly ip: string;
}

/** Quotes a value for a shell and for systemd's `EnvironmentFile=` when it needs quoting. */
function quote(v: string): string {
  return /^[A-Za-z0-9_./:@%+,=-]*$/.test(v) ? v : `'${v.replaceAll("'", `'\\''`)}'`;
}

/**
 * The environment file of mesh-agent for the workload: its identity (`POD_NAME` = the service
 * account, `POD_NAMESPACE`, `INSTANCE_IP`, `MESH_META_NAMESPACE`) and mesh_ca (`MESH_CA_ADDRESS`,
 * `MESH_CA_ROOT_CERT`, `MESH_CA_TOKEN_FILE`), with the certificates going to `<dir>/certs`
 * (`MESH_CERT_DIR`). `KEY=value` lines (quoted where needed): `set -a; . <file>; set +a` in a
 * shell, `EnvironmentFile=` in systemd.
 */
export function agentEnvFile(w: WorkloadEnv): string {
  const vars: [string, string][] = [
    ["POD_NAME", w.serviceAccount],
    ["POD_NAMESPACE", w.namespace],
    ["INSTANCE_IP", w.ip],
    ["MESH_META_NAMESPACE", w.namespace],
    ["MESH_CERT_DIR", `${w.dir}/${WORKLOAD_FILES.certs}`],
    ["MESH_CA_ADDRESS", w.caAddress],
    ["MESH_CA_ROOT_CERT", `${w.dir}/${WORKLOAD_FILES.root}`],
    ["MESH_CA_TOKEN_FILE", `${w.dir}/${WORKLOAD_FILES.token}`],
  ];
  return `# mesh-agent environment of ${w.serviceAccount}.${w.namespace} ` +
    `(meshctl experimental workload bootstrap)\n` +
    vars.map(([k, v]) => `${k}=${quote(v)}\n`).join("");
}
