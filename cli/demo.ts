/**
 * `deno task demo`: the mesh on one machine, no cluster needed.
 *
 * Starts mesh-discovery (`--registries Mock --configDir docs/demo/config`) as a child process,
 * two WhoAmI gRPC backends on the Mock endpoint addresses of `hello`'s grpc port
 * (v1 on 127.0.1.1:17070, v2 on 127.0.1.2:17070 with the default `--mockPortOffset` 10000; busy
 * default ports are replaced by free ones), and a proxyless gRPC client (grpc-js-xds)
 * calling `xds:///hello.default.svc.cluster.local:7070` continuously. Once a second it prints
 * the split it saw, e.g. `last 1s: v1 80% (160)  v2 20% (40)`. Edit the weights in
 * `docs/demo/config/hello-virtualservice.yaml` and the split follows. Ctrl-C stops everything.
 * `--mtls` runs the whole mesh instead (cli/demo/mesh.ts): mesh_ca, an agent per workload,
 * proxyless backends and client with mutual TLS, printing the callers' identities too.
 * See docs/demo/README.md.
 * @module
 */

import { Command } from "../lib/deps/commander.ts";
import { FlagValueError } from "../lib/flags/mod.ts";
import { freePort } from "../lib/net/mod.ts";
import { MAX_MOCK_PORT_OFFSET, MOCK_PORT_OFFSET, mockEndpointPort } from "../lib/registry/mock.ts";
import {
  startWhoAmI,
  WHOAMI_METHOD,
  type WhoAmIBackend,
  whoAmIClientConstructor,
  yieldingCallCredentials,
} from "./demo/whoami.ts";
import { Buffer } from "node:buffer";

/** Default ports of the demo (chosen away from the spec defaults and the Mock endpoint ports). */
export const DEMO_DEFAULTS = {
  grpcPort: 25010,
  httpPort: 25080,
  monitoringPort: 25093,
  ctrlzPort: 25876,
  rate: 200,
} as const;

const TARGET = "xds:///hello.default.svc.cluster.local:7070";
const REPO = new URL("../", import.meta.url);

function portArg(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!/^\d+$/.test(v) || n < 1 || n > 65535) {
      throw new FlagValueError(name, `must be a port from 1 to 65535, got "${v}"`);
    }
    return n;
  };
}

function rateArg(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 1 || n > 5000) {
    throw new FlagValueError(
      "rate",
      `must be a whole number of calls/s from 1 to 5000, got "${v}"`,
    );
  }
  return n;
}

function offsetArg(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 1 || n > MAX_MOCK_PORT_OFFSET) {
    throw new FlagValueError(
      "mockPortOffset",
      `must be a whole number from 1 to ${MAX_MOCK_PORT_OFFSET}, got "${v}"`,
    );
  }
  return n;
}

/** The demo's port flags and the host each binds. */
const PORT_FLAGS = [
  ["grpcPort", "127.0.0.1"],
  ["httpPort", "0.0.0.0"],
  ["monitoringPort", "0.0.0.0"],
  ["ctrlzPort", "127.0.0.1"],
] as const;

/** Whether `host:port` can be bound now. */
async function isFree(hostname: string, port: number): Promise<boolean> {
  try {
    const l = Deno.listen({ hostname, port });
    l.close();
    await Promise.resolve();
    return true;
  } catch {
    return false;
  }
}

/** Whether both Mock endpoint addresses of hello are free on `port`. */
async function mockFree(port: number): Promise<boolean> {
  return await isFree("127.0.1.1", port) && await isFree("127.0.1.2", port);
}

/** mesh-discovery's listen flags → the demo flag that sets them. */
const DEMO_FLAG_OF: Record<string, string> = {
  "--port": "--httpPort",
  "--grpcAddr": "--grpcPort",
  "--monitoringPort": "--monitoringPort",
  "--ctrlz_port": "--ctrlzPort",
};

