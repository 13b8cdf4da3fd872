/**
 * meshctl experimental convert-networking-config: golden output and warnings for a bookinfo-like
 * v1alpha1 set (the conversions of reference §5.8); the output is accepted by meshctl create and
 * by the orchestrator's API (kubectl --dry-run=server); input and output problems.
 */
import assert from "node:assert/strict";
import { kubectlAvailable, runKubectl } from "../harness/kubectl.ts";
import { listFiles, meshctl, meshctlProcess, startKubeWithCrds, withDir } from "./_meshctl.ts";

const DATA = new URL("./testdata/convert/", import.meta.url);
const UPDATE = Deno.env.get("UPDATE_GOLDEN") === "1";
const INPUT = new URL("bookinfo-v1alpha1.yaml", DATA).pathname;
const CONVERT = ["experimental", "convert-networking-config"];

async function golden(name: string, text: string) {
  const file = new URL(name, DATA);
  if (UPDATE) await Deno.writeTextFile(file, text);
  assert.equal(text, await Deno.readTextFile(file), `${name} differs (UPDATE_GOLDEN=1)`);
}

Deno.test("convert-networking-config turns the bookinfo v1alpha1 set into v1alpha3 (golden), warning about what is lost", async () => {
  const r = await meshctlProcess([...CONVERT, "-f", INPUT]);
  assert.equal(r.code, 0, r.stderr);
  await golden("bookinfo-v1alpha3.yaml", r.stdout);
  await golden("bookinfo-warnings.txt", r.stderr);
  assert.ok(r.stderr.split("\n").filter((l) => l).every((l) => l.startsWith("Warning: ")));

  // the output is what meshctl and the orchestrator accept
  await withDir(async (dir) => {
    const c = await meshctl(["create", "-f", "-", "-p", "fs", "--configDir", dir], {
      stdin: r.stdout,
    });
    assert.equal(c.code, 0, c.stderr);
    assert.equal(c.stdout.trimEnd().split("\n").length, 10);
    assert.ok((await listFiles(dir)).includes("bookinfo/destinationrules/reviews.yaml"));
  });
  assert.ok(await kubectlAvailable(), "kubectl is on PATH");
  await using kube = await startKubeWithCrds();
  await kube.upsert({ apiVersion: "v1", kind: "Namespace", metadata: { name: "bookinfo" } });
  const k = await runKubectl(kube.kubeconfigPath, ["apply", "--dry-run=server", "-f", "-"], {
    stdin: r.stdout,
  });
  assert.equal(k.code, 0, k.stderr);
  assert.match(
    k.stdout,
    /^virtualservice\.networking\.mesh\.io\/reviews created \(server dry run\)$/m,
  );
});

Deno.test("convert-networking-config: several files, namespace of the first input, -o writes a file", async () => {
  await withDir(async (dir) => {
    await Deno.writeTextFile(
      `${dir}/a.yaml`,
      `apiVersion: config.istio.io/v1alpha2
kind: RouteRule
metadata: {name: to-v2, namespace: team}
spec:
  destination: {name: web}
  route: [{labels: {version: v2}}]
`,
    );
    await Deno.writeTextFile(
      `${dir}/b.yaml`,
      `apiVersion: config.istio.io/v1alpha2
kind: EgressRule
metadata: {name: example}
spec:
  destination: {service: example.com}
  ports: [{port: 443, protocol: HTTPS}]
`,
    );
    const r = await meshctl([...CONVERT, "-f", "a.yaml", "-f", "b.yaml", "-o", "out.yaml"], {
      cwd: dir,
    });
    assert.deepEqual(r, { code: 0, stdout: "", stderr: "" });
    const out = await Deno.readTextFile(`${dir}/out.yaml`);
    assert.equal(
      out,
      `apiVersion: networking.mesh.io/v1alpha3
kind: DestinationRule
metadata:
  name: web
  namespace: team
spec:
  host: web
  subsets:
    - name: version-v2
      labels:
        version: v2
---
apiVersion: networking.mesh.io/v1alpha3
kind: VirtualService
metadata:
  name: web
  namespace: team
spec:
  hosts:
    - web
  http:
    - route:
        - destination:
            host: web
            subset: version-v2
          weight: 100
---
apiVersion: networking.mesh.io/v1alpha3
kind: ServiceEntry
metadata:
  name: example
  namespace: team
spec:
  hosts:
    - example.com
  ports:
    - number: 443
      protocol: HTTPS
      name: https-443
  resolution: NONE
`,
    );
    // standard input, comma-separated -f too
    const s = await meshctl([...CONVERT, "-f", "-"], {
      stdin: await Deno.readTextFile(`${dir}/b.yaml`),
    });
    assert.match(s.stdout, /namespace: default\n/);
    const both = await meshctl([...CONVERT, "-f", "b.yaml,a.yaml"], { cwd: dir });
    // the first input is in default: outputs go there, and the rule of team names its host in full
    assert.match(both.stdout, /name: web\.team\.svc\.cluster\.local\n {2}namespace: default\n/);
    assert.match(both.stdout, /host: web\.team\.svc\.cluster\.local\n/);
  });
});

Deno.test("convert-networking-config refuses other kinds, invalid inputs and bad flags; flags invalid outputs", async () => {
  await withDir(async (dir) => {
    await Deno.writeTextFile(
      `${dir}/mixed.yaml`,
      `apiVersion: networking.istio.io/v1alpha3
kind: VirtualService
metadata: {name: x}
spec: {hosts: [x], http: [{route: [{destination: {host: x}}]}]}
---
apiVersion: v1
kind: Service
metadata: {name: y}
---
apiVersion: config.istio.io/v1alpha2
kind: RouteRule
metadata: {name: bad}
spec:
  destination: {name: Web}
`,
    );
    const r = await meshctl([...CONVERT, "-f", "mixed.yaml"], { cwd: dir });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "");
    assert.equal(
      r.stderr,
      "Error: unsupported kind: VirtualService, Service (want RouteRule, DestinationPolicy, EgressRule, Ingress)\n" +
        "Error: mixed.yaml document 3: RouteRule/default/bad: spec.destination.name: invalid service name \"Web\": must be a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters)\n" +
        "Error: nothing was converted\n",
    );
    const none = await meshctl([...CONVERT]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /^Error: no input: give -f <file>/);
    const mix = await meshctl([...CONVERT, "-f", "-", "-f", "a.yaml"]);
    assert.equal(mix.code, 2);
    assert.match(mix.stderr, /^Error: -f - \(standard input\) cannot be combined with other files/);
    const missing = await meshctl([...CONVERT, "-f", "nope.yaml"], { cwd: dir });
    assert.deepEqual(missing, {
      code: 1,
      stdout: "",
      stderr: 'Error: Cannot read "nope.yaml": no such file\n',
    });

    // a wildcard destination becomes a mesh-bound VirtualService on "*": written, but flagged
    const wild = await meshctl([...CONVERT, "-f", "-"], {
      stdin: `apiVersion: config.istio.io/v1alpha2
kind: RouteRule
metadata: {name: all}
spec:
  destination: {service: "*"}
  httpReqTimeout: {simpleTimeout: {timeout: 5s}}
`,
    });
    assert.equal(wild.code, 1);
    assert.match(wild.stdout, /name: wildcard\n/);
    assert.equal(
      wild.stderr,
      'Error: output config(s) are invalid: VirtualService/default/wildcard: spec.hosts[0]: wildcard host "*" is not allowed for virtual services bound to the mesh gateway\n',
    );
  });
});
