/**
 * meshctl kube-inject: built-in template without a cluster, stdin and atomic -o, flag errors,
 * config maps read from the fake API server through -c/-i, --emitTemplate round trip, and
 * kubectl apply of the injected output.
 */
import assert from "node:assert/strict";
import { parse } from "../../lib/deps/yaml.ts";
import { startFakeKube } from "../harness/fake_kube.ts";
import { kubectlAvailable, runKubectl } from "../harness/kubectl.ts";
import { listFiles, meshctl, meshctlProcess, withDir } from "./_meshctl.ts";

const TESTDATA = new URL("../../lib/inject/testdata/", import.meta.url).pathname;
const BUILTIN = ["--hub", "docker.io/mesh", "--tag", "test"];

const POD = `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
  labels: {app: web}
spec:
  containers:
  - name: web
    image: nginx
    ports: [{containerPort: 80}]
`;

Deno.test("meshctl kube-inject --hub --tag injects every workload kind without a cluster (golden)", async () => {
  const r = await meshctlProcess([
    "kube-inject",
    ...BUILTIN,
    "-c",
    "/nonexistent/kubeconfig",
    "-f",
    `${TESTDATA}/all-kinds.in.yaml`,
  ]);
  assert.equal(r.stderr, "");
  assert.equal(r.code, 0);
  assert.equal(r.stdout, await Deno.readTextFile(`${TESTDATA}/all-kinds.out.yaml`));
});

Deno.test("meshctl kube-inject reads - from stdin and writes -o atomically; skips are on stderr", async () => {
  await withDir(async (dir) => {
    const input = await Deno.readTextFile(`${TESTDATA}/skipped.in.yaml`);
    const r = await meshctl(["kube-inject", ...BUILTIN, "-f", "-", "-o", `${dir}/out.yaml`], {
      stdin: input + "---\n" + POD,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /Skipping injection because "hostnet" has host networking enabled/);
    const out = await Deno.readTextFile(`${dir}/out.yaml`);
    assert.ok(out.startsWith(input), "skipped documents pass through unchanged");
    const pod = parse(out.slice(input.length + 4));
    assert.deepEqual(pod.spec.containers.map((c: { name: string }) => c.name), [
      "web",
      "mesh-proxy",
    ]);
    assert.deepEqual(await listFiles(dir), ["out.yaml"]);
  });
});

Deno.test("meshctl kube-inject: bad YAML names the document and writes nothing", async () => {
  await withDir(async (dir) => {
    const r = await meshctl(["kube-inject", ...BUILTIN, "-f", "-", "-o", `${dir}/out.yaml`], {
      stdin: POD + "---\nkind: Service\n---\nmetadata: {name: [\n",
    });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^Error: stdin: document 3: cannot parse YAML: /);
    assert.deepEqual(await listFiles(dir), []);
    const bad = await meshctl(["kube-inject", ...BUILTIN, "-f", "-"], {
      stdin: POD.replace(
        "labels: {app: web}",
        "annotations: {sidecar.mesh.io/interceptionMode: NAT}",
      ),
    });
    assert.equal(bad.code, 1);
    assert.equal(bad.stdout, "");
    assert.match(
      bad.stderr,
      /^Error: stdin: document 1 \(Pod "web"\): annotation sidecar.mesh.io\/interceptionMode: must be REDIRECT or TPROXY, got "NAT"\n/,
    );
  });
});

Deno.test("meshctl kube-inject refuses bad flag combinations and values (exit 2)", async () => {
  const cases: [string[], RegExp][] = [
    [["kube-inject", ...BUILTIN], /filename not specified \(see --filename or -f\)/],
    [
      ["kube-inject", "--injectConfigFile", "a", "--injectConfigMapName", "b", "-f", "x"],
      /cannot be used together/,
    ],
    [["kube-inject", "--hub", "h", "-f", "x"], /--hub and --tag must be given together/],
    [
      ["kube-inject", ...BUILTIN, "--includeIPRanges", "10.0.0.0/40", "-f", "x"],
      /--includeIPRanges: "10.0.0.0\/40" is not a CIDR/,
    ],
    [
      ["kube-inject", ...BUILTIN, "--excludeInboundPorts", "*", "-f", "x"],
      /--excludeInboundPorts: "\*" is not allowed/,
    ],
    [
      ["kube-inject", ...BUILTIN, "--imagePullPolicy", "Sometimes", "-f", "x"],
      /--imagePullPolicy: must be one of/,
    ],
    [
      ["kube-inject", "--emitTemplate", "-f", "x"],
      /--emitTemplate cannot be combined with --filename/,
    ],
  ];
  for (const [args, re] of cases) {
    const r = await meshctl(args);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, re);
  }
});

