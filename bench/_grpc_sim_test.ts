import assert from "node:assert/strict";
import { ADS_PATH, GRPC_JS_AGENT, GrpcSim, type ProxylessWorkload } from "./_grpc_sim.ts";
import { TYPE, type TypeName } from "./_ads_sim.ts";
import type { LeanHandlers } from "./_h2_lean.ts";
import { MessageBuilder, Reader } from "../lib/protowire/mod.ts";

const TYPE_OF = Object.fromEntries(Object.entries(TYPE).map(([k, v]) => [v, k as TypeName]));

/** A decoded DiscoveryRequest, as much as the test checks. */
interface Req {
  type: TypeName;
  names: string[];
  version: string;
  nonce: string;
  node?: { id: string; cluster: string; metadata: Record<string, string>; agent: string };
}

function readStruct(b: Uint8Array): Record<string, string> {
  const out: Record<string, string> = {};
  const r = new Reader(b);
  while (r.pos < r.end) {
    const tag = r.uint32();
    if (tag !== 0x0a) {
      r.skip(tag & 7);
      continue;
    }
    const e = r.sub();
    let k = "", v = "";
    while (e.pos < e.end) {
      const t = e.uint32();
      if (t === 0x0a) k = e.string();
      else if (t === 0x12) {
        const val = e.sub();
        while (val.pos < val.end) {
          const vt = val.uint32();
          if (vt === 0x1a) v = val.string();
          else val.skip(vt & 7);
        }
      } else e.skip(t & 7);
    }
    out[k] = v;
  }
  return out;
}

function readRequest(framed: Uint8Array): Req {
  const msg = framed.subarray(5);
  assert.equal(new DataView(framed.buffer, framed.byteOffset).getUint32(1), msg.length);
  const req: Req = { type: "lds", names: [], version: "", nonce: "" };
  const r = new Reader(msg);
  while (r.pos < r.end) {
    const tag = r.uint32();
    const no = tag >>> 3;
    if (no === 1) req.version = r.string();
    else if (no === 3) req.names.push(r.string());
    else if (no === 4) req.type = TYPE_OF[r.string()];
    else if (no === 5) req.nonce = r.string();
    else if (no === 2) {
      const n = r.sub();
      const node = { id: "", cluster: "", metadata: {}, agent: "" };
      while (n.pos < n.end) {
        const t = n.uint32();
        if (t >>> 3 === 1) node.id = n.string();
        else if (t >>> 3 === 2) node.cluster = n.string();
        else if (t >>> 3 === 3) node.metadata = readStruct(n.bytes());
        else if (t >>> 3 === 6) node.agent = n.string();
        else n.skip(t & 7);
      }
      req.node = node;
    } else r.skip(tag & 7);
  }
  return req;
}

/** A SotW DiscoveryResponse (unframed) with `resources` (encoded messages) of `type`. */
function response(type: TypeName, version: string, nonce: string, resources: Uint8Array[]) {
  const b = new MessageBuilder().string(1, version);
  for (const res of resources) {
    b.message(2, new MessageBuilder().string(1, TYPE[type]).message(2, res).finish());
  }
  return b.string(4, TYPE[type]).string(5, nonce).finish();
}

const msg = (f: (b: MessageBuilder) => MessageBuilder) => f(new MessageBuilder()).finish();
const any = (value: Uint8Array) =>
  msg((b) => b.string(1, "type.googleapis.com/x").message(2, value));

/** Listener `name` whose api listener's HCM uses RDS `route`. */
function apiListener(name: string, route: string) {
  const hcm = msg((b) => b.message(3, msg((r) => r.string(2, route))));
  return msg((b) => b.string(1, name).message(19, msg((a) => a.message(1, any(hcm)))));
}
/** A server Listener: one chain, HCM with an inline route configuration. */
function serverListener(name: string) {
  const hcm = msg((b) => b.message(4, msg((rc) => rc.string(1, "inbound"))));
  const filter = msg((f) => f.string(1, "hcm").message(4, any(hcm)));
  return msg((b) => b.string(1, name).message(3, msg((c) => c.message(3, filter))));
}
/** RouteConfiguration: one route to `cluster`, one weighted between `w1` and `w2`. */
function routes(name: string, cluster: string, w1: string, w2: string) {
  const action = (a: Uint8Array) => msg((r) => r.message(2, a));
  const weighted = msg((w) =>
    w.message(1, msg((c) => c.string(1, w1))).message(1, msg((c) => c.string(1, w2)))
  );
  const vh = msg((v) =>
    v.string(1, "vh").message(3, action(msg((a) => a.string(1, cluster)))).message(
      3,
      action(msg((a) => a.message(3, weighted))),
    )
  );
  return msg((b) => b.string(1, name).message(2, vh));
}
/** An EDS Cluster (service name `service`, or none) or, without `eds`, a non-EDS one. */
function cluster(name: string, eds: boolean, service = "") {
  return msg((b) => {
    b.string(1, name);
    if (eds) b.message(3, msg((e) => e.string(2, service)));
    return b;
  });
}
const cla = (name: string) => msg((b) => b.string(1, name));

