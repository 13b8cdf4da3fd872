import assert from "node:assert/strict";
import { fdLimit } from "../../tests/harness/fd_limit.ts";
import { waitUntil } from "../../tests/harness/procs.ts";
import { serveHttp } from "./serve.ts";

/** The status line of a GET on a new connection to `port` ("refused" when it cannot connect). */
async function freshGet(port: number): Promise<string> {
  let c: Deno.TcpConn;
  try {
    c = await Deno.connect({ hostname: "127.0.0.1", port });
  } catch {
    return "refused";
  }
  try {
    await c.write(
      new TextEncoder().encode("GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"),
    );
    const buf = new Uint8Array(512);
    const n = await c.read(buf);
    return n ? new TextDecoder().decode(buf.subarray(0, n)).split("\r\n")[0] : "EOF";
  } finally {
    c.close();
  }
}

/** A server answering "ok" on a free port, retrying after `retryMs`; what it told in `told`. */
function okServer(retryMs: number) {
  const told: string[] = [];
  const server = serveHttp(
    { hostname: "127.0.0.1", port: 0, retryMs, onError: (m) => told.push(m) },
    () => new Response("ok\n"),
  );
  return { told, server, port: server.addr.port };
}

Deno.test("serveHttp(): out of file descriptors, the accept loop stops; the port is served again once they are back, and the process lives", async () => {
  const { told, server, port } = okServer(50);
  const limit = fdLimit();
  try {
    assert.equal(await freshGet(port), "HTTP/1.1 200 OK");
    const pending = [limit.socket(), limit.socket()];
    limit.exhaust();
    try {
      // the kernel completes these; Deno's accept fails with EMFILE and the server ends
      for (const fd of pending) limit.connect(fd, port);
      await waitUntil(() => told.length > 0, 10_000, "the server to stop");
      assert.match(
        told[0],
        /^HTTP server on 127\.0\.0\.1:\d+ stopped accepting \(.*Too many open files.*\); opening it again$/,
      );
      // reopening fails while no descriptor is free: it keeps trying
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(told.length, 1);
    } finally {
      limit.restore();
    }
    await waitUntil(() => told.length > 1, 10_000, "the port to be served again");
    assert.equal(told[1], `HTTP server on 127.0.0.1:${port}: serving again`);
    assert.equal(await freshGet(port), "HTTP/1.1 200 OK");
  } finally {
    limit.dispose();
    await server.shutdown();
  }
});

Deno.test("serveHttp(): shut down, it does not open the port again; a port in use is an error at once", async () => {
  const { told, server, port } = okServer(10);
  assert.throws(
    () => serveHttp({ hostname: "127.0.0.1", port }, () => new Response("")),
    Deno.errors.AddrInUse,
  );
  await server.shutdown();
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(await freshGet(port), "refused");
  assert.deepEqual(told, []);
});

Deno.test("serveHttp(): shut down while it waits to open the port again, it does not open it", async () => {
  const { told, server, port } = okServer(100);
  const limit = fdLimit();
  try {
    const pending = limit.socket();
    limit.exhaust();
    try {
      limit.connect(pending, port);
      await waitUntil(() => told.length > 0, 10_000, "the server to stop");
      await server.shutdown();
    } finally {
      limit.restore();
    }
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(told.length, 1, told.join("\n"));
    assert.equal(await freshGet(port), "refused");
  } finally {
    limit.dispose();
    await server.shutdown();
  }
});
