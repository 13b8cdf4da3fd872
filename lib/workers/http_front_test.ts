import assert from "node:assert/strict";
import { FIRST_BYTES, FrontListenError, HttpFront, type HttpFrontOptions } from "./http_front.ts";
import { curlLater, hold } from "../../tests/harness/probe.ts";
import { freePort, waitUntil } from "../../tests/harness/procs.ts";
import { quietLogger as quiet } from "../log/testing.ts";

/** Starts a front on one port of 127.0.0.1 and closes it after `fn`. */
async function withFront(
  handler: HttpFrontOptions["handler"],
  fn: (front: HttpFront, base: string) => Promise<void>,
  o: Partial<HttpFrontOptions> = {},
): Promise<void> {
  const front = await HttpFront.start({
    listeners: [{ hostname: "127.0.0.1", port: 0 }],
    handler,
    maxRequestBytes: 1024,
    heartbeatMs: 50,
    log: quiet,
    ...o,
  });
  try {
    await fn(front, `http://127.0.0.1:${front.ports[0]}`);
  } finally {
    await front.close();
  }
}

let readyNow = true;
/** The peer the handler was given for the last readiness request. */
let readyPeer: Deno.NetAddr | undefined;
const app: HttpFrontOptions["handler"] = async (req, info) => {
  const url = new URL(req.url);
  if (url.pathname === "/ready") {
    readyPeer = info.remoteAddr;
    if (req.method !== "GET") return new Response("GET only\n", { status: 405 });
    return readyNow
      ? new Response("ready\n", { headers: { "x-from": "handler" } })
      : new Response("not ready: not synced\n", { status: 503 });
  }
  if (url.pathname === "/echo") {
    const body = req.body ? await req.text() : "";
    return Response.json({
      method: req.method,
      query: url.searchParams.get("q"),
      header: req.headers.get("x-test"),
      peer: info.remoteAddr.hostname,
      transport: info.remoteAddr.transport,
      body,
    }, { status: 201, headers: { "x-answer": "yes" } });
  }
  if (url.pathname === "/empty") return new Response(null, { status: 204 });
  if (url.pathname === "/size") {
    // as the programs' bounded readers do: the declared length first, then what came
    const declared = Number(req.headers.get("content-length") ?? "0");
    const got = (await req.arrayBuffer()).byteLength;
    return new Response(declared > 1024 || got > 1024 ? "too large\n" : `${got}\n`, {
      status: declared > 1024 || got > 1024 ? 413 : 200,
    });
  }
  return new Response("404\n", { status: 404 });
};

Deno.test("HttpFront hands a request over with its method, query, headers, body and peer", async () => {
  await withFront(app, async (_, base) => {
    const res = await fetch(`${base}/echo?q=1`, {
      method: "POST",
      headers: { "x-test": "t" },
      body: "hello",
    });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get("x-answer"), "yes");
    assert.deepEqual(await res.json(), {
      method: "POST",
      query: "1",
      header: "t",
      peer: "127.0.0.1",
      transport: "tcp",
      body: "hello",
    });
    const empty = await fetch(`${base}/empty`);
    assert.equal(empty.status, 204);
    assert.equal(await empty.text(), "");
    const missing = await fetch(`${base}/nothing`);
    assert.equal(missing.status, 404);
    assert.equal(await missing.text(), "404\n");
    // only GET and HEAD of the readiness path are the front's own
    const post = await fetch(`${base}/ready`, { method: "POST", body: "" });
    assert.equal(post.status, 405);
    assert.equal(await post.text(), "GET only\n");
    const headReady = await fetch(`${base}/ready`, { method: "HEAD" });
    assert.equal(headReady.status, 200);
    await headReady.body?.cancel();
    const head = await fetch(`${base}/echo`, { method: "HEAD" });
    assert.equal(head.status, 201);
    assert.equal(await head.text(), "");
  });
});

