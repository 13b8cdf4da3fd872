import assert from "node:assert/strict";
import {
  DebugInputError,
  DebugRegistry,
  parseDebugInstance,
  parseDebugService,
} from "./debug_registry.ts";

const HOST = "svc.debug.svc.cluster.local";

/** Asserts that `fn` throws a DebugInputError whose message matches `want` (`what`: the input). */
function rejects(fn: () => unknown, want: RegExp, what: string): void {
  assert.throws(fn, (e: Error) => {
    assert.ok(e instanceof DebugInputError, `${e}`);
    assert.match(e.message, want);
    return true;
  }, what);
}

Deno.test("parseDebugService() fills the defaults and upper-cases the protocol", () => {
  assert.deepEqual(
    parseDebugService(HOST, { ports: [{ name: "http", port: 80, protocol: "http" }] }),
    {
      hostname: HOST,
      address: "0.0.0.0",
      ports: [{ name: "http", port: 80, protocol: "HTTP" }],
      namespace: "",
      meshExternal: false,
      resolution: "ClientSideLB",
      serviceAccounts: [],
      registry: "memAdapter",
    },
  );
});

Deno.test("parseDebugService() names the field of a bad body", () => {
  const cases: [unknown, RegExp][] = [
    [[], /Service body: must be a JSON object/],
    [{ hostname: "other", ports: [{ port: 1 }] }, /Service hostname "other": must equal svc/],
    [{ ports: [{ port: 1, protocol: "SMTP" }] }, /ports\[0\]\.protocol: must be one of HTTP/],
    [{ ports: [{ name: "a", port: 1 }, { name: "a", port: 2 }] }, /duplicate port a/],
    [{ ports: [{ port: 1 }], resolution: "Magic" }, /Service resolution: must be one of/],
    [{ ports: [{ port: 1 }], serviceAccounts: [1] }, /serviceAccounts: must be a list of strings/],
  ];
  for (const [body, want] of cases) rejects(() => parseDebugService(HOST, body), want, `${body}`);
});

