import assert from "node:assert/strict";
import {
  DebugInputError,
  DebugRegistry,
  parseDebugInstance,
  parseDebugService,
} from "./debug_registry.ts";

const HOST = "svc.debug.svc.cluster.local";

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
  for (const [body, want] of cases) {
    assert.throws(() => parseDebugService(HOST, body), (e: Error) => {
      assert.ok(e instanceof DebugInputError);
      assert.match(e.message, want);
      return true;
    });
  }
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
});
