import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { ResourceCache } from "./cache.ts";
import { ADS_LOADER_OPTIONS } from "./grpc.ts";
import { loadAdsProtos } from "./_test_util.ts";
import {
  decodeDeltaDiscoveryRequest,
  decodeDiscoveryRequest,
  encodedAny,
  encodeDeltaDiscoveryResponse,
  encodeDiscoveryResponse,
  markShared,
  sameBytes,
} from "./wire.ts";

// deno-lint-ignore no-explicit-any
type AnyObj = any;

const pkg = await loadAdsProtos(ADS_LOADER_OPTIONS) as AnyObj;
const svc = pkg["envoy.service.discovery.v3.AggregatedDiscoveryService"];
const T = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
const cache = new ResourceCache();
for (const name of ["c1", "outbound|80||a.default.svc.cluster.local"]) {
  cache.set(T, name, pkg["envoy.config.cluster.v3.Cluster"].serialize({ name, type: "EDS" }));
}
const resources = [...cache.select(T, null)].map(([name, entry]) => ({ name, entry }));

Deno.test("encodeDiscoveryResponse() gives the same bytes as protobufjs", () => {
  const r = {
    version_info: "v/1",
    type_url: T,
    nonce: "n-1",
    resources,
    control_plane: { identifier: "m" },
  };
  const ours = encodeDiscoveryResponse(r);
  const theirs = svc.StreamAggregatedResources.responseSerialize({
    ...r,
    resources: resources.map((x) => ({ type_url: T, value: Buffer.from(x.entry.bytes) })),
  });
  assert.equal(Buffer.compare(ours, theirs), 0);
  assert.equal(encodedAny(T, resources[0].entry), encodedAny(T, resources[0].entry), "Any cached");
});

Deno.test("encodeDeltaDiscoveryResponse() gives the same bytes as protobufjs", () => {
  const r = {
    system_version_info: "v/2",
    type_url: T,
    nonce: "n-2",
    resources,
    removed_resources: ["gone", "also-gone"],
  };
  const ours = encodeDeltaDiscoveryResponse(r);
  const theirs = svc.DeltaAggregatedResources.responseSerialize({
    ...r,
    resources: resources.map((x) => ({
      name: x.name,
      version: x.entry.version,
      resource: { type_url: T, value: Buffer.from(x.entry.bytes) },
    })),
  });
  assert.equal(Buffer.compare(ours, theirs), 0);
  const back = svc.DeltaAggregatedResources.responseDeserialize(ours);
  assert.deepEqual(back.removed_resources, ["gone", "also-gone"]);
  assert.equal(back.resources[1].name, "outbound|80||a.default.svc.cluster.local");
});

const EDS = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
const edsNames = Array.from(
  { length: 50 },
  (_, i) => `outbound|8080||svc-${i}.ns.svc.cluster.local`,
);

/** Plain fields of a decoded request (drops proto-loader's absent fields and our raw bytes). */
function plain(r: AnyObj): AnyObj {
  const out: AnyObj = {};
  for (const k of ["version_info", "type_url", "response_nonce"]) {
    if (r[k] !== undefined && r[k] !== "") out[k] = r[k];
  }
  const names = r.resource_names ?? [];
  if (names.length) out.resource_names = [...names];
  return out;
}

Deno.test("decodeDiscoveryRequest() agrees with proto-loader on ACKs and subscriptions", () => {
  const requests: AnyObj[] = [
    { type_url: T }, // initial wildcard (without node: a later re-request)
    { type_url: EDS, resource_names: edsNames }, // new subscription
    {
      version_info: "2024-01-01T00:00:00.000Z/3",
      type_url: EDS,
      resource_names: edsNames,
      response_nonce: "k1-2a",
    },
    {
      version_info: "v",
      type_url: T,
      response_nonce: "n",
      resource_names: ["ünïcode-名前", "x".repeat(300)],
    },
    // unknown fields (resource_locators = 7) are skipped
    { type_url: EDS, resource_names: ["a"], resource_locators: [{ name: "xdstp://x/y" }] },
    // type URLs as long as a known one, differing at its start, middle or end
    { type_url: "x" + EDS.slice(1), response_nonce: "n" },
    { type_url: EDS.slice(0, 30) + "x" + EDS.slice(31) },
    { type_url: EDS.slice(0, -1) + "x" },
  ];
  for (const req of requests) {
    const bytes = svc.StreamAggregatedResources.requestSerialize(req);
    const ours = decodeDiscoveryRequest(bytes);
    assert.ok(ours, JSON.stringify(req));
    assert.deepEqual(plain(ours), plain(svc.StreamAggregatedResources.requestDeserialize(bytes)));
  }
});

