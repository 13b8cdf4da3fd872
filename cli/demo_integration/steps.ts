/**
 * The integration procedure for an API-managed HTTP service (spec: "Integration procedure"), run
 * on the local `fs` platform with the real programs: mesh_ca, mesh-discovery `--configDir`,
 * meshctl `-p fs` (register, create, replace, kube-inject) and mesh-agent `--proxyless` for the
 * workload certificates. After each step it reads what the proxies get from discovery (REST xDS)
 * and sends real calls between proxyless gRPC workloads (accepted, or refused under mutual TLS),
 * and reports whether each check held. See docs/integration.md.
 * @module
 */

import {
  captured,
  inboundTls,
  initCaptureRanges,
  routeClusterFor,
  servesHttp,
  servesTcp,
  upstreamTls,
} from "./checks.ts";
import { freePort, run, type Running, start } from "./programs.ts";
import { Buffer } from "node:buffer";
import {
  WHOAMI_METHOD,
  whoAmIClientConstructor,
  type WhoAmIReply,
  yieldingCallCredentials,
} from "../demo/whoami.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

/** One check of a step. */
export interface Check {
  what: string;
  held: boolean;
  /** What was seen when it did not hold. */
  saw?: string;
}

/** One step: its title, the commands a user types, its checks. */
export interface StepResult {
  title: string;
  commands: string[];
  checks: Check[];
}

/** Options of {@link runIntegrationDemo}. */
export interface DemoOptions {
  /** Receives each output line. */
  out: (line: string) => void;
  /** Working directory (default: a new temporary one, removed at the end). */
  dir?: string;
  /** How long a check waits for discovery to serve a change (default 30 s). */
  deadlineMs?: number;
  /** Aborting stops every program the demo started (the steps left then fail quickly). */
  signal?: AbortSignal;
}

/**
 * The API proxy's port: 8081 as in the procedure, or a free port when something else holds 8081
 * (the proxyless server binds its port on every address, so it is probed on 0.0.0.0).
 */
export function apiPort(preferred = 8081): number {
  return freePort("0.0.0.0", preferred);
}

/** The names the demo uses. */
export const DEMO = {
  namespace: "default",
  service: "echo",
  host: "echo.default.svc.cluster.local",
  /** The API proxy's address (a loopback address, so real traffic could reach it) and ports. */
  ip: "127.0.10.5",
  port: 80,
  targetPort: apiPort(),
  clusterIP: "10.96.0.20",
  path: "/echo",
  /** The cluster ranges the sidecar captures; the API management backend is outside them. */
  includeIPRanges: "10.0.0.0/8,172.16.0.0/12",
  managementBackend: "203.0.113.10",
  serviceAccount: "default",
} as const;

const CLUSTER = `outbound|${DEMO.port}||${DEMO.host}`;
const SAN = `spiffe://cluster.local/ns/${DEMO.namespace}/sa/${DEMO.serviceAccount}`;
const SLEEP_SAN = `spiffe://cluster.local/ns/${DEMO.namespace}/sa/sleep`;
const ECHO_NODE = `sidecar~${DEMO.ip}~echo-1.default~default.svc.cluster.local`;
const CLIENT_NODE = "sidecar~127.0.10.6~sleep-1.default~default.svc.cluster.local";
const GATEWAY_NODE =
  "router~127.0.10.9~mesh-ingressgateway-1.mesh-system~mesh-system.svc.cluster.local";
const GATEWAY_LABELS = { mesh: "ingressgateway" };
const INBOUND = `${DEMO.ip}_${DEMO.targetPort}`;

/** The Ingress of the procedure's step 3 (the spec's shape, mesh ingress class). */
export const INGRESS_YAML = `apiVersion: extensions/v1beta1
kind: Ingress
metadata:
  name: echo
  annotations:
    kubernetes.io/ingress.class: mesh
spec:
  rules:
  - http:
      paths:
      - path: ${DEMO.path}
        backend:
          serviceName: ${DEMO.service}
          servicePort: ${DEMO.port}
`;

