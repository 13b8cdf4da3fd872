/**
 * Several isolates serving one port: a control isolate and W worker isolates.
 *
 * - {@link HttpFront}: a program's HTTP ports on an isolate of their own, answering `/ready`
 *   however busy the serving isolate is;
 * - {@link WorkerPool} (control side) and {@link serveControl} (worker side), over a
 *   {@link Channel} of requests, replies and notes;
 * - {@link workerCount} turns a `--workers` value into a count (0: {@link coreCount}, which
 *   honours a container's CPU limit) and says why a program must stay on one isolate; {@link reserveSharedPort} picks (or checks) the port the workers share.
 *
 * Workers share a port with SO_REUSEPORT (`node:net`'s `listen({ reusePort: true })`, which
 * Deno 2.7.14 honours on Linux without `--unstable-net`); the kernel spreads new connections
 * over them, and a connection stays in the isolate that accepted it.
 * @module
 */

export { Channel, type ChannelHandler, type MessageEnd, RemoteError } from "./channel.ts";
export {
  FrontListenError,
  HttpFront,
  type HttpFrontListener,
  type HttpFrontOptions,
  READY_STALE_MS,
} from "./http_front.ts";
export {
  type ControlLink,
  serveControl,
  type WorkerInit,
  WorkerPool,
  type WorkerPoolOptions,
} from "./pool.ts";

/**
 * The cores this process may use (at least 1): the runtime's count, bounded by a cgroup v2 CPU
 * quota (`/sys/fs/cgroup/cpu.max`, e.g. a container's CPU limit), rounded up.
 */
export function coreCount(): number {
  const cores = Math.max(1, navigator.hardwareConcurrency || 1);
  return Math.min(cores, cgroupCpuLimit(readCpuMax()) ?? Infinity);
}

function readCpuMax(): string | undefined {
  try {
    return Deno.readTextFileSync("/sys/fs/cgroup/cpu.max");
  } catch {
    return undefined;
  }
}

/**
 * The CPU limit of a cgroup v2 `cpu.max` text (`<quota> <period>`, `max` = none), rounded up to
 * whole cores; undefined when there is none or the text is not understood.
 */
export function cgroupCpuLimit(cpuMax: string | undefined): number | undefined {
  const m = /^(\d+)\s+(\d+)\s*$/.exec(cpuMax ?? "");
  if (!m || Number(m[2]) === 0) return undefined;
  return Math.max(1, Math.ceil(Number(m[1]) / Number(m[2])));
}

/** The outcome of {@link workerCount}. */
export interface WorkerCount {
  /** Worker isolates to start (1 = serve in the control isolate itself, no workers). */
  count: number;
  /** Why fewer than asked (for a log line), or "" when as asked. */
  reason: string;
}

/**
 * Whether a failure to start workers is about the port itself (in use, not allowed, no such
 * address): one isolate would meet it too, so the program fails instead of falling back.
 */
export function isPortProblem(message: string): boolean {
  return /EADDRINUSE|EACCES|EADDRNOTAVAIL/.test(message);
}

/**
 * The worker count of a `--workers` value (0 = one per core). One when the listener cannot be
 * shared: `unixSocket` (a path has no SO_REUSEPORT spreading) or another OS than Linux.
 */
export function workerCount(flag: number, opts: { unixSocket?: boolean } = {}): WorkerCount {
  const asked = flag === 0 ? coreCount() : flag;
  if (asked <= 1) return { count: 1, reason: "" };
  if (opts.unixSocket) {
    return { count: 1, reason: `--workers ${flag}: a unix socket is served by one isolate` };
  }
  if (Deno.build.os !== "linux") {
    return {
      count: 1,
      reason: `--workers ${flag}: sharing a port between isolates needs Linux (SO_REUSEPORT), ` +
        `this is ${Deno.build.os}`,
    };
  }
  return { count: asked, reason: "" };
}

/**
 * The port W workers will share on `host`: binds it once without SO_REUSEPORT (so a port held
 * by any other socket, even one that allows sharing, is refused as "in use") and releases it;
 * port 0 picks a free port.
 * @throws Error (EADDRINUSE, EACCES...) when the port cannot be bound.
 */
export async function reserveSharedPort(host: string, port: number): Promise<number> {
  const net = await import("node:net");
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host.replace(/^\[(.*)\]$/, "$1"), () => resolve());
  });
  const addr = server.address();
  const bound = typeof addr === "object" && addr ? addr.port : port;
  await new Promise<void>((r) => server.close(() => r()));
  return bound;
}
