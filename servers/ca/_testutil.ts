/**
 * Test helpers of servers/ca: flags with the spec's defaults, an in-process CA on free ports,
 * CSRs, and `openssl verify` of an issued chain.
 * @module
 */

import { createCsr, generateKeyPair, type KeySpec, spiffeId } from "../../lib/pki/mod.ts";
import { recordingLogger } from "../../lib/log/testing.ts";
import { loadOpenSsl } from "../../lib/pki/openssl_ffi.ts";
import { type TestIssuer, testIssuer } from "../../tests/harness/ca_client.ts";
import { withTempDir } from "../../tests/harness/procs.ts";
import type { CaConfig, CaFlags } from "./config.ts";
import { type CaDeps, type CaHandle, start, toConfig } from "./mod.ts";

// The CA's default signing backend loads libcrypto once per process and keeps it: load it here,
// outside any test, so the tests' resource sanitizer does not count it.
try {
  loadOpenSsl();
} catch { /* not installed: the CAs of the tests fall back to WebCrypto */ }

const HOUR = 3_600_000;

/** The root command's flags with the spec's defaults, then `over`. */
export function caFlags(over: Partial<CaFlags> = {}): CaFlags {
  return {
    appendDnsNames: false,
    certChain: "",
    caStorageNamespace: "mesh-system",
    customDnsNames: "",
    enableProfiling: false,
    grpcHostIdentities: "mesh-ca,mesh-citadel",
    grpcHostname: "mesh-ca",
    grpcPort: 8060,
    keySize: 2048,
    orchConfig: "",
    listenedNamespace: "",
    livenessProbeInterval: 0,
    livenessProbePath: "",
    localStorageDir: "",
    maxWorkloadCertTtl: 2160 * HOUR,
    monitoringPort: 9093,
    org: "",
    probeCheckInterval: 30_000,
    requestedCaCertTtl: 8760 * HOUR,
    rootCert: "",
    selfSignedCa: false,
    selfSignedCaCertTtl: 8760 * HOUR,
    selfSignedCaOrg: "orch.cluster.local",
    signCaCerts: false,
    signingBackend: "auto",
    signingCert: "",
    signingKey: "",
    trustedJwks: "",
    upstreamCaAddress: "",
    workloadCertGracePeriodRatio: 0.5,
    workloadCertMinGracePeriod: 600_000,
    workloadCertTtl: 2160 * HOUR,
    ...over,
  };
}

export { recordingLogger };

/** A CSR (and its key pair) for `ns/sa`, or for the given URIs. */
export async function csrFor(
  ns: string,
  sa: string,
  opts: { key?: KeySpec; uris?: string[]; dns?: string[]; isCa?: boolean } = {},
): Promise<{ csr: string; keys: CryptoKeyPair }> {
  const keys = await generateKeyPair(opts.key ?? { kind: "ec" });
  const csr = await createCsr({
    keys,
    uris: opts.uris ?? [spiffeId(ns, sa)],
    dns: opts.dns,
    isCa: opts.isCa,
  });
  return { csr, keys };
}

/** Runs `openssl verify -CAfile <root> [-untrusted <intermediates>] <leaf>`; returns its output. */
export async function opensslVerify(chain: string[], root?: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-ca-verify-" });
  try {
    await Deno.writeTextFile(`${dir}/root.pem`, root ?? chain[chain.length - 1]);
    await Deno.writeTextFile(`${dir}/leaf.pem`, chain[0]);
    const args = ["verify", "-CAfile", `${dir}/root.pem`];
    const mid = chain.slice(1, root ? undefined : -1).join("");
    if (mid) {
      await Deno.writeTextFile(`${dir}/mid.pem`, mid);
      args.push("-untrusted", `${dir}/mid.pem`);
    }
    const o = await new Deno.Command("openssl", { args: [...args, `${dir}/leaf.pem`] }).output();
    const td = new TextDecoder();
    return (td.decode(o.stdout) + td.decode(o.stderr)).trim();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** `openssl x509 -noout -text` of a PEM certificate. */
export async function opensslText(pem: string): Promise<string> {
  const p = new Deno.Command("openssl", {
    args: ["x509", "-noout", "-text"],
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const w = p.stdin.getWriter();
  await w.write(new TextEncoder().encode(pem));
  await w.close();
  return new TextDecoder().decode((await p.output()).stdout);
}

/** The config of a self-signed mesh_ca on the orchestrator of `kubeconfigPath` (port 0), then `over`. */
export function orchCaConfig(kubeconfigPath: string, over: Partial<CaFlags> = {}): CaConfig {
  return toConfig(
    caFlags({
      selfSignedCa: true,
      orchConfig: kubeconfigPath,
      monitoringPort: 0,
      grpcPort: 0,
      ...over,
    }),
  );
}

/** What {@link withCa} gives its test besides the CA's handle. */
export interface TestCaContext {
  /** The test's temp directory: the CA stores in `store/` and reads the issuer's `jwks.json`. */
  dir: string;
  /** `127.0.0.1:<port>` of the signing API. */
  address: string;
  /** The CA's root (PEM). */
  root: string;
  /** A JWT of the trusted issuer for subject `sub`. */
  token: (sub: string) => Promise<string>;
  issuer: TestIssuer;
  config: CaConfig;
  log: ReturnType<typeof recordingLogger>;
}

/**
 * Runs `fn` with a self-signed mesh_ca (flags `over`, then `deps`) serving on 127.0.0.1, port 0,
 * from a temp directory, that trusts a test JWT issuer; shuts it down and removes the directory
 * afterwards, also when `fn` throws.
 */
export async function withCa(
  over: Partial<CaFlags>,
  fn: (ca: CaHandle, c: TestCaContext) => Promise<void>,
  deps: CaDeps = {},
): Promise<void> {
  await withTempDir(async (dir) => {
    const issuer = await testIssuer();
    await Deno.writeTextFile(`${dir}/jwks.json`, JSON.stringify(issuer.jwks));
    const config = toConfig(caFlags({
      selfSignedCa: true,
      localStorageDir: `${dir}/store`,
      trustedJwks: `${dir}/jwks.json`,
      monitoringPort: 0,
      ...over,
    }));
    const log = recordingLogger();
    const ca = await start(config, { host: "127.0.0.1", grpcPort: 0, log, ...deps });
    try {
      await fn(ca, {
        dir,
        address: `127.0.0.1:${ca.addresses.grpc!.split(":")[1]}`,
        root: ca.ca().rootPem,
        token: (sub) => issuer.token(sub),
        issuer,
        config,
        log,
      });
    } finally {
      await ca.shutdown();
    }
  });
}
