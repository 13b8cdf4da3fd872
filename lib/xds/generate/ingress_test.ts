/**
 * The conversion of Ingress objects into the generated Gateway and VirtualService: backends of
 * every Ingress API version, path forms, host matches, default backends, TLS and ordering.
 */

import assert from "node:assert/strict";
import type { ConfigObject } from "../../model/types.ts";
import { model } from "../testdata/model.ts";
import {
  INGRESS_CERTS,
  INGRESS_GATEWAY_NAME,
  INGRESS_NAMESPACE,
  ingressesToConfigs,
  ingressSelected,
} from "./ingress.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

function ingress(
  name: string,
  spec: Record<string, unknown>,
  namespace = "default",
  cls: string | null = "mesh",
): ConfigObject {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: {
      name,
      namespace,
      ...(cls === null ? {} : { annotations: { "kubernetes.io/ingress.class": cls } }),
    },
    spec,
  };
}

function convert(ings: ConfigObject[], mesh: Record<string, unknown> = {}) {
  return ingressesToConfigs(model({ configs: { ingresses: ings }, mesh }));
}

/** The http routes of the generated VirtualService. */
const httpOf = (out: ReturnType<typeof convert>): Any[] =>
  (out.virtualServices[0].spec as Any).http;

Deno.test("ingressesToConfigs() reads backends of extensions/v1beta1 and networking.k8s.io/v1", () => {
  const out = convert([ingress("a", {
    rules: [{
      http: {
        paths: [
          { path: "/num", backend: { serviceName: "hello", servicePort: 80 } },
          { path: "/numstr", backend: { serviceName: "hello", servicePort: "8080" } },
          { path: "/named", backend: { serviceName: "hello", servicePort: "http" } },
          { path: "/v1num", backend: { service: { name: "world", port: { number: 7070 } } } },
          { path: "/v1named", backend: { service: { name: "world", port: { name: "grpc" } } } },
          { path: "/nobackend" },
          { path: "/noname", backend: { serviceName: "", servicePort: 80 } },
          { path: "/v1noname", backend: { service: { port: { number: 80 } } } },
        ],
      },
    }],
  }, "prod")]);
  assert.deepEqual(httpOf(out).map((r) => [r.match[0].uri.exact, r.route[0].destination]), [
    ["/num", { host: "hello.prod.svc.cluster.local", port: { number: 80 } }],
    ["/numstr", { host: "hello.prod.svc.cluster.local", port: { number: 8080 } }],
    ["/named", { host: "hello.prod.svc.cluster.local", port: { name: "http" } }],
    ["/v1num", { host: "world.prod.svc.cluster.local", port: { number: 7070 } }],
    ["/v1named", { host: "world.prod.svc.cluster.local", port: { name: "grpc" } }],
  ]);
  for (const r of httpOf(out)) assert.deepEqual(r.route[0].weight, 100);
});

Deno.test("ingressesToConfigs() turns paths into prefix and exact URI matches", () => {
  const b = { serviceName: "hello", servicePort: 80 };
  const out = convert([ingress("a", {
    rules: [{
      http: {
        paths: [{ backend: b }, { path: "", backend: b }, { path: "/a/.*", backend: b }, {
          path: "/b",
          backend: b,
        }, { path: "/c.", backend: b }],
      },
    }],
  })]);
  assert.deepEqual(httpOf(out).map((r) => r.match[0].uri), [
    { prefix: "/" },
    { prefix: "/" },
    { prefix: "/a/" },
    { exact: "/b" },
    { exact: "/c." },
  ]);
  assert.equal(httpOf(out)[0].match[0].authority, undefined, "no host: any authority");
});

Deno.test("ingressesToConfigs() matches a rule's host with or without a port, dots escaped", () => {
  const out = convert([ingress("a", {
    rules: [{
      host: "echo.example.com",
      http: { paths: [{ path: "/", backend: { serviceName: "hello", servicePort: 80 } }] },
    }],
  })]);
  const re = httpOf(out)[0].match[0].authority.regex;
  assert.equal(re, "^echo\\.example\\.com(:[0-9]+)?$");
  const m = new RegExp(re);
  assert.ok(m.test("echo.example.com") && m.test("echo.example.com:8080"));
  assert.ok(!m.test("echoXexample.com") && !m.test("a.echo.example.com"));
});

Deno.test("ingressesToConfigs() orders Ingresses by namespace/name, default backends after all paths", () => {
  const path = (p: string, svc: string) => ({
    rules: [{ http: { paths: [{ path: p, backend: { serviceName: svc, servicePort: 80 } }] } }],
  });
  const out = convert([
    ingress("b", { ...path("/b", "world"), backend: { serviceName: "world", servicePort: 80 } }),
    ingress("z", path("/z", "hello"), "a-ns"),
    ingress("a", {
      ...path("/a", "hello"),
      defaultBackend: { service: { name: "hello", port: { number: 80 } } },
    }),
  ]);
  assert.deepEqual(
    httpOf(out).map((r) => [r.match?.[0].uri.exact, r.route[0].destination.host]),
    [
      ["/z", "hello.a-ns.svc.cluster.local"],
      ["/a", "hello.default.svc.cluster.local"],
      ["/b", "world.default.svc.cluster.local"],
      [undefined, "hello.default.svc.cluster.local"],
      [undefined, "world.default.svc.cluster.local"],
    ],
  );
  const vs = out.virtualServices[0];
  assert.deepEqual(vs.metadata, {
    name: INGRESS_GATEWAY_NAME,
    namespace: INGRESS_NAMESPACE,
    creationTimestamp: "~",
  });
  assert.deepEqual((vs.spec as Any).hosts, ["*"]);
  assert.deepEqual((vs.spec as Any).gateways, [INGRESS_GATEWAY_NAME]);
});

