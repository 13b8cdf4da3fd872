/**
 * mesh_ca benchmark: CSRs signed per second end to end over TLS (the real program, gRPC
 * CreateCertificate with a bearer JWT, 64 concurrent clients on their own HTTP/2 connections),
 * for an RSA-2048 and an ECDSA P-256 CA key, with each signing backend (`--signing-backend
 * openssl`, the default where libcrypto loads, and `webcrypto`); each next to the raw single-core
 * signing bound of `openssl speed` measured in the same run (target >= 50%), next to the crypto
 * bound of the machine (every core doing one CA signature plus one P-256 CSR verification per
 * CSR, at `openssl speed` rates), and next to `cfssl serve` (Debian golang-cfssl) signing the
 * same CSRs over HTTPS with 64 concurrent clients. Also: the same transport answering with a
 * fixed chain and no crypto (`bench/_noop_ca.ts`), the in-process sign+verify rate of each
 * backend, the load average, and the p99 latency of mesh_ca at half its maximum rate (open loop;
 * target <= 20 ms). Each mesh_ca row is measured for every `--workers` value (default 1 and 2)
 * in the same run, with the cores that mesh_ca and the clients used.
 *
 * Two clients, each driving mesh_ca and cfssl alike (`--client`): `h2load` (nghttp2, C, one
 * thread in its own process: the independent client, every request on its own connection's one
 * stream at a time, one CSR; the server's issued-certificate counter must grow by every request
 * it completed) and `node` (`node:http2` in this process for mesh_ca, `fetch` for cfssl, cycling
 * through the distinct CSRs).
 *
 * `deno task bench ca [--seconds N] [--clients N] [--csrs N] [--keys rsa,ec] [--profile DIR]
 * [--workers 1,2] [--backends openssl,webcrypto] [--client h2load,node] [--quick]`;
 * `--help` prints this.
 * @module
 */

import { Buffer } from "node:buffer";
import process from "node:process";
import {
  createCsr,
  generateKeyPair,
  importPrivateKey,
  loadOpenSsl,
  openSslBackend,
  selectSigningBackend,
  type SigningBackend,
  spiffeId,
} from "../lib/pki/mod.ts";
import { CREATE_CERTIFICATE, encodeMeshCertificateRequest } from "../lib/pki/ca_messages.ts";
import { testIssuer } from "../tests/harness/ca_client.ts";
import { freePort, spawnProgram } from "../tests/harness/procs.ts";
import { h2loadClosedLoop, hasH2load } from "./_h2load.ts";

const USAGE = `Usage: deno task bench ca [--seconds N] [--clients N] [--csrs N] [--keys rsa,ec]
          [--workers 1,2] [--backends openssl,webcrypto] [--client h2load,node] [--quick]

CSRs signed per second by mesh_ca end to end over TLS (gRPC, bearer JWT, N concurrent clients,
default 64) for an RSA-2048 and an ECDSA P-256 CA key, with the openssl and the webcrypto signing
backends, as a fraction of the single-core raw signing rate of \`openssl speed\` measured in the
same run, compared with \`cfssl serve\` signing the same CSRs and with the same TLS gRPC transport
answering without crypto; the p99 latency at half the maximum rate (default backend).

  --seconds N   duration of each measured phase (default 5)
  --clients N   concurrent clients (default 64)
  --csrs N      distinct CSRs (ECDSA P-256 keys) cycled through (default 64)
  --keys LIST   CA keys to measure: rsa, ec or rsa,ec (default rsa,ec)
  --workers LIST  mesh_ca --workers values, each measured in the same run (default 1,2)
  --backends LIST signing backends (default: openssl where libcrypto loads, and webcrypto)
  --client LIST   clients, each driving mesh_ca and cfssl: h2load (nghttp2, its own process,
                one CSR) and node (node:http2 / fetch in this process, every CSR); default
                h2load,node where h2load is installed, else node
  --quick       skip the in-process sign+verify rates and the no-op transport
  --profile DIR record mesh_ca's CPU profile during each maximum-rate phase
                (DIR/ca-<key>-<backend>.cpuprofile; summarize with
                deno run -A bench/cpuprofile_top.ts DIR/*.cpuprofile)
`;

