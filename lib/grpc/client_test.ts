import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { makeTestPki } from "../../tests/harness/certs.ts";
import { callUnary } from "./client.ts";
import { type GrpcCall, GrpcStatus, listenGrpc, peerUris } from "./server.ts";

const te = new TextEncoder();

Deno.test("callUnary() makes a TLS call with a client certificate; setTls() swaps the server certificate for new connections", async () => {
  const a = await makeTestPki();
  const b = await makeTestPki();
  try {
    const serverA = await a.issue("server", { dns: ["mesh-ca"] });
    const serverB = await b.issue("server", { dns: ["mesh-ca"] });
    const client = await a.issue("client", { uris: ["spiffe://cluster.local/ns/n/sa/s"] });
    const read = (p: string) => Deno.readTextFileSync(p);
    const seen: string[][] = [];
    const listener = await listenGrpc({
      host: "127.0.0.1",
      port: 0,
      tls: {
        cert: te.encode(read(serverA.cert)),
        key: te.encode(read(serverA.key)),
        ca: te.encode(read(a.caCert)),
      },
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

      listener.setTls({
        cert: te.encode(read(serverB.cert)),
        key: te.encode(read(serverB.key)),
        ca: te.encode(read(b.caCert)),
      });
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
