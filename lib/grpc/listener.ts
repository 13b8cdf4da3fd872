/**
 * The gRPC listener: accepts TCP or TLS connections and serves each with a {@link Connection}.
 * Its pieces: the connection cap ({@link GrpcListenOptions.maxConnections}), the failure
 * throttle that paces addresses whose connections keep failing ({@link FailureThrottle}), TLS
 * with a reloadable certificate, and the accept check that finds the accept loop stopped after
 * EMFILE and reopens the listening socket ({@link AcceptCheck}), and the descriptor budget: a
 * reserve of descriptors below `RLIMIT_NOFILE` that accepted connections never take (so that
 * accept never fails with EMFILE), shedding connections that never sent a preface first, and a
 * bound on the connections of one source address ({@link DescriptorBudget}).
 * @module
 */

import { Buffer } from "node:buffer";
import process from "node:process";
import type { Server, Socket } from "node:net";
import { Connection, type H2Options } from "./h2/connection.ts";
import { writesSettled } from "./h2/outbound.ts";
import { SharedAddressCounts } from "./address_counts.ts";
import { FailureThrottle } from "./throttle.ts";
import { DescriptorBudget } from "./descriptors.ts";
import { NativeSocket } from "./native_socket.ts";
import { DEFAULT_MAX_FAILED_CONNECTIONS_PER_SECOND } from "./listener_state.ts";

/** Options of {@link listenGrpc}. */
export interface GrpcListenOptions extends H2Options {
  /** Host to bind (`127.0.0.1`, `0.0.0.0`, `::`; brackets allowed). */
  host: string;
  /** Port (0 picks a free one). */
  port: number;
  /**
   * TLS (ALPN `h2`). `ca` verifies client certificates: with `requireClientCert` a client
   * without a valid certificate is refused during the handshake; otherwise a certificate is
   * requested and, when one is presented, it must verify against `ca`.
   */
  tls?: { cert: Uint8Array; key: Uint8Array; ca: Uint8Array; requireClientCert?: boolean };
  /**
   * Open connections at most (0 = no cap, the default); connections beyond are closed at once
   * and counted in {@link GrpcListener.refused}, with one log line per 10 s.
   */
  maxConnections?: number;
  /**
   * Connections one source address may hold at most (0 = no bound of its own, the default). An
   * address never holds more than half of the descriptors left for connections either (see
   * {@link descriptorReserve}). Connections beyond are closed at once, before any TLS handshake,
   * and counted in {@link GrpcListener.refused}, with one log line per 10 s.
   */
  maxConnectionsPerAddress?: number;
  /**
   * Descriptors below the process's `RLIMIT_NOFILE` that accepted connections never take
   * (default 10 % of the limit, at least 128 per accept loop of the process, {@link acceptLoops},
   * plus 32: Deno accepts up to 128 connections from the backlog before the first of them reaches
   * JavaScript). A connection accepted over that budget closes the
   * oldest connection that has not sent its client preface and SETTINGS for a second, or else
   * itself; counted in {@link GrpcListener.shed}, with one log line per 10 s. Linux only (read
   * from `/proc/self`); elsewhere there is no budget.
   */
  descriptorReserve?: number;
  /**
   * The gRPC listeners of this process that accept connections at once, this one included: every
   * isolate's, every port's (default {@link reusePort}'s `of`, else 1). Each may accept up to 128
   * connections (`ACCEPT_BATCH`) before JavaScript, and so any budget, hears of them, so the
   * default {@link descriptorReserve} holds that many batches. (What they accept once heard of is
   * counted on one count shared by the process's listeners: `acceptedDescriptors()`.)
   */
  acceptLoops?: number;
  /**
   * Failed connections ({@link Connection.failed}: a connection error, no client preface in
   * time, or over the buffered-request budget) per source
   * address and second before that address's new connections are paced (default
   * {@link DEFAULT_MAX_FAILED_CONNECTIONS_PER_SECOND}; 0 = off; see {@link FailureThrottle}).
   * While over budget, a new connection from the address is held, unread, until its turn (at
   * most this many a second), and refused when it would wait over 2 s; counted in
   * {@link GrpcListener.throttled}, with one log line per 10 s. Well-behaved clients never fail a
   * connection, so a burst of thousands of proxies from one address is not affected.
   */
  maxFailedConnectionsPerSecond?: number;
  /**
   * The clock of the failed-connection budget, in ms (default `performance.now`; tests pass their
   * own so that a loaded machine's pauses do not drain the budget under them).
   */
  throttleClock?: () => number;
  /**
   * How often the listener checks that it still accepts (a loopback connection to itself), in ms
   * (default 2000; 0 = never). Deno's accept loop stops for good after EMFILE: when the check
   * fails (the connection cannot be made, or two checks in a row are not accepted within a
   * second while nothing else was accepted; a check whose timer fired late, or during which the
   * process was on the CPU most of the time, counts neither way) the listener is reopened on the
   * same port, and {@link GrpcListener.accepting} is false until a check passes again.
   */
  acceptCheckMs?: number;
  /** Called when {@link GrpcListener.accepting} changes, with the reason when it is false. */
  onAcceptingChange?: (accepting: boolean, reason: string) => void;
  /**
   * A unix domain socket path to listen on instead of `host`/`port` (`port` is then reported as
   * 0 and the accept check is off).
   */
  path?: string;
  /**
   * Share the port with the listeners of other isolates (SO_REUSEPORT, Linux): this listener is
   * number `index` of `of`; the kernel spreads new connections over them. Its accept check then
   * connects from source ports of its own block (see {@link probePorts}), so that a listener
   * receiving another's check closes it at once and the owner tries again.
   *
   * `connections`: one slot per listener of the port (an `Int32Array` of `of` over a
   * `SharedArrayBuffer`), where each counts its open connections; {@link maxConnections} then caps
   * their sum, the port's, rather than this listener's alone. A connection takes its slot before
   * it looks at the sum, so two listeners accepting at once may both refuse, never both exceed
   * the cap. Whoever starts a listener again zeroes its slot first (what the one that died held).
   *
   * `addresses`: a table made by `SharedAddressCounts.create(of, slots)`, where every listener of
   * the port counts its connections per source address; {@link maxConnectionsPerAddress} then
   * bounds what an address holds on the port. An address the table has no room for is bounded
   * by this listener's own count. Whoever starts a listener again calls
   * `SharedAddressCounts.forget(index)` first.
   */
  reusePort?: {
    index: number;
    of: number;
    connections?: Int32Array;
    addresses?: SharedArrayBuffer;
  };
  /**
   * Plaintext TCP only: accept and read through Deno's own API (`Deno.listen`, a
   * {@link NativeSocket} per connection reading into one reused buffer) instead of `node:net`,
   * whose every read allocates a new ArrayBuffer that V8 counts as external memory until a GC
   * (see docs/benchmarks.md). Costs one read buffer per open
   * connection (16 kB). With {@link reusePort} Deno needs `--unstable-net` for this; without it the
   * listener falls back to `node:net` and says so once through `onError`. Ignored with `tls` or
   * `path`.
   */
  nativeReads?: boolean;
}