interface Options {
  keys: ("rsa" | "ec")[];
  seconds: number;
  clients: number;
  csrs: number;
  profile: string;
  /** mesh_ca --workers values measured, each in the same run. */
  workers: number[];
  /** Signing backends measured (default: openssl where it loads, and webcrypto). */
  backends: ("openssl" | "webcrypto")[] | undefined;
  /** Skip the in-process and no-op transport measurements. */
  quick: boolean;
  /** Clients measured (default: h2load where it is installed, and node). */
  client: Client[] | undefined;
}

/** `h2load`: nghttp2's load generator in its own process; `node`: node:http2 / fetch here. */
type Client = "h2load" | "node";

function parseArgs(args: string[]): Options | undefined {
  const o: Options = {
    keys: ["rsa", "ec"],
    seconds: 5,
    clients: 64,
    csrs: 64,
    profile: "",
    workers: [1, 2],
    backends: undefined,
    quick: false,
    client: undefined,
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--help" || a === "-h") return undefined;
    if (a === "--quick") {
      o.quick = true;
      continue;
    }
    if (a === "--workers") {
      const ws = (args[++i] ?? "").split(",").map(Number);
      if (!ws.length || ws.some((w) => !Number.isInteger(w) || w < 1)) {
        throw new Error(`Flag ${a}: want a comma-separated list of positive integers`);
      }
      o.workers = ws;
      continue;
    }
    if (a === "--client") {
      const cs = (args[++i] ?? "").split(",");
      if (cs.some((c) => c !== "h2load" && c !== "node")) {
        throw new Error(`Flag ${a}: want h2load, node or h2load,node`);
      }
      o.client = cs as Client[];
      continue;
    }
    if (a === "--backends") {
      const bs = (args[++i] ?? "").split(",");
      if (!bs.length || bs.some((b) => b !== "openssl" && b !== "webcrypto")) {
        throw new Error(`Flag ${a}: want openssl, webcrypto or openssl,webcrypto`);
      }
      o.backends = bs as Options["backends"];
      continue;
    }
    const key = a.replace(/^--/, "") as keyof Options;
    if (!(key in o)) throw new Error(`Unknown flag ${a}\n\n${USAGE}`);
    if (key === "keys") {
      const keys = (args[++i] ?? "").split(",");
      if (!keys.length || keys.some((k) => k !== "rsa" && k !== "ec")) {
        throw new Error(`Flag ${a}: want rsa, ec or rsa,ec`);
      }
      o.keys = keys as Options["keys"];
      continue;
    }
    if (key === "profile") {
      o.profile = args[++i] ?? "";
      continue;
    }
    const v = Number(args[++i]);
    if (!(v > 0)) throw new Error(`Flag ${a}: want a positive number`);
    o[key as "seconds" | "clients" | "csrs"] = v;
  }
  return o;
}

async function run(cmd: string, args: string[], cwd?: string): Promise<string> {
  const o = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" }).output();
  const td = new TextDecoder();
  if (!o.success) throw new Error(`${cmd} ${args.join(" ")}: ${td.decode(o.stderr)}`);
  return td.decode(o.stdout);
}

/** Single-core signs/s and verifies/s from `openssl speed -mr`. */
async function opensslSpeed(
  alg: "rsa2048" | "ecdsap256",
  seconds: number,
): Promise<{ sign: number; verify: number }> {
  const out = await run("openssl", [
    "speed",
    "-seconds",
    String(Math.max(1, Math.round(seconds / 2))),
    "-mr",
    alg,
  ]);
  const line = out.split("\n").find((l) => /^\+F[24]:/.test(l));
  if (!line) throw new Error(`openssl speed ${alg}: no result line`);
  const f = line.split(":");
  return { sign: Number(f[3]), verify: Number(f[4]) };
}

/**
 * The same-runtime bound of a backend: per second, one signature with the CA key plus one ECDSA
 * P-256 verification (the CSR's), as mesh_ca does per CSR, with `inFlight` pairs running at once
 * (both backends run them on Deno's thread pool, so this uses every core, as the server does).
 */
async function backendBound(
  backend: SigningBackend,
  keyFile: string,
  seconds: number,
  inFlight: number,
): Promise<{ rate: number; cpuUs: number }> {
  const signer = await backend.signer(await importPrivateKey(await Deno.readTextFile(keyFile)));
  const csrKeys = await generateKeyPair({ kind: "ec" });
  const data = crypto.getRandomValues(new Uint8Array(600));
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", csrKeys.publicKey));
  const csrSig = await (await backend.signer(csrKeys.privateKey)).sign(data);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + Math.max(1, seconds / 2) * 1000;
  let n = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (performance.now() < end) {
      await signer.sign(data);
      if (!await backend.verify(spki, "ec", "SHA-256", csrSig, data)) throw new Error("verify");
      n++;
    }
  }));
  const cpu = process.cpuUsage(cpu0);
  return { rate: n / ((performance.now() - t0) / 1000), cpuUs: (cpu.user + cpu.system) / n };
}

