/**
 * {@link HttpFront}: a program's plain HTTP ports owned by a worker isolate of their own (the
 * front), so that a readiness probe is answered in milliseconds however busy the isolate that
 * serves everything else is.
 *
 * A Deno isolate reads its sockets on its own thread, between its JavaScript: while mesh-discovery's
 * isolate spends seconds of every ten on ADS pushes and ACKs (10,000 proxies under churn), a
 * request on its HTTP port waits before JavaScript even sees it (docs/benchmarks.md, "Where a slow
 * /ready waits"), and a kubelet probe with a 1 s timeout turns the pod unready. The front reads
 * every request on a thread that does nothing else:
 *
 * - `GET`/`HEAD` of the readiness path is answered by the front itself, with what the serving
 *   isolate's own handler answered for that path at its last heartbeat (every
 *   {@link HttpFrontOptions.heartbeatMs}); a heartbeat older than
 *   {@link HttpFrontOptions.staleMs} turns it into a 503 that says so, so a stuck isolate is
 *   not ready.
 * - Every other request is handed to the serving isolate's handler, with the peer's address as
 *   Deno.serve would give it; the answer comes back with its first 64 KiB, and a longer body
 *   is pulled a chunk at a time as the client takes it (a slow reader holds one chunk, not the
 *   answer). A request body is read up to the handler's limit plus one byte: the handler
 *   answers a larger one (413) as before. At most {@link MAX_IN_FLIGHT} requests are read and
 *   handed over at once; the rest wait unread.
 *
 * A front that dies is started again on the same ports (the pool's restart).
 * @module
 */

import type { Logger } from "../log/mod.ts";
import { concat, readUpTo } from "./bytes.ts";
import { WorkerPool } from "./pool.ts";

/** One port the front serves. */
export interface HttpFrontListener {
  /** The address to bind (`0.0.0.0`, `::`, `127.0.0.1`...). */
  hostname: string;
  /** The port (0: a free one). */
  port: number;
}

/** Options of {@link HttpFront.start}. */
export interface HttpFrontOptions {
  /** The ports, all serving `handler`. */
  listeners: HttpFrontListener[];
  /** The program's HTTP handler, run in this (the serving) isolate. */
  handler: (
    req: Request,
    info: Deno.ServeHandlerInfo<Deno.NetAddr>,
  ) => Response | Promise<Response>;
  /** The path the front answers itself (default `/ready`; a trailing slash is the same path). */
  readyPath?: string;
  /** How often the serving isolate asks its handler for the readiness path (ms, default {@link HEARTBEAT_MS}). */
  heartbeatMs?: number;
  /**
   * A heartbeat older than this (ms, default {@link READY_STALE_MS}) makes the front answer 503:
   * the serving isolate is stuck.
   */
  staleMs?: number;
  /** The largest request body the handler reads (bytes): the front reads one more at most. */
  maxRequestBytes: number;
  /**
   * Requests handed over at once (default {@link MAX_IN_FLIGHT}): more wait, unread, until one is
   * answered, so a held serving isolate does not make the front buffer every client's body.
   */
  maxInFlight?: number;
  /** Delay before a front that died is started again (ms, default 1000). */
  restartDelayMs?: number;
  /** For the pool's lines (a front that died, a port it lost). */
  log: Logger;
}

/**
 * How often the serving isolate tells the front its readiness (ms): a change it does not
 * {@link HttpFront.refresh} for shows within this long. A heartbeat costs ~1 ms of CPU (5 ms a
 * second idle at 250 ms, measured).
 */
export const HEARTBEAT_MS = 1000;

/** How long the serving isolate may go without a heartbeat before the front says not ready. */
export const READY_STALE_MS = 5000;

/** Requests handed over to the serving isolate at once, by default. */
export const MAX_IN_FLIGHT = 32;

/** Body bytes sent with the answer's head; a longer body is pulled by chunks. */
export const FIRST_BYTES = 64 * 1024;

/** What the front starts from (its `init`). */
export interface FrontInit {
  listeners: HttpFrontListener[];
  readyPath: string;
  staleMs: number;
  maxRequestBytes: number;
  maxInFlight: number;
}

/** The front's answer to `init`: the bound ports, or the error of the listener that failed. */
export type FrontStarted =
  | { ports: number[] }
  | { failed: number; error: { name: string; message: string } };

