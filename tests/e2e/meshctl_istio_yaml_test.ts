/**
 * `meshctl -p fs create` given Istio YAML as Istio users write it (tests/e2e/testdata/istio and
 * istio08): samples that bundle workload kinds with their mesh objects, kinds mesh does not
 * serve, Istio 0.8's partial egress wildcards and legacy kinds, duplicate keys.
 */
import assert from "node:assert/strict";
import { listFiles, meshctl, meshctlProcess, withDir } from "./_meshctl.ts";

const fs = (dir: string) => ["-p", "fs", "--configDir", dir];
const fixture = (path: string) => Deno.readTextFile(new URL(`./testdata/${path}`, import.meta.url));

Deno.test("meshctl create skips the workload kinds of an Istio sample with one line each and writes its mesh objects", async () => {
  await withDir(async (dir) => {
    const r = await meshctlProcess(["create", "-f", "-", ...fs(dir)], {
      stdin: await fixture("istio/bookinfo-details.yaml"),
    });
    assert.equal(r.code, 0, r.stderr);
    // on -p fs a Service is the ServiceEntry of the VMs registered with it: none are, so it is
    // skipped too (at its write), saying what to run
    assert.deepEqual(r.stderr.trimEnd().split("\n"), [
      "Skipped: stdin document 2: ServiceAccount bookinfo-details skipped (an orchestrator kind, not a mesh object)",
      "Skipped: stdin document 3: Deployment details-v1 skipped (an orchestrator kind, not a mesh object)",
      "Skipped: Service details (no instance is registered with service-entry/default/details yet: " +
      "on the fs platform a Service describes the ports of registered instances; first run " +
      "meshctl register details <ip> <name>:<port>[:<targetPort>])",
    ]);
    assert.match(
      r.stdout,
      /^Created config virtual-service\/default\/details at revision \w+\nCreated config destination-rule\/default\/details at revision \w+\n$/,
    );
    assert.deepEqual((await listFiles(dir)).sort(), [
      "default/destinationrules/details.yaml",
      "default/virtualservices/details.yaml",
    ]);
  });
});

Deno.test("meshctl create writes the good mesh objects of a mixed file and exits 1 when one fails", async () => {
  await withDir(async (dir) => {
    const text = (await fixture("istio/bookinfo-details.yaml")) +
      "---\napiVersion: networking.istio.io/v1alpha3\nkind: VirtualService\nmetadata: {name: bad}\nspec: {hosts: x}\n";
    const r = await meshctl(["create", "-f", "-", ...fs(dir)], { stdin: text });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^Error: stdin document 6: VirtualService\/default\/bad: spec\.hosts: /m,
    );
    assert.match(r.stderr, /^Error: stdin: 1 problem found; the other 3 objects will be created$/m);
    assert.equal(r.stdout.split("\n").filter((l) => l.startsWith("Created config")).length, 2);
  });
});

Deno.test("meshctl create --all-or-nothing refuses a mixed file and writes nothing", async () => {
  await withDir(async (dir) => {
    const r = await meshctl(["create", "--all-or-nothing", "-f", "-", ...fs(dir)], {
      stdin: await fixture("istio/bookinfo-details.yaml"),
    });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^Error: stdin document 3: kind Deployment is not known$/m);
    assert.match(r.stderr, /^Error: stdin: 2 problems found; nothing was created$/m);
    assert.equal(r.stdout, "");
    assert.deepEqual(await listFiles(dir), []);
  });
});

Deno.test("meshctl create refuses kinds mesh does not serve, naming each as not supported", async () => {
  await withDir(async (dir) => {
    const r = await meshctl(["create", "-f", "-", ...fs(dir)], {
      stdin: await fixture("istio/unsupported.yaml"),
    });
    assert.equal(r.code, 1);
    const lines = r.stderr.trimEnd().split("\n");
    assert.deepEqual(lines.slice(0, 6), [
      "Error: stdin document 1: kind Telemetry (telemetry.istio.io/v1) is not supported by mesh",
      "Error: stdin document 2: kind EnvoyFilter (networking.istio.io/v1alpha3) is not supported by mesh",
      "Error: stdin document 3: kind WasmPlugin (extensions.istio.io/v1alpha1) is not supported by mesh",
      "Error: stdin document 4: kind ProxyConfig (networking.istio.io/v1beta1) is not supported by mesh",
      "Error: stdin document 5: Gateway API kind Gateway (gateway.networking.k8s.io/v1) is not supported by mesh (write an Istio Gateway and VirtualService, networking.istio.io)",
      "Error: stdin document 6: Gateway API kind HTTPRoute (gateway.networking.k8s.io/v1) is not supported by mesh (write an Istio Gateway and VirtualService, networking.istio.io)",
    ]);
    assert.deepEqual(await listFiles(dir), []);
  });
});