/** A CA key and self-signed certificate made with openssl. */
async function makeCa(dir: string, kind: "rsa" | "ec"): Promise<{ cert: string; key: string }> {
  const key = `${dir}/${kind}-ca-key.pem`;
  const cert = `${dir}/${kind}-ca.pem`;
  if (kind === "rsa") await run("openssl", ["genrsa", "-out", key, "2048"]);
  else await run("openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key]);
  await run("openssl", [
    "req",
    "-x509",
    "-new",
    "-key",
    key,
    "-subj",
    `/O=bench-${kind}`,
    "-days",
    "2",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
    "-out",
    cert,
  ]);
  return { cert, key };
}

/** CPU seconds (user + system) a process used so far, from /proc (NaN elsewhere). */
function cpuSeconds(pid: number): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return NaN;
  }
}

/** Resident set size of a process in MiB, from /proc (NaN elsewhere). */
function rssMiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/**
 * A closed loop's rate, the CPU time `pid` spent per call (µs), and the cores the server and
 * this process (the clients) used meanwhile.
 */
async function measured(
  pid: number,
  callers: Caller[],
  seconds: number,
): Promise<{ rate: number; cpuUs: number; serverCores: number; clientCores: number }> {
  const cpu0 = cpuSeconds(pid);
  const own0 = process.cpuUsage();
  const rate = await closedLoop(callers, seconds);
  const server = cpuSeconds(pid) - cpu0;
  const own = process.cpuUsage(own0);
  return {
    rate,
    cpuUs: (server * 1e6) / (rate * seconds),
    serverCores: server / seconds,
    clientCores: (own.user + own.system) / 1e6 / seconds,
  };
}

/** Percentile of sorted values. */
const pct = (s: number[], p: number) =>
  s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN;

/** A unary call function over one HTTP/2 session. */
type Caller = () => Promise<void>;

async function grpcCallers(port: number, root: string, token: string, bodies: Buffer[], n: number) {
  const http2 = await import("node:http2");
  const sessions = Array.from(
    { length: n },
    () => http2.connect(`https://127.0.0.1:${port}`, { ca: root, servername: "mesh-ca" }),
  );
  let next = 0;
  const callers: Caller[] = sessions.map((s) => () =>
    new Promise<void>((resolve, reject) => {
      const req = s.request({
        ":method": "POST",
        ":path": CREATE_CERTIFICATE,
        "content-type": "application/grpc",
        te: "trailers",
        authorization: `Bearer ${token}`,
      });
      let status = "";
      req.on("trailers", (t) => status = String(t["grpc-status"]));
      req.on("response", (h) => {
        if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]);
      });
      req.on("data", () => {});
      req.on("error", reject);
      req.on("end", () => status === "0" ? resolve() : reject(new Error(`grpc-status ${status}`)));
      req.end(bodies[next++ % bodies.length]);
    })
  );
  return { callers, close: () => sessions.forEach((s) => s.close()) };
}

function httpsCallers(port: number, root: string, csrs: string[], n: number) {
  const client = Deno.createHttpClient({ caCerts: [root] });
  let next = 0;
  const call: Caller = async () => {
    const r = await fetch(`https://localhost:${port}/api/v1/cfssl/sign`, {
      method: "POST",
      body: JSON.stringify({ certificate_request: csrs[next++ % csrs.length] }),
      client,
    });
    const j = await r.json();
    if (!j.success) throw new Error(`cfssl: ${JSON.stringify(j.errors)}`);
  };
  return { callers: Array.from({ length: n }, () => call), close: () => client.close() };
}

/** Closed loop: every caller calls back to back for `seconds`; returns calls/s. */
async function closedLoop(callers: Caller[], seconds: number): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let done = 0;
  await Promise.all(callers.map(async (c) => {
    while (performance.now() < end) {
      await c();
      done++;
    }
  }));
  return done / seconds;
}

