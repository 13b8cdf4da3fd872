/**
 * Where a sidecar's workload certificates are: mesh mTLS contexts name the files
 * `/etc/certs/{cert-chain,key,root-cert}.pem` ({@link WORKLOAD_CERTS}) unless the node says
 * otherwise with the metadata `CERT_DIR` (mesh-agent sets it to its `MESH_CERT_DIR` when that is
 * not `/etc/certs`). {@link withCertDir} rewrites those file names for one proxy.
 * @module
 */

import type { Proxy, XdsResource } from "../types.ts";
import { WORKLOAD_CERTS } from "./util.ts";

/** Node metadata key naming the directory of the workload certificate files. */
export const CERT_DIR_METADATA_KEY = "CERT_DIR";

/** The default directory (the one {@link WORKLOAD_CERTS} names). */
export const DEFAULT_WORKLOAD_CERT_DIR = "/etc/certs";

/**
 * The proxy's certificate directory from its metadata, without a trailing `/`; undefined for the
 * default and for a value that is not a clean absolute path (no `..`, no control characters,
 * at most 1024 characters): such a value is ignored, never trusted.
 */
export function certDirOf(proxy: Pick<Proxy, "metadata">): string | undefined {
  const raw = proxy.metadata?.[CERT_DIR_METADATA_KEY];
  if (typeof raw !== "string" || raw.length > 1024 || !raw.startsWith("/")) return undefined;
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(raw) || raw.split("/").includes("..")) return undefined;
  const dir = raw.replace(/\/+$/, "");
  return dir === "" || dir === DEFAULT_WORKLOAD_CERT_DIR ? undefined : dir;
}

// deno-lint-ignore no-explicit-any
type Any = any;

function rebaseFile(ds: Any, files: Map<string, string>): boolean {
  const f = ds?.filename;
  if (typeof f !== "string" || !files.has(f)) return false;
  ds.filename = files.get(f);
  return true;
}

function rebaseSocket(socket: Any, files: Map<string, string>): boolean {
  const common = socket?.typed_config?.common_tls_context;
  if (!common) return false;
  let changed = false;
  for (const c of Array.isArray(common.tls_certificates) ? common.tls_certificates : []) {
    if (rebaseFile(c?.certificate_chain, files)) changed = true;
    if (rebaseFile(c?.private_key, files)) changed = true;
  }
  if (rebaseFile(common.validation_context?.trusted_ca, files)) changed = true;
  return changed;
}

/**
 * `resources` (Clusters or Listeners) with the workload certificate file names of their TLS
 * transport sockets moved to the proxy's {@link certDirOf}; the same array when the proxy uses
 * the default. Resources that change are copied, never edited in place.
 */
export function withCertDir(
  resources: XdsResource[],
  proxy: Pick<Proxy, "metadata">,
): XdsResource[] {
  const dir = certDirOf(proxy);
  if (!dir) return resources;
  const files = new Map<string, string>([
    [WORKLOAD_CERTS.chain, `${dir}/cert-chain.pem`],
    [WORKLOAD_CERTS.key, `${dir}/key.pem`],
    [WORKLOAD_CERTS.root, `${dir}/root-cert.pem`],
  ]);
  return resources.map((r) => {
    const sockets = [
      r.transport_socket,
      ...(r.filter_chains ?? []).map((fc: Any) => fc?.transport_socket),
    ];
    if (!sockets.some((s) => s?.typed_config?.common_tls_context)) return r;
    const copy = structuredClone(r);
    let changed = rebaseSocket(copy.transport_socket, files);
    for (const fc of copy.filter_chains ?? []) {
      if (rebaseSocket(fc?.transport_socket, files)) changed = true;
    }
    return changed ? copy : r;
  });
}