/** A request the front hands over. */
export interface ForwardRequest {
  /** The front's id of the request (a `leave` note names it when its client leaves). */
  id: number;
  method: string;
  url: string;
  headers: [string, string][];
  body: Uint8Array | null;
  remote: { hostname: string; port: number };
}

/** The handler's answer: its head, the first bytes, and a stream id (0: the body is complete). */
export interface ForwardReply {
  status: number;
  headers: [string, string][];
  body: Uint8Array | null;
  stream: number;
}

/** The next chunk of a streamed body. */
export type ReadReply = { done: true } | { done: false; value: Uint8Array };

/** The readiness answer the front serves between heartbeats. */
export interface ReadyState {
  status: number;
  headers: [string, string][];
  body: string;
}

/**
 * Why a listener of the front could not be bound, as the error Deno.serve threw (a
 * `Deno.errors.AddrInUse` stays one), with the listener's index.
 */
export class FrontListenError extends Error {
  /** Wraps `cause` for listener `index`. */
  constructor(readonly index: number, override readonly cause: Error) {
    super(cause.message);
  }
}

/** The serving isolate's side of the front; see the module doc. */
export class HttpFront {
  #streams = new Map<number, ReadableStreamDefaultReader<Uint8Array>>();
  #nextStream = 1;
  /** The signals of the handed-over requests being handled, by the front's id. */
  #handling = new Map<number, AbortController>();
  #timer: number | undefined;
  /** The heartbeat in progress. */
  #beating: Promise<void> | undefined;
  /** A refresh waiting for the heartbeat in progress. */
  #again: Promise<void> | undefined;
  #pool: WorkerPool | undefined;
  /** The bound port of each listener. */
  ports: number[];
  /** The path the front answers itself ({@link HttpFrontOptions.readyPath}). */
  readonly #readyPath: string;

  private constructor(readonly o: HttpFrontOptions) {
    this.ports = o.listeners.map((l) => l.port);
    this.#readyPath = o.readyPath ?? "/ready";
  }

  /**
   * Starts the front and binds every listener.
   * @throws FrontListenError when a port cannot be bound (`cause` is Deno.serve's error).
   */
  static async start(o: HttpFrontOptions): Promise<HttpFront> {
    const front = new HttpFront(o);
    await front.#start();
    return front;
  }