/**
 * True when Deno's unstable network APIs are enabled (`--unstable-net`, or `"unstable": ["net"]`
 * in the configuration): only then does the Deno namespace have `listenDatagram`.
 */
export function unstableNet(): boolean {
  return typeof (Deno as unknown as Record<string, unknown>).listenDatagram === "function";
}

/** Source ports of accept checks on shared ports: 16 a listener, from this port up (256 listeners stay below the ephemeral range, 32768). */
export const PROBE_PORT_BASE = 28_000;
const PROBE_BLOCK = 16;

/**
 * The block of loopback source ports the accept check of listener `index` (of listeners sharing
 * a port) connects from: `[first, end)`; a loopback peer in `[PROBE_PORT_BASE, all)` is a check.
 */
export function probePorts(index: number, of: number): { first: number; end: number; all: number } {
  const first = PROBE_PORT_BASE + index * PROBE_BLOCK;
  return { first, end: first + PROBE_BLOCK, all: PROBE_PORT_BASE + of * PROBE_BLOCK };
}

/** A listening gRPC server. */
export interface GrpcListener {
  /** The bound port. */
  readonly port: number;
  /** Open connections. */
  readonly connections: ReadonlySet<Connection>;
  /** False while the listener cannot accept connections (out of file descriptors). */
  readonly accepting: boolean;
  /**
   * Connections closed at once because {@link GrpcListenOptions.maxConnections} were open, or
   * their address held its {@link GrpcListenOptions.maxConnectionsPerAddress}.
   */
  readonly refused: number;
  /**
   * New connections held or refused because their address was over
   * {@link GrpcListenOptions.maxFailedConnectionsPerSecond}.
   */
  readonly throttled: number;
  /** Connections closed to keep the descriptor reserve (see {@link GrpcListenOptions.descriptorReserve}). */
  readonly shed: number;
  /** TCP connections accepted since the listener started (the accept checks' own excluded). */
  readonly accepted: number;
  /** Connections read through `Deno.Conn` into reused buffers ({@link GrpcListenOptions.nativeReads} in force). */
  readonly reusedReads: boolean;
  /**
   * Stops accepting, ends every call with `status`/`message`, sends GOAWAY and closes each
   * connection once its output is written (at most `graceMs` later); resolves once the writes'
   * per-turn budget timer has fired too (`writesSettled()`).
   */
  close(status: number, message: string, graceMs?: number): Promise<void>;
  /** Replaces the TLS certificate, key and CA for new connections (TLS listeners only). */
  setTls(tls: { cert: Uint8Array; key: Uint8Array; ca: Uint8Array }): void;
}

/**
 * The URI SANs of a TLS socket's verified peer certificate (`[]` when none was presented, the
 * socket is plaintext, or the certificate did not verify).
 */