Deno.test("parseDebugService() and parseDebugInstance() check every field, each error naming it", () => {
  const P = [{ name: "http", port: 80 }];
  const services: [string, unknown, RegExp][] = [
    ["", { ports: P }, /^Query parameter svc: must name a service hostname$/],
    ["bad_host!", { ports: P }, /^Query parameter svc "bad_host!": not a valid hostname$/],
    [`${"a".repeat(63)}.`.repeat(4) + "b", { ports: P }, /: not a valid hostname$/], // 257 chars
    [HOST, { ports: P, colour: 1 }, /^Service body: unknown field colour$/],
    [HOST, {}, /^Service ports: must be a non-empty list, got nothing$/],
    [HOST, { ports: {} }, /^Service ports: must be a non-empty list, got \{\}$/],
    [HOST, { ports: [1] }, /^Service ports\[0\]: must be an object, got 1$/],
    [
      HOST,
      { ports: [{ name: 5, port: 1 }] },
      /^Service ports\[0\]\.name: must be a string, got 5$/,
    ],
    [HOST, { ports: [{ port: 0 }] }, /ports\[0\]\.port: must be a port from 1 to 65535, got 0$/],
    [HOST, { ports: [{ port: 65536 }] }, /\.port: must be a port from 1 to 65535, got 65536$/],
    [HOST, { ports: [{ port: 1.5 }] }, /\.port: must be a port from 1 to 65535, got 1\.5$/],
    [HOST, { ports: [{ port: "80" }] }, /\.port: must be a port from 1 to 65535, got "80"$/],
    [HOST, { ports: [{ port: 80, protocol: 1 }] }, /\.protocol: must be one of HTTP/],
    [HOST, { ports: P, meshExternal: "yes" }, /^Service meshExternal: must be a boolean$/],
    [HOST, { ports: P, attributes: { a: 1 } }, /^Service attributes: must be a map of strings$/],
    [HOST, { ports: P, attributes: ["a"] }, /^Service attributes: must be a map of strings$/],
    [HOST, { ports: P, address: 5 }, /^Service address: must be a string, got 5$/],
    [HOST, { ports: P, namespace: false }, /^Service namespace: must be a string, got false$/],
  ];
  for (const [svc, body, want] of services) {
    rejects(() => parseDebugService(svc, body), want, JSON.stringify(body));
  }
  const ok = parseDebugService(HOST, {
    hostname: HOST,
    ports: [{ port: 65535 }],
    meshExternal: true,
    attributes: { team: "a" },
    namespace: "ns",
    address: "10.1.0.1",
  });
  assert.deepEqual(
    [ok.ports[0].port, ok.meshExternal, ok.attributes, ok.namespace, ok.address],
    [65535, true, { team: "a" }, "ns", "10.1.0.1"],
  );
  const svc = parseDebugService(HOST, { ports: P });
  const instances: [unknown, RegExp][] = [
    ["x", /^Instance body: must be a JSON object$/],
    [{ address: "10.0.0.1", servicePort: 80, weight: 1 }, /^Instance body: unknown field weight$/],
    [
      { hostname: "other", address: "10.0.0.1", servicePort: 80 },
      /^Instance hostname "other": must equal svc "svc\.debug\.svc\.cluster\.local"$/,
    ],
    [{ address: "10.0.0.1", servicePort: 80, port: 0 }, /^Instance port: must be a port from 1/],
    [{ address: "10.0.0.1", servicePort: 80, port: 65536 }, /^Instance port: must be a port/],
    [{ address: "10.0.0.1", servicePort: 80, labels: { a: 1 } }, /^Instance labels: must be a map/],
    [{ address: "10.0.0.1", servicePort: 80, locality: 3 }, /^Instance locality: must be a string/],
  ];
  for (const [body, want] of instances) {
    rejects(() => parseDebugInstance(HOST, body, svc), want, JSON.stringify(body));
  }
  const i = parseDebugInstance(HOST, {
    hostname: HOST,
    address: "10.0.0.1",
    servicePort: 80,
    port: 65535,
    labels: { v: "1" },
    locality: "eu/a",
    serviceAccount: "sa",
  }, svc);
  assert.deepEqual([i.port, i.labels, i.locality, i.serviceAccount], [
    65535,
    { v: "1" },
    "eu/a",
    "sa",
  ]);
});

Deno.test("parseDebugInstance() resolves the service port by name, number or object", () => {
  const svc = parseDebugService(HOST, {
    ports: [{ name: "http", port: 80 }, { name: "tcp", port: 90 }],
  });
  for (const servicePort of ["tcp", 90, { name: "tcp" }, { port: 90 }]) {
    const i = parseDebugInstance(HOST, { address: "10.0.0.1", servicePort }, svc);
    assert.deepEqual(i.servicePort, { name: "tcp", port: 90, protocol: "TCP" });
    assert.equal(i.port, 90, "port defaults to the service port");
  }
  assert.throws(
    () => parseDebugInstance(HOST, { address: "10.0.0.1", servicePort: "udp" }, svc),
    /servicePort "udp": not a port of .* \(ports: http\/80, tcp\/90\)/,
  );
  assert.throws(
    () => parseDebugInstance(HOST, { address: "", servicePort: "tcp" }, svc),
    /Instance address: must be a non-empty string/,
  );
  assert.throws(() => parseDebugInstance(HOST, { address: "x" }, undefined), /no such service/);
});