Deno.test("decodeDiscoveryRequest() gives equal raw names exactly for equal name lists", () => {
  const enc = (names: string[], nonce: string) =>
    decodeDiscoveryRequest(
      svc.StreamAggregatedResources.requestSerialize({
        version_info: nonce,
        type_url: EDS,
        resource_names: names,
        response_nonce: nonce,
      }),
    )!;
  const a = enc(edsNames, "n-1"), b = enc(edsNames, "n-2");
  assert.ok(a.resource_names_raw && b.resource_names_raw);
  assert.ok(sameBytes(a.resource_names_raw, b.resource_names_raw));
  const c = enc([...edsNames.slice(1), "outbound|8080||other"], "n-3");
  assert.ok(!sameBytes(a.resource_names_raw, c.resource_names_raw!));
  assert.equal(enc([], "n-4").resource_names_raw, undefined);
  assert.deepEqual(enc([], "n-4").resource_names, []);
});

Deno.test("decodeDiscoveryRequest() takes a hint's bytes for names only when they are exactly its names", () => {
  const ser = (names: string[], extra: AnyObj = {}) =>
    svc.StreamAggregatedResources.requestSerialize({
      version_info: "v-7",
      type_url: EDS,
      resource_names: names,
      response_nonce: "n-7",
      ...extra,
    });
  // what the stream state keeps of a subscription: a copy of the names' bytes
  const hint = Buffer.from(decodeDiscoveryRequest(ser(edsNames))!.resource_names_raw!);
  const other = Buffer.from(decodeDiscoveryRequest(ser(edsNames.slice(0, 3)))!.resource_names_raw!);
  const check = (bytes: Uint8Array, hints: (Uint8Array | undefined)[], raw: "hint" | "own") => {
    const ours = decodeDiscoveryRequest(bytes, hints)!;
    assert.deepEqual(plain(ours), plain(svc.StreamAggregatedResources.requestDeserialize(bytes)));
    if (raw === "hint") assert.equal(ours.resource_names_raw, hint, "the hint itself");
    else {
      for (const h of hints) assert.notEqual(ours.resource_names_raw, h);
      const own = decodeDiscoveryRequest(bytes)!.resource_names_raw;
      assert.deepEqual(ours.resource_names_raw && [...ours.resource_names_raw], own && [...own]);
    }
  };
  check(ser(edsNames), [undefined, other, hint], "hint");
  // names the hint holds and one more, one fewer, or the last one changed
  check(ser([...edsNames, "outbound|9090||more"]), [hint], "own");
  check(ser(edsNames.slice(0, -1)), [hint], "own");
  check(ser([...edsNames.slice(0, -1), edsNames.at(-1)!.replace(/.$/, "x")]), [hint], "own");
  check(ser([edsNames[1], edsNames[0], ...edsNames.slice(2)]), [hint], "own");
  // the hint's names and nothing after them (no type URL or nonce), and no names at all
  const bare = svc.StreamAggregatedResources.requestSerialize({ resource_names: edsNames });
  assert.equal(decodeDiscoveryRequest(bare, [hint])!.resource_names_raw, hint);
  check(ser([]), [hint], "own");
  // fewer names than the hint and nothing after them: the hint runs past the message's end
  const fewer = svc.StreamAggregatedResources.requestSerialize({
    resource_names: edsNames.slice(1),
  });
  check(fewer, [hint], "own");
  // the hint's names, another field, then the same names again: every name, in order
  const twice = Buffer.concat([ser(edsNames), ser(edsNames)]);
  check(twice, [hint], "own");
  const noVersion = svc.StreamAggregatedResources.requestSerialize({
    resource_names: edsNames,
    type_url: EDS,
  });
  check(Buffer.concat([noVersion, noVersion]), [hint], "own"); // the names start at byte 0
  assert.equal(decodeDiscoveryRequest(twice, [hint])!.resource_names?.length, 2 * edsNames.length);
  // a short hint is not compared: the names are walked as without one
  check(ser(edsNames.slice(0, 1)), [hint.subarray(0, hint[1] + 2)], "own");
});