// deno-lint-ignore no-explicit-any
export function peerUris(socket: any): string[] {
  try {
    if (!socket.authorized) return [];
    const san: string = socket.getPeerCertificate?.()?.subjectaltname ?? "";
    return san.split(/,\s*/).filter((s) => s.startsWith("URI:")).map((s) => s.slice(4));
  } catch {
    return [];
  }
}

export { DEFAULT_MAX_FAILED_CONNECTIONS_PER_SECOND } from "./listener_state.ts";

/**
 * The listen backlog asked of the kernel (which caps it at `net.core.somaxconn`, 4096 since Linux
 * 5.4), as Go's `net.Listen` does for istiod; `node:net`'s default is 511. Connections beyond the
 * backlog that the process has not accepted yet have their SYN dropped, and the client retries
 * only after a second: a reconnect storm, or a flood of idle connections while a real client
 * connects, would wait that second. (`Deno.listen`, used by `nativeReads`, offers no backlog: 511.)
 */
export const LISTEN_BACKLOG = 4096;

/** Listens for gRPC over HTTP/2 (plaintext, or TLS with `opts.tls`). */
export async function listenGrpc(opts: GrpcListenOptions): Promise<GrpcListener> {
  const perSecond = opts.maxFailedConnectionsPerSecond ?? DEFAULT_MAX_FAILED_CONNECTIONS_PER_SECOND;
  if (!(perSecond >= 0)) {
    throw new RangeError(`maxFailedConnectionsPerSecond must not be negative, got ${perSecond}`);
  }
  const listener = new Listener(opts, perSecond, {
    net: await import("node:net"),
    tls: opts.tls ? await import("node:tls") : undefined,
  });
  await listener.start();
  return listener;
}

const ignore = () => {};
const STOPPED = "the accept loop stopped";
/**
 * A check whose one-second timer fired this much late (ms) or more says nothing: the event loop
 * was busy (or the process starved of CPU), and the check's connection may wait behind it.
 */
const LATE_MS = 250;
const BUSY = "the event loop was busy";
/**
 * A check that went unanswered while the process spent at least this share of the wait on the CPU
 * says nothing either: a saturated event loop runs its timers on time (work done in slices) while
 * accepts wait behind thousands of other I/O completions (seen: a push to 3000 proxies under
 * churn, an accept delayed past a second, `/ready` flipping to 503). An accept loop that really
 * stopped (EMFILE) leaves the process idle.
 */
const BUSY_CPU_SHARE = 0.8;

/**
 * Why a check went unanswered after `wallMs` of waiting during which the process used `cpuMs` of
 * CPU: {@link BUSY} (no conclusion) when the event loop was late or the process was saturated,
 * else {@link STOPPED}.
 */
export function unansweredReason(wallMs: number, cpuMs: number): string {
  if (wallMs >= 1000 + LATE_MS || cpuMs >= BUSY_CPU_SHARE * wallMs) return BUSY;
  return STOPPED;
}

/** Starts timing a check: call the result when it went unanswered, for {@link unansweredReason}. */
function checkClock(): () => string {
  const started = performance.now();
  const cpu = process.cpuUsage();
  return () => {
    const used = process.cpuUsage(cpu);
    return unansweredReason(performance.now() - started, (used.user + used.system) / 1000);
  };
}

/**
 * Calls `unanswered` a second from now, one turn of the event loop after the second's timer: a
 * thread blocked or starved of CPU past that second finds the check's connection ready to accept
 * and the timer due in the same turn, and Deno runs the timer first (in `node:net` and
 * `Deno.listen` alike). Returns the cancel.
 */
function afterCheckSecond(unanswered: () => void): () => void {
  let timer = setTimeout(() => timer = setTimeout(unanswered, 0), 1000);
  return () => clearTimeout(timer);
}

/** `address` of a socket's peer (IPv4-mapped IPv6 addresses as IPv4). */
const peerAddress = (socket: Socket) => (socket.remoteAddress ?? "").replace(/^::ffff:/, "");
/** `address:port` of a socket's peer. */
const peerKey = (socket: Socket) => `${peerAddress(socket)}:${socket.remotePort}`;

