/**
 * The mesh certificate files of the TLS ADS port (`--secureGrpcAddr`): reading, checking, and
 * watching them so the port starts when they appear and picks up rotated ones.
 * @module
 */

import * as path from "node:path";
import type { Logger } from "../../lib/log/mod.ts";

/** The mesh certificate files served on the TLS port (PEM text). */
export interface MeshCerts {
  certChain: string;
  key: string;
  root: string;
}

/** File names of the mesh certificates in the cert directory. */
export const CERT_FILES = {
  certChain: "cert-chain.pem",
  key: "key.pem",
  root: "root-cert.pem",
} as const;

/**
 * Reads `cert-chain.pem`, `key.pem` and `root-cert.pem` from `dir`. Returns `{certs: null, reason}`
 * when a file is missing (the TLS port is then not started); other read errors throw.
 */
export async function readMeshCerts(
  dir: string,
): Promise<{ certs: MeshCerts | null; reason: string }> {
  const out: Partial<MeshCerts> = {};
  for (const [k, file] of Object.entries(CERT_FILES) as [keyof MeshCerts, string][]) {
    const p = path.join(dir, file);
    try {
      out[k] = await Deno.readTextFile(p);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return { certs: null, reason: `${p} does not exist` };
      throw new Error(`Cannot read ${p}: ${(e as Error).message}`);
    }
  }
  return { certs: out as MeshCerts, reason: "" };
}

/**
 * Checks that the files parse (PEM certificates and key) and that `key.pem` is the key of the
 * first certificate of `cert-chain.pem`; throws a one-line error naming the file otherwise.
 * A half-written file fails here.
 */
export async function checkMeshCerts(certs: MeshCerts, dir: string): Promise<void> {
  const { X509Certificate, createPrivateKey } = await import("node:crypto");
  const where = (k: keyof MeshCerts) => path.join(dir, CERT_FILES[k]);
  const parse = <T>(k: keyof MeshCerts, what: string, f: () => T): T => {
    try {
      return f();
    } catch (e) {
      throw new Error(`Invalid ${where(k)}: not a PEM ${what} (${(e as Error).message})`);
    }
  };
  for (const k of ["certChain", "root"] as const) {
    const blocks = certs[k].match(
      /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g,
    ) ?? [];
    if (!blocks.length) throw new Error(`Invalid ${where(k)}: no complete PEM certificate`);
    for (const b of blocks) parse(k, "certificate", () => new X509Certificate(b));
  }
  const leaf = parse("certChain", "certificate", () => new X509Certificate(certs.certChain));
  const key = parse("key", "private key", () => createPrivateKey(certs.key));
  if (!leaf.checkPrivateKey(key)) {
    throw new Error(
      `${where("key")} is not the key of the certificate in ${where("certChain")}`,
    );
  }
}

/** Options of {@link watchMeshCerts}. */
export interface WatchMeshCertsOptions {
  dir: string;
  /** The material in force (null while the port waits for the files). */
  current: MeshCerts | null;
  /** A set already found bad (and logged): not tried again until the files change. */
  rejected?: MeshCerts | null;
  /**
   * Called with new, checked material after the files changed and stayed unchanged for
   * `settleMs`. A rejection is logged once and the files are tried again on their next change.
   */
  apply(certs: MeshCerts): Promise<void> | void;
  logger: Logger;
  /** How often the files are re-read in case a file-system event was missed (ms, default 1000). */
  pollMs?: number;
  /** How long the files must stay unchanged before they are used (ms, default 200). */
  settleMs?: number;
}

const same = (a: MeshCerts | null, b: MeshCerts | null) =>
  !!a && !!b && a.certChain === b.certChain && a.key === b.key && a.root === b.root;

/**
 * Watches the three files in `dir` (file-system events, with a periodic re-read as backstop) and
 * calls `apply` with new material once it has stayed the same for `settleMs` (an agent writing
 * the files one after the other is seen as one change) and passes {@link checkMeshCerts}. A
 * missing, half-written or mismatched set keeps the material in force; the problem is logged once
 * until it changes.
 */
export function watchMeshCerts(opts: WatchMeshCertsOptions): { close(): void } {
  const { dir, logger: log } = opts;
  const settleMs = opts.settleMs ?? 200;
  let current = opts.current;
  let candidate: MeshCerts | null = null;
  let rejected: MeshCerts | null = opts.rejected ?? null;
  let lastProblem = "";
  let closed = false;
  let running: Promise<void> = Promise.resolve();
  let settleTimer: number | undefined;
  const problem = (p: string) => {
    if (p !== lastProblem) log.warn(p);
    lastProblem = p;
  };

  const check = async () => {
    if (closed) return;
    let read: MeshCerts | null;
    try {
      const r = await readMeshCerts(dir);
      read = r.certs;
      if (!read) {
        candidate = null;
        // Missing files while a set is in force: rotation in progress, or removed; keep it.
        if (current) problem(`Secure gRPC keeps its certificates: ${r.reason}`);
        return;
      }
    } catch (e) {
      candidate = null;
      return problem(`Secure gRPC keeps its certificates: ${(e as Error).message}`);
    }
    if (same(read, current)) {
      candidate = null;
      lastProblem = "";
      return;
    }
    // A set found bad is not tried (nor logged) again until the files change.
    if (same(read, rejected)) return;
    if (!same(read, candidate)) {
      // Changed since the last look: wait until the writer is done.
      candidate = read;
      clearTimeout(settleTimer);
      settleTimer = setTimeout(schedule, settleMs);
      return;
    }
    candidate = null;
    try {
      await checkMeshCerts(read, dir);
      await opts.apply(read);
      current = read;
      lastProblem = "";
    } catch (e) {
      const what = current ? "keeps its certificates" : "not started yet";
      problem(`Secure gRPC ${what}: ${(e as Error).message}`);
      rejected = read;
    }
  };
  const schedule = () => {
    running = running.then(check).catch(() => {});
  };

  const poll = setInterval(schedule, opts.pollMs ?? 1000);
  let watcher: Deno.FsWatcher | undefined;
  let debounce: number | undefined;
  const watch = async () => {
    // The directory may not exist yet: the periodic re-read covers that time.
    try {
      watcher = Deno.watchFs(dir, { recursive: false });
    } catch {
      return;
    }
    try {
      for await (const ev of watcher) {
        if (ev.kind === "access") continue;
        clearTimeout(debounce);
        debounce = setTimeout(schedule, 50);
      }
    } catch { /* closed */ }
  };
  void watch();
  schedule();
  return {
    close() {
      closed = true;
      clearInterval(poll);
      clearTimeout(settleTimer);
      clearTimeout(debounce);
      try {
        watcher?.close();
      } catch { /* closed */ }
    },
  };
}