Deno.test("decodeDiscoveryRequest() returns null for first requests, NACKs and bad bytes", () => {
  const ser = (r: AnyObj) => svc.StreamAggregatedResources.requestSerialize(r);
  assert.equal(decodeDiscoveryRequest(ser({ node: { id: "a~b~c~d" }, type_url: T })), null);
  assert.equal(
    decodeDiscoveryRequest(ser({ type_url: T, error_detail: { code: 3, message: "bad" } })),
    null,
  );
  const good = ser({ type_url: T, resource_names: ["abc"] });
  assert.equal(decodeDiscoveryRequest(good.subarray(0, good.length - 1)), null); // truncated
});

Deno.test("decodeDeltaDiscoveryRequest() agrees with proto-loader", () => {
  const requests: AnyObj[] = [
    { type_url: EDS, resource_names_subscribe: edsNames, response_nonce: "n-1" },
    { type_url: EDS, resource_names_unsubscribe: ["a", "b"], resource_names_subscribe: ["*"] },
    { type_url: T, initial_resource_versions: { c1: "v1", "outbound|80||x": "0123" } },
  ];
  for (const req of requests) {
    const bytes = svc.DeltaAggregatedResources.requestSerialize(req);
    const ours = decodeDeltaDiscoveryRequest(bytes);
    const theirs = svc.DeltaAggregatedResources.requestDeserialize(bytes);
    assert.ok(ours);
    for (const k of ["resource_names_subscribe", "resource_names_unsubscribe"]) {
      assert.deepEqual(ours[k as "resource_names_subscribe"] ?? [], theirs[k] ?? [], k);
    }
    assert.deepEqual(ours.initial_resource_versions ?? {}, { ...theirs.initial_resource_versions });
    assert.equal(ours.type_url, theirs.type_url);
    assert.equal(ours.response_nonce ?? "", theirs.response_nonce ?? "");
  }
  const ser = (r: AnyObj) => svc.DeltaAggregatedResources.requestSerialize(r);
  assert.equal(decodeDeltaDiscoveryRequest(ser({ node: { id: "x" }, type_url: T })), null);
  assert.equal(decodeDeltaDiscoveryRequest(ser({ type_url: T, error_detail: { code: 1 } })), null);
});

Deno.test("decodeDiscoveryRequest() decodes names interleaved with other fields in order", () => {
  const t = new TextEncoder().encode(EDS);
  const bytes = Uint8Array.from([0x1a, 1, 0x61, 0x22, t.length, ...t, 0x1a, 1, 0x62]);
  const r = decodeDiscoveryRequest(bytes)!;
  assert.deepEqual(r.resource_names, ["a", "b"]);
  assert.equal(r.resource_names_raw, undefined);
  assert.equal(r.type_url, EDS);
});

/** Field `no` with wire type 2 and `payload`. */
function lenField(no: number, payload: Uint8Array | string): number[] {
  const b = typeof payload === "string" ? new TextEncoder().encode(payload) : payload;
  return [(no << 3) | 2, b.length, ...b];
}

Deno.test("decodeDiscoveryRequest() skips unknown fields of every wire type and refuses what it cannot read", () => {
  const unknown = [
    (9 << 3) | 0,
    0xac,
    0x02, // varint 300
    (10 << 3) | 1,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8, // fixed64
    (11 << 3) | 5,
    1,
    2,
    3,
    4, // fixed32
    ...lenField(12, "skip me"),
  ];
  const bytes = Uint8Array.from([
    ...unknown,
    ...lenField(1, "v1"),
    ...lenField(3, "名前"), // a short name of only non-ASCII characters
    ...lenField(3, "b".repeat(49)),
    ...lenField(4, EDS),
    ...lenField(5, "n1"),
  ]);
  const r = decodeDiscoveryRequest(bytes)!;
  assert.deepEqual(
    [r.version_info, r.type_url, r.response_nonce, r.resource_names],
    ["v1", EDS, "n1", ["名前", "b".repeat(49)]],
  );
  assert.deepEqual(
    plain(r),
    plain(svc.StreamAggregatedResources.requestDeserialize(Buffer.from(bytes))),
  );
  // A request with no fields set has none.
  const empty = decodeDiscoveryRequest(new Uint8Array())!;
  assert.deepEqual([empty.version_info, empty.type_url, empty.response_nonce], [
    undefined,
    undefined,
    undefined,
  ]);
  for (
    const [what, bad] of [
      ["a group (wire type 3)", [(9 << 3) | 3, 0]],
      ["a fixed64 cut short", [(10 << 3) | 1, 1, 2, 3]],
      ["a fixed32 cut short", [(11 << 3) | 5, 1, 2]],
      ["an unknown field longer than the message", [(12 << 3) | 2, 5, 1]],
      ["a varint of 11 bytes", [(9 << 3) | 0, ...Array(10).fill(0xff), 1]],
      ["a varint cut short", [(9 << 3) | 0, 0xff]],
    ] as const
  ) {
    assert.equal(
      decodeDiscoveryRequest(Uint8Array.from([...lenField(4, EDS), ...bad])),
      null,
      what,
    );
    assert.equal(
      decodeDeltaDiscoveryRequest(Uint8Array.from([...lenField(2, EDS), ...bad])),
      null,
      what,
    );
  }
  for (const n of [8, 10]) {
    assert.equal(
      decodeDiscoveryRequest(Uint8Array.from([(9 << 3) | 0, ...Array(n - 1).fill(0xff), 0x01]))
        ?.type_url,
      undefined,
      `a varint of ${n} bytes is read`,
    );
  }
});