/** Open loop at `rate` calls/s for `seconds`, spread over the callers; returns sorted latencies (ms). */
async function openLoop(callers: Caller[], rate: number, seconds: number): Promise<number[]> {
  const lat: number[] = [];
  const total = Math.floor(rate * seconds);
  const t0 = performance.now();
  const inflight: Promise<void>[] = [];
  const free = [...callers];
  const waiting: (() => void)[] = [];
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (!free.length) await new Promise<void>((r) => waiting.push(r));
    const c = free.pop()!;
    inflight.push((async () => {
      const s = performance.now();
      await c();
      lat.push(performance.now() - s);
      free.push(c);
      waiting.shift()?.();
    })());
  }
  await Promise.all(inflight);
  return lat.sort((a, b) => a - b);
}

/** Runs the bench. */
export async function main(args: string[] = []): Promise<void> {
  const o = parseArgs(args);
  if (!o) {
    console.log(USAGE);
    return;
  }
  const dir = await Deno.makeTempDir({ prefix: "mesh-bench-ca-" });
  try {
    const issuer = await testIssuer();
    await Deno.writeTextFile(`${dir}/jwks.json`, JSON.stringify(issuer.jwks));
    const token = await issuer.token("system:serviceaccount:bench:client", { expiresIn: "2h" });
    const csrs: string[] = [];
    for (let i = 0; i < o.csrs; i++) {
      csrs.push(
        await createCsr({
          keys: await generateKeyPair({ kind: "ec" }),
          uris: [spiffeId("bench", "client")],
        }),
      );
    }
    const bodies = csrs.map((csr) => {
      // MeshCertificateRequest{csr, validity_duration 3600} with the gRPC message prefix.
      const msg = encodeMeshCertificateRequest({ csr, validityDuration: 3600 });
      const prefix = Buffer.alloc(5);
      prefix.writeUInt32BE(msg.length, 1);
      return Buffer.concat([prefix, msg]);
    });
    const load = () => Deno.loadavg().map((v) => v.toFixed(2)).join(" ");
    const cores = navigator.hardwareConcurrency;
    console.log(
      `clients ${o.clients}, ${o.seconds}s per phase, ${o.csrs} distinct ECDSA P-256 CSRs, ` +
        `${cores} cores, load average at start ${load()}`,
    );
    const openssl = selectSigningBackend("auto");
    const backends: ("openssl" | "webcrypto")[] = (o.backends ??
      (openssl.name === "openssl" ? ["openssl", "webcrypto"] : ["webcrypto"]))
      .filter((b) => b === "webcrypto" || openssl.name === "openssl");
    if (openssl.name !== "openssl") console.log(`no OpenSSL backend: ${openssl.description}`);
    const p256 = await opensslSpeed("ecdsap256", o.seconds);
    const clients: Client[] = o.client ?? (await hasH2load() ? ["h2load", "node"] : ["node"]);
    // h2load sends one body: the first CSR.
    const body = { grpc: `${dir}/csr.grpc`, json: `${dir}/csr.json` };
    await Deno.writeFile(body.grpc, bodies[0]);
    await Deno.writeTextFile(body.json, JSON.stringify({ certificate_request: csrs[0] }));
    const rows: string[][] = [[
      "CA key",
      "backend",
      "W",
      "client",
      "mesh_ca CSRs/s",
      "of openssl sign (1 core)",
      "of crypto bound",
      "CPU µs/CSR",
      "RSS MiB",
      "in-process sign+verify/s",
      "cfssl CSRs/s (CPU µs/CSR)",
      "mesh_ca/cfssl",
      "cores server/client",
      "p50 / p99 at half rate",
    ]];
    const notes: string[] = [];
    let transport = { rate: NaN, cpuUs: NaN, serverCores: NaN, clientCores: NaN };
    for (const kind of o.keys) {
      const ca = await makeCa(dir, kind);
      const raw = kind === "rsa" ? (await opensslSpeed("rsa2048", o.seconds)).sign : p256.sign;
      // Every core: one CA signature plus one P-256 verification per CSR, at openssl speed rates.
      const bound = cores / (1 / raw + 1 / p256.verify);
      notes.push(
        `${kind === "rsa" ? "RSA-2048" : "ECDSA P-256"} CA: openssl speed ${
          raw.toFixed(0)
        } signs/s (1 core), P-256 verify ${p256.verify.toFixed(0)}/s; crypto bound on ${cores} ` +
          `cores ${bound.toFixed(0)} CSRs/s = ${
            (100 * bound / raw).toFixed(0)
          }% of the sign rate ` +
          `(${(1e6 / raw + 1e6 / p256.verify).toFixed(0)} CPU µs/CSR)`,
      );
      if (kind === o.keys[0] && !o.quick) transport = await noopRate(dir, ca, bodies, o);
      const cfssl = new Map<Client, Awaited<ReturnType<typeof cfsslRate>>>();
      for (const c of clients) {
        const r = await cfsslRate(dir, ca, csrs, body, o, c);
        cfssl.set(c, r);
        notes.push(
          `  cfssl (${kind}, ${c}): server ${r.serverCores.toFixed(2)} cores, client ` +
            `${r.clientCores.toFixed(2)} cores`,
        );
      }
      if (openssl.name === "openssl" && !o.quick) {
        // Which OpenSSL calls run on the thread pool (default auto: RSA signatures, P-256
        // verifications), measured in this process without transport.
        const modes: string[] = [];
        for (const offload of ["auto", "all", "none"] as const) {
          const b = openSslBackend(loadOpenSsl({ offload }));
          const r = await backendBound(b, ca.key, o.seconds, o.clients);
          modes.push(`${offload} ${r.rate.toFixed(0)}/s (${r.cpuUs.toFixed(0)} CPU µs)`);
        }
        notes.push(`  in-process sign+verify, openssl offload ${modes.join(", ")}`);
      }
      for (const backend of backends) {
        const inProcess = o.quick ? NaN : (await backendBound(
          backend === "openssl" ? openssl : selectSigningBackend("webcrypto"),
          ca.key,
          o.seconds,
          o.clients,
        )).rate;
        for (const w of o.workers) {
          for (const c of clients) {
            const latency = backend === backends[0] && !o.quick && c === "node";
            const r = await meshCaRate(dir, ca, backend, token, bodies, body, o, latency, w, c);
            const base = cfssl.get(c)!;
            rows.push([
              kind === "rsa" ? "RSA-2048" : "ECDSA P-256",
              backend,
              String(w),
              c,
              r.rate.toFixed(0),
              `${((100 * r.rate) / raw).toFixed(1)}%`,
              `${((100 * r.rate) / bound).toFixed(0)}%`,
              r.cpuUs.toFixed(0),
              r.rssMiB.toFixed(0),
              inProcess.toFixed(0),
              `${base.rate.toFixed(0)} (${base.cpuUs.toFixed(0)})`,
              (r.rate / base.rate).toFixed(2),
              `${r.serverCores.toFixed(2)}/${r.clientCores.toFixed(2)}`,
              isNaN(r.p50) ? "-" : `${r.p50.toFixed(1)} / ${r.p99.toFixed(1)} ms`,
            ]);
          }
        }
      }
    }
    const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
    for (const r of rows) console.log(r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd());
    for (const n of notes) console.log(n);
    console.log(
      `transport alone (lib/grpc over TLS answering a fixed chain, no crypto): ${
        transport.rate.toFixed(0)
      } calls/s, ${transport.cpuUs.toFixed(0)} CPU µs/call`,
    );
    console.log(`load average at end ${load()}`);
    console.log(
      "targets: >= 50% of openssl; p99 at half the maximum rate <= 20 ms; mesh_ca >= 1.5x " +
        "cfssl's CSRs/s for each CA key (issue 26), each with the same client; W = mesh_ca " +
        "--workers; client: h2load (its own process, one CSR) or node (this process, every CSR); " +
        "cores server/client: CPU used by the server (mesh_ca: all its isolates) and by the " +
        "client during the measured phase",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** mesh_ca with `backend`: closed-loop CSRs/s, then (when `latency`) p50/p99 at half that rate. */
async function meshCaRate(
  dir: string,
  ca: { cert: string; key: string },
  backend: "openssl" | "webcrypto",
  token: string,
  bodies: Buffer[],
  body: { grpc: string },
  o: Options,
  latency: boolean,
  workers: number,
  client: Client,
): Promise<
  {
    rate: number;
    cpuUs: number;
    rssMiB: number;
    p50: number;
    p99: number;
    serverCores: number;
    clientCores: number;
  }
> {
  const grpcPort = freePort();
  const monitoringPort = freePort();
  const proc = spawnProgram("mesh_ca", [
    ...(o.profile ? ["--enable-profiling"] : []),
    "--signing-backend",
    backend,
    "--signing-cert",
    ca.cert,
    "--signing-key",
    ca.key,
    "--root-cert",
    ca.cert,
    "--local-storage-dir",
    `${dir}/state`,
    "--trusted-jwks",
    `${dir}/jwks.json`,
    "--grpc-port",
    String(grpcPort),
    "--monitoring-port",
    String(monitoringPort),
    "--log_output_level",
    "warn",
    "--workers",
    String(workers),
  ]);
  let rate = 0, cpuUs = NaN, rss = NaN, p50 = NaN, p99 = NaN, serverCores = NaN, clientCores = NaN;
  try {
    await waitListening(grpcPort);
    await waitListening(monitoringPort);
    const profile = () =>
      o.profile
        ? fetch(`http://127.0.0.1:${monitoringPort}/debug/pprof/profile?seconds=${o.seconds}`)
          .then((r) => r.text())
        : undefined;
    let recording: Promise<string> | undefined;
    if (client === "h2load") {
      let before = { issued: NaN, errors: NaN };
      const h = await h2loadPhase({
        pid: proc.pid,
        url: `https://127.0.0.1:${grpcPort}${CREATE_CERTIFICATE}`,
        body: body.grpc,
        headers: [
          "content-type: application/grpc",
          "te: trailers",
          `authorization: Bearer ${token}`,
        ],
        o,
        started: async () => {
          recording = profile();
          before = await issuedCount(monitoringPort);
        },
      });
      // Every request h2load counted done was a certificate issued (HTTP 200 alone says
      // nothing of the gRPC status); those in flight at the end of the warm-up or the run
      // (one per connection at most) may or may not have been.
      const issued = await issuedCount(monitoringPort);
      if (
        !(issued.issued - before.issued >= h.run.done) ||
        issued.issued + issued.errors - before.issued - before.errors > h.run.started + o.clients
      ) {
        throw new Error(
          `mesh_ca issued ${issued.issued - before.issued} certificates and refused ${
            issued.errors - before.errors
          }; h2load: ${h.run.done} done of ${h.run.started} started`,
        );
      }
      ({ rate, cpuUs, serverCores, clientCores } = h);
    } else {
      const root = await Deno.readTextFile(ca.cert);
      const g = await grpcCallers(grpcPort, root, token, bodies, o.clients);
      try {
        await closedLoop(g.callers, Math.min(1, o.seconds)); // warm-up
        recording = profile();
        ({ rate, cpuUs, serverCores, clientCores } = await measured(
          proc.pid,
          g.callers,
          o.seconds,
        ));
        if (latency) {
          const lat = await openLoop(g.callers, rate / 2, o.seconds);
          p50 = pct(lat, 0.5);
          p99 = pct(lat, 0.99);
        }
      } finally {
        g.close();
      }
    }
    rss = rssMiB(proc.pid);
    if (recording) {
      await Deno.mkdir(o.profile, { recursive: true });
      const kind = ca.cert.includes("/rsa-") ? "rsa" : "ec";
      await Deno.writeTextFile(
        `${o.profile}/ca-${kind}-${backend}-w${workers}-${client}.cpuprofile`,
        await recording,
      );
    }
  } finally {
    await proc.stop();
  }
  return { rate, cpuUs, rssMiB: rss, p50, p99, serverCores, clientCores };
}

/** mesh_ca's counts of certificates issued and requests refused, from its /metrics. */
async function issuedCount(port: number): Promise<{ issued: number; errors: number }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const sum = (name: string) =>
    [...text.matchAll(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, "gm"))]
      .reduce((n, m) => n + Number(m[1]), 0);
  return { issued: sum("mesh_ca_certs_issued_total"), errors: sum("mesh_ca_csr_errors_total") };
}

/**
 * A closed loop of h2load against the server `pid` (after a 1 s warm-up; `started` runs between
 * the two): calls/s, the server's CPU µs per call and the cores the server and h2load used.
 */
async function h2loadPhase(a: {
  pid: number;
  url: string;
  body: string;
  headers: string[];
  o: Options;
  started?: () => Promise<void>;
}) {
  const run = (seconds: number) =>
    h2loadClosedLoop({
      url: a.url,
      body: a.body,
      headers: a.headers,
      connections: a.o.clients,
      streams: 1,
      seconds,
    });
  await run(Math.min(1, a.o.seconds)); // warm-up
  await a.started?.();
  const cpu0 = cpuSeconds(a.pid);
  const run1 = await run(a.o.seconds);
  const server = cpuSeconds(a.pid) - cpu0;
  return {
    run: run1,
    rate: run1.done / a.o.seconds,
    cpuUs: (server * 1e6) / run1.done,
    serverCores: server / a.o.seconds,
    clientCores: run1.cpuSeconds / a.o.seconds,
  };
}

/** The TLS gRPC transport alone (bench/_noop_ca.ts): closed-loop calls/s. */
async function noopRate(
  dir: string,
  ca: { cert: string; key: string },
  bodies: Buffer[],
  o: Options,
): Promise<{ rate: number; cpuUs: number; serverCores: number; clientCores: number }> {
  const tls = await serverCert(dir, ca, "mesh-ca");
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("./_noop_ca.ts", import.meta.url).pathname,
      tls.cert,
      tls.key,
      ca.cert,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!/listening \d+/.test(text)) {
      const { value, done } = await reader.read();
      if (done) throw new Error("bench/_noop_ca.ts exited before listening");
      text += value;
    }
    reader.releaseLock();
    child.stdout.cancel().catch(() => {});
    const port = Number(/listening (\d+)/.exec(text)![1]);
    const g = await grpcCallers(port, await Deno.readTextFile(ca.cert), "none", bodies, o.clients);
    try {
      await closedLoop(g.callers, Math.min(1, o.seconds));
      return await measured(child.pid, g.callers, o.seconds);
    } finally {
      g.close();
    }
  } finally {
    child.kill("SIGTERM");
    await child.status;
  }
}

