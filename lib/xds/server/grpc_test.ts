import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as path from "node:path";
import { LOADER_OPTIONS } from "../protos.ts";
import { ResourceCache } from "./cache.ts";
import { ADS_SERVICE, SDS_SERVICE, startAdsServer, structToJson } from "./grpc.ts";
import { Flag, frame, FrameType } from "../../grpc/h2/frames.ts";
import {
  ADS_PATH,
  discoveryRequest,
  grpcFrame,
  grpcRequest,
  RawClient,
} from "../../grpc/testing.ts";

const { END_STREAM } = Flag;
import { XdsServer } from "./stream.ts";
import { XDS_TYPES } from "./types.ts";
import { loadAdsProtos, node, parseTestNode, type TestProxy, tlsServed } from "./_test_util.ts";
import { quietLogger as quiet } from "../../log/testing.ts";

// deno-lint-ignore no-explicit-any
type AnyObj = any;

const grpc = await import("../../deps/grpc.ts");

/** The client side: ads.proto + cluster.proto, with Any values decoded (`json: true`). */
const pkg = await loadAdsProtos(LOADER_OPTIONS) as AnyObj;
const AdsClient = (grpc.loadPackageDefinition(pkg) as AnyObj).envoy.service.discovery.v3
  .AggregatedDiscoveryService;

function encodeCluster(obj: Record<string, unknown>): Uint8Array {
  return pkg["envoy.config.cluster.v3.Cluster"].serialize(obj);
}

const CDS = XDS_TYPES.cluster;

