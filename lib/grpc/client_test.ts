import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { listenerTls, makeTestPki } from "../../tests/harness/certs.ts";
import { callUnary } from "./client.ts";
import { type GrpcCall, GrpcStatus, listenGrpc, peerUris } from "./mod.ts";

const te = new TextEncoder();

Deno.test("callUnary() makes a TLS call with a client certificate; setTls() swaps the server certificate for new connections", async () => {
  const a = await makeTestPki();
  const b = await makeTestPki();
  try {
    // No IP SAN: the call verifies the name it is given, not the address it connects to.
    const serverA = await a.issue("server", { dns: ["mesh-ca"], ips: [] });
    const serverB = await b.issue("server", { dns: ["mesh-ca"] });
    const client = await a.issue("client", { uris: ["spiffe://cluster.local/ns/n/sa/s"] });
    const read = (p: string) => Deno.readTextFileSync(p);
    const seen: string[][] = [];
    const listener = await listenGrpc({
      host: "127.0.0.1",
      port: 0,
      tls: listenerTls(a, serverA),
      handlers: new Map([["/t.S/Echo", (c: GrpcCall) => {
        seen.push(peerUris(c.socket));
        let body = Buffer.alloc(0);
        c.onMessage = (m) => (body = Buffer.from(m));
        c.onEnd = () => {
          c.send([body]).then(() => c.end(GrpcStatus.INVALID_ARGUMENT, "done: ✓"));
        };
      }]]),
    });
    try {
      const address = `127.0.0.1:${listener.port}`;
      const r = await callUnary({
        address,
        path: "/t.S/Echo",
        message: te.encode("hi"),
        ca: read(a.caCert),
        servername: "mesh-ca",
        cert: read(client.cert),
        key: read(client.key),
      });
      assert.deepEqual([r.status, r.message, new TextDecoder().decode(r.response)], [
        3,
        "done: ✓",
        "hi",
      ]);
      assert.deepEqual(seen, [["spiffe://cluster.local/ns/n/sa/s"]]);

      listener.setTls(listenerTls(b, serverB));
      const viaB = await callUnary({
        address,
        path: "/t.S/Echo",
        message: te.encode("x"),
        ca: read(b.caCert),
        servername: "mesh-ca",
      });
      assert.equal(viaB.status, 3);
      await assert.rejects(
        callUnary({
          address,
          path: "/t.S/Echo",
          message: te.encode("x"),
          ca: read(a.caCert),
          servername: "mesh-ca",
        }),
      );
    } finally {
      await listener.close(GrpcStatus.UNAVAILABLE, "bye", 500);
    }
  } finally {
    await a.remove();
    await b.remove();
  }
});

Deno.test("callUnary(): the status without grpc-status, grpc-message decoding, the first message only, headers, deadline and address", async () => {
  const pki = await makeTestPki();
  const http2 = await import("node:http2");
  try {
    const server = await pki.issue("server", { dns: ["mesh-ca"] });
    const read = (p: string) => Deno.readTextFileSync(p);
    const h2 = http2.createSecureServer({ cert: read(server.cert), key: read(server.key) });
    h2.on("stream", (stream, headers) => {
      const path = String(headers[":path"]);
      if (path === "/t.S/Hang") return; // never answers
      if (path === "/t.S/NoStatus200") {
        stream.respond({ ":status": 200, "content-type": "application/grpc" });
        stream.end();
        return;
      }
      if (path === "/t.S/NoStatus503") {
        stream.respond({ ":status": 503 });
        stream.end();
        return;
      }
      // Echoes the authorization header as two messages; a grpc-message that is not valid
      // percent-encoding.
      stream.respond({ ":status": 200, "content-type": "application/grpc" }, {
        waitForTrailers: true,
      });
      stream.on(
        "wantTrailers",
        () => stream.sendTrailers({ "grpc-status": "7", "grpc-message": "50%25 %E2%8" }),
      );
      const msg = (s: string) => {
        const b = Buffer.alloc(5 + s.length);
        b.writeUInt32BE(s.length, 1);
        b.write(s, 5);
        return b;
      };
      stream.end(Buffer.concat([msg(String(headers["authorization"])), msg("second")]));
    });
    await new Promise<void>((r) => h2.listen(0, "127.0.0.1", r));
    const address = `127.0.0.1:${(h2.address() as { port: number }).port}`;
    const call = (path: string, extra: Partial<Parameters<typeof callUnary>[0]> = {}) =>
      callUnary({
        address,
        path,
        message: te.encode("x"),
        ca: read(pki.caCert),
        servername: "mesh-ca",
        ...extra,
      });
    try {
      const r = await call("/t.S/Echo", { headers: { authorization: "Bearer t" } });
      assert.deepEqual(
        [r.status, r.message, new TextDecoder().decode(r.response)],
        [7, "50%25 %E2%8", "Bearer t"],
      );
      const n200 = await call("/t.S/NoStatus200");
      assert.deepEqual([n200.status, n200.message, n200.response], [2, "", undefined]);
      assert.equal((await call("/t.S/NoStatus503")).status, 14);
      await assert.rejects(
        call("/t.S/Hang", { timeoutMs: 200 }),
        new RegExp(`gRPC call /t.S/Hang to ${address} timed out`),
      );
      await assert.rejects(
        call("/t.S/Echo", { address: "nope" }),
        /Invalid address "nope": want host:port/,
      );
      // Malformed hosts are named, not Node's "Invalid URL".
      for (
        const [address, why] of [
          ["[::1:8443", 'unbalanced brackets in the host "\\[::1"'],
          ["[nope]:8443", '"nope" in brackets is not an IPv6 address'],
          ["::1:8443", 'an IPv6 host goes in brackets \\("\\[::1\\]:port"\\)'],
          [":8443", "the host is empty"],
          ["a b:8443", '"a b" is not a host name or IP address'],
        ]
      ) {
        await assert.rejects(
          call("/t.S/Echo", { address }),
          new RegExp(`^Error: Invalid address "${address.replace(/[[\]]/g, "\\$&")}": ${why}$`),
        );
      }
    } finally {
      await new Promise((r) => h2.close(r));
    }
  } finally {
    await pki.remove();
  }
});

