/**
 * `meshctl experimental workload bootstrap <service-account> -n <ns> -o <dir>`: gives a workload
 * outside the orchestrator (a VM, a laptop) what mesh-agent needs to get its identity from
 * mesh_ca, instead of a hand-written JWKS and JWT. Writes into `<dir>`:
 *
 * - `root-cert.pem`: mesh_ca's root (`--ca-root`; on `-p orch` by default from Secret
 *   `mesh-ca-secret` of the mesh namespace; on `-p fs` without `--ca-root` it is not written, as
 *   mesh_ca may not run yet: it needs `jwks.json` to start);
 * - `token` (0600): a JWT with `sub: system:serviceaccount:<ns>:<sa>` that mesh_ca accepts — on
 *   `-p orch` from the orchestrator's TokenRequest API (mesh_ca checks it with a TokenReview), on
 *   `-p fs` signed with a local ES256 key (`--issuer-key`, created when missing);
 * - `jwks.json` (`-p fs`): the public half of that key, for mesh_ca's `--trusted-jwks`;
 * - `mesh-agent.env`: the environment of `mesh-agent proxy` (identity, `MESH_CA_*`,
 *   `MESH_CERT_DIR=<dir>/certs`).
 * @module
 */

import { isAbsolute, resolve } from "node:path";
import { UsageError } from "../_shared/context.ts";
import type { WorkloadBootstrapOptions } from "./flags.ts";
import type { MeshctlContext } from "./_config_io.ts";
import { agentEnvFile, checkCaAddress, checkName, WORKLOAD_FILES } from "./_workload.ts";

/** Issuer (`iss`) of the tokens signed on `-p fs`. */
export const LOCAL_ISSUER = "meshctl-workload-issuer";

type Jwk = Record<string, unknown> & { kid?: string };

function absolute(path: string, ctx: MeshctlContext): string {
  return isAbsolute(path) ? path : resolve(ctx.cwd, path);
}

function reason(e: unknown): string {
  return String((e as Error).message ?? e).replace(/ \(os error \d+\).*$/s, "");
}

/** Reads and checks a PEM root certificate. */
async function readRoot(path: string, what: string): Promise<string> {
  let pem: string;
  try {
    pem = await Deno.readTextFile(path);
  } catch (e) {
    throw new Error(`Cannot read ${what} ${path}: ${reason(e)}`);
  }
  await checkRoot(pem, `${what} ${path}`);
  return pem;
}

async function checkRoot(pem: string, what: string): Promise<void> {
  const { parseCertificates } = await import("../../lib/pki/mod.ts");
  let n = 0;
  try {
    n = parseCertificates(pem).length;
  } catch (e) {
    throw new Error(`${what} is not a PEM certificate: ${reason(e)}`);
  }
  if (n === 0) throw new Error(`${what} is not a PEM certificate: no CERTIFICATE block`);
}

/** The local signing key: read from `path`, or created there (0600) when missing. */
async function issuerKey(path: string): Promise<{ priv: Jwk; pub: Jwk; created: boolean }> {
  const jose = await import("../../lib/deps/jose.ts");
  let text: string | undefined;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) {
      throw new Error(`Cannot read --issuer-key ${path}: ${reason(e)}`);
    }
  }
  let priv: Jwk;
  let created = false;
  if (text === undefined) {
    const { privateKey } = await jose.generateKeyPair("ES256", { extractable: true });
    priv = await jose.exportJWK(privateKey) as Jwk;
    priv.kid = await jose.calculateJwkThumbprint(priv as import("../../lib/deps/jose.ts").JWK);
    priv.alg = "ES256";
    const { writeFileAtomic } = await import("../../lib/pki/mod.ts");
    try {
      await Deno.mkdir(path.replace(/\/[^/]*$/, "") || "/", { recursive: true });
      await writeFileAtomic(path, JSON.stringify(priv, null, 2) + "\n", 0o600);
    } catch (e) {
      throw new Error(`Cannot write --issuer-key ${path}: ${reason(e)}`);
    }
    created = true;
  } else {
    try {
      priv = JSON.parse(text);
      if (priv.kty !== "EC" || priv.crv !== "P-256" || typeof priv.d !== "string") {
        throw new Error("not an EC P-256 private JWK");
      }
    } catch (e) {
      throw new Error(`Invalid --issuer-key ${path}: ${reason(e)}`);
    }
  }
  const { d: _d, ...pub } = priv;
  return { priv, pub: { ...pub, use: "sig", alg: "ES256" }, created };
}

async function signToken(priv: Jwk, sub: string, ttlMs: number): Promise<string> {
  const jose = await import("../../lib/deps/jose.ts");
  const key = await jose.importJWK(priv as Parameters<typeof jose.importJWK>[0], "ES256");
  const now = Math.floor(Date.now() / 1000);
  return await new jose.SignJWT({})
    .setProtectedHeader({ alg: "ES256", kid: String(priv.kid ?? "") })
    .setIssuer(LOCAL_ISSUER)
    .setSubject(sub)
    .setIssuedAt(now)
    .setExpirationTime(now + Math.ceil(ttlMs / 1000))
    .sign(key);
}

