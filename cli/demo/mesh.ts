/**
 * `deno task demo --mtls`: the whole mesh on one machine. Starts mesh_ca (self-signed, trusting
 * a key the demo makes), mesh-discovery (config and mesh configuration in a work directory), one
 * mesh-agent `--proxyless` per workload (`hello`: the backends, `demo-client`: the caller), two
 * proxyless WhoAmI backends (grpc-js-xds `XdsServer`, v1 and v2 of
 * `hello.mesh-demo.svc.cluster.local`, a ServiceEntry) and a proxyless client in this process,
 * all with the bootstraps their agents wrote. Once a second it prints the split and who the
 * backends saw calling: `last 1s: v1 80% (160)  v2 20% (40)  caller spiffe://.../sa/demo-client
 * (mTLS)`. Edit `authPolicy` in `<work dir>/mesh.yaml` to switch mutual TLS live.
 * See docs/demo/README.md.
 * @module
 */

import { Buffer } from "node:buffer";
import { WHOAMI_METHOD, whoAmIClientConstructor, type WhoAmIReply } from "./whoami.ts";

/** What {@link runMeshDemo} needs from the demo command. */
export interface MeshDemoOptions {
  /** Calls per second. */
  rate: number;
  /** Start with `authPolicy: MUTUAL_TLS` (else NONE). */
  mtls: boolean;
  /** Copy every program's output to stderr. */
  verbose: boolean;
  /** Work directory (default: a new temp dir, removed at the end). */
  workDir?: string;
  /** Formats one second of results (`last 1s: v1 80% (160)  v2 20% (40)`). */
  formatSplit(versions: Map<string, number>, errors: Map<string, number>): string;
  write(line: string): void;
  writeErr(line: string): void;
}

/** The service of the demo and the name the client calls. */
export const MESH_DEMO_HOST = "hello.mesh-demo.svc.cluster.local";
const TARGET = `xds:///${MESH_DEMO_HOST}:7070`;
const REPO = new URL("../../", import.meta.url);

/** The config the demo writes: the service, its subsets, an 80/20 split. */
export function meshDemoConfig(v1Port: number, v2Port: number): string {
  const h = MESH_DEMO_HOST;
  return `apiVersion: networking.mesh.io/v1alpha3
kind: ServiceEntry
metadata:
  name: hello
  namespace: mesh-demo
  annotations: {alpha.mesh.io/orchestrator-serviceaccounts: hello}
spec:
  hosts: [${h}]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 7070, name: grpc, protocol: GRPC}]
  endpoints:
  - {address: 127.0.0.1, ports: {grpc: ${v1Port}}, labels: {version: v1}}
  - {address: 127.0.0.1, ports: {grpc: ${v2Port}}, labels: {version: v2}}
---
apiVersion: networking.mesh.io/v1alpha3
kind: DestinationRule
metadata: {name: hello, namespace: mesh-demo}
spec:
  host: ${h}
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
---
apiVersion: networking.mesh.io/v1alpha3
kind: VirtualService
metadata: {name: hello, namespace: mesh-demo}
spec:
  hosts: [${h}]
  http:
  - route:
    - {destination: {host: ${h}, subset: v1}, weight: 80}
    - {destination: {host: ${h}, subset: v2}, weight: 20}
`;
}

/** A child program whose output is kept (last lines) and can be waited for. */
class Child {
  readonly #proc: Deno.ChildProcess;
  #out = "";
  exited = false;
  readonly status: Promise<Deno.CommandStatus>;