Deno.test("parseDebugInstance() rejects an address Envoy would NACK, naming address", () => {
  const svc = parseDebugService(HOST, { ports: [{ name: "http", port: 80 }] });
  const dns = parseDebugService(HOST, { ports: [{ name: "http", port: 80 }], resolution: "DNSLB" });
  const bad = (address: string, s = svc) =>
    assert.throws(
      () => parseDebugInstance(HOST, { address, servicePort: "http" }, s),
      (e: Error) => {
        assert.ok(e instanceof DebugInputError);
        assert.match(e.message, /^Instance address /);
        return true;
      },
    );
  bad("not-an-ip");
  bad("10.0.0.256");
  bad("unix://relative.sock");
  bad("-bad-.example.com", dns);
  for (const address of ["10.0.0.1", "fd00::1", "unix:///var/run/a.sock"]) {
    assert.equal(parseDebugInstance(HOST, { address, servicePort: "http" }, svc).address, address);
  }
  const i = parseDebugInstance(HOST, { address: "db.example.com", servicePort: 80 }, dns);
  assert.equal(i.address, "db.example.com", "a DNS name is fine for a DNSLB service");
  assert.throws(
    () => parseDebugInstance(HOST, { address: "not-an-ip", servicePort: "http" }, svc),
    /Instance address "not-an-ip": must be an IP address or unix:\/\/\/path \(a DNS name only when the service resolution is DNSLB/,
  );
});

Deno.test("parseDebugInstance() reports a missing servicePort as required", () => {
  const svc = parseDebugService(HOST, { ports: [{ name: "http", port: 80 }] });
  assert.throws(
    () => parseDebugInstance(HOST, { address: "10.0.0.1" }, svc),
    /^DebugInputError: Instance servicePort: is required: a port name, number or \{name\|port\} of svc\.debug\.svc\.cluster\.local \(ports: http\/80\)$/,
  );
});

Deno.test("DebugRegistry reports services and endpoints changes and replaces a repeated instance", () => {
  const r = new DebugRegistry();
  const kinds: string[] = [];
  r.onChange((k, hosts) => kinds.push(hosts ? `${k} ${[...hosts]}` : k));
  const svc = parseDebugService(HOST, { ports: [{ name: "http", port: 80 }] });
  r.addService(svc);
  r.addInstance(parseDebugInstance(HOST, { address: "10.0.0.1", servicePort: 80 }, svc));
  r.addInstance(
    parseDebugInstance(HOST, { address: "10.0.0.1", servicePort: 80, labels: { v: "2" } }, svc),
  );
  assert.deepEqual(kinds, ["services", `endpoints ${HOST}`, `endpoints ${HOST}`]);
  assert.equal(r.instances().length, 1);
  assert.deepEqual(r.instances()[0].labels, { v: "2" });
  const list = r.instances();
  assert.equal(r.instances(), list, "the same list until the next change");
  r.addInstance(parseDebugInstance(HOST, { address: "10.0.0.2", servicePort: 80 }, svc));
  assert.deepEqual(r.instances().map((i) => i.address), ["10.0.0.1", "10.0.0.2"]);
  assert.equal(list.length, 1, "a list handed out is never changed");
  assert.equal(r.instancesOf(new Set([HOST])).length, 2);
  assert.deepEqual(r.instancesOf(new Set(["other"])), []);
  // the same address on another port, another service port, or for another service: kept apart
  const two = parseDebugService(HOST, { ports: [{ name: "http", port: 80 }, { port: 90 }] });
  const other = parseDebugService("other.debug", { ports: [{ name: "http", port: 80 }] });
  r.addService(two);
  r.addService(other);
  r.addInstance(parseDebugInstance(HOST, { address: "10.0.0.1", servicePort: 80, port: 81 }, two));
  r.addInstance(parseDebugInstance(HOST, { address: "10.0.0.1", servicePort: 90, port: 80 }, two));
  r.addInstance(parseDebugInstance("other.debug", { address: "10.0.0.1", servicePort: 80 }, other));
  assert.deepEqual(r.instances().map((i) => `${i.hostname} ${i.servicePort.port} ${i.port}`), [
    `${HOST} 80 80`,
    `${HOST} 80 80`,
    `${HOST} 80 81`,
    `${HOST} 90 80`,
    "other.debug 80 80",
  ]);
});