/** A count of events logged at most once per 10 s, with how many happened since the last line. */
class Tally {
  count = 0;
  #logged = 0;
  #lastLog = -Infinity;
  constructor(readonly log: ((line: string) => void) | undefined) {}
  /** Counts one event; `line(n)` describes the `n` events since the last line. */
  add(line: (n: number) => string): void {
    this.count++;
    const now = performance.now();
    if (now - this.#lastLog < 10_000) return;
    this.#lastLog = now;
    this.log?.(line(this.count - this.#logged));
    this.#logged = this.count;
  }
}

/**
 * The accept check: the listener connects to itself and sees whether the connection is accepted
 * within a second. Its own connections are recognised among the accepted sockets by the address
 * and port of the check in flight (forgotten once seen or over, so a client reusing the port later
 * is not mistaken for one). While a check is in flight every accepted port is noted too: the
 * accept may come before the check's own connect callback tells its port. (Exported for its
 * tests; a listener makes its own.)
 */
export class AcceptCheck {
  /** `address:port` of our own check in flight (its socket is not a gRPC connection). */
  #probes = new Set<string>();
  #probeSeen: (() => void) | undefined;
  #acceptedPorts = new Set<string>();
  /** Recent checks, whose TLS handshake error (they never handshake) is not logged. */
  #quiet = new Set<string>();

  /** Source ports of checks, on a shared port (see {@link GrpcListenOptions.reusePort}). */
  #ports: { first: number; end: number; all: number } | undefined;
  #nextPort = 0;

  constructor(
    readonly net: typeof import("node:net"),
    shared?: { index: number; of: number },
  ) {
    if (shared) this.#ports = probePorts(shared.index, shared.of);
  }

  /** True when an accepted raw socket is a check's (noted as seen). */
  isProbe(socket: Socket): boolean {
    if (!socket.remotePort) return false;
    const key = peerKey(socket);
    const ports = this.#ports;
    if (ports) {
      // On a shared port: any listener's check (ours or another's) is a probe; only ours
      // answers our check, another's is closed by the caller so its owner tries again.
      const p = socket.remotePort;
      if (p < PROBE_PORT_BASE || p >= ports.all || !isLoopback(peerAddress(socket))) return false;
      this.#hush(key);
      if (this.#probes.delete(key)) this.#probeSeen?.();
      return true;
    }
    if (this.#probeSeen) this.#acceptedPorts.add(key);
    if (!this.#probes.has(key)) return false;
    this.#probes.delete(key);
    this.#hush(key);
    this.#probeSeen?.();
    return true;
  }

  /** True when a socket whose TLS handshake failed was a recent check's. */
  isQuiet(socket: Socket): boolean {
    return this.#quiet.has(peerKey(socket));
  }

  #hush(key: string): void {
    this.#quiet.add(key);
    if (this.#quiet.size > 8) this.#quiet.delete(this.#quiet.values().next().value!);
  }

  /** Connects to `host`:`port`: ok when the listener saw the connection within a second. */
  run(port: number, host: string): Promise<{ ok: boolean; reason: string }> {
    if (this.#ports) return this.#runShared(port, host, this.#ports);
    return new Promise((resolve) => {
      let done = false;
      const finish = (ok: boolean, reason: string) => {
        if (done) return;
        done = true;
        cancel();
        this.#probeSeen = undefined;
        this.#acceptedPorts.clear();
        // A check the listener never saw must not be taken for one later (its port is reused).
        if (key) this.#probes.delete(key);
        sock.destroy();
        resolve({ ok, reason });
      };
      const unanswered = checkClock();
      const cancel = afterCheckSecond(() => finish(false, unanswered()));
      let key = "";
      this.#probeSeen = () => {};
      const sock = this.net.connect({ port, host });
      sock.on("error", (e: Error & { code?: string }) =>
        finish(
          false,
          e.code === "EMFILE" || e.code === "ENFILE"
            ? `too many open files (${e.code})`
            : e.message,
        ));
      sock.on("connect", () => {
        const k = `${(sock.localAddress ?? "").replace(/^::ffff:/, "")}:${sock.localPort}`;
        // Accepted before this callback ran, as it usually is (then served as a connection,
        // closed just below; over TLS its failed handshake is not logged).
        if (this.#acceptedPorts.has(k)) {
          this.#hush(k);
          return finish(true, "");
        }
        this.#probes.add(key = k);
        this.#probeSeen = () => finish(true, "");
      });
    });
  }

  /**
   * The check on a port shared with other listeners: the kernel hands each connection to one of
   * them, so the check connects from a port of its own block until one of its connections
   * reaches this listener (a connection closed by the peer went to another listener). Ok when
   * one does; not when a connection waits a second unanswered, or many went elsewhere.
   */
  async #runShared(
    port: number,
    host: string,
    ports: { first: number; end: number; all: number },
  ): Promise<{ ok: boolean; reason: string }> {
    const n = ports.end - ports.first;
    const attempts = Math.min(8 * ((ports.all - PROBE_PORT_BASE) / n), 512);
    for (let i = 0; i < attempts; i++) {
      const localPort = ports.first + (this.#nextPort++ % n);
      const r = await this.#attempt(port, host, localPort);
      if (r !== "elsewhere") return r;
    }
    return { ok: false, reason: `${attempts} checks in a row went to other listeners` };
  }

  /** One connection of {@link #runShared}. */
  #attempt(
    port: number,
    host: string,
    localPort: number,
  ): Promise<{ ok: boolean; reason: string } | "elsewhere"> {
    return new Promise((resolve) => {
      let done = false;
      const localAddress = host.includes(":") ? "::1" : "127.0.0.1";
      const key = `${localAddress}:${localPort}`;
      const finish = (r: { ok: boolean; reason: string } | "elsewhere") => {
        if (done) return;
        done = true;
        cancel();
        this.#probeSeen = undefined;
        this.#probes.delete(key);
        sock.destroy();
        resolve(r);
      };
      const unanswered = checkClock();
      const cancel = afterCheckSecond(() => finish({ ok: false, reason: unanswered() }));
      this.#probes.add(key);
      this.#probeSeen = () => finish({ ok: true, reason: "" });
      const sock = this.net.connect({ port, host, localAddress, localPort });
      sock.on("error", (e: Error & { code?: string }) =>
        finish(
          e.code === "EADDRINUSE" || e.code === "EADDRNOTAVAIL" || e.code === "ECONNRESET"
            ? "elsewhere" // that source port is taken (or the peer reset it): try the next
            : {
              ok: false,
              reason: e.code === "EMFILE" || e.code === "ENFILE"
                ? `too many open files (${e.code})`
                : e.message,
            },
        ));
      sock.on("close", () => finish("elsewhere"));
    });
  }
}

/** True for 127.0.0.0/8 and ::1. */
const isLoopback = (address: string) => address.startsWith("127.") || address === "::1";

/** The modules a listener uses (loaded when it starts). */
interface Modules {
  net: typeof import("node:net");
  tls: typeof import("node:tls") | undefined;
}

/** A listening gRPC server: see {@link listenGrpc}. */
class Listener implements GrpcListener {
  port = 0;
  readonly connections = new Set<Connection>();
  accepting = true;
  #server!: Server;
  /** The listening socket when reading through Deno's API (see {@link GrpcListenOptions.nativeReads}). */
  #native: Deno.Listener | undefined;
  #nativeFailed: Tally;
  /** Whether the listening socket is open (it is closed to be reopened after a failed check). */
  #open = true;
  #closing: Promise<void> | undefined;
  #host: string;
  // Connection cap.
  #maxConnections: number;
  #refused: Tally;
  // Failure throttle.
  #throttle: FailureThrottle | undefined;
  /** Connections held until their address's turn. */
  #held = new Set<Socket>();
  #throttled: Tally;
  // Descriptor budget and the bound per address.
  #fds: DescriptorBudget;
  #maxPerAddress: number;
  /** Accepted raw sockets by source address. */
  #byAddress = new Map<string, number>();
  /** Every listener's connections by source address, on a shared port (see reusePort). */
  #shared: SharedAddressCounts | undefined;
  /** Accepted raw sockets still open. */
  #rawCount = 0;
  /** Raw sockets accepted since the listener started (the accept loop is alive while it grows). */
  #accepted = 0;
  /** Raw sockets whose client has not sent its preface and SETTINGS, oldest first (by peer). */
  #silent = new Map<string, { socket: Socket; at: number }>();
  /** Raw sockets we closed on purpose (their failed TLS handshake is not logged). */
  #dropped = new WeakSet<Socket>();
  /** Counts an accepted raw socket out of the budget (once). */
  #release = new WeakMap<Socket, () => void>();
  #shed: Tally;
  // Accept check and reopening.
  #check: AcceptCheck;
  #checkMs: number;
  #checkTimer: ReturnType<typeof setTimeout> | undefined;
  #inflight: Promise<void> = Promise.resolve();
  /** Checks in a row whose connection was not accepted within a second. */
  #unanswered = 0;
  #lastReopenError = "";

  constructor(readonly opts: GrpcListenOptions, readonly perSecond: number, readonly mod: Modules) {
    this.#host = opts.host.replace(/^\[(.*)\]$/, "$1");
    this.#maxConnections = opts.maxConnections ?? 0;
    this.#refused = new Tally(opts.onError);
    this.#throttled = new Tally(opts.onError);
    this.#fds = new DescriptorBudget({
      reserve: opts.descriptorReserve,
      acceptLoops: opts.acceptLoops ?? opts.reusePort?.of ?? 1,
    });
    this.#maxPerAddress = opts.maxConnectionsPerAddress ?? 0;
    const r = opts.reusePort;
    if (r?.addresses && this.#maxPerAddress > 0) {
      this.#shared = new SharedAddressCounts(r.addresses, r.of, r.index);
    }
    this.#shed = new Tally(opts.onError);
    this.#nativeFailed = new Tally(opts.onError);
    this.#throttle = perSecond > 0
      ? new FailureThrottle(perSecond, undefined, opts.throttleClock)
      : undefined;
    this.#check = new AcceptCheck(mod.net, opts.reusePort);
    this.#checkMs = opts.path ? 0 : opts.acceptCheckMs ?? 2000;
  }

  get refused(): number {
    return this.#refused.count;
  }

  get throttled(): number {
    return this.#throttled.count;
  }

  get shed(): number {
    return this.#shed.count;
  }

  get reusedReads(): boolean {
    return this.#native !== undefined;
  }

  get accepted(): number {
    return this.#accepted;
  }

  /**
   * Every accepted raw socket (before TLS): counted against the descriptor budget and its
   * address's bound. False when it was closed.
   */
  #admit(raw: Socket): boolean {
    const address = peerAddress(raw);
    const key = peerKey(raw);
    this.#fds.opened();
    this.#rawCount++;
    this.#accepted++;
    const n = (this.#byAddress.get(address) ?? 0) + 1;
    this.#byAddress.set(address, n);
    // the port's count of the address, when listeners share it (else, or no room: this one's)
    const shared = this.#shared?.add(address) ?? -1;
    const entry = { socket: raw, at: performance.now() };
    this.#silent.set(key, entry);
    // Counted out once: when we drop the socket (its descriptor is released right then, and a
    // measurement taken before its close event must not see it released twice), else at close.
    let counted = true;
    const release = () => {
      if (!counted) return;
      counted = false;
      this.#fds.closed();
      this.#rawCount--;
      const left = (this.#byAddress.get(address) ?? 1) - 1;
      if (left > 0) this.#byAddress.set(address, left);
      else this.#byAddress.delete(address);
      if (shared >= 0) this.#shared!.remove(address);
      if (this.#silent.get(key) === entry) this.#silent.delete(key);
    };
    this.#release.set(raw, release);
    raw.once("close", release);
    // this listener's count against its cap (the bound and its descriptors); the port's against
    // the bound
    let [held, cap] = [n, this.#addressCap(address)];
    if (held <= cap && shared > this.#maxPerAddress) [held, cap] = [shared, this.#maxPerAddress];
    if (held > cap) {
      this.#drop(raw);
      this.#refused.add((k) =>
        `refused ${k} connection(s) (latest from ${address}): the address holds ${held - 1}, ` +
        `the limit is ${cap}`
      );
      return false;
    }
    // Near the descriptor budget (within half the reserve), connections silent for a second go,
    // oldest first: room for newcomers before the budget is reached (accepts are reported late).
    // Over it, a silent connection of the address holding the most goes, else this one.
    const excess = this.#fds.excess();
    if (excess <= -this.#fds.reserve / 2) return true;
    for (let n = Math.max(1, Math.min(8, excess + 1)); n > 0; n--) {
      // Not over the budget yet, a newcomer stays when no connection has been silent a second.
      const victim = this.#victim(excess > 0, address) ?? (excess > 0 ? raw : undefined);
      if (!victim) return true;
      this.#drop(victim);
      this.#shed.add((k) =>
        `closed ${k} connection(s) to keep ${this.#fds.reserve} file descriptors free ` +
        `(latest: ${victim === raw ? "a new one" : "one that sent no preface"} from ` +
        `${peerAddress(victim) || address})`
      );
      if (victim === raw) return false;
    }
    return true;
  }

  /** The most connections `address` may hold: its bound, and half of the room for connections. */
  #addressCap(address: string): number {
    let cap = this.#maxPerAddress > 0 ? this.#maxPerAddress : Infinity;
    if (address === "") return cap; // a unix socket: one "address" for every client
    const fds = this.#fds;
    const room = fds.budget - (fds.open - this.#rawCount);
    if (room !== Infinity) cap = Math.min(cap, Math.max(1, Math.floor(room / 2)));
    return cap;
  }

  /**
   * The connection to shed: the oldest silent for a second; `over` the budget, else the oldest
   * silent one of the address holding the most connections (unless that is `newcomer`'s).
   */
  #victim(over: boolean, newcomer: string): Socket | undefined {
    const oldest = this.#silent.values().next().value;
    if (oldest && performance.now() - oldest.at >= 1000) return oldest.socket;
    if (!over) return undefined;
    let top = "", most = 0;
    for (const [a, n] of this.#byAddress) if (n > most) [top, most] = [a, n];
    if (top === newcomer) return undefined;
    for (const { socket } of this.#silent.values()) if (peerAddress(socket) === top) return socket;
    return undefined;
  }

  #drop(raw: Socket): void {
    this.#dropped.add(raw);
    this.#silent.delete(peerKey(raw));
    raw.destroy();
    this.#release.get(raw)?.();
  }

  /** Opens the listening socket and starts the accept checks. */
  async start(): Promise<void> {
    const o = this.opts;
    if (o.nativeReads && !o.tls && !o.path) {
      // Deno exits the process (it does not throw) on an unstable API used without its flag.
      if (o.reusePort && !unstableNet()) {
        o.onError?.(
          "reading through node:net: Deno.listen({ reusePort }) needs --unstable-net",
        );
      } else {
        this.#native = this.#listenNative(o.port);
        this.port = (this.#native.addr as Deno.NetAddr).port;
        this.#schedule();
        return;
      }
    }
    this.#server = this.#create();
    await this.#listen(this.#server, this.opts.port);
    const addr = this.#server.address();
    this.port = typeof addr === "object" && addr ? addr.port : this.opts.port;
    this.#schedule();
  }

  /** A new connection: through the failure throttle, then served (or held until its turn). */
  #accept(socket: Socket): void {
    const address = peerAddress(socket);
    const wait = this.#throttle?.admit(address) ?? 0;
    if (wait === 0) return this.#serve(socket, address);
    this.#throttled.add((n) =>
      `held or refused ${n} new connection(s) (latest from ${address}): more than ` +
      `${this.perSecond} of its connections a second ended in a connection error`
    );
    if (wait < 0 || this.#closing) return void socket.destroy();
    // Held unread (before any per-connection state exists) until the address's turn.
    socket.pause();
    socket.on("error", ignore);
    this.#held.add(socket);
    const gone = () => {
      clearTimeout(timer);
      this.#held.delete(socket);
    };
    const timer = setTimeout(() => {
      gone();
      socket.off("close", gone);
      if (!socket.destroyed) this.#serve(socket, address);
    }, wait);
    socket.once("close", gone);
  }

  /** Serves a connection, unless the connection cap is reached. */
  #serve(socket: Socket, address: string): void {
    const connections = this.connections;
    const max = this.#maxConnections;
    // on a shared port, the connection is counted in this listener's slot first (see reusePort)
    const slots = max > 0 ? this.opts.reusePort?.connections : undefined;
    const slot = this.opts.reusePort?.index ?? 0;
    if (slots) Atomics.add(slots, slot, 1);
    const open = slots ? sumOf(slots) - 1 : connections.size;
    if (max > 0 && open >= max) {
      if (slots) Atomics.sub(slots, slot, 1);
      socket.destroy();
      this.#refused.add((n) =>
        `refused ${n} connection(s) (latest from ${socket.remoteAddress}:${socket.remotePort}): ` +
        `${open} connections open${slots ? " on the shared port" : ""}, the limit is ${max}`
      );
      return;
    }
    const c = new Connection(socket, this.opts);
    socket.resume();
    connections.add(c);
    const throttle = this.#throttle;
    if (throttle) c.onFailed = () => throttle.failed(address);
    c.onGreeted = () => this.#silent.delete(peerKey(socket));
    socket.once("close", () => {
      connections.delete(c);
      if (slots) Atomics.sub(slots, slot, 1);
    });
  }

  /** A `Deno.listen` listener whose accepted connections go to {@link #accept}. */
  #listenNative(port: number): Deno.Listener {
    const l = Deno.listen({
      hostname: this.#host || "0.0.0.0",
      port,
      ...(this.opts.reusePort ? { reusePort: true } : {}),
    } as Deno.TcpListenOptions);
    void this.#acceptNative(l);
    return l;
  }

  /**
   * Accepts until `l` is closed. An accept that fails otherwise (out of descriptors) is retried
   * 100 ms later (one log line per 10 s); the accept check reopens the listener if it stays dead.
   */
  async #acceptNative(l: Deno.Listener): Promise<void> {
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await l.accept();
      } catch (e) {
        if (this.#closing || l !== this.#native || e instanceof Deno.errors.BadResource) return;
        this.#nativeFailed.add((n) => `${n} accept(s) failed (latest: ${(e as Error).message})`);
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      const socket = new NativeSocket(conn) as unknown as Socket;
      socket.setNoDelay(true);
      if (this.#check.isProbe(socket)) socket.destroy();
      else if (this.#admit(socket)) this.#accept(socket);
    }
  }

  /** A listening server (TLS or plaintext) whose accepted sockets go to {@link #accept}. */
  #create(): Server {
    const { opts, mod } = this;
    if (!opts.tls) {
      return mod.net.createServer({ noDelay: true }, (socket) => {
        if (this.#check.isProbe(socket)) socket.destroy();
        else if (this.#admit(socket)) this.#accept(socket);
      });
    }
    const t = opts.tls;
    const server = mod.tls!.createServer({
      cert: Buffer.from(t.cert),
      key: Buffer.from(t.key),
      ca: Buffer.from(t.ca),
      requestCert: true,
      rejectUnauthorized: t.requireClientCert ?? false,
      ALPNProtocols: ["h2"],
    }, (socket) => {
      // Without requireClientCert a certificate is optional, but one that is presented must
      // verify against the CA.
      const presented = Object.keys(socket.getPeerCertificate?.() ?? {}).length > 0;
      if (presented && !socket.authorized) {
        opts.onError?.(
          `TLS client ${socket.remoteAddress}:${socket.remotePort} refused: certificate not ` +
            `verified (${socket.authorizationError})`,
        );
        socket.destroy();
        return;
      }
      this.#accept(socket);
    });
    server.on("connection", (raw: Socket) => {
      // A check is not served (on a shared port it is closed: its owner may be another listener).
      if (!this.#check.isProbe(raw)) this.#admit(raw);
      else if (opts.reusePort) {
        // closed here, before its handshake: a socket closed this early may no longer know its
        // peer when the TLS server reports the handshake it never had (not a failure to log)
        this.#dropped.add(raw);
        raw.destroy();
      }
    });
    server.on("tlsClientError", (e: Error, tlsSocket: Socket) => {
      // Deno's TLS socket forgets its peer once its handshake failed; the TCP socket it wraps
      // (`_parent`, as in Node) still knows it.
      const socket = (tlsSocket as Socket & { _parent?: Socket })?._parent ?? tlsSocket;
      if (socket && this.#dropped.has(socket)) return;
      if (socket?.remotePort && this.#check.isQuiet(socket)) return;
      opts.onError?.(`TLS handshake failed: ${e.message}`);
    });
    return server;
  }

  #listen(server: Server, port: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      const ready = () => {
        server.off("error", reject);
        server.on("error", (e: Error) => this.opts.onError?.(`gRPC listener error: ${e.message}`));
        resolve();
      };
      const backlog = LISTEN_BACKLOG;
      if (this.opts.path) server.listen({ path: this.opts.path, backlog }, ready);
      else if (this.opts.reusePort) {
        server.listen(
          { port, host: this.#host, backlog, reusePort: true } as { port: number },
          ready,
        );
      } else server.listen({ port, host: this.#host, backlog }, ready);
    });
  }

  #setAccepting(ok: boolean, reason: string): void {
    if (ok === this.accepting) return;
    this.accepting = ok;
    this.opts.onError?.(
      ok
        ? `accepting connections again on port ${this.port}`
        : `cannot accept connections: ${reason}`,
    );
    this.opts.onAcceptingChange?.(ok, reason);
  }

  /** Runs an accept check, and reopens the listener when the accept loop is gone. */
  async #recheck(): Promise<void> {
    const host = this.#host;
    const probeHost = host === "" || host === "0.0.0.0"
      ? "127.0.0.1"
      : host === "::"
      ? "::1"
      : host;
    const before = this.#accepted;
    const r = this.#open
      ? await this.#check.run(this.port, probeHost)
      : { ok: false, reason: "the listener is being reopened" };
    if (this.#closing) return;
    // Not answered, but other connections were accepted meanwhile: the check waits in a long
    // backlog (a flood of connections), the accept loop is alive. Reopening would reset the
    // backlog.
    if ((r.reason === STOPPED || r.reason === BUSY) && this.#accepted > before) r.ok = true;
    // Not answered while the event loop was late: no conclusion either way.
    if (!r.ok && r.reason === BUSY) return;
    if (r.ok) {
      this.#unanswered = 0;
      this.#lastReopenError = "";
      return this.#setAccepting(true, "");
    }
    // One unanswered check may be a busy event loop; two in a row mean the accept loop is gone.
    if (r.reason === STOPPED && ++this.#unanswered < 2) return;
    this.#setAccepting(false, r.reason);
    await this.#reopen();
  }

  /**
   * Reopens the listening socket: Deno's accept loop does not resume after EMFILE. (close()'s
   * callback waits for every connection, so it is not awaited; open connections stay.)
   */
  async #reopen(): Promise<void> {
    if (this.#open) {
      void this.#closeListening();
      await new Promise((r) => setTimeout(r, 50));
    }
    try {
      if (this.#native) {
        this.#native = this.#listenNative(this.port);
      } else {
        const next = this.#create();
        await this.#listen(next, this.port);
        this.#server = next;
      }
      this.#open = true;
      if (this.#closing) void this.#closeListening();
    } catch (e) {
      // Still out of descriptors (or the port is not free yet): the next check tries again.
      const m = (e as Error).message;
      if (m !== this.#lastReopenError) this.opts.onError?.(`cannot reopen the listener: ${m}`);
      this.#lastReopenError = m;
    }
  }

  /**
   * Closes the listening socket (`Deno.listen`'s or `node:net`'s); open connections stay. Resolves
   * at once for the former, and for the latter once its connections have closed too.
   */
  #closeListening(): Promise<void> {
    this.#open = false;
    if (this.#native) {
      this.#native.close();
      return Promise.resolve();
    }
    const server = this.#server;
    return new Promise<void>((resolve) => server.close(() => resolve()));
  }

  #schedule(): void {
    if (this.#closing || this.#checkMs <= 0) return;
    this.#checkTimer = setTimeout(() => {
      this.#inflight = this.#recheck().finally(() => this.#schedule());
    }, this.#checkMs);
  }

  close(status: number, message: string, graceMs = 2000): Promise<void> {
    this.#closing ??= (async () => {
      clearTimeout(this.#checkTimer);
      for (const s of this.#held) s.destroy();
      await this.#inflight;
      const stopped = this.#open ? this.#closeListening() : Promise.resolve();
      await Promise.all([...this.connections].map((c) => c.shutdown(status, message, graceMs)));
      await stopped;
      await writesSettled();
    })();
    return this.#closing;
  }

  setTls(t: { cert: Uint8Array; key: Uint8Array; ca: Uint8Array }): void {
    if (!this.opts.tls) throw new Error("setTls() on a plaintext listener");
    (this.#server as import("node:tls").Server).setSecureContext({
      cert: Buffer.from(t.cert),
      key: Buffer.from(t.key),
      ca: Buffer.from(t.ca),
    });
  }
}

/** The sum of the slots of a shared port's connection counts (see `reusePort.connections`). */
function sumOf(slots: Int32Array): number {
  let n = 0;
  for (let i = 0; i < slots.length; i++) n += Atomics.load(slots, i);
  return n;
}
