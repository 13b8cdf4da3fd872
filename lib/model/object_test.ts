import assert from "node:assert/strict";
import { parse, parseAllDocuments } from "../deps/yaml.ts";
import {
  deepEqual,
  formatIssue,
  formatIssues,
  groupBy,
  meshctlSchemas,
  normalizeObject,
  policySchemas,
} from "./mod.ts";

const TESTDATA = new URL("./testdata/", import.meta.url);

function fixture(type: string): Record<string, unknown> {
  return parse(Deno.readTextFileSync(new URL(`${type}.yaml`, TESTDATA)));
}

/** Normalizes a one-document YAML text and returns the formatted issues. */
function problems(yamlText: string, label = "test.yaml document 1"): string[] {
  const docs = parseAllDocuments(yamlText);
  const r = normalizeObject(docs[0].toJS(), label);
  return r.issues.length ? formatIssues(r.issues).split("\n") : [];
}

Deno.test("normalizeObject() accepts every fixture in reference form and rewrites the group", () => {
  const kinds = [
    ...meshctlSchemas.map((s) => s.type),
    "rule",
    "denier",
    "metric",
    "attributemanifest",
  ];
  for (const type of kinds) {
    const raw = fixture(type);
    const { object, issues, schema } = normalizeObject(raw, `${type}.yaml`);
    assert.deepEqual(issues, [], type);
    assert.ok(object, type);
    assert.equal(schema?.type, type);
    assert.equal(object.apiVersion, (raw.apiVersion as string).replace(".istio.io/", ".mesh.io/"));
    assert.equal(object.kind, raw.kind);
    assert.deepEqual(object.metadata, raw.metadata);
    // a second pass over the normalized object is stable
    const again = normalizeObject(object, "again");
    assert.deepEqual(again.issues, []);
    assert.deepEqual(again.object, object);
  }
});

Deno.test("normalizeObject() turns a bare oneof message (peers: - mtls:) into an empty object", () => {
  const { object } = normalizeObject(fixture("policy"), "policy.yaml");
  assert.deepEqual((object!.spec.peers as unknown[])[0], { mtls: {} });
});

Deno.test("normalizeObject() drops null fields and fills the default namespace", () => {
  const { object } = normalizeObject(
    {
      apiVersion: "networking.mesh.io/v1alpha3",
      kind: "Gateway",
      metadata: { name: "gw" },
      spec: {
        selector: null,
        servers: [{ port: { number: 80, protocol: "HTTP" }, hosts: ["*"], tls: null }],
      },
    },
    "doc",
    { defaultNamespace: "team-a" },
  );
  assert.equal(object!.metadata.namespace, "team-a");
  assert.deepEqual(object!.spec, {
    servers: [{ port: { number: 80, protocol: "HTTP" }, hosts: ["*"] }],
  });
});

Deno.test("normalizeObject() takes apiVersion from the kind when it is absent", () => {
  const raw = fixture("virtualservice");
  delete raw.apiVersion;
  assert.equal(normalizeObject(raw, "x").object?.apiVersion, "networking.mesh.io/v1alpha3");
});

Deno.test("normalizeObject() reports object-level problems naming the document when the name is unknown", () => {
  assert.deepEqual(problems("kind: Frobnicator\napiVersion: foo.io/v1\nmetadata: {name: a}\n"), [
    'Frobnicator/a: kind: unknown kind "Frobnicator"',
  ]);
  assert.deepEqual(
    problems("kind: Gateway\napiVersion: networking.istio.io/v1alpha3\nspec: {}\n"),
    [
      "test.yaml document 1: metadata.name: is required",
      "test.yaml document 1: spec.servers: is required",
    ],
  );
  assert.deepEqual(
    problems("apiVersion: networking.istio.io/v1alpha2\nkind: Gateway\nmetadata: {name: g}\n"),
    [
      'Gateway/g: apiVersion: kind Gateway belongs to networking.mesh.io/v1alpha3|v1beta1|v1 (or networking.istio.io/v1alpha3|v1beta1|v1), got "networking.istio.io/v1alpha2"',
    ],
  );
  assert.deepEqual(problems("- 1\n"), ["test.yaml document 1: must be an object, got a list"]);
  assert.deepEqual(
    problems(
      "apiVersion: config.istio.io/v1alpha2\nkind: rule\nmetadata: {name: Bad_Name, namespace: Foo.bar, labels: {app: 3}}\nspec: {}\n",
    ),
    [
      "rule/Foo.bar/Bad_Name: metadata.name: invalid name \"Bad_Name\": must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)",
      "rule/Foo.bar/Bad_Name: metadata.namespace: invalid namespace \"Foo.bar\": must be a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)",
      "rule/Foo.bar/Bad_Name: metadata.labels.app: must be a string, got number 3",
    ],
  );
});