Deno.test("HttpFront lets the handler refuse a body over its limit, declared or not", async () => {
  await withFront(app, async (_, base) => {
    const ok = await fetch(`${base}/size`, { method: "POST", body: "x".repeat(1024) });
    assert.equal(await ok.text(), "1024\n");
    const big = await fetch(`${base}/size`, { method: "POST", body: "x".repeat(5000) });
    assert.equal(big.status, 413);
    await big.body?.cancel();
    // chunked, no length declared: the front reads 1025 bytes and stops
    const chunked = await fetch(`${base}/size`, {
      method: "POST",
      body: ReadableStream.from(["x".repeat(600), "x".repeat(600), "x".repeat(600)]).pipeThrough(
        new TextEncoderStream(),
      ),
    });
    assert.equal(chunked.status, 413);
    await chunked.body?.cancel();
    // a declared length over the limit is not read at all: answered though the body never comes
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(base).port) });
    try {
      await conn.write(
        new TextEncoder().encode(
          "POST /size HTTP/1.1\r\nhost: x\r\ncontent-length: 10000000\r\n\r\nxxxxxxxxxx",
        ),
      );
      const buf = new Uint8Array(4096);
      const timer = setTimeout(() => conn.close(), 10_000);
      const n = await conn.read(buf).finally(() => clearTimeout(timer));
      assert.match(new TextDecoder().decode(buf.subarray(0, n ?? 0)), /^HTTP\/1\.1 413 /);
    } finally {
      try {
        conn.close();
      } catch { /* closed by the timer */ }
    }
  });
});

Deno.test("HttpFront streams a long answer as the client reads it, and stops when it leaves", async () => {
  let pulled = 0;
  let cancelled = false;
  const chunk = new Uint8Array(16 * 1024).fill(7);
  const total = 4 * 1024 * 1024;
  /** `total` bytes, or (`endless`) as many as are read. */
  const body = (endless: boolean) =>
    new ReadableStream<Uint8Array>({
      pull(c) {
        if (!endless && pulled * chunk.length >= total) return c.close();
        pulled++;
        c.enqueue(chunk.slice());
      },
      cancel() {
        cancelled = true;
      },
    }, { highWaterMark: 0 });
  const handler: HttpFrontOptions["handler"] = (req, info) => {
    const path = new URL(req.url).pathname;
    if (path === "/big") return new Response(body(false));
    if (path === "/endless") return new Response(body(true));
    return app(req, info);
  };
  let openReader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  await withFront(handler, async (front, base) => {
    // the whole body, to the byte
    const all = new Uint8Array(await (await fetch(`${base}/big`)).arrayBuffer());
    assert.equal(all.length, total);
    assert.ok(all.every((b) => b === 7));
    assert.equal(front.openStreams, 0);
    // a client that reads the first bytes and stops: what is made is what the sockets hold
    pulled = 0;
    const res = await fetch(`${base}/endless`);
    const reader = res.body!.getReader();
    let got = 0;
    while (got < FIRST_BYTES) got += (await reader.read()).value!.length;
    await new Promise((r) => setTimeout(r, 300));
    const held = pulled;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(pulled, held, "the handler is read on while the client reads nothing");
    assert.ok(pulled * chunk.length < 64 * 1024 * 1024, `${pulled} chunks made`);
    assert.equal(front.openStreams, 1);
    await reader.cancel();
    for (let i = 0; i < 100 && front.openStreams > 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(front.openStreams, 0);
    assert.ok(cancelled, "the handler's stream was cancelled");
    // an answer still being read when the front closes: its handler stream is cancelled too
    cancelled = false;
    const open = await fetch(`${base}/endless`);
    openReader = open.body!.getReader();
    await openReader.read();
    assert.equal(front.openStreams, 1);
  });
  assert.ok(cancelled, "close() cancelled the answer in progress");
  await openReader?.cancel().catch(() => {});
});

Deno.test("HttpFront answers /ready in milliseconds while the serving isolate is busy", async () => {
  readyNow = true;
  await withFront(app, async (_, base) => {
    const probe = curlLater(`${base}/ready`, 0.3);
    const other = curlLater(`${base}/echo`, 0.3);
    hold(1500);
    const r = await probe;
    assert.equal(r.status, 200);
    assert.equal(r.body, "ready\n");
    assert.ok(r.secs < 0.5, `/ready took ${r.secs} s`);
    // everything else waits for the serving isolate, as before
    const o = await other;
    assert.equal(o.status, 201);
    assert.ok(o.secs > 0.5, `/echo took ${o.secs} s`);
  });
});

Deno.test("HttpFront's /ready follows the handler's answer, and a stuck isolate is not ready", async () => {
  await withFront(app, async (_, base) => {
    readyNow = false;
    await new Promise((r) => setTimeout(r, 200));
    const down = await fetch(`${base}/ready/`);
    assert.equal(down.status, 503);
    assert.equal(await down.text(), "not ready: not synced\n");
    readyNow = true;
    await new Promise((r) => setTimeout(r, 200));
    const up = await fetch(`${base}/ready`);
    assert.equal(up.status, 200);
    assert.equal(up.headers.get("x-from"), "handler");
    assert.equal(await up.text(), "ready\n");
    // the heartbeat's own request comes from this host, as a local probe's would
    assert.deepEqual(readyPeer, { transport: "tcp", hostname: "127.0.0.1", port: 0 });
    // held past staleMs: the front says why
    const probe = curlLater(`${base}/ready`, 0.8);
    hold(1500);
    const r = await probe;
    assert.equal(r.status, 503);
    const m = /^not ready: the serving isolate has not answered for (\d+\.\d) s\n$/.exec(r.body);
    assert.ok(m, r.body);
    // asked 0.8 s into the hold, the last heartbeat at most 50 ms before it
    assert.ok(Number(m[1]) >= 0.5 && Number(m[1]) <= 1.5, `${m[1]} s`);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await fetch(`${base}/ready`).then((r) => r.text()), "ready\n");
  }, { staleMs: 400 });
});