  constructor(
    readonly name: string,
    args: string[],
    env: Record<string, string>,
    verbose: boolean,
    writeErr: (l: string) => void,
  ) {
    this.#proc = new Deno.Command(args[0], {
      args: args.slice(1),
      env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const pump = async (s: ReadableStream<Uint8Array>) => {
      const dec = new TextDecoder();
      let buf = "";
      for await (const chunk of s) {
        buf += dec.decode(chunk, { stream: true });
        let nl;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          this.#out = (this.#out + line + "\n").slice(-20_000);
          if (verbose) writeErr(`[${name}] ${line}`);
        }
      }
    };
    this.status = Promise.all([this.#proc.status, pump(this.#proc.stdout), pump(this.#proc.stderr)])
      .then(([s]) => {
        this.exited = true;
        return s;
      });
  }

  /** The last lines of output. */
  tail(n = 15): string {
    return this.#out.trimEnd().split("\n").slice(-n).join("\n");
  }

  /** Resolves once the output matches `re`; rejects on exit, on `abort()` or after `ms`. */
  async waitFor(re: RegExp, abort: () => boolean, ms = 60_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!re.test(this.#out)) {
      if (this.exited) throw new Error(`${this.name} exited; its last output:\n${this.tail()}`);
      if (abort()) throw new Error("stopped");
      if (Date.now() > deadline) {
        throw new Error(
          `${this.name} not ready within ${ms / 1000} s; its last output:\n${this.tail()}`,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stop(): Promise<void> {
    if (!this.exited) {
      try {
        this.#proc.kill("SIGTERM");
      } catch { /* gone */ }
      const t = setTimeout(() => {
        try {
          this.#proc.kill("SIGKILL");
        } catch { /* gone */ }
      }, 5000);
      await this.status;
      clearTimeout(t);
    }
  }
}

function freePort(): number {
  const l = Deno.listen({ hostname: "0.0.0.0", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

const program = (name: string) => [Deno.execPath(), "run", "-A", new URL(name, REPO).pathname];

/** Runs the mesh demo until SIGINT/SIGTERM; returns the exit code. */
export async function runMeshDemo(o: MeshDemoOptions): Promise<number> {
  const dir = o.workDir ?? await Deno.makeTempDir({ prefix: "mesh-demo-" });
  const children: Child[] = [];
  const start = (name: string, args: string[], env: Record<string, string> = {}) => {
    const c = new Child(name, args, env, o.verbose, o.writeErr);
    children.push(c);
    c.status.then((s) => {
      if (stopping) return;
      o.writeErr(`Error: ${c.name} exited with code ${s.code}; its last output:\n${c.tail()}`);
      stop(1);
    });
    return c;
  };
  let stopping = false;
  let resolveDone!: (code: number) => void;
  const done = new Promise<number>((r) => (resolveDone = r));
  const timers: number[] = [];
  const aborted = () => stopping;
  let client: { close(): void } | undefined;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    for (const t of timers) clearInterval(t);
    client?.close();
    for (const c of [...children].reverse()) await c.stop();
    if (!o.workDir) await Deno.remove(dir, { recursive: true }).catch(() => {});
    resolveDone(code);
  };
  const onSignal = () => {
    if (stopping) return;
    o.write("demo: stopping");
    stop(0);
  };
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  try {
    const [v1Port, v2Port, adsPort, caPort, caMonitoring] = [1, 2, 3, 4, 5].map(freePort);
    await Deno.mkdir(`${dir}/config`, { recursive: true });
    await Deno.writeTextFile(`${dir}/config/hello.yaml`, meshDemoConfig(v1Port, v2Port));
    const meshFile = `${dir}/mesh.yaml`;
    await Deno.writeTextFile(meshFile, `authPolicy: ${o.mtls ? "MUTUAL_TLS" : "NONE"}\n`);

    // mesh_ca trusts service account tokens signed with a key made here
    const jose = await import("../../lib/deps/jose.ts");
    const { publicKey, privateKey } = await jose.generateKeyPair("ES256", { extractable: true });
    const jwk = { ...(await jose.exportJWK(publicKey)), kid: "demo", alg: "ES256", use: "sig" };
    await Deno.writeTextFile(`${dir}/jwks.json`, JSON.stringify({ keys: [jwk] }));
    const token = (sa: string) =>
      new jose.SignJWT({}).setProtectedHeader({ alg: "ES256", kid: "demo" })
        .setSubject(`system:serviceaccount:mesh-demo:${sa}`).setIssuedAt().setExpirationTime("24h")
        .sign(privateKey);

    const ca = start("mesh_ca", [
      ...program("cli/mesh_ca.ts"),
      "--self-signed-ca",
      "--local-storage-dir",
      `${dir}/ca`,
      "--trusted-jwks",
      `${dir}/jwks.json`,
      "--grpc-port",
      String(caPort),
      "--monitoring-port",
      String(caMonitoring),
    ]);
    const discovery = start("mesh-discovery", [
      ...program("cli/mesh-discovery.ts"),
      "discovery",
      "--registries",
      "Mock",
      "--configDir",
      `${dir}/config`,
      "--meshConfig",
      meshFile,
      "--grpcAddr",
      `127.0.0.1:${adsPort}`,
      "--secureGrpcAddr",
      "",
      "--port",
      "0",
      "--monitoringPort",
      "0",
      "--ctrlz_port",
      "0",
    ]);
    await ca.waitFor(/gRPC signing API listening/, aborted);
    await discovery.waitFor(/discovery is ready/, aborted);

    const agent = async (sa: string) => {
      const wdir = `${dir}/${sa}`;
      await Deno.mkdir(wdir, { recursive: true });
      await Deno.writeTextFile(`${wdir}/token`, await token(sa));
      const a = start(`mesh-agent ${sa}`, [
        ...program("cli/mesh-agent.ts"),
        "proxy",
        "--proxyless",
        "--discoveryAddress",
        `127.0.0.1:${adsPort}`,
        "--configPath",
        `${wdir}/proxy`,
      ], {
        POD_NAME: `${sa}-1`,
        POD_NAMESPACE: "mesh-demo",
        INSTANCE_IP: "127.0.0.1",
        MESH_META_NAMESPACE: "mesh-demo",
        MESH_CERT_DIR: `${wdir}/certs`,
        MESH_CA_ADDRESS: `127.0.0.1:${caPort}`,
        MESH_CA_ROOT_CERT: `${dir}/ca/ca-cert.pem`,
        MESH_CA_TOKEN_FILE: `${wdir}/token`,
        MESH_CERT_REFRESH_INTERVAL: "1s",
      });
      await a.waitFor(/gRPC bootstrap written/, aborted);
      return `${wdir}/proxy/grpc-bootstrap.json`;
    };
    const [helloBootstrap, clientBootstrap] = await Promise.all([
      agent("hello"),
      agent("demo-client"),
    ]);
    const backends = start("backends", [
      ...program("cli/demo/xds_backends.ts"),
      `127.0.0.1:${v1Port}=v1`,
      `127.0.0.1:${v2Port}=v2`,
    ], { GRPC_XDS_BOOTSTRAP: helloBootstrap, GRPC_XDS_EXPERIMENTAL_RBAC: "true" });
    await backends.waitFor(/serving .* v2/, aborted);
    o.write(
      `demo: mesh_ca 127.0.0.1:${caPort}, mesh-discovery ADS 127.0.0.1:${adsPort}, backends v1 127.0.0.1:${v1Port} ` +
        `v2 127.0.0.1:${v2Port} (sa/hello), client sa/demo-client; work dir ${dir}`,
    );
    o.write(
      `demo: calling ${TARGET} at ${o.rate}/s; mutual TLS ${
        o.mtls ? "on" : "off"
      }: edit authPolicy in ${meshFile} ` +
        `(MUTUAL_TLS or NONE) to switch it; routes in ${dir}/config; Ctrl-C stops`,
    );

    // The client: this process, with the bootstrap of its agent.
    Deno.env.delete("GRPC_XDS_BOOTSTRAP_CONFIG");
    Deno.env.set("GRPC_XDS_BOOTSTRAP", clientBootstrap);
    const grpc = await import("../../lib/deps/grpc.ts");
    const xds = await import("../../lib/deps/grpc_xds.ts");
    xds.register();
    const Client = whoAmIClientConstructor(grpc);
    const c = new Client(TARGET, new xds.XdsChannelCredentials(grpc.credentials.createInsecure()));
    client = c;
    const versions = new Map<string, number>();
    const errors = new Map<string, number>();
    const peers = new Map<string, number>();
    let inFlight = 0;
    let credit = 0;
    const perTick = o.rate / 20;
    timers.push(setInterval(() => {
      credit = Math.min(credit + perTick, 2 * perTick);
      while (credit >= 1 && inFlight < 200 && !stopping) {
        credit--;
        inFlight++;
        c.makeUnaryRequest(
          WHOAMI_METHOD,
          (v: unknown) => Buffer.from(JSON.stringify(v)),
          (b: Buffer) => JSON.parse(b.toString("utf8")),
          {},
          new grpc.Metadata(),
          { deadline: Date.now() + 2000 },
          (err: { code?: number } | null, reply?: WhoAmIReply) => {
            inFlight--;
            if (stopping) return;
            if (err || !reply) {
              const name = grpc.status[err?.code ?? 2] ?? String(err?.code);
              errors.set(name, (errors.get(name) ?? 0) + 1);
              return;
            }
            versions.set(reply.version, (versions.get(reply.version) ?? 0) + 1);
            peers.set(reply.peer ?? "", (peers.get(reply.peer ?? "") ?? 0) + 1);
          },
        );
      }
    }, 50));
    timers.push(setInterval(() => {
      o.write(o.formatSplit(versions, errors) + formatPeers(peers));
      versions.clear();
      errors.clear();
      peers.clear();
    }, 1000));
  } catch (e) {
    if (!stopping) o.writeErr(`Error: ${(e as Error).message}`);
    await stop(1);
  }
  const code = await done;
  Deno.removeSignalListener("SIGINT", onSignal);
  Deno.removeSignalListener("SIGTERM", onSignal);
  return code;
}

/** `  caller spiffe://... (mTLS)`, `  caller none (plaintext)`, or both with counts. */
export function formatPeers(peers: Map<string, number>): string {
  if (!peers.size) return "";
  const parts = [...peers.entries()].sort().map(([p, n]) =>
    (p ? `${p} (mTLS)` : "none (plaintext)") + (peers.size > 1 ? ` x${n}` : "")
  );
  return `  caller ${parts.join(", ")}`;
}