// deno-lint-ignore no-explicit-any
type AnySpec = any;

/** Applies `edit` to a copy of the fixture's spec and returns the formatted issues. */
function specProblems(type: string, edit: (spec: AnySpec) => void): string[] {
  const raw = structuredClone(fixture(type));
  edit(raw.spec);
  const r = normalizeObject(raw, "doc");
  return r.issues.length ? formatIssues(r.issues).split("\n") : [];
}

const CASES: { name: string; type: string; edit: (s: AnySpec) => void; want: string[] }[] = [
  {
    name: "unknown field",
    type: "virtualservice",
    edit: (s) => (s.http[0].retries.attemps = 3),
    want: [
      "VirtualService/default/reviews: spec.http[0].retries.attemps: unknown field (known fields: attempts, perTryTimeout, retryOn)",
    ],
  },
  {
    name: "wrong type",
    type: "virtualservice",
    edit: (s) => {
      s.hosts = "reviews";
      s.http[0].retries.attempts = "three";
      s.http[1].websocketUpgrade = "yes";
    },
    want: [
      'VirtualService/default/reviews: spec.hosts: must be a list, got string "reviews"',
      'VirtualService/default/reviews: spec.http[0].retries.attempts: must be an integer, got string "three"',
      'VirtualService/default/reviews: spec.http[1].websocketUpgrade: must be a boolean, got string "yes"',
    ],
  },
  {
    name: "missing required field",
    type: "destinationrule",
    edit: (s) => {
      delete s.host;
      delete s.subsets[0].name;
    },
    want: [
      "DestinationRule/default/reviews: spec.subsets[0].name: is required",
      "DestinationRule/default/reviews: spec.host: is required",
    ],
  },
  {
    name: "bad enum value",
    type: "destinationrule",
    edit: (s) => (s.trafficPolicy.loadBalancer.simple = "FASTEST"),
    want: [
      'DestinationRule/default/reviews: spec.trafficPolicy.loadBalancer.simple: must be one of ROUND_ROBIN, LEAST_CONN, RANDOM, PASSTHROUGH, LEAST_REQUEST, got "FASTEST"',
    ],
  },
  {
    name: "bad tls mode and resolution",
    type: "serviceentry",
    edit: (s) => {
      s.resolution = "dns";
      s.location = "OUTSIDE";
    },
    want: [
      'ServiceEntry/default/external-svc-https: spec.location: must be one of MESH_EXTERNAL, MESH_INTERNAL, got "OUTSIDE"',
      'ServiceEntry/default/external-svc-https: spec.resolution: must be one of NONE, STATIC, DNS, got "dns"',
    ],
  },
  {
    name: "bad port protocol",
    type: "gateway",
    edit: (s) => (s.servers[0].port.protocol = "SMTP"),
    want: [
      'Gateway/default/bookinfo-gateway: spec.servers[0].port.protocol: must be one of HTTP, HTTPS, GRPC, HTTP2, MONGO, REDIS, TCP, TLS, TCP-TLS, got "SMTP"',
    ],
  },
  {
    name: "bad duration",
    type: "virtualservice",
    edit: (s) => {
      s.http[0].timeout = "5 seconds";
      s.http[0].retries.perTryTimeout = "-1s";
      s.http[0].fault.delay.fixedDelay = 5;
    },
    want: [
      'VirtualService/default/reviews: spec.http[0].timeout: invalid duration "5 seconds": expected a number with unit h, m, s or ms, such as "300ms", "5s", "1m30s"',
      'VirtualService/default/reviews: spec.http[0].retries.perTryTimeout: invalid duration "-1s": must not be negative',
      "VirtualService/default/reviews: spec.http[0].fault.delay.fixedDelay: must be a string, got number 5",
    ],
  },
  {
    name: "duration below minimum",
    type: "virtualservice",
    edit: (s) => (s.http[0].timeout = "0s"),
    want: [
      'VirtualService/default/reviews: spec.http[0].timeout: duration "0s" must be at least 1ms',
    ],
  },
  {
    name: "bad host",
    type: "virtualservice",
    edit: (s) => {
      s.hosts = ["Reviews_v1", "foo.*.com", "*"];
      s.http[1].route[0].destination.host = "";
    },
    want: [
      'VirtualService/default/reviews: spec.hosts[0]: invalid host "Reviews_v1": label "Reviews_v1" must consist of lowercase letters, digits and \'-\', start and end with a letter or digit, and be at most 63 characters',
      'VirtualService/default/reviews: spec.hosts[1]: invalid host "foo.*.com": "*" is allowed only as the whole first label ("*.example.com")',
      "VirtualService/default/reviews: spec.http[1].route[0].destination.host: is required",
    ],
  },
  {
    name: "wildcard host bound to the mesh gateway",
    type: "virtualservice",
    edit: (s) => (s.hosts = ["*"]),
    want: [
      'VirtualService/default/reviews: spec.hosts[0]: wildcard host "*" is not allowed for virtual services bound to the mesh gateway',
    ],
  },
  {
    name: "port out of range",
    type: "serviceentry",
    edit: (s) => {
      s.ports[0].number = 70000;
      s.ports[1].number = 0;
    },
    want: [
      "ServiceEntry/default/external-svc-https: spec.ports[0].number: must be between 1 and 65535, got 70000",
      "ServiceEntry/default/external-svc-https: spec.ports[1].number: must be between 1 and 65535, got 0",
    ],
  },
  {
    name: "weight out of range",
    type: "virtualservice",
    edit: (s) => (s.http[1].route[1].weight = 125),
    want: [
      "VirtualService/default/reviews: spec.http[1].route[1].weight: must be between 0 and 100, got 125",
    ],
  },
  {
    name: "weights not summing to 100",
    type: "virtualservice",
    edit: (s) => (s.http[1].route[1].weight = 20),
    want: [
      "VirtualService/default/reviews: spec.http[1].route: route weights must sum to 100 when there is more than one destination, got 95",
    ],
  },
  {
    name: "percent out of range",
    type: "virtualservice",
    edit: (s) => (s.http[0].fault.delay.percent = 101),
    want: [
      "VirtualService/default/reviews: spec.http[0].fault.delay.percent: must be between 0 and 100, got 101",
    ],
  },
  {
    name: "StringMatch oneof",
    type: "virtualservice",
    edit: (s) => {
      s.http[0].match[0].uri = { prefix: "/a", exact: "/b" };
      s.http[0].match[0].headers["end-user"] = {};
    },
    want: [
      "VirtualService/default/reviews: spec.http[0].match[0].headers.end-user: one of exact, prefix, regex is required",
      "VirtualService/default/reviews: spec.http[0].match[0].uri: only one of exact, prefix, regex may be set, got exact and prefix",
    ],
  },
  {
    name: "bad regex",
    type: "routerule",
    edit: (s) => (s.match.request.headers.cookie.regex = "(unclosed"),
    want: [
      'RouteRule/default/reviews-test-v2: spec.match.request.headers.cookie.regex: invalid regular expression "(unclosed": Invalid regular expression: /(unclosed/: Unterminated group',
    ],
  },
  {
    name: "port selector oneof",
    type: "virtualservice",
    edit: (s) => (s.http[1].route[0].destination.port = { number: 9080, name: "http" }),
    want: [
      "VirtualService/default/reviews: spec.http[1].route[0].destination.port: only one of number, name may be set, got number and name",
    ],
  },
  {
    name: "fault delay oneof and abort status",
    type: "virtualservice",
    edit: (s) => {
      s.http[0].fault.delay.exponentialDelay = "1s";
      s.http[0].fault.abort = { percent: 5, httpStatus: 700 };
    },
    want: [
      "VirtualService/default/reviews: spec.http[0].fault.delay: only one of fixedDelay, exponentialDelay may be set, got fixedDelay and exponentialDelay",
      "VirtualService/default/reviews: spec.http[0].fault.abort.httpStatus: must be between 200 and 599, got 700",
    ],
  },
  {
    name: "route and redirect",
    type: "virtualservice",
    edit: (s) => {
      s.http[1].redirect = { uri: "/v1" };
      delete s.http[0].route;
    },
    want: [
      "VirtualService/default/reviews: spec.http[0]: an HTTP route must set route, redirect or delegate",
      "VirtualService/default/reviews: spec.http[1]: an HTTP route cannot set both redirect and route",
    ],
  },
  {
    name: "virtual service without routes",
    type: "virtualservice",
    edit: (s) => delete s.http,
    want: [
      "VirtualService/default/reviews: spec: a virtual service must set http, tls or tcp routes",
    ],
  },
  {
    name: "gateway tls needs certificates",
    type: "gateway",
    edit: (s) => {
      delete s.servers[1].tls.privateKey;
      s.servers[1].tls.mode = "MUTUAL";
    },
    want: [
      "Gateway/default/bookinfo-gateway: spec.servers[1].tls.privateKey: is required when mode is MUTUAL",
      "Gateway/default/bookinfo-gateway: spec.servers[1].tls.caCertificates: is required when mode is MUTUAL",
    ],
  },
  {
    name: "bad label key (cross-field checks wait for a clean subtree)",
    type: "destinationrule",
    edit: (s) => {
      s.subsets[1].name = "v1";
      s.subsets[2].labels = { "bad key!": "v3" };
    },
    want: [
      "DestinationRule/default/reviews: spec.subsets[2].labels[\"bad key!\"]: invalid label key \"bad key!\": name must be 1-63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric",
    ],
  },
  {
    name: "duplicate subset names",
    type: "destinationrule",
    edit: (s) => (s.subsets[1].name = "v1"),
    want: [
      'DestinationRule/default/reviews: spec.subsets[1].name: duplicate subset name "v1" (also at index 0)',
    ],
  },
  {
    name: "bad CIDR address",
    type: "serviceentry",
    edit: (s) => {
      s.resolution = "STATIC";
      s.endpoints[0].ports = { grpc: 9000 };
      s.addresses = ["10.0.0.0/40"];
    },
    want: [
      'ServiceEntry/default/external-svc-https: spec.addresses[0]: invalid address "10.0.0.0/40": must be an IP address or CIDR block',
    ],
  },
  {
    name: "service entry endpoints",
    type: "serviceentry",
    edit: (s) => {
      s.resolution = "STATIC";
      s.endpoints[0].ports = { grpc: 9000 };
    },
    want: [
      'ServiceEntry/default/external-svc-https: spec.endpoints[0].address: must be an IP address when resolution is STATIC, got "us-west.googleapis.com"',
      'ServiceEntry/default/external-svc-https: spec.endpoints[0].ports.grpc: port name "grpc" is not declared in ports',
    ],
  },
  {
    name: "authentication policy enums and oneof",
    type: "policy",
    edit: (s) => {
      s.principalBinding = "USE_BOTH";
      s.peers = [{ mtls: { mode: "LAX" } }, { mtls: {}, jwt: { issuer: "x" } }];
    },
    want: [
      'Policy/default/reviews-mtls: spec.peers[0].mtls.mode: must be one of STRICT, TLS_PERMISSIVE, PERMISSIVE, got "LAX"',
      "Policy/default/reviews-mtls: spec.peers[1]: only one of mtls, jwt may be set, got mtls and jwt",
      'Policy/default/reviews-mtls: spec.principalBinding: must be one of USE_PEER, USE_ORIGIN, got "USE_BOTH"',
    ],
  },
  {
    name: "role binding kind",
    type: "servicerolebinding",
    edit: (s) => (s.roleRef.kind = "ClusterRole"),
    want: [
      'ServiceRoleBinding/default/bind-products-viewer: spec.roleRef.kind: must be "ServiceRole", got "ClusterRole"',
    ],
  },
  {
    name: "empty subject",
    type: "servicerolebinding",
    edit: (s) => s.subjects.push({}),
    want: [
      "ServiceRoleBinding/default/bind-products-viewer: spec.subjects[2]: a subject must set user, group or properties",
    ],
  },
  {
    name: "service role without services",
    type: "servicerole",
    edit: (s) => (s.rules[0].services = []),
    want: [
      "ServiceRole/default/products-viewer: spec.rules[0].services: must have at least 1 item",
    ],
  },
  {
    name: "legacy route rule",
    type: "routerule",
    edit: (s) => {
      s.destination = { namespace: "default" };
      s.route[0].weight = 60;
      s.httpFault.abort.percent = 150.5;
    },
    want: [
      "RouteRule/default/reviews-test-v2: spec.destination: one of name, service is required",
      "RouteRule/default/reviews-test-v2: spec.route: route weights must sum to 100 when there is more than one destination, got 110",
      "RouteRule/default/reviews-test-v2: spec.httpFault.abort.percent: must be between 0 and 100, got 150.5",
    ],
  },
  {
    name: "bad egress protocol",
    type: "egressrule",
    edit: (s) => {
      s.destination = { name: "google" };
      s.ports[1].protocol = "ftp";
    },
    want: [
      'EgressRule/default/googleapis: spec.ports[1].protocol: must be one of HTTP, HTTPS, HTTP2, GRPC, TCP, MONGO, got "ftp"',
    ],
  },
  {
    name: "egress rule service",
    type: "egressrule",
    edit: (s) => (s.destination = { name: "google" }),
    want: [
      "EgressRule/default/googleapis: spec.destination.service: is required (egress rules name the external service by service)",
    ],
  },
  {
    name: "destination policy load balancing",
    type: "destinationpolicy",
    edit: (s) => {
      s.loadBalancing = { name: "WEIGHTED" };
      s.circuitBreaker.simpleCb.httpMaxEjectionPercent = -1;
    },
    want: [
      'DestinationPolicy/default/reviews-cb: spec.loadBalancing.name: must be one of ROUND_ROBIN, LEAST_CONN, RANDOM, got "WEIGHTED"',
      "DestinationPolicy/default/reviews-cb: spec.circuitBreaker.simpleCb.httpMaxEjectionPercent: must be between 0 and 100, got -1",
    ],
  },
  {
    name: "http api spec patterns",
    type: "httpapispec",
    edit: (s) => {
      delete s.patterns[0].httpMethod;
      s.patterns[1].uriTemplate = "/x";
      s.apiKeys.push({});
    },
    want: [
      "HTTPAPISpec/default/echo-spec: spec.patterns[0].httpMethod: is required",
      "HTTPAPISpec/default/echo-spec: spec.patterns[1]: only one of uriTemplate, regex may be set, got uriTemplate and regex",
      "HTTPAPISpec/default/echo-spec: spec.apiKeys[2]: one of query, header, cookie is required",
    ],
  },
  {
    name: "bindings need references",
    type: "httpapispecbinding",
    edit: (s) => {
      s.apiSpecs = [];
      s.services[0].namespace = "Default";
    },
    want: [
      "HTTPAPISpecBinding/default/echo-binding: spec.services[0].namespace: invalid namespace \"Default\": must be a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)",
      "HTTPAPISpecBinding/default/echo-binding: spec.apiSpecs: must have at least 1 item",
    ],
  },
  {
    name: "quota charge",
    type: "quotaspec",
    edit: (s) => (s.rules[0].quotas[0].charge = 0),
    want: [
      "QuotaSpec/istio-system/request-count: spec.rules[0].quotas[0].charge: must be at least 1, got 0",
    ],
  },
  {
    name: "quota spec binding",
    type: "quotaspecbinding",
    edit: (s) => delete s.quotaSpecs[0].name,
    want: ["QuotaSpecBinding/istio-system/request-count: spec.quotaSpecs[0].name: is required"],
  },
  {
    name: "policy-server rule shape",
    type: "rule",
    edit: (s) => {
      s.match = true;
      s.actions[0].instances = "denyreviewsv3request.checknothing";
      s.actions.push({ instances: ["a.metric"] });
    },
    want: [
      "rule/default/denyreviewsv3: spec.match: must be a string, got boolean true",
      'rule/default/denyreviewsv3: spec.actions[0].instances: must be a list, got string "denyreviewsv3request.checknothing"',
      "rule/default/denyreviewsv3: spec.actions[1].handler: is required",
    ],
  },
  {
    name: "attribute manifest value type",
    type: "attributemanifest",
    edit: (s) => (s.attributes["source.ip"].valueType = "IP"),
    want: [
      'attributemanifest/istio-system/kubernetes: spec.attributes["source.ip"].valueType: must be one of STRING, INT64, DOUBLE, BOOL, TIMESTAMP, IP_ADDRESS, EMAIL_ADDRESS, URI, DNS_NAME, DURATION, STRING_MAP, got "IP"',
    ],
  },
];

