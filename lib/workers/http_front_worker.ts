/**
 * The HTTP front's worker isolate (see `http_front.ts`): it owns the ports, answers the
 * readiness path from the serving isolate's last heartbeat, and hands every other request over.
 * @module
 */
/// <reference lib="deno.worker" />

import { type HttpServer, serveHttp } from "../net/serve.ts";
import type { Channel } from "./channel.ts";
import type {
  ForwardReply,
  ForwardRequest,
  FrontInit,
  FrontStarted,
  ReadReply,
  ReadyState,
} from "./http_front.ts";
import { concat, readUpTo } from "./bytes.ts";
import { serveControl } from "./serve_control.ts";

let servers: HttpServer[] = [];
let ready: ReadyState & { at: number } = {
  status: 503,
  headers: [["content-type", "text/plain; charset=utf-8"]],
  body: "not ready: starting\n",
  at: performance.now(),
};

serveControl<FrontInit>(({ arg }, link): FrontStarted => {
  const handler = frontHandler(arg, link.channel);
  const ports: number[] = [];
  for (const [i, l] of arg.listeners.entries()) {
    try {
      const s = serveHttp({
        hostname: l.hostname,
        port: l.port,
        onError: (m) => link.logger("default").warn(m),
      }, handler);
      servers.push(s);
      ports.push(s.addr.port);
    } catch (e) {
      for (const s of servers) void s.shutdown();
      servers = [];
      const { name, message } = e as Error;
      return { failed: i, error: { name, message } };
    }
  }
  return { ports };
}, {
  ready: (a) => void (ready = { ...(a as ReadyState), at: performance.now() }),
  async close() {
    await Promise.all(servers.map((s) => s.shutdown()));
  },
});

/** The front's handler: readiness from the heartbeat, the rest handed over on `channel`. */
function frontHandler(init: FrontInit, channel: Channel): Deno.ServeHandler<Deno.NetAddr> {
  const readyPath = init.readyPath.replace(/\/+$/, "");
  const inFlight = new Slots(init.maxInFlight);
  let ids = 0;
  return async (req, info) => {
    if (
      (req.method === "GET" || req.method === "HEAD") &&
      new URL(req.url).pathname.replace(/\/+$/, "") === readyPath
    ) {
      return readyAnswer(init.staleMs);
    }
    // Deno makes a request's signal when it is first asked for, and aborts it when the client
    // leaves only from then on (Deno 2.7.14, measured): asked now, it tells below whether the
    // client left while the request waited
    const left = req.signal;
    // at most init.maxInFlight requests read and handed over at once: while the serving isolate
    // is held, the others wait unread (their bodies stay in the sockets)
    await inFlight.take();
    let reply: ForwardReply;
    const request = ++ids;
    // a client that leaves while its request is handled: the handler's signal says so
    const leave = () => channel.notify("leave", request);
    try {
      if (left.aborted) return new Response(null, { status: 499 });
      const body = await boundedBody(req, init.maxRequestBytes);
      const arg: ForwardRequest = {
        id: request,
        method: req.method,
        url: req.url,
        headers: [...req.headers],
        body,
        remote: { hostname: info.remoteAddr.hostname, port: info.remoteAddr.port },
      };
      const answer = channel.request<ForwardReply>(
        "fetch",
        arg,
        body ? [body.buffer as ArrayBuffer] : [],
      );
      if (left.aborted) leave();
      else left.addEventListener("abort", leave, { once: true });
      reply = await answer;
    } catch (e) {
      return new Response(`Internal error: ${(e as Error).message}\n`, {
        status: 500,
        headers: { "content-type": "text/plain; charset=utf-8" },
      });
    } finally {
      left.removeEventListener("abort", leave);
      inFlight.give();
    }
    const init_ = { status: reply.status, headers: reply.headers };
    if (reply.stream === 0) return new Response(reply.body as BodyInit | null, init_);
    const id = reply.stream;
    const first = reply.body;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        if (first?.length) c.enqueue(first);
      },
      async pull(c) {
        const r = await channel.request<ReadReply>("read", id);
        if (r.done) c.close();
        else c.enqueue(r.value);
      },
      cancel() {
        channel.notify("cancel", id);
      },
    }, { highWaterMark: 0 });
    return new Response(body, init_);
  };
}

/** The last heartbeat's answer, or a 503 when it is older than `staleMs`. */
function readyAnswer(staleMs: number): Response {
  const age = performance.now() - ready.at;
  if (age > staleMs) {
    return new Response(
      `not ready: the serving isolate has not answered for ${(age / 1000).toFixed(1)} s\n`,
      { status: 503, headers: { "content-type": "text/plain; charset=utf-8" } },
    );
  }
  return new Response(ready.body, { status: ready.status, headers: ready.headers });
}

/**
 * The request's body in one array (null when it has none), read up to `max` + 1 bytes: the
 * handler sees that it is too large. A declared length over `max` is not read at all.
 */
async function boundedBody(req: Request, max: number): Promise<Uint8Array | null> {
  if (!req.body) return null;
  if (Number(req.headers.get("content-length") ?? "0") > max) {
    await req.body.cancel();
    return null;
  }
  const reader = req.body.getReader();
  const { chunks, size, done } = await readUpTo(reader, max + 1);
  if (!done) await reader.cancel();
  // a copy of its own (the front transfers its buffer), at most max + 1 bytes
  return (concat(chunks, size) ?? new Uint8Array(0)).slice(0, max + 1);
}

/** A counting semaphore: {@link take} waits while every slot is taken, in arrival order. */
class Slots {
  #free: number;
  #waiting: (() => void)[] = [];

  constructor(count: number) {
    this.#free = count;
  }

  take(): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve();
    }
    return new Promise((r) => this.#waiting.push(r));
  }

  give(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free++;
  }
}