/** The Service of the procedure with its port named `name`. */
export function serviceYaml(portName: string): string {
  return `apiVersion: v1
kind: Service
metadata:
  name: ${DEMO.service}
spec:
  clusterIP: ${DEMO.clusterIP}
  selector:
    app: ${DEMO.service}
  ports:
  - port: ${DEMO.port}
    targetPort: ${DEMO.targetPort}
    protocol: TCP
    name: ${portName}
`;
}

/** The authentication Policy exempting the `tcp` port from mesh mTLS (0.8: targets, no peers). */
export const TCP_BYPASS_POLICY_YAML = `apiVersion: authentication.mesh.io/v1alpha1
kind: Policy
metadata:
  name: echo-tcp-bypass
spec:
  targets:
  - name: ${DEMO.service}
    ports:
    - name: tcp
`;

/** The API proxy's Deployment (its `--http_port=8081`), as kube-inject reads it. */
export const DEPLOYMENT_YAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: echo
spec:
  selector:
    matchLabels: {app: echo}
  template:
    metadata:
      labels: {app: echo}
    spec:
      containers:
      - name: esp
        image: gcr.io/endpoints-release/endpoints-runtime:1
        args: ["--http_port=${DEMO.targetPort}", "--backend=127.0.0.1:8080"]
`;

/** The mesh configuration, `authPolicy: MUTUAL_TLS` commented out as in the procedure. */
export function meshConfigYaml(mutualTls: boolean): string {
  return `ingressClass: mesh