for (const c of CASES) {
  Deno.test(`normalizeObject() reports ${c.name} with its path when the ${c.type} spec has it`, () => {
    assert.deepEqual(specProblems(c.type, c.edit), c.want);
  });
}

Deno.test("normalizeObject() requires handler and instance specs to be objects", () => {
  for (
    const s of policySchemas.filter((p) =>
      p.policyCategory === "adapter" || p.policyCategory === "instance"
    )
  ) {
    const r = normalizeObject({
      apiVersion: "config.istio.io/v1alpha2",
      kind: s.kind,
      metadata: { name: "a" },
      spec: [1],
    }, "d");
    assert.deepEqual(formatIssues(r.issues), `${s.kind}/a: spec: must be an object, got a list`);
  }
});

Deno.test("normalizeObject() takes a VirtualService without hosts as a delegate: http routes only, no gateways", () => {
  const vs = (spec: Record<string, unknown>) =>
    normalizeObject({
      apiVersion: "networking.istio.io/v1",
      kind: "VirtualService",
      metadata: { name: "child", namespace: "team" },
      spec,
    }, "vs.yaml");
  const http = [{ route: [{ destination: { host: "reviews" } }] }];
  assert.deepEqual(vs({ http }).issues, []);
  assert.deepEqual(vs({ http, gateways: ["gw"] }).issues.map(formatIssue), [
    "VirtualService/team/child: spec.hosts: is required (a VirtualService without hosts is a delegate: http routes only, no gateways, no further delegate)",
  ]);
  assert.equal(vs({ http: [{ delegate: { name: "x" } }] }).issues.length, 1);
});

