import assert from "node:assert/strict";
import {
  addAddress,
  addEndpoint,
  parsePorts,
  parseRegistration,
  removeAddress,
} from "./_registration.ts";

Deno.test("parsePorts() names bare ports like the reference (80 http, 443 https, 3306 mysql, else the number)", () => {
  assert.deepEqual(parsePorts(["80", "443", "3306", "9000", "admin:8081"]), [
    { name: "http", port: 80 },
    { name: "https", port: 443 },
    { name: "mysql", port: 3306 },
    { name: "9000", port: 9000 },
    { name: "admin", port: 8081 },
  ]);
});

Deno.test("addAddress() joins the subset with the same port set, never twice, else adds a subset", () => {
  const http = [{ name: "http", port: 80 }];
  let r = addAddress([], "10.0.0.1", http);
  r = addAddress(r.subsets, "10.0.0.2", http);
  assert.equal(r.added, true);
  assert.equal(addAddress(r.subsets, "10.0.0.2", http).added, false);
  r = addAddress(r.subsets, "10.0.0.2", [...http, { name: "tcp", port: 90 }]);
  assert.deepEqual(r.subsets.map((s) => (s.addresses ?? []).map((a) => a.ip)), [
    ["10.0.0.1", "10.0.0.2"],
    ["10.0.0.2"],
  ]);
  const d = removeAddress(r.subsets, "10.0.0.2");
  assert.equal(d.removed, true);
  assert.equal(d.subsets.length, 1, "the emptied subset is dropped");
  assert.equal(removeAddress(d.subsets, "10.0.0.9").removed, false);
});

Deno.test("addEndpoint() adds missing ports to the entry and merges ports of a known address", () => {
  const reg = (ip: string, ...ports: string[]) =>
    parseRegistration(["svc", ip, ...ports], {
      labels: [],
      annotations: [],
      serviceaccount: "default",
    });
  const spec = { hosts: ["svc.default.svc.cluster.local"], ports: [], endpoints: [] };
  const a = addEndpoint(spec, reg("10.0.0.1", "80"), "se");
  const b = addEndpoint(a.spec, reg("10.0.0.1", "grpc:7070"), "se");
  assert.equal(b.added, true);
  assert.deepEqual(b.spec.ports.map((p) => `${p.name}:${p.number}/${p.protocol}`), [
    "http:80/HTTP",
    "grpc:7070/GRPC",
  ]);
  assert.deepEqual(b.spec.endpoints, [{ address: "10.0.0.1", ports: { http: 80, grpc: 7070 } }]);
  assert.throws(() => addEndpoint(b.spec, reg("10.0.0.2", "web:80"), "se"), /names port 80 "http"/);
});

Deno.test("parsePorts() maps a service port to the instance's target port with name:port:targetPort", () => {
  assert.deepEqual(parsePorts(["http:80:8081", "tcp:90:90"]), [
    { name: "http", port: 80, targetPort: 8081 },
    { name: "tcp", port: 90 },
  ]);
  for (const bad of ["http:80:0", "http:80:x", "a:b:80:81", "http::8081"]) {
    assert.throws(() => parsePorts([bad]), /want \[name:\]port or name:port:targetPort/, bad);
  }
});

Deno.test("addEndpoint() and addAddress() put the target port on the instance, the service port on the entry", () => {
  const reg = parseRegistration(["echo", "10.0.0.5", "http:80:8081"], {
    labels: [],
    annotations: [],
    serviceaccount: "default",
  });
  const spec = { hosts: ["echo.default.svc.cluster.local"], ports: [], endpoints: [] };
  const r = addEndpoint(spec, reg, "se");
  assert.deepEqual(r.spec.ports, [{ number: 80, protocol: "HTTP", name: "http" }]);
  assert.deepEqual(r.spec.endpoints, [{ address: "10.0.0.5", ports: { http: 8081 } }]);
  assert.equal(addEndpoint(r.spec, reg, "se").added, false, "registered twice: no change");
  const sub = addAddress([], "10.0.0.5", reg.ports).subsets;
  assert.deepEqual(sub[0].ports, [{ name: "http", port: 8081, protocol: "TCP" }]);
  assert.equal(addAddress(sub, "10.0.0.5", reg.ports).added, false);
});
