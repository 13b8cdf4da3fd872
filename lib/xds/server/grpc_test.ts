import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as path from "node:path";
import { xdsIncludeDirs, xdsProtoRoot } from "../protos.ts";
import { ResourceCache } from "./cache.ts";
import { startAdsServer } from "./grpc.ts";
import { XdsServer } from "./stream.ts";
import { XDS_TYPES } from "./types.ts";
import { node, parseTestNode, type TestProxy, tlsServed } from "./_test_util.ts";

// deno-lint-ignore no-explicit-any
type AnyObj = any;

const grpc = await import("../../deps/grpc.ts");
const loader = await import("../../deps/proto_loader.ts");

/** The client side: ads.proto + cluster.proto, with Any values decoded (`json: true`). */
const pkg = (() => {
  const root = xdsProtoRoot();
  return loader.loadSync(
    ["envoy/service/discovery/v3/ads.proto", "envoy/config/cluster/v3/cluster.proto"].map((f) =>
      path.join(root, "envoy-api", f)
    ),
    {
      keepCase: true,
      longs: String,
      enums: String,
      defaults: false,
      oneofs: true,
      json: true,
      includeDirs: xdsIncludeDirs(),
    },
  ) as AnyObj;
})();
const AdsClient = (grpc.loadPackageDefinition(pkg) as AnyObj).envoy.service.discovery.v3
  .AggregatedDiscoveryService;

function encodeCluster(obj: Record<string, unknown>): Uint8Array {
  return pkg["envoy.config.cluster.v3.Cluster"].serialize(obj);
}

const CDS = XDS_TYPES.cluster;
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

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

async function setup(tls?: AnyObj) {
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
    address: "127.0.0.1:0",
    server,
    tls: tls?.server,
    logger: quiet,
  });
  // Deno's TLS refuses an IP address as SNI server name: verify the server as "localhost".
  const client = new AdsClient(
    `127.0.0.1:${ads.port}`,
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