Deno.test("deepEqual() compares JSON values structurally, ignoring key order and undefined fields", () => {
  assert.ok(deepEqual({ a: [1, { b: 2 }], c: null }, { c: null, a: [1, { b: 2 }] }));
  assert.ok(deepEqual([], []));
  assert.ok(!deepEqual([1, 2], [1, 2, 3]));
  assert.ok(!deepEqual([1, 2], [2, 1]));
  assert.ok(!deepEqual({ a: 1 }, { a: 1, b: 2 }));
  assert.ok(!deepEqual({ a: 1, b: 2 }, { a: 1 }));
  assert.ok(!deepEqual({ a: 1 }, { b: 1 }));
  assert.ok(deepEqual({ a: undefined, b: 1 }, { b: 1 })); // as in JSON: undefined is absent
  assert.ok(!deepEqual([], {}));
  assert.ok(!deepEqual({}, []));
  assert.ok(!deepEqual({ 0: "a" }, ["a"]));
  assert.ok(!deepEqual(null, {}));
  assert.ok(!deepEqual({}, null));
  assert.ok(!deepEqual(1, "1"));
  assert.ok(!deepEqual({ a: { b: 1 } }, { a: { b: 2 } }));
});

Deno.test("deepEqual() tells an object from a primitive or another primitive, and [undefined] from []", () => {
  assert.ok(!deepEqual(1, 2));
  assert.ok(!deepEqual({}, 1));
  assert.ok(!deepEqual({}, ""));
  assert.ok(!deepEqual("", {}));
  assert.ok(!deepEqual([undefined], []));
});

Deno.test("groupBy() keeps each group in the items' order and the groups in first-seen order", () => {
  const groups = groupBy(["b1", "a1", "b2", "c1", "a2"], (s) => s[0]);
  assert.deepEqual([...groups], [["b", ["b1", "b2"]], ["a", ["a1", "a2"]], ["c", ["c1"]]]);
  assert.equal(groupBy([], String).size, 0);
});