/**
 * Rewrites mesh-discovery's `Cannot listen on --port 25080: address already in use` (a line of
 * its output) in terms of the demo's flags: `Cannot listen on --httpPort 25080: ...`; undefined
 * for other lines.
 */
export function demoListenError(line: string): string | undefined {
  const m = /Cannot listen on (--[A-Za-z_]+) (\S+?)(: | \()(.*)$/.exec(line);
  if (!m || !DEMO_FLAG_OF[m[1]]) return undefined;
  const port = m[1] === "--grpcAddr" ? m[2].slice(m[2].lastIndexOf(":") + 1) : m[2];
  return `Cannot listen on ${DEMO_FLAG_OF[m[1]]} ${port}${m[3]}${m[4]}`;
}

/**
 * The config problem in a line of mesh-discovery's output (`Config file error ...` from its
 * file store), from that phrase on; undefined for other lines.
 */
export function configErrorOf(line: string): string | undefined {
  const i = line.indexOf("Config file error");
  return i < 0 ? undefined : line.slice(i).trim();
}

const write = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));
const writeErr = (line: string) => Deno.stderr.writeSync(new TextEncoder().encode(line + "\n"));

/**
 * Whole percentages of `counts` that add up to exactly 100 (largest remainders get the
 * rounding), in the order given; all 0 when the total is 0.
 */
export function percentages(counts: number[]): number[] {
  const total = counts.reduce((a, b) => a + b, 0);
  if (!total) return counts.map(() => 0);
  const exact = counts.map((n) => (100 * n) / total);
  const out = exact.map(Math.floor);
  let left = 100 - out.reduce((a, b) => a + b, 0);
  const order = exact.map((e, i) => [e - out[i], i]).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (const [, i] of order) {
    if (left <= 0) break;
    out[i]++;
    left--;
  }
  return out;
}

/** Formats one second of results: `last 1s: v1 80% (160)  v2 20% (40)` (percentages add to 100). */
export function formatSplit(versions: Map<string, number>, errors: Map<string, number>): string {
  const entries = [...versions.entries()].sort(([a], [b]) => a.localeCompare(b));
  const pct = percentages(entries.map(([, n]) => n));
  const parts = entries.map(([v, n], i) => `${v} ${pct[i]}% (${n})`);
  let line = `last 1s: ${parts.length ? parts.join("  ") : "no successful calls"}`;
  const failed = [...errors.values()].reduce((a, b) => a + b, 0);
  if (failed) {
    line += `  errors ${failed} (${
      [...errors.entries()].map(([e, n]) => `${e} x${n}`).join(", ")
    })`;
  }
  return line;
}