/** Polls `ok` until true or 5 s passed. */
async function until(ok: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A bidi call with a queue of received messages read with deadlines. */
function open(client: AnyObj, method: string) {
  const call = client[method]();
  const got: AnyObj[] = [];
  let status: AnyObj;
  let wake: (() => void) | undefined;
  call.on("data", (m: AnyObj) => {
    got.push(m);
    wake?.();
  });
  call.on("error", (e: AnyObj) => {
    status = e;
    wake?.();
  });
  call.on("status", (s: AnyObj) => {
    status ??= s;
    wake?.();
  });
  const waitFor = async (ok: () => boolean, what: string) => {
    const deadline = Date.now() + 5000;
    while (!ok()) {
      if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
      let timer: number | undefined;
      await new Promise<void>((r) => {
        wake = r;
        timer = setTimeout(r, 100);
      });
      clearTimeout(timer);
    }
  };
  return {
    call,
    send: (m: AnyObj) => call.write(m),
    async next(): Promise<AnyObj> {
      await waitFor(() => got.length > 0 || status !== undefined, "a response");
      if (!got.length) throw new Error(`Stream ended: ${status?.details ?? status?.message}`);
      return got.shift();
    },
    async status(): Promise<AnyObj> {
      await waitFor(() => status !== undefined, "the status");
      return status;
    },
  };
}

async function setup(tls?: AnyObj, host = "127.0.0.1") {
  const cache = new ResourceCache();
  cache.set(CDS, "c1", encodeCluster({ name: "c1", type: "EDS" }));
  const server = new XdsServer<TestProxy>({
    parseNode: parseTestNode,
    resourcesFor: (_p, t, names) => cache.select(t, names),
    debounceAfter: 0,
    controlPlaneId: "mesh-discovery",
    logger: quiet,
  });
  const ads = await startAdsServer({
    address: `${host}:0`,
    server,
    tls: tls?.server,
    logger: quiet,
  });
  // Deno's TLS refuses an IP address as SNI server name: verify the server as "localhost".
  const client = new AdsClient(
    `${host}:${ads.port}`,
    tls?.client ?? grpc.credentials.createInsecure(),
    tls ? { "grpc.ssl_target_name_override": "localhost" } : {},
  );
  return {
    cache,
    server,
    ads,
    client,
    async close() {
      client.close();
      await ads.shutdown();
      server.close();
    },
  };
}

Deno.test("startAdsServer() serves SotW ADS: Any resources decode to the cached Cluster", async () => {
  const t = await setup();
  try {
    const s = open(t.client, "StreamAggregatedResources");
    s.send({
      node: {
        ...node("a"),
        metadata: { fields: { POD_NAME: { stringValue: "a-1" }, n: { numberValue: 2 } } },
      },
      type_url: CDS,
    });
    const r1 = await s.next();
    assert.equal(r1.type_url, CDS);
    assert.deepEqual(r1.resources, [{
      "@type": CDS,
      name: "c1",
      type: "EDS",
      cluster_discovery_type: "type",
    }]);
    assert.deepEqual(r1.control_plane, { identifier: "mesh-discovery" });
    s.send({ type_url: CDS, version_info: r1.version_info, response_nonce: r1.nonce });
    await until(() => t.server.connections()[0]?.types[CDS].lastAcked !== undefined, "the ACK");
    t.cache.set(CDS, "c2", encodeCluster({ name: "c2", type: "EDS", lb_policy: "RING_HASH" }));
    t.server.push({ kind: "config", types: [CDS] });
    await t.server.flush();
    const r2 = await s.next();
    assert.deepEqual(r2.resources.map((r: AnyObj) => r.name).sort(), ["c1", "c2"]);
    const [c] = t.server.connections();
    assert.equal(c.types[CDS].lastAcked?.version, r1.version_info);
    assert.deepEqual(c.node.metadata, { POD_NAME: "a-1", n: 2 });
    assert.match(c.peer, /127\.0\.0\.1/);
    s.call.end();
    assert.equal((await s.status()).code, grpc.status.OK);
  } finally {
    await t.close();
  }
});

Deno.test("startAdsServer() serves delta ADS with per-resource versions and removals", async () => {
  const t = await setup();
  try {
    const s = open(t.client, "DeltaAggregatedResources");
    s.send({ node: node("a"), type_url: CDS });
    const d1 = await s.next();
    assert.equal(d1.resources.length, 1);
    assert.equal(d1.resources[0].name, "c1");
    assert.equal(d1.resources[0].version, t.cache.get(CDS, "c1")!.version);
    assert.deepEqual(d1.resources[0].resource, {
      "@type": CDS,
      name: "c1",
      type: "EDS",
      cluster_discovery_type: "type",
    });
    s.send({ type_url: CDS, response_nonce: d1.nonce });
    await until(() => t.server.connections()[0]?.types[CDS].lastAcked !== undefined, "the ACK");
    t.cache.delete(CDS, "c1");
    t.server.push({ kind: "full" });
    await t.server.flush();
    const d2 = await s.next();
    assert.deepEqual(d2.removed_resources, ["c1"]);
    assert.equal(d2.resources ?? undefined, undefined);
    s.call.cancel();
  } finally {
    await t.close();
  }
});

Deno.test("startAdsServer() ends a stream with INVALID_ARGUMENT for a bad node id", async () => {
  const t = await setup();
  try {
    const s = open(t.client, "StreamAggregatedResources");
    s.send({ node: { id: "x" }, type_url: CDS });
    const st = await s.status();
    assert.equal(st.code, grpc.status.INVALID_ARGUMENT);
    assert.equal(st.details, 'Invalid node id "x": missing parts in the service node "x"');
  } finally {
    await t.close();
  }
});

Deno.test("startAdsServer() rejects a malformed address", async () => {
  const server = new XdsServer({ parseNode: (n) => n.id, resourcesFor: () => new Map() });
  await assert.rejects(
    startAdsServer({ address: "nope", server }),
    /Invalid address "nope": expected host:port/,
  );
  server.close();
});

async function makeCerts(dir: string): Promise<Record<string, string>> {
  const run = async (...args: string[]) => {
    const out = await new Deno.Command("openssl", {
      args,
      cwd: dir,
      stdout: "null",
      stderr: "piped",
    })
      .output();
    if (!out.success) {
      throw new Error(`openssl ${args[0]}: ${new TextDecoder().decode(out.stderr)}`);
    }
  };
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await run(
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-subj",
    "/CN=test-ca",
    "-days",
    "1",
  );
  for (
    const [name, san] of [["server", "IP:127.0.0.1,DNS:localhost"], [
      "client",
      "URI:spiffe://cluster.local/ns/default/sa/test",
    ]]
  ) {
    await Deno.writeTextFile(path.join(dir, `${name}.ext`), `subjectAltName=${san}\n`);
    await run(
      "req",
      ...ec,
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.csr`,
      "-subj",
      `/CN=${name}`,
    );
    await run(
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      `${name}.crt`,
      "-days",
      "1",
      "-extfile",
      `${name}.ext`,
    );
  }
  const out: Record<string, string> = {};
  for (const f of ["ca.crt", "server.crt", "server.key", "client.crt", "client.key"]) {
    out[f] = await Deno.readTextFile(path.join(dir, f));
  }
  return out;
}

Deno.test("startAdsServer() serves ADS over TLS and reports the verified client identity", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ads-tls-" });
  try {
    const c = await makeCerts(dir);
    const enc = (s: string) => Buffer.from(s);
    for (const requireClientCert of [false, true]) {
      const t = await setup({
        server: {
          certChain: c["server.crt"],
          key: enc(c["server.key"]),
          root: c["ca.crt"],
          requireClientCert,
        },
        client: requireClientCert
          ? grpc.credentials.createSsl(enc(c["ca.crt"]), enc(c["client.key"]), enc(c["client.crt"]))
          : grpc.credentials.createSsl(enc(c["ca.crt"])),
      });
      try {
        const s = open(t.client, "StreamAggregatedResources");
        s.send({ node: node("a"), type_url: CDS });
        const r = await s.next();
        assert.deepEqual(r.resources, [{
          "@type": CDS,
          name: "c1",
          type: "EDS",
          cluster_discovery_type: "type",
        }]);
        assert.deepEqual(
          t.server.connections()[0].peerIdentities,
          requireClientCert ? ["spiffe://cluster.local/ns/default/sa/test"] : [],
        );
        s.call.cancel();
      } finally {
        await t.close();
      }
    }
    // A client without a certificate is refused when one is required. (A raw TLS connection: a
    // grpc-js client would leave its reconnect-backoff timer running after close().)
    const t = await setup({
      server: {
        certChain: c["server.crt"],
        key: c["server.key"],
        root: c["ca.crt"],
        requireClientCert: true,
      },
      client: grpc.credentials.createSsl(enc(c["ca.crt"])),
    });
    try {
      assert.equal(await tlsServed(t.ads.port, { ca: c["ca.crt"] }), false);
    } finally {
      await t.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("startAdsServer() with an optional client certificate verifies one that is presented", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ads-tls-opt-" });
  const other = await Deno.makeTempDir({ prefix: "ads-tls-other-" });
  try {
    const c = await makeCerts(dir);
    const o = await makeCerts(other);
    const enc = (s: string) => Buffer.from(s);
    // A valid certificate: served, and its identity is known.
    const t = await setup({
      server: { certChain: c["server.crt"], key: c["server.key"], root: c["ca.crt"] },
      client: grpc.credentials.createSsl(
        enc(c["ca.crt"]),
        enc(c["client.key"]),
        enc(c["client.crt"]),
      ),
    });
    try {
      const s = open(t.client, "StreamAggregatedResources");
      s.send({ node: node("a"), type_url: CDS });
      await s.next();
      assert.deepEqual(t.server.connections()[0].peerIdentities, [
        "spiffe://cluster.local/ns/default/sa/test",
      ]);
      s.call.cancel();
      // A certificate signed by another CA: the connection is refused.
      assert.equal(
        await tlsServed(t.ads.port, {
          ca: c["ca.crt"],
          cert: o["client.crt"],
          key: o["client.key"],
        }),
        false,
        "a client certificate from another CA was accepted",
      );
    } finally {
      await t.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(other, { recursive: true });
  }
});

Deno.test("startAdsServer() rejects TLS material that is not PEM", async () => {
  const server = new XdsServer({ parseNode: (n) => n.id, resourcesFor: () => new Map() });
  await assert.rejects(
    startAdsServer({
      address: "127.0.0.1:0",
      server,
      tls: { certChain: "x", key: "y", root: "z" },
    }),
    /Invalid tls.root: not PEM/,
  );
  server.close();
});

Deno.test("structToJson() converts every Struct value kind, in proto-loader's and protobufjs's spellings", () => {
  const snake = {
    fields: {
      s: { kind: "string_value", string_value: "x" },
      n: { kind: "number_value", number_value: 2.5 },
      b: { kind: "bool_value", bool_value: false },
      z: { kind: "null_value", null_value: "NULL_VALUE" },
      o: { kind: "struct_value", struct_value: { fields: { k: { string_value: "v" } } } },
      l: {
        kind: "list_value",
        list_value: { values: [{ number_value: 1 }, { list_value: {} }, null] },
      },
      u: { kind: "something_new" },
    },
  };
  const want = { s: "x", n: 2.5, b: false, z: null, o: { k: "v" }, l: [1, [], null], u: null };
  assert.deepEqual(structToJson(snake), want);
  const camel = {
    fields: {
      s: { stringValue: "x" },
      n: { numberValue: 2.5 },
      b: { boolValue: false },
      z: { nullValue: 0 },
      o: { structValue: { fields: { k: { stringValue: "v" } } } },
      l: { listValue: { values: [{ numberValue: 1 }, { listValue: {} }, null] } },
      u: {},
    },
  };
  assert.deepEqual(structToJson(camel), want);
  assert.deepEqual(structToJson(undefined), {});
  assert.deepEqual(structToJson({}), {});
});

Deno.test("startAdsServer(): a client half-close ends the stream OK and a cancel forgets it; shutdown ends the rest UNAVAILABLE", async () => {
  const t = await setup();
  try {
    const a = open(t.client, "StreamAggregatedResources");
    a.send({ node: node("a"), type_url: CDS });
    await a.next();
    const b = open(t.client, "DeltaAggregatedResources");
    b.send({ node: node("b"), type_url: CDS });
    await b.next();
    const c = open(t.client, "StreamAggregatedResources");
    c.send({ node: node("c"), type_url: CDS });
    await c.next();
    assert.equal(t.server.connectionCount, 3);
    a.call.end();
    assert.deepEqual([(await a.status()).code, (await a.status()).details], [grpc.status.OK, ""]);
    b.call.cancel();
    await until(() => t.server.connectionCount === 1, "the ended and cancelled streams forgotten");
    assert.deepEqual(t.server.connections().map((x) => x.nodeId), [node("c").id]);
    const first = t.ads.shutdown();
    assert.equal(t.ads.shutdown(), first, "shutdown() is idempotent");
    await first;
    const st = await c.status();
    assert.deepEqual([st.code, st.details], [grpc.status.UNAVAILABLE, "Server is shutting down"]);
    assert.equal(t.server.connectionCount, 0);
  } finally {
    await t.close();
  }
});

Deno.test("startAdsServer(): a stream the client resets (RST_STREAM CANCEL, no half-close) is forgotten, and its connection goes on serving", async () => {
  const t = await setup();
  const c = await RawClient.connect(t.ads.port);
  const request = (id: number, who: string) =>
    c.write(
      c.headersFrame(id, grpcRequest(ADS_PATH)),
      frame(FrameType.DATA, 0, id, grpcFrame(discoveryRequest(node(who).id))),
    );
  try {
    await request(1, "a");
    assert.ok(await c.until(() => c.dataOn(1) > 0), "no response on stream 1");
    assert.equal(t.server.connectionCount, 1);
    const cancel = Buffer.alloc(4);
    cancel.writeUInt32BE(8); // CANCEL
    await c.send(FrameType.RST_STREAM, 0, 1, cancel);
    await until(() => t.server.connectionCount === 0, "the reset stream forgotten");
    await request(3, "b");
    assert.ok(await c.until(() => c.dataOn(3) > 0), "no response on stream 3");
    assert.deepEqual(t.server.connections().map((x) => x.nodeId), [node("b").id]);
  } finally {
    await c.close();
    await t.close();
  }
});

Deno.test("startAdsServer(): a request that cannot be decoded ends the stream with INVALID_ARGUMENT", async () => {
  const t = await setup();
  const c = await RawClient.connect(t.ads.port);
  try {
    const path = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources";
    // Field 2 (node) whose length runs past the message: neither decoder can read it.
    await c.write(
      c.headersFrame(1, grpcRequest(path)),
      frame(FrameType.DATA, 0, 1, grpcFrame(new Uint8Array([0x12, 0x7f, 0x0a]))),
    );
    assert.ok(await c.until(() => (c.headers.get(1)?.length ?? 0) >= 1), "no answer");
    const h = new Map(c.headers.get(1)!.flat());
    assert.equal(h.get("grpc-status"), String(grpc.status.INVALID_ARGUMENT));
    assert.match(decodeURIComponent(h.get("grpc-message") ?? ""), /^Cannot decode the request: /);
    assert.equal(t.server.connectionCount, 0);
  } finally {
    await c.close();
    await t.close();
  }
});

Deno.test("startAdsServer(): SDS_SERVICE serves StreamSecrets and DeltaSecrets; ADS only when listed", async () => {
  const cache = new ResourceCache();
  cache.set(XDS_TYPES.secret, "default", new Uint8Array());
  const server = new XdsServer<TestProxy>({
    parseNode: parseTestNode,
    resourcesFor: (_p, t, names) => cache.select(t, names),
    debounceAfter: 0,
    logger: quiet,
  });
  const ads = await startAdsServer({
    address: "127.0.0.1:0",
    server,
    services: [SDS_SERVICE],
    logger: quiet,
  });
  const c = await RawClient.connect(ads.port);
  try {
    const req = encodeFirstRequest(XDS_TYPES.secret, "default");
    for (const [id, method] of [[1, "StreamSecrets"], [3, "DeltaSecrets"]] as const) {
      const path = `/${SDS_SERVICE}/${method}`;
      await c.write(c.headersFrame(id, grpcRequest(path)));
      await c.write(frame(FrameType.DATA, 0, id, grpcFrame(req[method])));
    }
    assert.ok(await c.until(() => c.dataOn(1) > 0 && c.dataOn(3) > 0), "SDS answers both");
    await c.write(
      c.headersFrame(5, grpcRequest(`/${ADS_SERVICE}/StreamAggregatedResources`), END_STREAM),
    );
    assert.ok(await c.until(() => (c.headers.get(5)?.length ?? 0) >= 1));
    const st = c.headers.get(5)![0].find(([k]) => k === "grpc-status")?.[1];
    assert.equal(st, String(grpc.status.UNIMPLEMENTED));
    assert.deepEqual(server.connections().map((x) => x.mode).sort(), ["delta", "sotw"]);
  } finally {
    await c.close();
    await ads.shutdown();
    server.close();
  }
});

/** A first SotW and delta request for one name (with a node), encoded by proto-loader. */
function encodeFirstRequest(typeUrl: string, name: string): Record<string, Uint8Array> {
  const n = node("s");
  return {
    StreamSecrets: pkg["envoy.service.discovery.v3.DiscoveryRequest"].serialize({
      node: n,
      type_url: typeUrl,
      resource_names: [name],
    }),
    DeltaSecrets: pkg["envoy.service.discovery.v3.DeltaDiscoveryRequest"].serialize({
      node: n,
      type_url: typeUrl,
      resource_names_subscribe: [name],
    }),
  };
}

Deno.test("startAdsServer(): a port over 65535 is refused; setTls() on a plaintext listener throws", async () => {
  const server = new XdsServer({ parseNode: (n) => n.id, resourcesFor: () => new Map() });
  await assert.rejects(
    startAdsServer({ address: "127.0.0.1:65536", server, logger: quiet }),
    /Invalid address "127.0.0.1:65536": port 65536 is out of range/,
  );
  for (const bad of ["a:b:1", "127.0.0.1:1x", " 127.0.0.1:1"]) {
    await assert.rejects(
      startAdsServer({ address: bad, server, logger: quiet }),
      new RegExp(`Invalid address "${bad}": expected host:port`),
      bad,
    );
  }
  assert.equal(SDS_SERVICE, "envoy.service.secret.v3.SecretDiscoveryService");
  assert.equal(ADS_SERVICE, "envoy.service.discovery.v3.AggregatedDiscoveryService");
  const ads = await startAdsServer({ address: "127.0.0.1:0", server, logger: quiet });
  try {
    assert.throws(
      () => ads.setTls({ certChain: "", key: "", root: "" }),
      /setTls\(\) on a plaintext ADS listener/,
    );
    assert.equal(ads.accepting, true);
    assert.equal(ads.refused, 0);
    assert.equal(ads.throttled, 0);
    assert.equal(ads.shed, 0);
  } finally {
    await ads.shutdown();
    server.close();
  }
});

Deno.test("startAdsServer() listens on a unix: socket", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ads-unix-" });
  const cache = new ResourceCache();
  cache.set(CDS, "c1", encodeCluster({ name: "c1", type: "EDS" }));
  const server = new XdsServer<TestProxy>({
    parseNode: parseTestNode,
    resourcesFor: (_p, t, names) => cache.select(t, names),
    debounceAfter: 0,
    logger: quiet,
  });
  const ads = await startAdsServer({ address: `unix:${dir}/ads.sock`, server, logger: quiet });
  const client = new AdsClient(`unix://${dir}/ads.sock`, grpc.credentials.createInsecure());
  try {
    const s = open(client, "StreamAggregatedResources");
    s.send({ node: node("a"), type_url: CDS });
    assert.deepEqual((await s.next()).resources.map((r: AnyObj) => r.name), ["c1"]);
    s.call.cancel();
  } finally {
    client.close();
    await ads.shutdown();
    server.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("startAdsServer() listens on an IPv6 [::1]:port address", async () => {
  const t = await setup(undefined, "[::1]");
  try {
    const s = open(t.client, "StreamAggregatedResources");
    s.send({ node: node("a"), type_url: CDS });
    assert.deepEqual((await s.next()).resources.map((r: AnyObj) => r.name), ["c1"]);
    s.call.cancel();
  } finally {
    await t.close();
  }
});

Deno.test('startAdsServer(): a port already taken (65535 here) fails with "Cannot listen on <address>"', async () => {
  const server = new XdsServer({ parseNode: (n) => n.id, resourcesFor: () => new Map() });
  let holder: Deno.Listener | undefined;
  try {
    holder = Deno.listen({ hostname: "127.0.0.1", port: 65535 });
  } catch {
    // Already taken by another process: taken all the same.
  }
  try {
    await assert.rejects(
      startAdsServer({ address: "127.0.0.1:65535", server, logger: quiet }),
      (e: Error) => {
        assert.match(e.message, /^Cannot listen on 127\.0\.0\.1:65535: .*(EADDRINUSE|in use)/i);
        return true;
      },
    );
  } finally {
    holder?.close();
    server.close();
  }
});

Deno.test('startAdsServer() TLS: the "not PEM" errors name the field; setTls() checks its PEM, keeps the old certificate on error and swaps it for new connections', async () => {
  const dir = await Deno.makeTempDir({ prefix: "ads-tls-set-" });
  const other = await Deno.makeTempDir({ prefix: "ads-tls-set-other-" });
  try {
    const c = await makeCerts(dir);
    const o = await makeCerts(other);
    const xs = new XdsServer({ parseNode: (n) => n.id, resourcesFor: () => new Map() });
    const notPem = (field: string) =>
      new RegExp(`^Error: Invalid tls\\.${field}: not PEM \\(no "-----BEGIN" line\\)$`);
    const good = { certChain: c["server.crt"], key: c["server.key"], root: c["ca.crt"] };
    for (const field of ["certChain", "key", "root"] as const) {
      await assert.rejects(
        startAdsServer({
          address: "127.0.0.1:0",
          server: xs,
          logger: quiet,
          tls: { ...good, [field]: "x" },
        }),
        (e: Error) => {
          assert.match(String(e), notPem(field));
          return true;
        },
      );
    }
    xs.close();
    // No requireClientCert: a client without a certificate is served.
    const t = await setup({ server: good, client: grpc.credentials.createInsecure() });
    try {
      assert.equal(await tlsServed(t.ads.port, { ca: c["ca.crt"] }), true);
      const next = { certChain: o["server.crt"], key: o["server.key"], root: o["ca.crt"] };
      for (const field of ["certChain", "key", "root"] as const) {
        assert.throws(() => t.ads.setTls({ ...next, [field]: "x" }), (e: Error) => {
          assert.match(String(e), notPem(field));
          return true;
        });
      }
      // A refused setTls() changed nothing.
      assert.equal(await tlsServed(t.ads.port, { ca: c["ca.crt"] }), true);
      assert.equal(await tlsServed(t.ads.port, { ca: o["ca.crt"] }), false);
      t.ads.setTls(next);
      assert.equal(await tlsServed(t.ads.port, { ca: o["ca.crt"] }), true);
      assert.equal(await tlsServed(t.ads.port, { ca: c["ca.crt"] }), false);
      // The new root verifies client certificates: one from the old CA is refused.
      assert.equal(
        await tlsServed(t.ads.port, {
          ca: o["ca.crt"],
          cert: c["client.crt"],
          key: c["client.key"],
        }),
        false,
      );
      assert.equal(
        await tlsServed(t.ads.port, {
          ca: o["ca.crt"],
          cert: o["client.crt"],
          key: o["client.key"],
        }),
        true,
      );
    } finally {
      await t.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(other, { recursive: true });
  }
});