Deno.test("GrpcSim subscribes LDS by name, then RDS, CDS and EDS for what it resolves, ACKing each response", () => {
  const writes: Uint8Array[] = [];
  let handlers: LeanHandlers | undefined;
  let path = "";
  const session = {
    request(p: string, h: LeanHandlers) {
      path = p;
      handlers = h;
      return { write: (b: Uint8Array) => writes.push(b), close() {} };
    },
  };
  const workload: ProxylessWorkload = {
    ip: "10.1.2.3",
    pod: "web-0",
    namespace: "shop",
    serverPorts: [8080],
    targets: ["a.shop.svc.cluster.local:8080", "b.shop.svc.cluster.local:8080"],
  };
  let clock = 100;
  const seen: TypeName[] = [];
  const sim = new GrpcSim({
    session,
    workload,
    onResponse: (_p, r) => seen.push(r.type),
    now: () => clock,
  });
  assert.equal(path, ADS_PATH);
  assert.ok(handlers);
  const next = () => writes.splice(0).map(readRequest);
  const server = "grpc/server?xds.resource.listening_address=10.1.2.3:8080";

  // 1. one LDS request: the server listener, then the channels' api listeners; node only here
  const [first, ...none] = next();
  assert.deepEqual(none, []);
  assert.deepEqual(first.node, {
    id: "sidecar~10.1.2.3~web-0.shop~shop.svc.cluster.local",
    cluster: "mesh-proxy",
    metadata: { NAMESPACE: "shop", GENERATOR: "grpc" },
    agent: GRPC_JS_AGENT.name,
  });
  assert.deepEqual({ ...first, node: undefined }, {
    type: "lds",
    names: [server, ...workload.targets],
    version: "",
    nonce: "",
    node: undefined,
  });

  // 2. LDS → ACK, RDS for the api listeners' route names (the server listener has inline routes)
  sim.onMessage(response("lds", "v1", "n1", [
    serverListener(server),
    apiListener(workload.targets[0], "route-a"),
    apiListener(workload.targets[1], "route-b"),
  ]));
  assert.deepEqual(next(), [
    { type: "lds", names: [server, ...workload.targets], version: "v1", nonce: "n1" },
    { type: "rds", names: ["route-a", "route-b"], version: "", nonce: "" },
  ]);
  assert.equal(sim.ready, false);

  // 3. RDS (one of the two so far) → ACK, CDS for its clusters, plain and weighted
  sim.onMessage(response("rds", "v2", "n2", [routes("route-a", "c1", "c2", "c3")]));
  assert.deepEqual(next(), [
    { type: "rds", names: ["route-a", "route-b"], version: "v2", nonce: "n2" },
    { type: "cds", names: ["c1", "c2", "c3"], version: "", nonce: "" },
  ]);
  sim.onMessage(response("rds", "v3", "n3", [routes("route-b", "c1", "c4", "c4")]));
  assert.deepEqual(next(), [
    { type: "rds", names: ["route-a", "route-b"], version: "v3", nonce: "n3" },
    { type: "cds", names: ["c1", "c2", "c3", "c4"], version: "", nonce: "" },
  ]);

  // 4. CDS → ACK, EDS for the EDS clusters' service names (the cluster's own when empty)
  sim.onMessage(response("cds", "v4", "n4", [
    cluster("c1", true, "eds-c1"),
    cluster("c2", true),
    cluster("c3", false),
    cluster("c4", true, "eds-c4"),
  ]));
  assert.deepEqual(next(), [
    { type: "cds", names: ["c1", "c2", "c3", "c4"], version: "v4", nonce: "n4" },
    { type: "eds", names: ["eds-c1", "c2", "eds-c4"], version: "", nonce: "" },
  ]);
  assert.equal(sim.ready, false);

  // 5. EDS → ACK; every name of every type arrived: ready
  clock = 142;
  sim.onMessage(response("eds", "v5", "n5", [cla("eds-c1"), cla("c2"), cla("eds-c4")]));
  assert.deepEqual(next(), [
    { type: "eds", names: ["eds-c1", "c2", "eds-c4"], version: "v5", nonce: "n5" },
  ]);
  assert.equal(sim.ready, true);
  assert.equal(sim.readyMs, 42);
  assert.equal(sim.watches("eds", "c2"), true);
  assert.equal(sim.watches("eds", "c3"), false);

  // 6. a route edit dropping a cluster: RDS ACK, then CDS and EDS without it (old version/nonce)
  sim.onMessage(response("rds", "v6", "n6", [routes("route-b", "c4", "c4", "c4")]));
  assert.deepEqual(next(), [
    { type: "rds", names: ["route-a", "route-b"], version: "v6", nonce: "n6" },
  ]);
  sim.onMessage(response("rds", "v7", "n7", [routes("route-a", "c2", "c2", "c2")]));
  assert.deepEqual(next(), [
    { type: "rds", names: ["route-a", "route-b"], version: "v7", nonce: "n7" },
    { type: "cds", names: ["c2", "c4"], version: "v4", nonce: "n4" },
    { type: "eds", names: ["c2", "eds-c4"], version: "v5", nonce: "n5" },
  ]);
  assert.deepEqual(seen, ["lds", "rds", "rds", "cds", "eds", "rds", "rds"]);
  // ignore unknown type URLs without answering
  sim.onMessage(
    new MessageBuilder().string(4, "type.googleapis.com/other").string(5, "x").finish(),
  );
  assert.deepEqual(next(), []);
});
