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
import {
  WHOAMI_METHOD,
  whoAmIClientConstructor,
  type WhoAmIReply,
  yieldingCallCredentials,
} from "./whoami.ts";
import { freeServerPort } from "../../lib/net/mod.ts";

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

const program = (name: string) => [Deno.execPath(), "run", "-A", new URL(name, REPO).pathname];

/** Ports the demo binds (all free ones). */
interface DemoPorts {
  v1: number;
  v2: number;
  ads: number;
  ca: number;
  caMonitoring: number;
}

/** The running demo: its children, timers and client; {@link stop} undoes everything. */
class MeshDemo {
  readonly children: Child[] = [];
  readonly timers: number[] = [];
  client?: { close(): void };
  stopping = false;
  readonly done: Promise<number>;
  #resolve!: (code: number) => void;
  readonly ports: DemoPorts;

  constructor(readonly o: MeshDemoOptions, readonly dir: string) {
    this.done = new Promise((r) => (this.#resolve = r));
    // below the ephemeral range: the backends bind theirs only once their listener arrives over
    // xDS, by when an outgoing connection of the demo could have taken an ephemeral one
    const [v1, v2, ads, ca, caMonitoring] = [1, 2, 3, 4, 5].map(() => freeServerPort());
    this.ports = { v1, v2, ads, ca, caMonitoring };
  }

  readonly aborted = () => this.stopping;

  /** Starts a child; its early exit stops the demo with code 1. */
  start(name: string, args: string[], env: Record<string, string> = {}): Child {
    const c = new Child(name, args, env, this.o.verbose, this.o.writeErr);
    this.children.push(c);
    c.status.then((s) => {
      if (this.stopping) return;
      this.o.writeErr(`Error: ${c.name} exited with code ${s.code}; its last output:\n${c.tail()}`);
      this.stop(1);
    });
    return c;
  }

  async stop(code: number): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    this.client?.close();
    for (const c of [...this.children].reverse()) await c.stop();
    if (!this.o.workDir) await Deno.remove(this.dir, { recursive: true }).catch(() => {});
    this.#resolve(code);
  }

  /** The config directory and the mesh configuration file. */
  async writeConfig(): Promise<string> {
    await Deno.mkdir(`${this.dir}/config`, { recursive: true });
    await Deno.writeTextFile(
      `${this.dir}/config/hello.yaml`,
      meshDemoConfig(this.ports.v1, this.ports.v2),
    );
    const meshFile = `${this.dir}/mesh.yaml`;
    await Deno.writeTextFile(meshFile, `authPolicy: ${this.o.mtls ? "MUTUAL_TLS" : "NONE"}\n`);
    return meshFile;
  }

  /** A signing key whose JWKS mesh_ca trusts; returns a token maker for service accounts. */
  async issuer(): Promise<(sa: string) => Promise<string>> {
    const jose = await import("../../lib/deps/jose.ts");
    const { publicKey, privateKey } = await jose.generateKeyPair("ES256", { extractable: true });
    const jwk = { ...(await jose.exportJWK(publicKey)), kid: "demo", alg: "ES256", use: "sig" };
    await Deno.writeTextFile(`${this.dir}/jwks.json`, JSON.stringify({ keys: [jwk] }));
    return (sa) =>
      new jose.SignJWT({}).setProtectedHeader({ alg: "ES256", kid: "demo" })
        .setSubject(`system:serviceaccount:mesh-demo:${sa}`).setIssuedAt().setExpirationTime("24h")
        .sign(privateKey);
  }

  /** mesh_ca and mesh-discovery, until both are ready. */
  async controlPlane(meshFile: string): Promise<void> {
    const ca = this.start("mesh_ca", [
      ...program("cli/mesh_ca.ts"),
      ...["--self-signed-ca", "--local-storage-dir", `${this.dir}/ca`],
      ...["--trusted-jwks", `${this.dir}/jwks.json`, "--grpc-port", String(this.ports.ca)],
      ...["--monitoring-port", String(this.ports.caMonitoring)],
    ]);
    const discovery = this.start("mesh-discovery", [
      ...program("cli/mesh-discovery.ts"),
      ...["discovery", "--registries", "Mock", "--configDir", `${this.dir}/config`],
      ...["--meshConfig", meshFile, "--grpcAddr", `127.0.0.1:${this.ports.ads}`],
      ...["--secureGrpcAddr", "", "--port", "0", "--monitoringPort", "0", "--ctrlz_port", "0"],
    ]);
    await ca.waitFor(/gRPC signing API listening/, this.aborted);
    await discovery.waitFor(/discovery is ready/, this.aborted);
  }

  /** mesh-agent --proxyless for `sa`; resolves with its bootstrap once written. */
  async agent(sa: string, token: (sa: string) => Promise<string>): Promise<string> {
    const wdir = `${this.dir}/${sa}`;
    await Deno.mkdir(wdir, { recursive: true });
    await Deno.writeTextFile(`${wdir}/token`, await token(sa));
    const a = this.start(`mesh-agent ${sa}`, [
      ...program("cli/mesh-agent.ts"),
      ...["proxy", "--proxyless", "--discoveryAddress", `127.0.0.1:${this.ports.ads}`],
      ...["--configPath", `${wdir}/proxy`],
    ], {
      POD_NAME: `${sa}-1`,
      POD_NAMESPACE: "mesh-demo",
      INSTANCE_IP: "127.0.0.1",
      MESH_META_NAMESPACE: "mesh-demo",
      MESH_CERT_DIR: `${wdir}/certs`,
      MESH_CA_ADDRESS: `127.0.0.1:${this.ports.ca}`,
      MESH_CA_ROOT_CERT: `${this.dir}/ca/ca-cert.pem`,
      MESH_CA_TOKEN_FILE: `${wdir}/token`,
      MESH_CERT_REFRESH_INTERVAL: "1s",
    });
    await a.waitFor(/gRPC bootstrap written/, this.aborted);
    return `${wdir}/proxy/grpc-bootstrap.json`;
  }

  /** The two backends (one process, the `hello` bootstrap), until both serve. */
  async backends(bootstrap: string): Promise<void> {
    const b = this.start("backends", [
      ...program("cli/demo/xds_backends.ts"),
      `127.0.0.1:${this.ports.v1}=v1`,
      `127.0.0.1:${this.ports.v2}=v2`,
    ], { GRPC_XDS_BOOTSTRAP: bootstrap, GRPC_XDS_EXPERIMENTAL_RBAC: "true" });
    await b.waitFor(/serving .* v2/, this.aborted);
  }

  /** The client in this process (its agent's bootstrap): calls at `rate`, prints every second. */
  async callAndReport(bootstrap: string): Promise<void> {
    Deno.env.delete("GRPC_XDS_BOOTSTRAP_CONFIG");
    Deno.env.set("GRPC_XDS_BOOTSTRAP", bootstrap);
    const grpc = await import("../../lib/deps/grpc.ts");
    const xds = await import("../../lib/deps/grpc_xds.ts");
    xds.register();
    const Client = whoAmIClientConstructor(grpc);
    const c = new Client(TARGET, new xds.XdsChannelCredentials(grpc.credentials.createInsecure()));
    this.client = c;
    const credentials = yieldingCallCredentials(grpc);
    const versions = new Map<string, number>();
    const errors = new Map<string, number>();
    const peers = new Map<string, number>();
    const count = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
    let inFlight = 0;
    let credit = 0;
    const perTick = this.o.rate / 20;
    const done = (err: { code?: number } | null, reply?: WhoAmIReply) => {
      inFlight--;
      if (this.stopping) return;
      if (err || !reply) count(errors, grpc.status[err?.code ?? 2] ?? String(err?.code));
      else {
        count(versions, reply.version);
        count(peers, reply.peer ?? "");
      }
    };
    this.timers.push(setInterval(() => {
      credit = Math.min(credit + perTick, 2 * perTick);
      while (credit >= 1 && inFlight < 200 && !this.stopping) {
        credit--;
        inFlight++;
        c.makeUnaryRequest(
          WHOAMI_METHOD,
          (v: unknown) => Buffer.from(JSON.stringify(v)),
          (b: Buffer) => JSON.parse(b.toString("utf8")),
          {},
          new grpc.Metadata(),
          { deadline: Date.now() + 2000, credentials },
          done,
        );
      }
    }, 50));
    this.timers.push(setInterval(() => {
      this.o.write(this.o.formatSplit(versions, errors) + formatPeers(peers));
      versions.clear();
      errors.clear();
      peers.clear();
    }, 1000));
  }

  /** Every step, in order. */
  async run(): Promise<void> {
    const meshFile = await this.writeConfig();
    const token = await this.issuer();
    await this.controlPlane(meshFile);
    const [hello, client] = await Promise.all([
      this.agent("hello", token),
      this.agent("demo-client", token),
    ]);
    await this.backends(hello);
    const p = this.ports;
    this.o.write(
      `demo: mesh_ca 127.0.0.1:${p.ca}, mesh-discovery ADS 127.0.0.1:${p.ads}, backends v1 ` +
        `127.0.0.1:${p.v1} v2 127.0.0.1:${p.v2} (sa/hello), client sa/demo-client; work dir ${this.dir}`,
    );
    this.o.write(
      `demo: calling ${TARGET} at ${this.o.rate}/s; mutual TLS ${this.o.mtls ? "on" : "off"}: ` +
        `edit authPolicy in ${meshFile} (MUTUAL_TLS or NONE) to switch it; routes in ` +
        `${this.dir}/config; Ctrl-C stops`,
    );
    await this.callAndReport(client);
  }
}

/** Runs the mesh demo until SIGINT/SIGTERM; returns the exit code. */
export async function runMeshDemo(o: MeshDemoOptions): Promise<number> {
  const dir = o.workDir ?? await Deno.makeTempDir({ prefix: "mesh-demo-" });
  const demo = new MeshDemo(o, dir);
  const onSignal = () => {
    if (demo.stopping) return;
    o.write("demo: stopping");
    demo.stop(0);
  };
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  try {
    await demo.run();
  } catch (e) {
    if (!demo.stopping) o.writeErr(`Error: ${(e as Error).message}`);
    await demo.stop(1);
  }
  const code = await demo.done;
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