async function waitForPort(port: number, deadlineMs: number, alive: () => boolean) {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    if (!alive()) return false;
    try {
      const c = await Deno.connect({ hostname: "127.0.0.1", port });
      c.close();
      return true;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return false;
}

/** The demo's flags (a commander program that throws instead of exiting). */
function demoCommand() {
  return new Command("demo")
    .description(
      "Runs mesh-discovery, two gRPC backends and a proxyless client that prints the split.",
    )
    .option(
      "--configDir <dir>",
      "config directory watched by mesh-discovery",
      new URL("docs/demo/config", REPO).pathname,
    )
    .option(
      "--grpcPort <port>",
      "plaintext ADS port of mesh-discovery",
      portArg("grpcPort"),
      DEMO_DEFAULTS.grpcPort,
    )
    .option(
      "--httpPort <port>",
      "HTTP port of mesh-discovery (/debug/...)",
      portArg("httpPort"),
      DEMO_DEFAULTS.httpPort,
    )
    .option(
      "--monitoringPort <port>",
      "monitoring port of mesh-discovery",
      portArg("monitoringPort"),
      DEMO_DEFAULTS.monitoringPort,
    )
    .option(
      "--ctrlzPort <port>",
      "ControlZ port of mesh-discovery",
      portArg("ctrlzPort"),
      DEMO_DEFAULTS.ctrlzPort,
    )
    .option(
      "--mockPortOffset <n>",
      "Mock endpoint port = service port + this (backends on 127.0.1.1/2:<7070+n>)",
      offsetArg,
      MOCK_PORT_OFFSET,
    )
    .option("--rate <n>", "calls per second made by the client", rateArg, DEMO_DEFAULTS.rate)
    .option("--verbose", "copy mesh-discovery's output to stderr", false)
    .option(
      "--mtls",
      "the whole mesh with mutual TLS: mesh_ca, an agent per workload, proxyless backends and client",
      false,
    )
    .exitOverride()
    .configureOutput({
      writeOut: (s) => Deno.stdout.writeSync(new TextEncoder().encode(s)),
      writeErr: (s) => Deno.stderr.writeSync(new TextEncoder().encode(s)),
      outputError: (s, w) =>
        w(`${s.trim().replace(/^error: /, "Error: ")}\nRun "deno task demo --help" for usage.\n`),
    });
}

/** The demo's command, with its options' types. */
type DemoCommand = ReturnType<typeof demoCommand>;
/** The demo's options, as commander parsed them. */
type DemoOptions = ReturnType<DemoCommand["opts"]>;

/** Parses `args`: the command, or the exit code when parsing ended the program. */
function parseArgs(args: string[]): DemoCommand | number {
  const cmd = demoCommand();
  try {
    cmd.parse(args, { from: "user" });
  } catch (e) {
    if (e instanceof FlagValueError) {
      writeErr(`Error: ${e.message}\nRun "deno task demo --help" for usage.`);
      return 2;
    }
    const code = (e as { exitCode?: number; code?: string }).code;
    if (code === "commander.helpDisplayed" || code === "commander.version") return 0;
    return 2;
  }
  return cmd;
}

const grpcEndpoint = (offset: number) => mockEndpointPort(7070, offset);

/**
 * Defaults that are busy (another demo, a test run) are replaced by free ones; a value the user
 * gave is kept, and a busy one fails naming its flag.
 */
async function choosePorts(cmd: DemoCommand, o: DemoOptions) {
  const chosen: string[] = [];
  for (const [name, host] of PORT_FLAGS) {
    if (cmd.getOptionValueSource(name) !== "default" || await isFree(host, o[name])) continue;
    o[name] = freePort(host);
    chosen.push(`--${name} ${o[name]}`);
  }
  if (cmd.getOptionValueSource("mockPortOffset") === "default") {
    for (let i = 0; i < 50 && !(await mockFree(grpcEndpoint(o.mockPortOffset))); i++) {
      o.mockPortOffset = 20000 + Math.floor(Math.random() * 30000);
    }
    if (o.mockPortOffset !== MOCK_PORT_OFFSET) chosen.push(`--mockPortOffset ${o.mockPortOffset}`);
  }
  if (chosen.length) write(`demo: default ports busy, using ${chosen.join(", ")}`);
}

/** The two WhoAmI backends on the Mock endpoint addresses of hello's grpc port. */
async function startBackends(o: DemoOptions): Promise<WhoAmIBackend[] | undefined> {
  const backends: WhoAmIBackend[] = [];
  const port = grpcEndpoint(o.mockPortOffset);
  try {
    for (const [host, version] of [["127.0.1.1", "v1"], ["127.0.1.2", "v2"]]) {
      if (!(await isFree(host, port))) {
        throw new Error(
          `Cannot listen on ${host}:${port} (Mock endpoint of hello ${version}): address already ` +
            `in use; give another --mockPortOffset (endpoint port = 7070 + offset)`,
        );
      }
      backends.push(await startWhoAmI({ host, port, version }));
    }
  } catch (e) {
    writeErr(`Error: ${(e as Error).message}`);
    for (const b of backends) await b.shutdown();
    return undefined;
  }
  return backends;
}

/** mesh-discovery as a child process on the demo's ports, with the Mock registry. */
function spawnDiscovery(o: DemoOptions): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("cli/mesh-discovery.ts", REPO).pathname,
      "discovery",
      "--registries",
      "Mock",
      "--configDir",
      o.configDir,
      "--port",
      String(o.httpPort),
      "--grpcAddr",
      `127.0.0.1:${o.grpcPort}`,
      "--secureGrpcAddr",
      "",
      "--monitoringPort",
      String(o.monitoringPort),
      "--ctrlz_port",
      String(o.ctrlzPort),
      "--ctrlz_address",
      "127.0.0.1",
    ],
    env: { MESH_MOCK_PORT_OFFSET: String(o.mockPortOffset) },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/**
 * One run of the demo once the backends are up: mesh-discovery's process and its last output,
 * the client's timers, and the stop that ends them all (once) with an exit code.
 */
