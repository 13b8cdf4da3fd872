import assert from "node:assert/strict";
import { decodeAny, encodeAny, loadXdsProtos, TYPE_URLS } from "./mod.ts";
import { ProtoJson } from "./json.ts";

const GOLDEN = new URL("./testdata/", import.meta.url);

const KINDS = {
  listeners: TYPE_URLS.listener,
  routes: TYPE_URLS.route,
  clusters: TYPE_URLS.cluster,
  endpoints: TYPE_URLS.endpoint,
} as const;

async function printer(): Promise<ProtoJson> {
  return new ProtoJson(await loadXdsProtos());
}

const name = (typeUrl: string) => typeUrl.slice(typeUrl.lastIndexOf("/") + 1);

/** Every resource of every golden file under lib/xds/testdata, with its type URL. */
async function goldenResources(): Promise<{ where: string; typeUrl: string; obj: unknown }[]> {
  const out: { where: string; typeUrl: string; obj: unknown }[] = [];
  for await (const e of Deno.readDir(GOLDEN)) {
    if (!e.name.endsWith(".json")) continue;
    const snap = JSON.parse(await Deno.readTextFile(new URL(e.name, GOLDEN)));
    for (const [kind, typeUrl] of Object.entries(KINDS)) {
      (snap[kind] as unknown[] ?? []).forEach((obj, i) =>
        out.push({ where: `${e.name} ${kind}[${i}]`, typeUrl, obj })
      );
    }
  }
  return out;
}

/** A decoded object without proto3 default scalars (0, "", false, first enum values named). */
function dropDefaults(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(dropDefaults);
  if (!v || typeof v !== "object" || v instanceof Uint8Array) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (x === 0 || x === "0" || x === false || x === "" || ZERO_ENUMS.has(x as string)) continue;
    out[k] = dropDefaults(x);
  }
  return out;
}
const ZERO_ENUMS = new Set([
  "AUTO",
  "ROUND_ROBIN",
  "STATIC",
  "DEFAULT",
  "V4_ONLY",
  "ALLOW",
  "HUNDRED",
]);

/** proto-loader's oneof markers: a string property naming a sibling property. */
function markers(v: unknown, path = "$"): string[] {
  if (!v || typeof v !== "object") return [];
  if (Array.isArray(v)) return v.flatMap((x, i) => markers(x, `${path}[${i}]`));
  const o = v as Record<string, unknown>;
  const found: string[] = [];
  for (const [k, x] of Object.entries(o)) {
    if (typeof x === "string" && x !== k && Object.hasOwn(o, x)) found.push(`${path}.${k}=${x}`);
    found.push(...markers(x, `${path}.${k}`));
  }
  return found;
}

/** Objects whose only property is `value` (an unprinted wrapper). */
function wrappers(v: unknown, path = "$"): string[] {
  if (!v || typeof v !== "object") return [];
  if (Array.isArray(v)) return v.flatMap((x, i) => wrappers(x, `${path}[${i}]`));
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  const here = keys.length === 1 && keys[0] === "value" && !Object.hasOwn(o, "@type") ? [path] : [];
  return [...here, ...keys.flatMap((k) => wrappers(o[k], `${path}.${k}`))];
}

Deno.test("ProtoJson.message() prints every golden resource as proto3 JSON that parses back to the same message", async () => {
  const pj = await printer();
  const resources = await goldenResources();
  assert.ok(resources.length > 50, `found only ${resources.length} golden resources`);
  for (const { where, typeUrl, obj } of resources) {
    const decoded = decodeAny(encodeAny(typeUrl, obj));
    const json = pj.message(name(typeUrl), decoded);
    assert.deepEqual(markers(json), [], `${where}: oneof markers printed`);
    assert.deepEqual(wrappers(json), [], `${where}: wrappers printed as {"value": ...}`);
    assert.deepEqual(JSON.parse(JSON.stringify(json)), json, `${where}: not plain JSON`);
    // The generators' own objects print the same as the decoded ones.
    assert.deepEqual(pj.message(name(typeUrl), obj), json, `${where}: object form differs`);
    // Back through protobufjs fromObject: the same message (explicit defaults aside).
    const back = pj.parse(name(typeUrl), JSON.parse(JSON.stringify(json)));
    const again = decodeAny(encodeAny(typeUrl, back));
    assert.deepEqual(pj.message(name(typeUrl), again), json, `${where}: round trip`);
    assert.deepEqual(dropDefaults(again), dropDefaults(decoded), `${where}: round trip`);
  }
});

Deno.test("ProtoJson.message() unwraps wrappers, prints durations and drops oneof markers in a Cluster", async () => {
  const pj = await printer();
  const cluster = {
    name: "outbound|80||hello",
    type: "STATIC",
    lb_policy: "ROUND_ROBIN",
    connect_timeout: { seconds: 1, nanos: 500_000_000 },
    circuit_breakers: { thresholds: [{ max_requests: { value: 1000 }, priority: "HIGH" }] },
    load_assignment: {
      cluster_name: "x",
      endpoints: [{
        lb_endpoints: [{
          endpoint: { address: { socket_address: { address: "10.0.0.1", port_value: 80 } } },
          load_balancing_weight: { value: 0 },
        }],
      }],
    },
  };
  const decoded = decodeAny(encodeAny(TYPE_URLS.cluster, cluster));
  assert.equal((decoded as { cluster_discovery_type?: string }).cluster_discovery_type, "type");
  assert.deepEqual(pj.message("envoy.config.cluster.v3.Cluster", decoded), {
    name: "outbound|80||hello",
    // A oneof member is printed even at its default (STATIC = 0); lb_policy ROUND_ROBIN is not.
    type: "STATIC",
    connect_timeout: "1.500s",
    circuit_breakers: { thresholds: [{ priority: "HIGH", max_requests: 1000 }] },
    load_assignment: {
      cluster_name: "x",
      endpoints: [{
        lb_endpoints: [{
          endpoint: { address: { socket_address: { address: "10.0.0.1", port_value: 80 } } },
          load_balancing_weight: 0,
        }],
      }],
    },
  });
});