Deno.test("callUnary(): an IPv6 [addr]:port address, verified against the IP SAN without a servername; an empty response message", async () => {
  const pki = await makeTestPki();
  try {
    const server = await pki.issue("server", { dns: ["mesh-ca"], ips: ["::1"] });
    const read = (p: string) => Deno.readTextFileSync(p);
    const listener = await listenGrpc({
      host: "[::1]",
      port: 0,
      tls: listenerTls(pki, server),
      handlers: new Map([["/t.S/Empty", (c: GrpcCall) => {
        c.onEnd = () => c.send([new Uint8Array(0)]).then(() => c.end(GrpcStatus.OK, ""));
      }]]),
    });
    try {
      const r = await callUnary({
        address: `[::1]:${listener.port}`,
        path: "/t.S/Empty",
        message: te.encode("x"),
        ca: read(pki.caCert),
      });
      // An empty message is a response (0 bytes), not the absence of one.
      assert.deepEqual([r.status, r.message, r.response], [0, "", new Uint8Array(0)]);
    } finally {
      await listener.close(GrpcStatus.UNAVAILABLE, "bye", 500);
    }
  } finally {
    await pki.remove();
  }
});

Deno.test("callUnary(): trailing junk after the port is refused; a refused connection rejects with its cause, not as a timeout", async () => {
  const pki = await makeTestPki();
  try {
    // A port nothing listens on.
    const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (l.addr as Deno.NetAddr).port;
    l.close();
    const call = (address: string) =>
      callUnary({
        address,
        path: "/t.S/M",
        message: te.encode("x"),
        ca: Deno.readTextFileSync(pki.caCert),
        timeoutMs: 5_000,
      });
    await assert.rejects(
      call(`127.0.0.1:${port}x`),
      new RegExp(`Invalid address "127.0.0.1:${port}x": want host:port`),
    );
    await assert.rejects(call(`127.0.0.1:${port}`), (e: Error) => {
      assert.match(e.message, /ECONNREFUSED|refused/i);
      return true;
    });
  } finally {
    await pki.remove();
  }
});

Deno.test("callUnary() offers ALPN h2 (servers such as grpc-go refuse a TLS connection without it)", async () => {
  const pki = await makeTestPki();
  try {
    const server = await pki.issue("server", { dns: ["mesh-ca"] });
    const read = (p: string) => Deno.readTextFileSync(p);
    const l = Deno.listenTls({
      hostname: "127.0.0.1",
      port: 0,
      cert: read(server.cert),
      key: read(server.key),
      alpnProtocols: ["h2"],
    });
    const negotiated = (async () => {
      const conn = await l.accept();
      try {
        return (await conn.handshake()).alpnProtocol;
      } catch (e) {
        return `handshake failed: ${(e as Error).message}`;
      } finally {
        conn.close();
      }
    })();
    try {
      // The server closes the connection after the handshake: the call fails, its ALPN is kept.
      await callUnary({
        address: `127.0.0.1:${l.addr.port}`,
        path: "/t.S/M",
        message: te.encode("x"),
        ca: read(pki.caCert),
        servername: "mesh-ca",
        timeoutMs: 5_000,
      }).catch(() => undefined);
      assert.equal(await negotiated, "h2");
    } finally {
      l.close();
    }
  } finally {
    await pki.remove();
  }
});