Deno.test("meshctl create refuses a key given twice in one map, naming the key", async () => {
  await withDir(async (dir) => {
    const r = await meshctl(["create", "-f", "-", ...fs(dir)], {
      stdin: `apiVersion: networking.istio.io/v1alpha3
kind: VirtualService
metadata: {name: reviews}
spec:
  hosts: [reviews]
  http:
  - route:
    - destination: {host: reviews, subset: v1}
    route:
    - destination: {host: reviews, subset: v2}
`,
    });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^Error: stdin document 1: cannot parse YAML: key "route" is given twice in one map at line 9, column 5 \(each key may appear once; remove one of them\)$/m,
    );
  });
});

Deno.test("meshctl create takes Istio 0.8's partial egress wildcards and warns that legacy kinds are not served", async () => {
  await withDir(async (dir) => {
    const r = await meshctl(["create", "-f", "-", ...fs(dir)], {
      stdin: await fixture("istio08/egress.yaml"),
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout.split("\n").filter((l) => l.startsWith("Created config egress-rule/")).length,
      2,
    );
    assert.equal(
      r.stderr,
      "Warning: EgressRule is stored but not served (no proxy configuration is generated from it): " +
        "convert it with `meshctl experimental convert-networking-config -f <file>` and create the " +
        "VirtualService, DestinationRule and ServiceEntry objects it prints\n",
    );
    const bad = await meshctl(["create", "-f", "-", ...fs(dir)], {
      stdin: (await fixture("istio08/egress.yaml")).replace('"*-bar.foo.com"', '"*_bar.foo.com"')
        .replace("name: google", "name: google2"),
    });
    assert.equal(bad.code, 1);
    assert.match(
      bad.stderr,
      /spec\.destination\.service: invalid host "\*_bar\.foo\.com": label "a_bar"/,
    );
  });
});

Deno.test("meshctl create takes the networking kinds under v1beta1 and v1 (Istio's groups and ours), stored as v1alpha3", async () => {
  await withDir(async (dir) => {
    const r = await meshctlProcess(["create", "-f", "-", ...fs(dir)], {
      stdin: await fixture("istio/networking-v1.yaml"),
    });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.trimEnd().split("\n").map((l) => l.split(" ")[2]), [
      "gateway/default/bookinfo-gateway",
      "virtual-service/default/bookinfo",
      "destination-rule/default/reviews",
      "service-entry/default/httpbin-ext",
      "virtual-service/default/ratings",
    ]);
    const stored = await Deno.readTextFile(`${dir}/default/virtualservices/bookinfo.yaml`);
    assert.match(stored, /^apiVersion: networking\.mesh\.io\/v1alpha3$/m);
    const get = await meshctl(["get", "destinationrule", "reviews", "-o", "yaml", ...fs(dir)]);
    assert.equal(get.code, 0, get.stderr);
    assert.match(get.stdout, /apiVersion: networking\.mesh\.io\/v1alpha3/);
    const bad = await meshctl(["create", "-f", "-", ...fs(dir)], {
      stdin: "apiVersion: networking.istio.io/v2\nkind: VirtualService\nmetadata: {name: x}\n" +
        "spec: {hosts: [x]}\n",
    });
    assert.equal(bad.code, 1);
    assert.match(
      bad.stderr,
      /apiVersion: kind VirtualService belongs to networking\.mesh\.io\/v1alpha3\|v1beta1\|v1 \(or networking\.istio\.io\/v1alpha3\|v1beta1\|v1\), got "networking\.istio\.io\/v2"/,
    );
  });
});

Deno.test("meshctl create warns, per object, about fields it accepts but does not yet serve", async () => {
  await withDir(async (dir) => {
    const r = await meshctl(["create", "-f", "-", ...fs(dir)], {
      stdin: `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews}
spec:
  hosts: [reviews]
  exportTo: ["."]
  tls:
  - match: [{sniHosts: [reviews.example.com]}]
    route: [{destination: {host: reviews}}]
  http:
  - name: default
    route: [{destination: {host: reviews}}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: public}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: ["./bookinfo.example.com"]
    tls: {mode: SIMPLE, credentialName: bookinfo-cert, minProtocolVersion: TLSV1_2}
`,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stderr.trimEnd().split("\n"), [
      "Warning: virtual-service/default/reviews: spec.tls[]: accepted, not yet served: TLS routes by SNI are served on Gateways' passthrough servers only; sidecars do not route by SNI (use tcp routes)",
      "Warning: gateway/default/public: spec.servers[].tls.minProtocolVersion: accepted, not yet served: Envoy's default TLS versions",
    ]);
  });
});