${mutualTls ? "" : "# "}authPolicy: MUTUAL_TLS
`;
}

/** Polls `read` until `ok` holds or the deadline passes; returns the last value and whether. */
async function eventually<T>(
  read: () => Promise<T>,
  ok: (v: T) => boolean,
  deadlineMs: number,
  stopped: () => boolean = () => false,
): Promise<{ value: T | undefined; held: boolean; error?: string }> {
  const deadline = Date.now() + deadlineMs;
  let value: T | undefined;
  let error: string | undefined;
  for (;;) {
    try {
      value = await read();
      error = undefined;
      if (ok(value)) return { value, held: true };
    } catch (e) {
      error = (e as Error).message;
    }
    if (Date.now() >= deadline || stopped()) return { value, held: false, error };
    await new Promise((r) => setTimeout(r, 200));
  }
}

const short = (v: unknown) => {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 300 ? s.slice(0, 300) + "..." : s;
};

/** The demo: its programs, directory and results. */
class IntegrationDemo {
  readonly steps: StepResult[] = [];
  #ca?: Running;
  #discovery?: Running;
  /** Every program started and not yet stopped. */
  readonly #running = new Set<Running>();
  #closed = false;
  #http = "";
  /** ADS address of mesh-discovery (what the agents' bootstraps name). */
  #grpc = "";
  #caAddress = "";
  readonly #dir: string;
  readonly #deadline: number;
  readonly #out: (line: string) => void;
  readonly #signal?: AbortSignal;

  constructor(dir: string, o: DemoOptions) {
    this.#signal = o.signal;
    this.#dir = dir;
    this.#deadline = o.deadlineMs ?? 30_000;
    this.#out = o.out;
  }

  get #configDir() {
    return `${this.#dir}/config`;
  }

  /** Records and prints a command of a step (with the text it reads on stdin). */
  #command(step: StepResult, text: string, stdin?: string): void {
    step.commands.push(text);
    this.#out(`    $ ${text}${stdin === undefined ? "" : " <<EOF"}`);
    if (stdin !== undefined) {
      this.#out(stdin.trimEnd().split("\n").map((l) => `      ${l}`).join("\n") + "\n      EOF");
    }
  }

  /** Records and prints a check. */
  #check(step: StepResult, c: Check): void {
    step.checks.push(c);
    this.#out(
      `    ${c.held ? "held  " : "FAILED"}  ${c.what}${c.saw ? `\n            saw: ${c.saw}` : ""}`,
    );
  }

  /** `meshctl -p fs --configDir <dir> ...`, failing the step's command when it exits non-zero. */
  async #meshctl(step: StepResult, args: string[], stdin?: string): Promise<string> {
    const shown = ["meshctl", "-p", "fs", "--configDir", this.#configDir, ...args].join(" ");
    this.#command(step, shown, stdin);
    const r = await run("meshctl", ["-p", "fs", "--configDir", this.#configDir, ...args], stdin);
    if (r.code !== 0) throw new Error(`${shown} exited ${r.code}: ${r.stderr.trim()}`);
    return r.stdout;
  }

  /** REST xDS for a node: the resources of one type. */
  async xds(
    type: "listeners" | "clusters" | "routes",
    node: string,
    metadata = {},
  ): Promise<Any[]> {
    const res = await fetch(`http://${this.#http}/v3/discovery:${type}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ node: { id: node, metadata } }),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`REST xDS ${type} answered ${res.status}: ${text}`);
    return JSON.parse(text).resources ?? [];
  }

  async #debug(page: string): Promise<Any> {
    const res = await fetch(`http://${this.#http}/debug/${page}`);
    const text = await res.text();
    if (res.status !== 200) throw new Error(`/debug/${page} answered ${res.status}: ${text}`);
    return JSON.parse(text);
  }

  /** Runs `check` against what discovery serves, waiting for it to hold. */
  async #expect<T>(
    step: StepResult,
    what: string,
    read: () => Promise<T>,
    ok: (v: T) => boolean,
    show: (v: T | undefined) => unknown = (v) => v,
  ): Promise<void> {
    const r = await eventually(read, ok, this.#deadline, () => this.#closed);
    this.#check(
      step,
      r.held ? { what, held: true } : { what, held: false, saw: r.error ?? short(show(r.value)) },
    );
  }

  async #step(title: string, body: (s: StepResult) => Promise<void>): Promise<void> {
    if (this.#signal?.aborted) return;
    const step: StepResult = { title, commands: [], checks: [] };
    this.steps.push(step);
    this.#out(`\n[${this.steps.length}] ${title}`);
    try {
      await body(step);
    } catch (e) {
      this.#check(step, {
        what: "the step's commands ran",
        held: false,
        saw: (e as Error).message,
      });
    }
  }

  /** Starts a program the demo stops at the end (at once when the demo was stopped). */
  #start(program: string, args: string[], env: Record<string, string> = {}): Running {
    if (this.#closed) throw new Error("the demo was stopped");
    const p = start(program, args, env);
    this.#running.add(p);
    return p;
  }

  async #stopProgram(p: Running | undefined): Promise<void> {
    if (!p) return;
    this.#running.delete(p);
    await p.stop();
  }

  /**
   * Starts mesh-discovery. ADS keeps its first port across a restart, so the agents' bootstraps
   * stay valid; the HTTP port is the system's choice each time.
   */
  async #startDiscovery(): Promise<void> {
    this.#grpc ||= `127.0.0.1:${freePort()}`;
    const d = this.#start("mesh-discovery", [
      "discovery",
      "--configDir",
      this.#configDir,
      "--meshConfig",
      `${this.#dir}/mesh`,
      "--registries",
      "ServiceEntry",
      "--httpAddress",
      "127.0.0.1",
      "--port",
      "0",
      "--monitoringPort",
      "0",
      "--grpcAddr",
      this.#grpc,
      "--secureGrpcAddr",
      "",
      "--ctrlz_port",
      "0",
    ]);
    this.#discovery = d;
    const m = await d.waitFor(/listening http=(\S+) grpc=(\S+)/, 60_000);
    this.#http = m[1];
  }

  /** Runs the steps in the procedure's order; a step that fails does not stop the next ones. */
  async run(): Promise<void> {
    await Deno.mkdir(this.#configDir, { recursive: true });
    await Deno.writeTextFile(`${this.#dir}/mesh`, meshConfigYaml(false));

    await this.#step(
      "mesh_ca issues workload certificates (self-signed root)",
      (s) => this.#caStep(s),
    );

    await this.#step(
      "mesh-discovery reads files only: no demo services",
      (s) => this.#discoveryStep(s),
    );

    await this.#step(
      `the API proxy joins the mesh: port ${DEMO.port} (http) → its --http_port=${DEMO.targetPort}`,
      (s) => this.#registerStep(s),
    );

    await this.#step(
      `injection with --includeIPRanges ${DEMO.includeIPRanges}: the API management backend stays reachable`,
      (s) => this.#injectStep(s),
    );

    await this.#step(
      `an Ingress maps ${DEMO.path} to ${DEMO.service}:${DEMO.port} through the ingress gateway`,
      (s) => this.#ingressStep(s),
    );

    await this.#step(
      "authPolicy: MUTUAL_TLS in the mesh configuration",
      (s) => this.#mutualTlsStep(s),
    );

    await this.#step(
      "the port renamed tcp: the sidecar passes plain TCP, the API proxy secures it",
      (s) => this.#tcpStep(s),
    );
  }
  /** mesh_ca with a self-signed root and the demo's token issuer. */
  async #caStep(s: StepResult): Promise<void> {
    const port = freePort();
    const { generateKeyPair, exportJWK } = await import("../../lib/deps/jose.ts");
    const keys = await generateKeyPair("ES256", { extractable: true });
    const jwk = { ...(await exportJWK(keys.publicKey)), kid: "demo", alg: "ES256", use: "sig" };
    await Deno.writeTextFile(`${this.#dir}/jwks.json`, JSON.stringify({ keys: [jwk] }));
    this.#jwtKey = keys.privateKey;
    const args = [
      "--self-signed-ca",
      "--local-storage-dir",
      `${this.#dir}/ca`,
      "--trusted-jwks",
      `${this.#dir}/jwks.json`,
      "--grpc-port",
      String(port),
      "--monitoring-port",
      "0",
    ];
    this.#command(s, `mesh_ca ${args.join(" ")}`);
    this.#ca = this.#start("mesh_ca", args);
    this.#caAddress = `127.0.0.1:${port}`;
    await this.#expect(
      s,
      `the signing API listens on ${this.#caAddress}`,
      () => this.#ca!.waitFor(/gRPC signing API listening/, this.#deadline),
      (m) => m !== undefined,
    );
  }

  /** mesh-discovery on the config directory, ServiceEntries only, HTTP on loopback. */
  async #discoveryStep(s: StepResult): Promise<void> {
    this.#command(
      s,
      `mesh-discovery discovery --configDir ${this.#configDir} --meshConfig ${this.#dir}/mesh ` +
        "--registries ServiceEntry --httpAddress 127.0.0.1",
    );
    await this.#startDiscovery();
    await this.#expect(
      s,
      `discovery listens on ${this.#http} (loopback only) and knows no service yet`,
      () => this.#debug("registryz"),
      (v) => Array.isArray(v) && v.filter((x) => x.hostname).length === 0,
    );
  }

  /** The API proxy's instance registered (port 80 → 8081), served as HTTP; a real call. */
  async #registerStep(s: StepResult): Promise<void> {
    await this.#meshctl(s, [
      "register",
      DEMO.service,
      DEMO.ip,
      `http:${DEMO.port}:${DEMO.targetPort}`,
      "-s",
      DEMO.serviceAccount,
    ]);
    await this.#expect(
      s,
      `discovery serves ${DEMO.host} with the endpoint ${DEMO.ip}:${DEMO.targetPort}`,
      async () => {
        const res = await fetch(`http://${this.#http}/debug/endpointz?brief=1`);
        return await res.text();
      },
      (t) =>
        t.split("\n").some((l) =>
          l.startsWith(`${DEMO.host}:http `) && l.includes(`${DEMO.ip}:${DEMO.targetPort}`)
        ),
    );
    await this.#expect(
      s,
      `the port named http is served as HTTP: the API proxy's sidecar listener ${INBOUND} has an HTTP connection manager`,
      () => this.xds("listeners", ECHO_NODE),
      (ls) => servesHttp(ls.find((l) => l.name === INBOUND)),
      (ls) => ls?.map((l) => l.name),
    );
    await this.#startTraffic(s);
    await this.#accepted(
      s,
      `a real call from the proxyless client sleep-1 to xds:///${DEMO.host}:${DEMO.port} reaches the instance at ${DEMO.ip}:${DEMO.targetPort} (plaintext)`,
      () => this.#traffic!.mesh(),
      "",
    );
    await this.#accepted(
      s,
      `a direct call from outside the mesh to ${DEMO.ip}:${DEMO.targetPort} is answered`,
      () => this.#traffic!.direct(),
      "",
    );
  }

  /** kube-inject with and without --includeIPRanges: what the init container captures. */
  async #injectStep(s: StepResult): Promise<void> {
    const inject = async (extra: string[]) => {
      const args = [
        "kube-inject",
        "-f",
        "-",
        "--hub",
        "docker.io/mesh",
        "--tag",
        "demo",
        ...extra,
      ];
      this.#command(s, `meshctl ${args.join(" ")}`, DEPLOYMENT_YAML);
      const r = await run("meshctl", args, DEPLOYMENT_YAML);
      if (r.code !== 0) {
        throw new Error(`meshctl kube-inject exited ${r.code}: ${r.stderr.trim()}`);
      }
      const { parseAllDocuments } = await import("../../lib/deps/yaml.ts");
      const doc = parseAllDocuments(r.stdout)[0].toJS();
      const init = (doc?.spec?.template?.spec?.initContainers ?? []).find((c: Any) =>
        c.name === "mesh-init"
      );
      return initCaptureRanges(init?.args ?? []);
    };
    const with_ = await inject(["--includeIPRanges", DEMO.includeIPRanges]);
    this.#check(s, {
      what: `the init container redirects only ${DEMO.includeIPRanges} (-i)`,
      held: with_.include === DEMO.includeIPRanges,
      saw: with_.include === DEMO.includeIPRanges ? undefined : short(with_),
    });
    const backend = captured(DEMO.managementBackend, with_.include, with_.exclude);
    this.#check(s, {
      what: `traffic to the API management backend ${DEMO.managementBackend} is left alone`,
      held: !backend,
      saw: backend ? short(with_) : undefined,
    });
    const clusterAddr = captured(DEMO.clusterIP, with_.include, with_.exclude);
    this.#check(s, {
      what: `traffic to mesh services (${DEMO.clusterIP}) still goes through the sidecar`,
      held: clusterAddr,
      saw: clusterAddr ? undefined : short(with_),
    });
    const without = await inject([]);
    const lost = captured(DEMO.managementBackend, without.include, without.exclude);
    this.#check(s, {
      what: `without --includeIPRanges (-i ${without.include}) the backend would be captured too`,
      held: lost,
      saw: lost ? undefined : short(without),
    });
  }

  /** The Ingress: the gateway's route and the generated Gateway. */
  async #ingressStep(s: StepResult): Promise<void> {
    await this.#meshctl(s, ["create", "-f", "-"], INGRESS_YAML);
    await this.#expect(
      s,
      `the gateway's route 80 maps ${DEMO.path} to ${CLUSTER}`,
      () => this.xds("routes", GATEWAY_NODE, { labels: GATEWAY_LABELS }),
      (rs) => routeClusterFor(rs.find((r) => r.name === "80"), DEMO.path) === CLUSTER,
    );
    await this.#expect(
      s,
      "/debug/configz shows the Gateway made from the Ingress (selector mesh: ingressgateway)",
      () => this.#debug("configz"),
      (cs) =>
        cs.some((c: Any) =>
          c.kind === "Gateway" && c.metadata?.name === "mesh-autogenerated-k8s-ingress" &&
          c.spec?.selector?.mesh === "ingressgateway"
        ),
      (cs) => cs?.map((c: Any) => `${c.kind}/${c.metadata?.name}`),
    );
  }

  /** authPolicy: MUTUAL_TLS: inbound listeners, client clusters, the gateway, mesh_ca. */
  async #mutualTlsStep(s: StepResult): Promise<void> {
    this.#command(s, `edit ${this.#dir}/mesh: uncomment "authPolicy: MUTUAL_TLS"`);
    await Deno.writeTextFile(`${this.#dir}/mesh`, meshConfigYaml(true));
    const echoMtls = async () =>
      inboundTls((await this.xds("listeners", ECHO_NODE)).find((l) => l.name === INBOUND))
        .requiresClientCert;
    // a discovery that applies mesh configuration edits live needs no restart
    const live = await eventually(echoMtls, (v) => v, 3000, () => this.#closed);
    if (!live.held) {
      this.#command(s, "restart mesh-discovery (it read --meshConfig at start)");
      await this.#stopProgram(this.#discovery);
      await this.#startDiscovery();
    }
    await this.#expect(
      s,
      `the API proxy's sidecar listener ${INBOUND} requires client certificates (mesh_ca's root)`,
      async () =>
        inboundTls((await this.xds("listeners", ECHO_NODE)).find((l) => l.name === INBOUND)),
      (t) => t.requiresClientCert && !t.acceptsPlaintext && t.trustedCa.length > 0,
    );
    await this.#expect(
      s,
      `another workload's cluster ${CLUSTER} presents its certificate and checks ${SAN}`,
      async () =>
        upstreamTls((await this.xds("clusters", CLIENT_NODE)).find((c) => c.name === CLUSTER)),
      (t) => !!t && t.presents.length > 0 && t.sans.includes(SAN),
    );
    await this.#expect(
      s,
      "the ingress gateway still accepts plain HTTP from outside (0.0.0.0_80 without TLS)",
      async () =>
        (await this.xds("listeners", GATEWAY_NODE, { labels: GATEWAY_LABELS })).find((l) =>
          l.name === "0.0.0.0_80"
        ),
      (l) => servesHttp(l) && inboundTls(l).acceptsPlaintext,
    );
    await this.#expect(
      s,
      `... and reaches the service with mutual TLS (its cluster ${CLUSTER} presents a certificate)`,
      async () =>
        upstreamTls(
          (await this.xds("clusters", GATEWAY_NODE, { labels: GATEWAY_LABELS })).find((c) =>
            c.name === CLUSTER
          ),
        ),
      (t) => !!t && t.presents.length > 0,
    );
    await this.#workloadCertificate(s);
    if (this.#traffic) {
      await this.#accepted(
        s,
        `a real call from sleep-1 through the mesh is answered over mutual TLS (the server sees ${SLEEP_SAN})`,
        () => this.#traffic!.mesh(),
        SLEEP_SAN,
      );
      await this.#refused(
        s,
        `a direct call from outside the mesh (plaintext, no certificate) is refused`,
        () => this.#traffic!.direct(),
      );
    }
  }

  /** The port renamed tcp and exempted from mesh mTLS: tcp_proxy, no TLS, no conflict. */
  async #tcpStep(s: StepResult): Promise<void> {
    await this.#meshctl(s, ["replace", "-f", "-"], serviceYaml("tcp"));
    await this.#meshctl(s, ["create", "-f", "-"], TCP_BYPASS_POLICY_YAML);
    await this.#expect(
      s,
      `the API proxy's sidecar listener ${INBOUND} is tcp_proxy and takes plain TCP (no mesh TLS)`,
      async () => (await this.xds("listeners", ECHO_NODE)).find((l) => l.name === INBOUND),
      (l) => servesTcp(l) && inboundTls(l).acceptsPlaintext,
    );
    const vipListener = `${DEMO.clusterIP}_${DEMO.port}`;
    await this.#expect(
      s,
      `other workloads get ${vipListener} with tcp_proxy and a cluster without mesh TLS`,
      async () => ({
        listener: (await this.xds("listeners", CLIENT_NODE)).find((l) => l.name === vipListener),
        cluster: (await this.xds("clusters", CLIENT_NODE)).find((c) => c.name === CLUSTER),
      }),
      (v) => servesTcp(v.listener) && !!v.cluster && upstreamTls(v.cluster) === undefined,
    );
    await this.#expect(
      s,
      "no outbound listener conflict (/debug/conflictz is empty: the clusterIP gives echo its own listener)",
      () => this.#debug("conflictz"),
      (v) => Array.isArray(v) && v.length === 0,
    );
  }

  /** The private key of the demo's token issuer (mesh_ca trusts its public key). */
  #jwtKey?: Awaited<
    ReturnType<typeof import("../../lib/deps/jose.ts").generateKeyPair>
  >["privateKey"];

  /**
   * Starts `mesh-agent proxy --proxyless` for a workload (pod `<name>-1`, its service account
   * token signed by the demo's issuer): it gets the workload certificate from mesh_ca into
   * `<dir>/<name>/certs` and writes the gRPC xDS bootstrap. Resolves once the bootstrap is there.
   */
  async #agent(
    s: StepResult,
    w: { name: string; ip: string; sa: string },
  ): Promise<{ agent: Running; dir: string; bootstrap: string }> {
    const dir = `${this.#dir}/${w.name}`;
    await Deno.mkdir(`${dir}/certs`, { recursive: true });
    const { SignJWT } = await import("../../lib/deps/jose.ts");
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: "ES256", kid: "demo" })
      .setSubject(`system:serviceaccount:${DEMO.namespace}:${w.sa}`)
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(this.#jwtKey!);
    await Deno.writeTextFile(`${dir}/token`, token);
    await Deno.copyFile(`${this.#dir}/ca/ca-cert.pem`, `${dir}/ca-root.pem`);
    const env = {
      POD_NAME: `${w.name}-1`,
      POD_NAMESPACE: DEMO.namespace,
      INSTANCE_IP: w.ip,
      MESH_CERT_DIR: `${dir}/certs`,
      MESH_CA_ADDRESS: this.#caAddress,
      MESH_CA_ROOT_CERT: `${dir}/ca-root.pem`,
      MESH_CA_TOKEN_FILE: `${dir}/token`,
    };
    const args = [
      "proxy",
      "--proxyless",
      "--discoveryAddress",
      this.#grpc,
      "--configPath",
      `${dir}/proxy`,
    ];
    this.#command(
      s,
      `POD_NAME=${w.name}-1 INSTANCE_IP=${w.ip} MESH_CERT_DIR=${dir}/certs ` +
        `MESH_CA_ADDRESS=${this.#caAddress} MESH_CA_TOKEN_FILE=${dir}/token ... ` +
        `mesh-agent ${args.join(" ")}`,
    );
    const agent = this.#start("mesh-agent", args, env);
    await agent.waitFor(/gRPC bootstrap written/, this.#deadline);
    return { agent, dir, bootstrap: `${dir}/proxy/grpc-bootstrap.json` };
  }

  /** mesh_ca's certificate for the API proxy's workload (its agent runs since step 3). */
  async #workloadCertificate(s: StepResult): Promise<void> {
    const dir = `${this.#dir}/echo`;
    await this.#expect(
      s,
      `mesh_ca issued the API proxy's certificate for ${SAN}, signed by its root`,
      async () => {
        const pki = await import("../../lib/pki/mod.ts");
        const leaf =
          pki.parseCertificates(await Deno.readTextFile(`${dir}/certs/cert-chain.pem`))[0];
        const root = pki.parseCertificates(await Deno.readTextFile(`${dir}/ca-root.pem`))[0];
        return {
          sans: pki.subjectAltNames(leaf).uris,
          signedByRoot: await leaf.verify({ publicKey: root, signatureOnly: true }),
        };
      },
      (v) => v.signedByRoot && v.sans.includes(SAN),
    );
  }

  /** The real calls of the demo, once {@link #startTraffic} ran. */
  #traffic?: {
    /** A call from the proxyless client `sleep` through the mesh (`xds:///echo...:80`). */
    mesh(): Promise<WhoAmIReply>;
    /** A call straight to the API proxy's port from outside the mesh (plaintext, no certificate). */
    direct(): Promise<WhoAmIReply>;
  };

  /**
   * The data path that runs on one machine, with proxyless gRPC workloads: the API proxy's
   * instance is a proxyless gRPC server on `127.0.10.5:8081` (its Listener, TLS and all, comes
   * from discovery; bootstrap and certificate from its mesh-agent), and `sleep` is a proxyless
   * client in this process (its own mesh-agent) calling `xds:///echo.default.svc.cluster.local:80`.
   */
  async #startTraffic(s: StepResult): Promise<void> {
    const echo = await this.#agent(s, { name: "echo", ip: DEMO.ip, sa: DEMO.serviceAccount });
    const backendArgs = [`${DEMO.ip}:${DEMO.targetPort}=echo`];
    this.#command(
      s,
      `GRPC_XDS_BOOTSTRAP=${echo.bootstrap} deno run -A cli/demo/xds_backends.ts ${backendArgs[0]}`,
    );
    const backend = this.#start("demo/xds_backends", backendArgs, {
      GRPC_XDS_BOOTSTRAP: echo.bootstrap,
    });
    await backend.waitFor(/serving /, this.#deadline);
    const sleep = await this.#agent(s, { name: "sleep", ip: "127.0.10.6", sa: "sleep" });
    Deno.env.delete("GRPC_XDS_BOOTSTRAP_CONFIG");
    Deno.env.set("GRPC_XDS_BOOTSTRAP", sleep.bootstrap);
    const grpc = await import("../../lib/deps/grpc.ts");
    const xds = await import("../../lib/deps/grpc_xds.ts");
    xds.register();
    const Client = whoAmIClientConstructor(grpc);
    const target = `xds:///${DEMO.host}:${DEMO.port}`;
    // a new channel per call: a changed TLS setting applies to new connections
    const once = (address: string, creds: unknown) =>
      new Promise<WhoAmIReply>((resolve, reject) => {
        // deno-lint-ignore no-explicit-any
        const c = new Client(address, creds as any);
        c.makeUnaryRequest(
          WHOAMI_METHOD,
          (v: unknown) => Buffer.from(JSON.stringify(v)),
          (b: Buffer) => JSON.parse(b.toString("utf8")),
          { id: "" },
          new grpc.Metadata(),
          { deadline: Date.now() + 3000, credentials: yieldingCallCredentials(grpc) },
          (err: Error | null, reply?: WhoAmIReply) => {
            c.close();
            if (err || !reply) reject(err ?? new Error("no reply"));
            else resolve(reply);
          },
        );
      });
    this.#command(
      s,
      `the proxyless client sleep-1 calls ${target}; a plain client calls ${DEMO.ip}:${DEMO.targetPort}`,
    );
    this.#traffic = {
      mesh: () => once(target, new xds.XdsChannelCredentials(grpc.credentials.createInsecure())),
      direct: () => once(`${DEMO.ip}:${DEMO.targetPort}`, grpc.credentials.createInsecure()),
    };
  }

  /** A real call that must be answered (`peer`: the caller identity the server saw, "" plaintext). */
  async #accepted(s: StepResult, what: string, call: () => Promise<WhoAmIReply>, peer: string) {
    await this.#expect(
      s,
      what,
      call,
      (r) => r.address === `${DEMO.ip}:${DEMO.targetPort}` && (r.peer ?? "") === peer,
    );
  }

  /** A real call that must be refused. */
  async #refused(s: StepResult, what: string, call: () => Promise<WhoAmIReply>) {
    await this.#expect(
      s,
      what,
      () =>
        call().then(
          (r) => ({ refused: false, saw: r }),
          (e) => ({ refused: true, saw: String(e?.message ?? e) }),
        ),
      (r) => r.refused,
    );
  }

  /** Stops every program it started; none starts afterwards. */
  async close(): Promise<void> {
    this.#closed = true;
    const all = [...this.#running];
    this.#running.clear();
    await Promise.all(all.map((p) => p.stop()));
  }
}

/**
 * Runs the procedure and reports every step through `o.out`. Resolves with the steps and whether
 * every check held; every program it started is stopped.
 */
export async function runIntegrationDemo(
  o: DemoOptions,
): Promise<{ held: boolean; steps: StepResult[] }> {
  const dir = o.dir ?? await Deno.makeTempDir({ prefix: "mesh-integration-" });
  const demo = new IntegrationDemo(dir, o);
  const onAbort = () => void demo.close();
  o.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await demo.run();
  } finally {
    o.signal?.removeEventListener("abort", onAbort);
    await demo.close();
    if (!o.dir) await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  const held = demo.steps.every((s) => s.checks.length > 0 && s.checks.every((c) => c.held));
  return { held, steps: demo.steps };
}