Deno.test("decodeDeltaDiscoveryRequest() skips unknown fields, also inside map entries, and refuses a bad entry", () => {
  const entry = (...f: number[]) => lenField(5, Uint8Array.from(f));
  const bytes = Uint8Array.from([
    (13 << 3) | 0,
    0xac,
    0x02,
    (14 << 3) | 1,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    ...lenField(15, "skip me"),
    (3 << 3) | 0,
    7, // a known field number with another wire type: skipped
    ...lenField(2, EDS),
    ...lenField(3, "名前"),
    ...lenField(4, "u".repeat(60)),
    ...lenField(6, "n1"),
    ...entry(...lenField(1, "k1"), (3 << 3) | 0, 1, ...lenField(4, "x"), ...lenField(2, "v1")),
    ...entry(...lenField(1, "keyonly")),
    ...entry(...lenField(2, "valueonly")),
  ]);
  const r = decodeDeltaDiscoveryRequest(bytes)!;
  assert.deepEqual(r, {
    type_url: EDS,
    resource_names_subscribe: ["名前"],
    resource_names_unsubscribe: ["u".repeat(60)],
    response_nonce: "n1",
    initial_resource_versions: { k1: "v1", keyonly: "", "": "valueonly" },
  });
  // A map entry whose field runs past the entry.
  assert.equal(decodeDeltaDiscoveryRequest(Uint8Array.from(entry(0x0a, 5, 0x61))), null);
  assert.equal(
    decodeDeltaDiscoveryRequest(Uint8Array.from(entry(...lenField(1, "k"), 0x12))),
    null,
  );
});

Deno.test("encoded responses carry non-ASCII and long versions, nonces and names exactly as protobufjs", () => {
  const sotw = {
    version_info: "版本-".repeat(30),
    type_url: T,
    nonce: "ñ",
    resources,
  };
  const want = svc.StreamAggregatedResources.responseDeserialize(encodeDiscoveryResponse(sotw));
  assert.equal(want.version_info, sotw.version_info);
  assert.equal(want.nonce, "ñ");
  const ours = Buffer.from(encodeDiscoveryResponse(sotw));
  assert.deepEqual(
    ours,
    Buffer.from(svc.StreamAggregatedResources.responseSerialize({
      ...sotw,
      resources: resources.map((r) => ({ type_url: T, value: r.entry.bytes })),
    })),
  );
  const delta = {
    system_version_info: "é",
    type_url: T,
    nonce: "x".repeat(70),
    resources: [],
    removed_resources: ["名前"],
  };
  const got = svc.DeltaAggregatedResources.responseDeserialize(encodeDeltaDiscoveryResponse(delta));
  assert.deepEqual(
    [got.system_version_info, got.nonce, got.removed_resources],
    ["é", "x".repeat(70), ["名前"]],
  );
});

/** protobufjs's encoding of a SotW or delta response of `list` as type `typeUrl`. */
function reference(
  kind: "sotw" | "delta",
  r: AnyObj,
  typeUrl: string,
  list: { name: string; entry: { version: string; bytes: Uint8Array } }[],
): Buffer {
  const any = (x: (typeof list)[number]) => ({
    type_url: typeUrl,
    value: Buffer.from(x.entry.bytes),
  });
  // proto3: an empty string is the default, left out (protobufjs writes it when set).
  r = Object.fromEntries(Object.entries(r).filter(([, v]) => v !== ""));
  return kind === "sotw"
    ? svc.StreamAggregatedResources.responseSerialize({ ...r, resources: list.map(any) })
    : svc.DeltaAggregatedResources.responseSerialize({
      ...r,
      resources: list.map((x) => ({ name: x.name, version: x.entry.version, resource: any(x) })),
    });
}

