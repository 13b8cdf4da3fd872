import assert from "node:assert/strict";
import * as fs from "node:fs";
import { decodeAny, encodeAny, loadXdsProtos, TYPE_URLS, xdsProtoRoot } from "./protos.ts";

Deno.test("xdsProtoRoot() finds the Envoy protos of @grpc/grpc-js-xds", () => {
  const root = xdsProtoRoot();
  assert.ok(fs.existsSync(`${root}/envoy-api/envoy/config/listener/v3/listener.proto`));
  assert.ok(
    fs.existsSync(`${root}/googleapis/google/protobuf`) || fs.existsSync(`${root}/googleapis`),
  );
});

Deno.test("encodeAny() and decodeAny() round-trip a cluster with a nested Any", async () => {
  await loadXdsProtos();
  const c = {
    name: "outbound|7070||a",
    type: "EDS",
    connect_timeout: { seconds: 1 },
    eds_cluster_config: {
      eds_config: { ads: {}, resource_api_version: "V3" },
      service_name: "outbound|7070||a",
    },
    typed_extension_protocol_options: {
      "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
        "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
        explicit_http_config: { http2_protocol_options: {} },
      },
    },
  };
  const any = encodeAny(TYPE_URLS.cluster, c);
  assert.equal(any.type_url, TYPE_URLS.cluster);
  assert.ok(any.value instanceof Uint8Array && any.value.length > 0);
  // deno-lint-ignore no-explicit-any
  const back = decodeAny(any) as Record<string, any>;
  assert.equal(back.name, c.name);
  assert.equal(back.type, "EDS");
  assert.equal(back.connect_timeout.seconds, "1");
  assert.deepEqual(back.eds_cluster_config.eds_config.ads, {});
  const opts =
    back.typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"];
  assert.equal(
    opts["@type"],
    c.typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"][
      "@type"
    ],
  );
});

Deno.test("encodeAny() names the type when a value is rejected or the type is unknown", async () => {
  await loadXdsProtos();
  assert.throws(
    () => encodeAny("type.googleapis.com/no.such.Type", {}),
    /Unknown xDS message type "no.such.Type"/,
  );
  assert.throws(
    () => encodeAny(TYPE_URLS.cluster, { connect_timeout: 5 }),
    /Cannot encode envoy.config.cluster.v3.Cluster: .*object expected/,
  );
});