Deno.test("HttpFront reports a port in use as Deno.serve's error, and leaves nothing running", async () => {
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const errors: string[] = [];
  try {
    const e = await HttpFront.start({
      listeners: [
        { hostname: "127.0.0.1", port: 0 },
        { hostname: "127.0.0.1", port: taken.addr.port },
      ],
      handler: app,
      maxRequestBytes: 1024,
      log: { ...quiet, error: (m: string) => void errors.push(m) },
    }).then(() => undefined, (e) => e);
    assert.ok(e instanceof FrontListenError, String(e));
    // told to the caller once, not logged as a front that lost its port and restarted
    assert.deepEqual(errors, []);
    assert.equal(e.index, 1);
    assert.ok(e.cause instanceof Deno.errors.AddrInUse, String(e.cause));
  } finally {
    taken.close();
  }
});

Deno.test("HttpFront that died is started again on its host and port, and says so when it cannot bind", async () => {
  readyNow = true;
  const errors: string[] = [];
  const port = freePort();
  let cancelled = false;
  const handler: HttpFrontOptions["handler"] = (req, info) =>
    new URL(req.url).pathname !== "/endless" ? app(req, info) : new Response(
      new ReadableStream<Uint8Array>({
        pull: (c) => c.enqueue(new Uint8Array(16 * 1024)),
        cancel: () => void (cancelled = true),
      }, { highWaterMark: 0 }),
    );
  const readyAt = async (base: string) => {
    for (let i = 0; i < 200; i++) {
      const status = await fetch(`${base}/ready`).then(async (r) => {
        await r.body?.cancel();
        return r.status;
      }, () => 0);
      if (status === 200) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.fail(`${base}/ready never answered 200`);
  };
  await withFront(handler, async (front, base) => {
    assert.equal(front.ports[0], port);
    assert.equal(base, `http://127.0.0.1:${port}`);
    // bound to the host it was given only
    await assert.rejects(fetch(`http://127.0.0.2:${port}/ready`));
    // an answer being streamed when the front dies: the handler's stream is cancelled at once
    const res = await fetch(`${base}/endless`);
    const reader = res.body!.getReader();
    await reader.read();
    front.pool!.kill(0);
    assert.equal(front.openStreams, 0);
    assert.ok(cancelled, "the streamed answer's handler stream was cancelled");
    await reader.cancel().catch(() => {});
    await readyAt(base);
    assert.equal(front.ports[0], port);
    assert.match(errors.join("\n"), /HTTP front 0 killed; starting it again/);
    await assert.rejects(fetch(`http://127.0.0.2:${port}/ready`));
    // its port taken while it restarts: said, and tried again until it is free
    front.pool!.kill(0);
    let taken: Deno.Listener | undefined;
    for (let i = 0; i < 100 && !taken; i++) {
      try {
        taken = Deno.listen({ hostname: "127.0.0.1", port });
      } catch {
        await new Promise((r) => setTimeout(r, 5));
      }
    }
    assert.ok(taken, "the dead front's port was not released");
    for (let i = 0; i < 100 && !/could not bind/.test(errors.join("\n")); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.match(errors.join("\n"), /HTTP front: listener 0: .*in use/i);
    assert.match(errors.join("\n"), /HTTP front 0 could not bind its port; starting it again/);
    taken.close();
    await readyAt(base);
  }, {
    listeners: [{ hostname: "127.0.0.1", port }],
    restartDelayMs: 200,
    log: { ...quiet, error: (m: string) => void errors.push(m) },
  });
});

Deno.test("HttpFront.refresh() tells the front a change before the next heartbeat", async () => {
  readyNow = true;
  await withFront(app, async (front, base) => {
    assert.equal(await fetch(`${base}/ready`).then((r) => r.text()), "ready\n");
    readyNow = false;
    await front.refresh();
    const res = await fetch(`${base}/ready`);
    assert.equal(res.status, 503);
    assert.equal(await res.text(), "not ready: not synced\n");
    // a refresh while one is under way runs again after it: it reads the handler after the change
    readyNow = true;
    const first = front.refresh(); // has read "ready"
    readyNow = false;
    await Promise.all([first, front.refresh(), front.refresh()]);
    const stale = await fetch(`${base}/ready`);
    await stale.body?.cancel();
    assert.equal(stale.status, 503);
  }, { heartbeatMs: 60_000 });
  readyNow = true;
});

Deno.test("HttpFront.refresh() while a slow one is under way: the front keeps the later answer", async () => {
  let synced = true;
  let gate: Promise<void> | undefined;
  const handler: HttpFrontOptions["handler"] = async (req, info) => {
    if (new URL(req.url).pathname !== "/ready") return app(req, info);
    const now = synced;
    if (gate) await gate;
    return now ? new Response("ready\n") : new Response("not ready: not synced\n", { status: 503 });
  };
  await withFront(handler, async (front, base) => {
    const slow = Promise.withResolvers<void>();
    gate = slow.promise;
    const first = front.refresh(); // reads "synced", then waits
    gate = undefined;
    synced = false;
    const second = front.refresh(); // answered at once, but must not be overtaken by the first
    setTimeout(() => slow.resolve(), 100);
    await Promise.all([first, second]);
    const res = await fetch(`${base}/ready`);
    assert.equal(res.status, 503);
    assert.equal(await res.text(), "not ready: not synced\n");
    // a refresh still waiting on the handler when the front closes settles quietly
    const held = Promise.withResolvers<void>();
    gate = held.promise;
    const late = front.refresh();
    await front.close();
    held.resolve();
    await late;
  }, { heartbeatMs: 60_000 });
});

Deno.test("HttpFront ends an answer whose body fails midway, and keeps no stream for it", async () => {
  const handler: HttpFrontOptions["handler"] = (req, info) => {
    if (new URL(req.url).pathname !== "/broken") return app(req, info);
    let sent = false;
    return new Response(
      new ReadableStream<Uint8Array>({
        pull(c) {
          if (sent) return c.error(new Error("disk gone"));
          sent = true;
          c.enqueue(new Uint8Array(FIRST_BYTES + 1024).fill(1));
        },
      }, { highWaterMark: 0 }),
    );
  };
  await withFront(handler, async (front, base) => {
    // a plain HTTP/1.1 client (fetch keeps a failed body as a leak): the head and the first
    // bytes, then the connection ends without the last chunk, so the client knows it is cut short
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: front.ports[0] });
    await conn.write(new TextEncoder().encode("GET /broken HTTP/1.1\r\nhost: x\r\n\r\n"));
    const got = new Uint8Array(await new Response(conn.readable).arrayBuffer());
    const text = new TextDecoder().decode(got);
    assert.match(text, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(text, /\r\ntransfer-encoding: chunked\r\n/i);
    assert.ok(got.length > FIRST_BYTES && got.length < FIRST_BYTES + 2048, `${got.length} bytes`);
    assert.ok(!text.endsWith("\r\n0\r\n\r\n"), "the answer was ended as if complete");
    assert.equal(front.openStreams, 0);
    // the front goes on answering
    assert.equal(await fetch(`${base}/nothing`).then((r) => r.text()), "404\n");
  });
});

Deno.test("HttpFront hands over at most maxInFlight requests at once; the rest wait unread", async () => {
  let entered = 0;
  const release = Promise.withResolvers<void>();
  const handler: HttpFrontOptions["handler"] = async (req, info) => {
    if (new URL(req.url).pathname !== "/hold") return app(req, info);
    entered++;
    await release.promise;
    return new Response(`${(await req.text()).length}\n`);
  };
  await withFront(handler, async (_, base) => {
    const answers = Array.from(
      { length: 10 },
      () => fetch(`${base}/hold`, { method: "POST", body: "x".repeat(100) }).then((r) => r.text()),
    );
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(entered, 3);
    // the front still answers what it answers itself
    assert.equal(await fetch(`${base}/ready`).then((r) => r.text()), "ready\n");
    release.resolve();
    assert.deepEqual(await Promise.all(answers), Array(10).fill("100\n"));
    assert.equal(entered, 10);
    // every slot is free again: as many at once are handed over
    const more = Array.from(
      { length: 3 },
      () =>
        fetch(`${base}/hold`, { method: "POST", body: "x", signal: AbortSignal.timeout(10_000) })
          .then((r) => r.text()),
    );
    assert.deepEqual(await Promise.all(more), Array(3).fill("1\n"));
  }, { maxInFlight: 3 });
});

Deno.test("HttpFront does not hand over a request whose client left while it waited for a slot", async () => {
  const seen: string[] = [];
  const release = Promise.withResolvers<void>();
  const handler: HttpFrontOptions["handler"] = async (req, info) => {
    const path = new URL(req.url).pathname;
    if (path !== "/hold" && path !== "/gone") return app(req, info);
    seen.push(path);
    if (path === "/hold") await release.promise;
    return new Response("answered\n");
  };
  await withFront(handler, async (_, base) => {
    // the one slot is taken
    const held = fetch(`${base}/hold`).then((r) => r.text());
    await waitUntil(() => seen.length === 1, 10_000, "the first request handed over");
    // a client asks, then leaves before its turn
    const port = Number(new URL(base).port);
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await conn.write(new TextEncoder().encode("GET /gone HTTP/1.1\r\nhost: x\r\n\r\n"));
    await new Promise((r) => setTimeout(r, 200));
    conn.close();
    await new Promise((r) => setTimeout(r, 200));
    release.resolve();
    assert.equal(await held, "answered\n");
    // the slot is free for the next one, and the client gone was never handed over
    const next = await fetch(`${base}/echo`);
    assert.equal(next.status, 201);
    await next.body?.cancel();
    assert.deepEqual(seen, ["/hold"]);
  }, { maxInFlight: 1 });
});

Deno.test("HttpFront aborts a handed-over request's signal when its client leaves before the answer", async () => {
  let aborted: number | undefined;
  const t0 = performance.now();
  const handler: HttpFrontOptions["handler"] = async (req, info) => {
    if (new URL(req.url).pathname === "/stay") {
      await new Promise((r) => setTimeout(r, 200));
      return new Response(`aborted: ${req.signal.aborted}\n`);
    }
    if (new URL(req.url).pathname !== "/long") return app(req, info);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 10_000);
      req.signal.addEventListener("abort", () => {
        aborted = performance.now() - t0;
        clearTimeout(timer);
        resolve();
      });
    });
    return new Response("too late\n");
  };
  await withFront(handler, async (front, base) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(base).port) });
    await conn.write(new TextEncoder().encode("GET /long HTTP/1.1\r\nhost: x\r\n\r\n"));
    await new Promise((r) => setTimeout(r, 200));
    conn.close();
    await waitUntil(() => aborted !== undefined, 5_000, "the handler's signal to abort");
    // a client that waits for its answer: its request's signal is not aborted
    assert.equal(await fetch(`${base}/stay`).then((r) => r.text()), "aborted: false\n");
    // nothing is kept of the requests answered
    assert.equal(front.handling, 0);
  });
});