Deno.test("encoded responses: empty fields are left out, lengths of 128 take two bytes, delta carries control_plane", () => {
  const sotw = { version_info: "", type_url: T, nonce: "", resources: [] };
  assert.deepEqual(Buffer.from(encodeDiscoveryResponse(sotw)), reference("sotw", sotw, T, []));
  const noType = { version_info: "v", type_url: "", nonce: "n", resources: [] };
  assert.deepEqual(Buffer.from(encodeDiscoveryResponse(noType)), reference("sotw", noType, T, []));
  const delta = {
    system_version_info: "",
    type_url: "",
    nonce: "",
    resources: [],
    removed_resources: [],
    control_plane: { identifier: "mesh-discovery" },
  };
  assert.deepEqual(
    Buffer.from(encodeDeltaDiscoveryResponse(delta)),
    reference("delta", delta, T, []),
  );
  const long = { version_info: "v".repeat(128), type_url: T, nonce: "\u0080x", resources };
  assert.deepEqual(
    Buffer.from(encodeDiscoveryResponse(long)),
    reference("sotw", long, T, resources),
  );
});

Deno.test("encoded resources are cached per type URL: the same entries sent as another type say so", () => {
  const [one] = resources;
  assert.notDeepEqual(encodedAny(T, one.entry), encodedAny(EDS, one.entry));
  assert.deepEqual(Buffer.from(encodedAny(T, one.entry)).subarray(2, 2 + T.length).toString(), T);
  const shared = [...resources];
  markShared(shared);
  for (const typeUrl of [T, EDS, T]) {
    const r = { version_info: "v", type_url: typeUrl, nonce: "n", resources: shared };
    assert.deepEqual(
      Buffer.from(encodeDiscoveryResponse(r)),
      reference("sotw", r, typeUrl, shared),
    );
    const d = { ...r, system_version_info: "v", removed_resources: [] };
    assert.deepEqual(
      Buffer.from(encodeDeltaDiscoveryResponse(d)),
      reference("delta", d, typeUrl, shared),
    );
    // One-entry lists (not shared): SotW bodies are cached per entry; delta ones are not SotW's.
    const single = [one];
    const s1 = { version_info: "v", type_url: typeUrl, nonce: "n", resources: single };
    assert.deepEqual(
      Buffer.from(encodeDiscoveryResponse(s1)),
      reference("sotw", s1, typeUrl, single),
    );
    const d1 = { ...s1, system_version_info: "v", removed_resources: [] };
    assert.deepEqual(
      Buffer.from(encodeDeltaDiscoveryResponse(d1)),
      reference("delta", d1, typeUrl, single),
    );
  }
});

Deno.test("hand decoders: a names field of another wire type is skipped; map entries take only key 1 and value 2", () => {
  // Field 3 as a varint (not a name), a varint of 128 in an unknown field, then the type URL.
  const sotw = Uint8Array.from([(3 << 3) | 0, 5, (9 << 3) | 0, 0x80, 0x01, ...lenField(4, EDS)]);
  const r = decodeDiscoveryRequest(sotw)!;
  assert.deepEqual([r.type_url, r.resource_names], [EDS, []]);
  // Names not contiguous, with a field 3 varint among them.
  const loose = Uint8Array.from([
    ...lenField(3, "a"),
    ...lenField(4, EDS),
    (3 << 3) | 0,
    5,
    ...lenField(3, "b"),
  ]);
  assert.deepEqual(decodeDiscoveryRequest(loose)!.resource_names, ["a", "b"]);
  const entry = (...f: number[]) => lenField(5, Uint8Array.from(f));
  const d = decodeDeltaDiscoveryRequest(Uint8Array.from([
    ...entry(...lenField(1, "k"), ...lenField(2, "v"), ...lenField(4, "not-the-value")),
  ]))!;
  assert.deepEqual(d.initial_resource_versions, { k: "v" });
  // An entry whose field runs past the entry (but not past the message) is refused.
  assert.equal(
    decodeDeltaDiscoveryRequest(
      Uint8Array.from([...entry(0x0a, 5, 0x61), ...lenField(6, "nonce")]),
    ),
    null,
  );
});