/** A TLS server certificate for `name` (P-256), signed by `ca` with openssl. */
async function serverCert(
  dir: string,
  ca: { cert: string; key: string },
  name: string,
): Promise<{ cert: string; key: string }> {
  const key = `${dir}/${name}-tls-key.pem`, cert = `${dir}/${name}-tls.pem`;
  await run("openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key]);
  await run("openssl", [
    "req",
    "-new",
    "-key",
    key,
    "-subj",
    `/CN=${name}`,
    "-out",
    `${dir}/${name}.csr`,
  ]);
  await Deno.writeTextFile(`${dir}/${name}-ext.cnf`, `subjectAltName=DNS:${name}\n`);
  await run("openssl", [
    "x509",
    "-req",
    "-in",
    `${dir}/${name}.csr`,
    "-CA",
    ca.cert,
    "-CAkey",
    ca.key,
    "-CAcreateserial",
    "-days",
    "1",
    "-extfile",
    `${dir}/${name}-ext.cnf`,
    "-out",
    cert,
  ]);
  return { cert, key };
}

async function waitListening(port: number): Promise<void> {
  const end = Date.now() + 30_000;
  while (Date.now() < end) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`mesh_ca did not listen on ${port}`);
}

/** `cfssl serve` over HTTPS with the same CA key; closed-loop CSRs/s. */
async function cfsslRate(
  dir: string,
  ca: { cert: string; key: string },
  csrs: string[],
  body: { json: string },
  o: Options,
  client: Client,
): Promise<{ rate: number; cpuUs: number; serverCores: number; clientCores: number }> {
  // cfssl's TLS server certificate, for localhost, signed by the same CA.
  const { cert: tlsCert, key: tlsKey } = await serverCert(dir, ca, "localhost");
  const port = freePort();
  const child = new Deno.Command("cfssl", {
    args: [
      "serve",
      "-address",
      "127.0.0.1",
      "-port",
      String(port),
      "-ca",
      ca.cert,
      "-ca-key",
      ca.key,
      "-tls-cert",
      tlsCert,
      "-tls-key",
      tlsKey,
      "-loglevel",
      "5",
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    await waitListening(port);
    if (client === "h2load") {
      // cfssl answers a failed sign with a 4xx/5xx status, which h2load counts as failed.
      return await h2loadPhase({
        pid: child.pid,
        url: `https://127.0.0.1:${port}/api/v1/cfssl/sign`,
        body: body.json,
        headers: ["content-type: application/json"],
        o,
      });
    }
    const h = httpsCallers(port, await Deno.readTextFile(ca.cert), csrs, o.clients);
    try {
      await closedLoop(h.callers, Math.min(1, o.seconds));
      return await measured(child.pid, h.callers, o.seconds);
    } finally {
      h.close();
    }
  } finally {
    child.kill("SIGTERM");
    await child.status;
  }
}

if (import.meta.main) await main(Deno.args);
