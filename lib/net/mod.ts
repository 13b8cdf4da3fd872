/**
 * Choosing a TCP port for a program that binds it later. Prefer binding port 0 and reading the
 * port back; these are for programs whose port must be known first (written into configuration,
 * or a flag where 0 means "off").
 *
 * @example A port for a server whose address goes into configuration first
 * ```ts
 * import { freeServerPort } from "./mod.ts";
 *
 * const port = freeServerPort();
 * console.log(`listening address will be 127.0.0.1:${port}`);
 * ```
 *
 * @module
 */

/**
 * A port free on `hostname` now, `preferred` when it is free, else the system's choice (from the
 * ephemeral range: bind it soon, see {@link freeServerPort}).
 */
export function freePort(hostname = "127.0.0.1", preferred = 0): number {
  for (const port of new Set([preferred, 0])) {
    try {
      const l = Deno.listen({ hostname, port });
      const got = (l.addr as Deno.NetAddr).port;
      l.close();
      return got;
    } catch (e) {
      if (!(e instanceof Deno.errors.AddrInUse)) throw e;
    }
  }
  throw new Error(`no free port on ${hostname}`);
}

/** The first port of the kernel's ephemeral range (Linux; 32768 elsewhere or when unreadable). */
export function ephemeralLow(
  read: () => string = () => Deno.readTextFileSync("/proc/sys/net/ipv4/ip_local_port_range"),
): number {
  try {
    const low = Number(read().split(/\s+/)[0]);
    return low > 10_000 && low <= 65535 ? low : 32768;
  } catch {
    return 32768;
  }
}

/** Ports {@link freeServerPort} handed out in this process (not bound yet, maybe). */
const handedOut = new Set<number>();

/**
 * A TCP port free on every address a moment ago, chosen at random between 10000 and the start of
 * the ephemeral range, for a server that binds it only later (its number written into
 * configuration first, e.g. a proxyless gRPC server that binds once its listener arrives over
 * xDS). A port from {@link freePort} is ephemeral: meanwhile any outgoing connection on the
 * machine may take it as its source port (seen on a loaded box: a grpc-js-xds server failing with
 * EADDRINUSE). Below the range only a server that binds it can. Never the same port twice in one
 * process. (`from`: the lowest port, for tests.)
 */
export function freeServerPort(low: number = ephemeralLow(), from = 10_000): number {
  const top = Math.min(low, 65536);
  for (let i = 0; i < 200; i++) {
    const port = from + Math.floor(Math.random() * Math.max(1, top - from));
    if (handedOut.has(port)) continue;
    try {
      Deno.listen({ hostname: "0.0.0.0", port }).close();
      handedOut.add(port);
      return port;
    } catch {
      // taken (or not ours to bind): another one
    }
  }
  throw new Error(`no free port found between ${from} and ${top}`);
}

/** `host:port`, with an IPv6 host in brackets. */
export function hostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}