Deno.test("ingressesToConfigs() gives the Gateway an HTTPS server for the first Ingress with TLS", () => {
  const b = {
    rules: [{ http: { paths: [{ backend: { serviceName: "hello", servicePort: 80 } }] } }],
  };
  const plain = convert([ingress("a", b)]);
  assert.deepEqual(plain.gateways[0].metadata, {
    name: INGRESS_GATEWAY_NAME,
    namespace: INGRESS_NAMESPACE,
  });
  assert.deepEqual(plain.gateways[0].spec, {
    selector: { mesh: "ingressgateway" },
    servers: [{ port: { number: 80, protocol: "HTTP", name: "http-ingress-80" }, hosts: ["*"] }],
  });
  const tls = convert([
    ingress("a", { ...b, tls: [] }),
    ingress("b", { ...b, tls: [{ hosts: ["b.example.com"] }] }),
    ingress("c", { ...b, tls: [{ hosts: ["c.example.com"] }] }),
  ]);
  const servers = (tls.gateways[0].spec as Any).servers;
  assert.equal(servers.length, 2);
  assert.deepEqual(servers[1], {
    port: { number: 443, protocol: "HTTPS", name: "https-ingress-443" },
    hosts: ["b.example.com"],
    tls: { mode: "SIMPLE", serverCertificate: INGRESS_CERTS.cert, privateKey: INGRESS_CERTS.key },
  });
  assert.deepEqual(INGRESS_CERTS, {
    cert: "/etc/mesh/ingressgateway-certs/tls.crt",
    key: "/etc/mesh/ingressgateway-certs/tls.key",
  });
  for (const hosts of [undefined, []]) {
    const any = convert([ingress("a", { ...b, tls: [{ hosts, secretName: "s" }] })]);
    assert.deepEqual((any.gateways[0].spec as Any).servers[1].hosts, ["*"], `hosts ${hosts}`);
  }
});

Deno.test("ingressSelected() per ingressControllerMode and class", () => {
  const ctx = (mode: string) =>
    model({ mesh: { ingressControllerMode: mode as "STRICT", ingressClass: "mesh" } });
  const ing = (cls: string | null) => ingress("a", {}, "default", cls);
  assert.equal(ingressSelected(ing("mesh"), ctx("STRICT")), true);
  assert.equal(ingressSelected(ing(null), ctx("STRICT")), false);
  assert.equal(ingressSelected(ing("nginx"), ctx("STRICT")), false);
  assert.equal(ingressSelected(ing("mesh"), ctx("DEFAULT")), true);
  assert.equal(ingressSelected(ing(null), ctx("DEFAULT")), true);
  assert.equal(ingressSelected(ing("nginx"), ctx("DEFAULT")), false);
  assert.equal(ingressSelected(ing("mesh"), ctx("OFF")), false);
  const unset = model();
  delete (unset.meshConfig as Any).ingressControllerMode;
  assert.equal(ingressSelected(ing(null), unset), false, "STRICT by default");
  assert.equal(ingressSelected(ing("mesh"), unset), true);
});

Deno.test("ingressesToConfigs() without a selected Ingress generates nothing", () => {
  assert.deepEqual(convert([ingress("a", {}, "default", "nginx")]), {
    gateways: [],
    virtualServices: [],
  });
});

Deno.test("ingressesToConfigs() skips malformed rules and paths and defaults the namespace", () => {
  const ing = ingress("a", {
    rules: [
      null,
      { http: null },
      {
        host: 7,
        http: { paths: [null, { path: 3, backend: { serviceName: "hello", servicePort: 80 } }] },
      },
    ],
    backend: "hello",
    tls: [null],
  });
  delete ing.metadata.namespace;
  const out = convert([ing, {
    ...ingress("b", {}),
    spec: null as unknown as Record<string, unknown>,
  }]);
  assert.deepEqual(httpOf(out), [{
    match: [{ uri: { prefix: "/" } }],
    route: [{
      destination: { host: "hello.default.svc.cluster.local", port: { number: 80 } },
      weight: 100,
    }],
  }]);
  assert.deepEqual((out.gateways[0].spec as Any).servers[1].hosts, ["*"]);
  assert.deepEqual(
    [out.gateways[0].apiVersion, out.gateways[0].kind],
    ["networking.mesh.io/v1alpha3", "Gateway"],
  );
  assert.deepEqual(
    [out.virtualServices[0].apiVersion, out.virtualServices[0].kind],
    ["networking.mesh.io/v1alpha3", "VirtualService"],
  );
});

Deno.test("ingressesToConfigs(): a servicePort is a number only when all digits; a backend needs a string name", () => {
  const out = convert([ingress("a", {
    rules: [{
      http: {
        paths: [
          { path: "/a", backend: { serviceName: "hello", servicePort: "web8080" } },
          { path: "/b", backend: { serviceName: "hello", servicePort: "8080web" } },
          { path: "/c", backend: { serviceName: 5, servicePort: 80 } },
        ],
      },
    }],
  })]);
  assert.deepEqual(httpOf(out).map((r) => r.route[0].destination.port), [
    { name: "web8080" },
    { name: "8080web" },
  ]);
});