Deno.test("ProtoJson.message() expands a typed_config Any and weighted clusters", async () => {
  const pj = await printer();
  const route = {
    name: "80",
    virtual_hosts: [{
      name: "world:80",
      domains: ["world"],
      routes: [{
        match: { prefix: "" },
        route: {
          weighted_clusters: {
            clusters: [{ name: "a", weight: { value: 80 } }, { name: "b", weight: { value: 20 } }],
          },
          timeout: { seconds: 0 },
        },
        typed_per_filter_config: {
          "envoy.filters.http.fault": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault",
            abort: { http_status: 503, percentage: { numerator: 5, denominator: "HUNDRED" } },
          },
        },
      }],
    }],
  };
  const json = pj.message(
    "envoy.config.route.v3.RouteConfiguration",
    decodeAny(encodeAny(TYPE_URLS.route, route)),
  ) as Any;
  const r = json.virtual_hosts[0].routes[0];
  assert.deepEqual(r.match, { prefix: "" }, "an empty prefix is a oneof member and stays");
  assert.deepEqual(r.route, {
    weighted_clusters: { clusters: [{ name: "a", weight: 80 }, { name: "b", weight: 20 }] },
    timeout: "0s",
  });
  assert.deepEqual(r.typed_per_filter_config["envoy.filters.http.fault"], {
    "@type": "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault",
    abort: { http_status: 503, percentage: { numerator: 5 } },
  });
});

// deno-lint-ignore no-explicit-any
type Any = any;

Deno.test("ProtoJson.message() prints 64-bit integers, bytes, Structs and Timestamps as proto3 JSON", async () => {
  const pj = await printer();
  assert.deepEqual(pj.message("envoy.type.v3.Int64Range", { start: 5, end: "10" }), {
    start: "5",
    end: "10",
  });
  assert.deepEqual(
    pj.message("envoy.config.core.v3.DataSource", { inline_bytes: new Uint8Array([1, 2, 255]) }),
    { inline_bytes: "AQL/" },
  );
  const node = {
    id: "sidecar~1.2.3.4~a.b~b.svc.cluster.local",
    metadata: { app: "hello", n: 2, on: false, none: null, list: ["x", {}] },
  };
  const obj = pj.parse("envoy.config.core.v3.Node", node);
  const decoded = decodeAny(encodeAny("type.googleapis.com/envoy.config.core.v3.Node", obj));
  assert.deepEqual(pj.message("envoy.config.core.v3.Node", decoded), node);
  assert.equal(
    pj.message("google.protobuf.Timestamp", { seconds: "1700000000", nanos: 500_000_000 }),
    "2023-11-14T22:13:20.500Z",
  );
  assert.equal(
    pj.message("google.protobuf.Duration", { seconds: "-2", nanos: -1000 }),
    "-2.000001s",
  );
});

Deno.test("ProtoJson.parse() names the field of a value of the wrong shape", async () => {
  const pj = await printer();
  assert.throws(
    () => pj.parse("envoy.config.cluster.v3.Cluster", { connect_timeout: "soon" }),
    /^Error: Cluster\.connect_timeout: want a duration like "1\.5s", got "soon"$/,
  );
  assert.throws(
    () => pj.message("envoy.config.cluster.v3.Nope", {}),
    /unknown message type "envoy\.config\.cluster\.v3\.Nope"/,
  );
  assert.deepEqual(
    pj.parse("envoy.config.cluster.v3.Cluster", { connectTimeout: "0.250s", name: "x" }),
    { connect_timeout: { seconds: "0", nanos: 250_000_000 }, name: "x" },
  );
});

Deno.test("ProtoJson.parse() drops properties the message lacks, or keeps them with keepUnknown", async () => {
  const pj = await printer();
  const json = {
    name: "c",
    typo: 1,
    load_assignment: { cluster_name: "c", extra: { a: 1 } },
    transport_socket: {
      name: "tls",
      typed_config: {
        "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
        sni: "x",
        nope: true,
      },
    },
  };
  const tls = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext";
  assert.deepEqual(pj.parse("envoy.config.cluster.v3.Cluster", json), {
    name: "c",
    load_assignment: { cluster_name: "c" },
    transport_socket: { name: "tls", typed_config: { "@type": tls, sni: "x" } },
  });
  assert.deepEqual(pj.parse("envoy.config.cluster.v3.Cluster", json, { keepUnknown: true }), {
    name: "c",
    typo: 1,
    load_assignment: { cluster_name: "c", extra: { a: 1 } },
    transport_socket: { name: "tls", typed_config: { "@type": tls, sni: "x", nope: true } },
  });
});