Deno.test("HttpFront answers its own readiness path as configured, with or without trailing slashes", async () => {
  readyNow = false;
  const handler: HttpFrontOptions["handler"] = (req, info) => {
    const path = new URL(req.url).pathname;
    // the heartbeat asks for the path as configured
    if (path === "/healthz/") return app(new Request(new URL("/ready", req.url)), info);
    return app(req, info);
  };
  try {
    await withFront(handler, async (_, base) => {
      for (const path of ["/healthz", "/healthz/", "/healthz//"]) {
        const res = await fetch(`${base}${path}`);
        assert.equal(res.status, 503, path);
        assert.equal(await res.text(), "not ready: not synced\n", path);
      }
      // /ready is now an ordinary path, handed over: the handler's own answer to a HEAD
      const ready = await fetch(`${base}/ready`, { method: "HEAD" });
      await ready.body?.cancel();
      assert.equal(ready.status, 405);
    }, { readyPath: "/healthz/" });
  } finally {
    readyNow = true;
  }
});

Deno.test("HttpFront answers 503 with the reason when the handler fails on the readiness path", async () => {
  const handler: HttpFrontOptions["handler"] = (req, info) => {
    if (new URL(req.url).pathname === "/ready") throw new Error("model not built");
    return app(req, info);
  };
  await withFront(handler, async (_, base) => {
    const res = await fetch(`${base}/ready`);
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("content-type"), "text/plain; charset=utf-8");
    assert.equal(await res.text(), "not ready: model not built\n");
  });
});