Deno.test("meshctl kube-inject --emitTemplate output works as --injectConfigFile, with the template parameters", async () => {
  await withDir(async (dir) => {
    const emitted = await meshctl([
      "kube-inject",
      "--emitTemplate",
      ...BUILTIN,
      "--includeIPRanges",
      "10.0.0.0/8",
    ]);
    assert.equal(emitted.code, 0, emitted.stderr);
    const cfg = parse(emitted.stdout);
    assert.equal(cfg.policy, "enabled");
    assert.match(
      cfg.template,
      /\[\[ annotation \.ObjectMeta "traffic\.sidecar\.mesh\.io\/includeOutboundIPRanges" "10\.0\.0\.0\/8"/,
    );
    await Deno.writeTextFile(`${dir}/inject.yaml`, emitted.stdout);
    await Deno.writeTextFile(
      `${dir}/mesh.yaml`,
      "defaultConfig:\n  discoveryAddress: disco.mesh-system:15007\n",
    );
    await Deno.writeTextFile(`${dir}/pod.yaml`, POD);
    const a = await meshctl([
      "kube-inject",
      "--injectConfigFile",
      `${dir}/inject.yaml`,
      "--meshConfigFile",
      `${dir}/mesh.yaml`,
      "-f",
      `${dir}/pod.yaml`,
    ]);
    assert.equal(a.code, 0, a.stderr);
    const pod = parse(a.stdout);
    const init = pod.spec.initContainers[0];
    assert.deepEqual(init.args.slice(0, 10), [
      "-p",
      "15001",
      "-u",
      "1337",
      "-m",
      "REDIRECT",
      "-i",
      "10.0.0.0/8",
      "-x",
      "",
    ]);
    const proxy = pod.spec.containers[1];
    assert.equal(
      proxy.args[proxy.args.indexOf("--discoveryAddress") + 1],
      "disco.mesh-system:15007",
    );
  });
});

Deno.test("meshctl kube-inject reads the config maps of -i through -c; a missing one is named", async () => {
  await using kube = await startFakeKube();
  const emitted = await meshctl([
    "kube-inject",
    "--emitTemplate",
    "--hub",
    "reg.local",
    "--tag",
    "v9",
  ]);
  kube.upsert({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "mesh-sidecar-injector", namespace: "mesh-system" },
    data: { config: emitted.stdout },
  });
  const c = ["-c", kube.kubeconfigPath];
  const missing = await meshctl(["kube-inject", ...c, "-f", "-"], { stdin: POD });
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^Error: config map mesh-system\/mesh not found\n/);
  kube.upsert({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "mesh", namespace: "mesh-system" },
    data: { mesh: "defaultConfig:\n  discoveryAddress: pilot.mesh-system:15007\n" },
  });
  const r = await meshctl(["kube-inject", ...c, "-f", "-"], { stdin: POD });
  assert.equal(r.code, 0, r.stderr);
  const pod = parse(r.stdout);
  assert.equal(pod.spec.containers[1].image, "reg.local/proxy:v9");
  assert.ok(pod.spec.containers[1].args.includes("pilot.mesh-system:15007"));
  const otherNs = await meshctl(["kube-inject", ...c, "-i", "other", "-f", "-"], { stdin: POD });
  assert.equal(otherNs.code, 1);
  assert.match(otherNs.stderr, /config map other\/mesh-sidecar-injector not found/);
});

Deno.test("kubectl apply accepts kube-inject output and stores the injected pod", async () => {
  if (!(await kubectlAvailable())) throw new Error("kubectl is required (Debian package kubectl)");
  await using kube = await startFakeKube();
  const injected = await meshctl(["kube-inject", ...BUILTIN, "-f", "-"], { stdin: POD });
  assert.equal(injected.code, 0, injected.stderr);
  const r = await runKubectl(kube.kubeconfigPath, ["apply", "-f", "-"], { stdin: injected.stdout });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /pod\/web created/);
  const stored = kube.get("pods", "default", "web")!;
  const spec = stored.spec as {
    containers: { name: string }[];
    initContainers: { name: string }[];
  };
  assert.deepEqual(spec.containers.map((c) => c.name), ["web", "mesh-proxy"]);
  assert.deepEqual(spec.initContainers.map((c) => c.name), ["mesh-init", "enable-core-dump"]);
});