  async #start(): Promise<void> {
    const { o } = this;
    let started: FrontStarted | undefined;
    const pool = this.#pool = await WorkerPool.start({
      url: new URL("./http_front_worker.ts", import.meta.url),
      count: 1,
      name: "HTTP front",
      log: o.log,
      restartDelayMs: o.restartDelayMs,
      init: (): FrontInit => ({
        // a restarted front binds the ports the first one was given
        listeners: o.listeners.map((l, i) => ({ hostname: l.hostname, port: this.ports[i] })),
        readyPath: this.#readyPath,
        staleMs: o.staleMs ?? READY_STALE_MS,
        maxRequestBytes: o.maxRequestBytes,
        maxInFlight: o.maxInFlight ?? MAX_IN_FLIGHT,
      }),
      onStarted: (_, reply) => {
        started = reply as FrontStarted;
        if ("ports" in started) {
          this.ports = started.ports;
          void this.#beat();
        } else if (this.#timer !== undefined) {
          // a restarted front that lost its port: said, and tried again after the delay
          o.log.error(`HTTP front: listener ${started.failed}: ${started.error.message}`);
          this.#pool?.kill(0, "could not bind its port");
        }
      },
      handlers: {
        fetch: (a) => this.#fetch(a as ForwardRequest),
        read: (id) => this.#read(id as number),
        cancel: (id) => this.#cancel(id as number),
        leave: (id) => this.#handling.get(id as number)?.abort(),
      },
      onDied: () => {
        for (const id of [...this.#streams.keys()]) this.#cancel(id);
      },
    });
    if (started && "failed" in started) {
      await pool.close(0);
      const e = started.error;
      const Known = (Deno.errors as unknown as Record<string, ErrorConstructor>)[e.name];
      const cause = Known ? new Known(e.message) : new Error(e.message);
      throw new FrontListenError(started.failed, cause);
    }
    await this.#beat();
    this.#timer = setInterval(() => void this.#beat(), o.heartbeatMs ?? HEARTBEAT_MS);
  }

  /**
   * Tells the front the readiness answer now, not at the next heartbeat: for a change the program
   * knows of (synced). Resolves once the front has been told.
   */
  refresh(): Promise<void> {
    return this.#beat(true);
  }

  /**
   * Asks the handler for the readiness path and tells the front. One at a time: a refresh during
   * a heartbeat runs once that one is done (what it read may be older than the change).
   */
  #beat(refresh = false): Promise<void> {
    if (this.#beating) {
      if (!refresh) return this.#beating;
      this.#again ??= this.#beating.then(() => {
        this.#again = undefined;
        return this.#beat();
      });
      return this.#again;
    }
    const beat = this.#beating = this.#tell().finally(() => this.#beating = undefined);
    return beat;
  }

  async #tell(): Promise<void> {
    if (!this.#pool) return;
    let state: ReadyState;
    try {
      const res = await this.o.handler(
        new Request(`http://localhost${this.#readyPath}`),
        localInfo(),
      );
      state = { status: res.status, headers: [...res.headers], body: await res.text() };
    } catch (e) {
      state = {
        status: 503,
        headers: [["content-type", "text/plain; charset=utf-8"]],
        body: `not ready: ${(e as Error).message}\n`,
      };
    }
    this.#pool?.notify("ready", state);
  }

  /** Runs a handed-over request through the handler. */
  async #fetch(a: ForwardRequest): Promise<ForwardReply> {
    // the request's signal aborts when its client leaves before the answer (the front's `leave`)
    const left = new AbortController();
    this.#handling.set(a.id, left);
    const req = new Request(a.url, {
      method: a.method,
      headers: a.headers,
      signal: left.signal,
      ...(a.body ? { body: a.body as Uint8Array<ArrayBuffer> } : {}),
    });
    let res: Response;
    try {
      res = await this.o.handler(req, {
        remoteAddr: { transport: "tcp", hostname: a.remote.hostname, port: a.remote.port },
        completed: Promise.resolve(),
      });
    } finally {
      this.#handling.delete(a.id);
    }
    const head = { status: res.status, headers: [...res.headers] };
    if (!res.body) return { ...head, body: null, stream: 0 };
    const reader = res.body.getReader();
    const first = await readUpTo(reader, FIRST_BYTES);
    const body = concat(first.chunks, first.size);
    if (first.done) return { ...head, body, stream: 0 };
    const stream = this.#nextStream++;
    this.#streams.set(stream, reader);
    return { ...head, body, stream };
  }

  /** The next chunk of stream `id` (the front pulls when its client took the last one). */
  async #read(id: number): Promise<ReadReply> {
    const reader = this.#streams.get(id);
    if (!reader) throw new Error(`no answer stream ${id}`);
    try {
      const r = await reader.read();
      if (r.done) this.#streams.delete(id);
      return r.done ? { done: true } : { done: false, value: r.value };
    } catch (e) {
      this.#streams.delete(id);
      throw e;
    }
  }

  /** The client went away: the rest of stream `id` is not made. */
  #cancel(id: number): void {
    const reader = this.#streams.get(id);
    this.#streams.delete(id);
    reader?.cancel().catch(() => {});
  }

  /** Handed-over requests being handled now (for tests: none is kept once answered). */
  get handling(): number {
    return this.#handling.size;
  }

  /** Answer streams open now (for tests: a client that left leaves none). */
  get openStreams(): number {
    return this.#streams.size;
  }

  /** The front's pool (its health in `/metrics`; for tests: kill it as if it died). */
  get pool(): WorkerPool | undefined {
    return this.#pool;
  }

  /** Stops the heartbeat, closes the ports (in-flight answers finish) and the front. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    const pool = this.#pool;
    this.#pool = undefined;
    await pool?.close();
    for (const id of [...this.#streams.keys()]) this.#cancel(id);
  }
}

/** Handler info for the heartbeat's own request (from this host). */
function localInfo(): Deno.ServeHandlerInfo<Deno.NetAddr> {
  return {
    remoteAddr: { transport: "tcp", hostname: "127.0.0.1", port: 0 },
    completed: Promise.resolve(),
  };
}