Deno.test("HttpFront answers 500 with the reason when the handler throws, and finishes answers in flight when closed", async () => {
  const release = Promise.withResolvers<void>();
  let entered = false;
  const handler: HttpFrontOptions["handler"] = async (req, info) => {
    const path = new URL(req.url).pathname;
    if (path === "/boom") throw new Error("no model");
    if (path === "/hold") {
      entered = true;
      await release.promise;
      return new Response("held\n");
    }
    return app(req, info);
  };
  const front = await HttpFront.start({
    listeners: [{ hostname: "127.0.0.1", port: 0 }],
    handler,
    maxRequestBytes: 1024,
    log: quiet,
  });
  const base = `http://127.0.0.1:${front.ports[0]}`;
  try {
    const boom = await fetch(`${base}/boom`);
    assert.equal(boom.status, 500);
    assert.equal(boom.headers.get("content-type"), "text/plain; charset=utf-8");
    assert.match(await boom.text(), /^Internal error: .*no model\n$/);
    // a shutdown while a request is being answered: that answer is finished, then the port closes
    const held = fetch(`${base}/hold`).then(async (r) => [r.status, await r.text()]);
    for (let i = 0; i < 100 && !entered; i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(entered);
    const closed = front.close();
    setTimeout(() => release.resolve(), 200);
    assert.deepEqual(await held, [200, "held\n"]);
    await closed;
    await assert.rejects(fetch(`${base}/ready`));
  } finally {
    release.resolve();
    await front.close();
  }
});