class DemoRun {
  readonly tail: string[] = [];
  readonly child: Deno.ChildProcess;
  readonly childStatus: Promise<Deno.CommandStatus>;
  childExited = false;
  stopping = false;
  timers: number[] = [];
  client: { close(): void } | undefined;
  readonly done: Promise<number>;
  #resolveDone!: (code: number) => void;

  constructor(readonly o: DemoOptions, readonly backends: WhoAmIBackend[]) {
    this.done = new Promise<number>((r) => (this.#resolveDone = r));
    this.child = spawnDiscovery(o);
    this.childStatus = Promise.all([
      this.child.status,
      this.pump(this.child.stdout),
      this.pump(this.child.stderr),
    ]).then(([s]) => {
      this.childExited = true;
      return s;
    });
  }

  /** Keeps the last 40 lines of mesh-discovery's output; shows config errors (all, if verbose). */
  async pump(s: ReadableStream<Uint8Array>) {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of s) {
      buf += dec.decode(chunk, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        this.tail.push(line);
        if (this.tail.length > 40) this.tail.shift();
        if (this.o.verbose) writeErr(`[mesh-discovery] ${line}`);
        // a rejected config edit explains why the split did not change: always shown
        else if (configErrorOf(line)) writeErr(`demo: ${configErrorOf(line)}`);
      }
    }
  }

  async stop(code: number) {
    if (this.stopping) return;
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.client?.close();
    if (!this.childExited) {
      try {
        this.child.kill("SIGTERM");
      } catch { /* already gone */ }
      const t = setTimeout(() => {
        try {
          this.child.kill("SIGKILL");
        } catch { /* already gone */ }
      }, 5000);
      await this.childStatus;
      clearTimeout(t);
    }
    for (const b of this.backends) await b.shutdown();
    this.#resolveDone(code);
  }

  readonly onSignal = () => {
    // Ctrl-C under `deno task` can deliver SIGINT twice (the task runner forwards it too)
    if (this.stopping) return;
    write("demo: stopping");
    this.stop(0);
  };

  /** mesh-discovery exiting on its own ends the demo with its reason. */
  watchChild() {
    this.childStatus.then((s) => {
      if (this.stopping) return;
      // a busy port: name the demo's flag, not mesh-discovery's
      const busy = this.tail.map(demoListenError).find((l) => l);
      if (busy) writeErr(`Error: ${busy}`);
      else {
        writeErr(
          `Error: mesh-discovery exited with code ${s.code}; its last output:\n${
            this.tail.join("\n")
          }`,
        );
      }
      this.stop(1);
    });
  }

  /** Waits (30 s at most) for mesh-discovery's ADS port; stops the demo when it does not open. */
  async waitForDiscovery() {
    const o = this.o;
    if (await waitForPort(o.grpcPort, 30_000, () => !this.childExited && !this.stopping)) return;
    if (!this.stopping && !this.childExited) {
      writeErr(
        `Error: mesh-discovery did not open 127.0.0.1:${o.grpcPort} within 30 s; its last output:\n${
          this.tail.join("\n")
        }`,
      );
      await this.stop(1);
    }
  }

  /** The proxyless client: calls at `--rate` and prints the split once a second. */
  async startClient() {
    const o = this.o;
    write(
      `demo: mesh-discovery (pid ${this.child.pid}) ADS 127.0.0.1:${o.grpcPort}, HTTP 127.0.0.1:${o.httpPort}; ` +
        `backends v1 ${this.backends[0].address}, v2 ${
          this.backends[1].address
        }; config ${o.configDir}`,
    );
    write(
      `demo: calling ${TARGET} at ${o.rate}/s; edit the weights in ${o.configDir} to change the split; Ctrl-C stops`,
    );
    Deno.env.set(
      "GRPC_XDS_BOOTSTRAP_CONFIG",
      JSON.stringify({
        xds_servers: [{
          server_uri: `127.0.0.1:${o.grpcPort}`,
          channel_creds: [{ type: "insecure" }],
          server_features: ["xds_v3"],
        }],
        node: {
          id: "sidecar~127.0.0.1~demo-client.default~default.svc.cluster.local",
          cluster: "demo-client",
          locality: { region: "mock-region", zone: "mock-zone" },
        },
      }),
    );
    const grpc = await import("../lib/deps/grpc.ts");
    const xds = await import("../lib/deps/grpc_xds.ts");
    xds.register();
    const Client = whoAmIClientConstructor(grpc);
    const c = new Client(TARGET, grpc.credentials.createInsecure());
    this.client = c;
    const credentials = yieldingCallCredentials(grpc);
    const versions = new Map<string, number>();
    const errors = new Map<string, number>();
    let inFlight = 0;
    const perTick = o.rate / 20;
    let credit = 0;
    const callOnce = () => {
      inFlight++;
      c.makeUnaryRequest(
        WHOAMI_METHOD,
        (v: unknown) => Buffer.from(JSON.stringify(v)),
        (b: Buffer) => JSON.parse(b.toString("utf8")),
        {},
        new grpc.Metadata(),
        { deadline: Date.now() + 2000, credentials },
        (err: { code?: number } | null, reply?: { version: string }) => {
          inFlight--;
          if (this.stopping) return;
          if (err || !reply) {
            const name = grpc.status[err?.code ?? 2] ?? String(err?.code);
            errors.set(name, (errors.get(name) ?? 0) + 1);
          } else versions.set(reply.version, (versions.get(reply.version) ?? 0) + 1);
        },
      );
    };
    this.timers.push(setInterval(() => {
      credit += perTick;
      while (credit >= 1 && inFlight < 200) {
        credit--;
        callOnce();
      }
      if (credit > perTick) credit = perTick;
    }, 50));
    this.timers.push(setInterval(() => {
      write(formatSplit(versions, errors));
      versions.clear();
      errors.clear();
    }, 1000));
  }
}

/** The demo: flags, ports, backends, mesh-discovery, then the client until a signal. */
async function main(args: string[]): Promise<number> {
  const cmd = parseArgs(args);
  if (typeof cmd === "number") return cmd;
  const o = cmd.opts();
  if (o.mtls) {
    const { runMeshDemo } = await import("./demo/mesh.ts");
    return await runMeshDemo({
      rate: o.rate,
      mtls: true,
      verbose: o.verbose,
      formatSplit,
      write,
      writeErr,
    });
  }
  await choosePorts(cmd, o);
  try {
    const st = await Deno.stat(o.configDir);
    if (!st.isDirectory) throw new Error("not a directory");
  } catch (e) {
    writeErr(
      `Error: --configDir "${o.configDir}" is not a readable directory: ${(e as Error).message}`,
    );
    return 2;
  }
  // Backends first: they bind the Mock endpoint addresses of hello's grpc port.
  const backends = await startBackends(o);
  if (!backends) return 1;
  const run = new DemoRun(o, backends);
  Deno.addSignalListener("SIGINT", run.onSignal);
  Deno.addSignalListener("SIGTERM", run.onSignal);
  run.watchChild();
  await run.waitForDiscovery();
  if (!run.stopping) await run.startClient();
  const code = await run.done;
  Deno.removeSignalListener("SIGINT", run.onSignal);
  Deno.removeSignalListener("SIGTERM", run.onSignal);
  return code;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