/** `-p orch`: the token from TokenRequest and, unless `--ca-root`, the root from the Secret. */
async function fromOrchestrator(
  opts: WorkloadBootstrapOptions,
  ctx: MeshctlContext,
  sa: string,
  ns: string,
): Promise<{ token: string; root?: string }> {
  const { kubeconfigPath, checkKubeconfigExists } = await import("./_config_io.ts");
  const kube = await import("../../lib/kube/mod.ts");
  const path = kubeconfigPath(opts, ctx);
  await checkKubeconfigExists(path);
  const kc = await kube.loadKubeConfig(path);
  const k8s = await kube.kubeClient();
  const api = kc.makeApiClient(k8s.CoreV1Api);
  const why = (e: unknown) => {
    const st = kube.apiErrorStatus(e);
    return (st ? `${st.message} (HTTP ${st.code})` : reason(e)).split("\n")[0];
  };
  let token: string;
  try {
    const r = await api.createNamespacedServiceAccountToken({
      name: sa,
      namespace: ns,
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { audiences: [], expirationSeconds: Math.ceil(opts.tokenTtl / 1000) },
      },
    });
    token = r.status?.token ?? "";
  } catch (e) {
    throw new Error(`Cannot get a token for service account ${ns}/${sa}: ${why(e)}`);
  }
  if (!token) {
    throw new Error(`Cannot get a token for service account ${ns}/${sa}: the answer has none`);
  }
  if (opts.caRoot) return { token };
  let root: string;
  const where = `Secret ${opts.meshNamespace}/mesh-ca-secret`;
  try {
    const s = await api.readNamespacedSecret({
      name: "mesh-ca-secret",
      namespace: opts.meshNamespace,
    });
    const b64 = s.data?.["ca-cert.pem"];
    if (!b64) throw new Error("it has no ca-cert.pem");
    root = new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
  } catch (e) {
    throw new Error(`Cannot read mesh_ca's root from ${where}: ${why(e)} (or give --ca-root)`);
  }
  await checkRoot(root, `ca-cert.pem of ${where}`);
  return { token, root };
}

/** Runs `meshctl experimental workload bootstrap`. */
export async function run(
  opts: WorkloadBootstrapOptions,
  args: string[],
  ctx: MeshctlContext,
): Promise<number> {
  const sa = args[0];
  const ns = opts.namespace || "default";
  checkName("service account", sa);
  checkName("namespace", ns);
  if (!opts.output) throw new UsageError("-o/--output is required: the directory to write to");
  checkCaAddress(opts.caAddress);
  if (opts.platform !== "fs" && opts.platform !== "orch") {
    throw new UsageError(
      `Unknown platform ${JSON.stringify(opts.platform)}: want "orch" or "fs"`,
    );
  }
  if (opts.tokenTtl <= 0) throw new UsageError("--token-ttl must be positive");
  const dir = absolute(opts.output, ctx);
  const sub = `system:serviceaccount:${ns}:${sa}`;
  let root = opts.caRoot ? await readRoot(absolute(opts.caRoot, ctx), "--ca-root") : undefined;
  let token: string;
  let jwks: string | undefined;
  const notes: string[] = [];
  if (opts.platform === "fs") {
    const home = ctx.env.HOME;
    if (!opts.issuerKey && !home) {
      throw new UsageError("--issuer-key is required when HOME is not set");
    }
    const keyPath = opts.issuerKey
      ? absolute(opts.issuerKey, ctx)
      : `${home}/.mesh/workload-issuer-key.json`;
    const key = await issuerKey(keyPath);
    if (key.created) notes.push(`Created the token signing key ${keyPath}`);
    token = await signToken(key.priv, sub, opts.tokenTtl);
    jwks = JSON.stringify({ keys: [key.pub] }, null, 2) + "\n";
  } else {
    const got = await fromOrchestrator(opts, ctx, sa, ns);
    token = got.token;
    root ??= got.root;
  }
  if (root === undefined) {
    // fs without --ca-root: mesh_ca may not run yet (it needs jwks.json to start)
    notes.push(
      `mesh_ca's root is not known yet: run again with --ca-root <mesh_ca's ca-cert.pem> once ` +
        `mesh_ca runs (or copy it to ${dir}/${WORKLOAD_FILES.root})`,
    );
  }
  const { writeFileAtomic } = await import("../../lib/pki/mod.ts");
  const files: [string, string, number][] = [
    ...(root !== undefined ? [[WORKLOAD_FILES.root, root, 0o644] as [string, string, number]] : []),
    [WORKLOAD_FILES.token, token + "\n", 0o600],
    ...(jwks ? [[WORKLOAD_FILES.jwks, jwks, 0o644] as [string, string, number]] : []),
    [
      WORKLOAD_FILES.env,
      agentEnvFile({
        serviceAccount: sa,
        namespace: ns,
        dir,
        caAddress: opts.caAddress,
        ip: opts.ip,
      }),
      0o644,
    ],
  ];
  try {
    await Deno.mkdir(dir, { recursive: true });
    for (const [name, text, mode] of files) await writeFileAtomic(`${dir}/${name}`, text, mode);
  } catch (e) {
    throw new Error(`Cannot write into -o ${dir}: ${reason(e)}`);
  }
  const lines = [
    ...notes,
    `Wrote ${
      files.map(([n]) => `${dir}/${n}`).join(", ")
    } for spiffe://cluster.local/ns/${ns}/sa/${sa}`,
    ...(jwks ? [`mesh_ca must trust the token: --trusted-jwks ${dir}/${WORKLOAD_FILES.jwks}`] : []),
    `Run the agent: set -a; . ${dir}/${WORKLOAD_FILES.env}; set +a; ` +
    `mesh-agent proxy --proxyless --discoveryAddress <host:port> ` +
    `--configPath ${dir}/proxy`,
  ];
  await ctx.stdout.write(lines.join("\n") + "\n");
  return 0;
}
