/**
 * {@link serveHttp}: `Deno.serve` that opens its port again when its accept loop stops. Deno 2.7.14
 * ends a server for good when an accept fails (EMFILE: the process out of file descriptors, say
 * under a flood of connections): the port is closed, and `finished` rejects, which nothing
 * catches and so ends the process. Measured: a server under `ulimit -n 100`, sent 78 idle
 * connections from another process, refuses every connection after, and the process dies with
 * `Uncaught (in promise) Http: Error: Too many open files` once they are closed (Deno ends the
 * server only when its connections are gone).
 * @module
 */

import { hostPort } from "./mod.ts";

/** Options of {@link serveHttp}. */
export interface ServeHttpOptions {
  hostname: string;
  /** The port (0: a free one, kept when the port is opened again). */
  port: number;
  /** Told when the accept loop stopped, and when the port is served again. */
  onError?: (message: string) => void;
  /** The first wait before opening the port again (ms, default 1000; doubled up to 10 s). */
  retryMs?: number;
}

/** A server from {@link serveHttp}. */
export interface HttpServer {
  /** The bound address (the same after the port was opened again). */
  readonly addr: Deno.NetAddr;
  /** Stops serving (and opening the port again). */
  shutdown(): Promise<void>;
}

/**
 * Serves `handler` on `hostname`:`port` with `Deno.serve`; when the server ends on an error (its
 * accept loop stopped), tells `onError` and opens the same port again after `retryMs`, then at
 * doubling intervals while that fails (the descriptors may still be missing).
 * @throws Deno.errors.AddrInUse (and the other errors of `Deno.serve`) when the port cannot be
 * bound at first.
 */
export function serveHttp(
  o: ServeHttpOptions,
  handler: Deno.ServeHandler<Deno.NetAddr>,
): HttpServer {
  const open = (port: number) =>
    Deno.serve({ hostname: o.hostname, port, onListen: () => {} }, handler);
  let server = open(o.port);
  const addr = server.addr;
  const where = hostPort(addr.hostname, addr.port);
  const first = o.retryMs ?? 1000;
  let stopped = false;
  let timer: number | undefined;
  const retry = (ms: number) => {
    timer = setTimeout(() => {
      if (stopped) return;
      try {
        server = open(addr.port);
      } catch {
        return retry(Math.min(2 * ms, 10_000));
      }
      o.onError?.(`HTTP server on ${where}: serving again`);
      watch(server);
    }, ms);
  };
  const watch = (s: Deno.HttpServer<Deno.NetAddr>) =>
    s.finished.catch((e: Error) => {
      if (stopped) return;
      o.onError?.(`HTTP server on ${where} stopped accepting (${e.message}); opening it again`);
      void s.shutdown().catch(() => {}); // what is left of it (its resource)
      retry(first);
    });
  watch(server);
  return {
    addr,
    async shutdown() {
      stopped = true;
      clearTimeout(timer);
      await server.shutdown().catch(() => {});
      await server.finished.catch(() => {});
    },
  };
}
