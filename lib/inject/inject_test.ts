import assert from "node:assert/strict";
import { parse } from "../deps/yaml.ts";
import { defaultMeshConfig } from "../model/meshconfig.ts";
import { jsonPatch } from "../../tests/harness/_patch.ts";
import {
  injectionRequired,
  Injector,
  injectStream,
  STATUS_ANNOTATION,
  validateAnnotations,
} from "./mod.ts";
import { testInjector } from "./testing.ts";

const TESTDATA = new URL("./testdata/", import.meta.url);

async function golden(name: string, actual: string) {
  const url = new URL(name, TESTDATA);
  if (Deno.env.get("UPDATE_GOLDEN")) await Deno.writeTextFile(url, actual);
  assert.equal(
    actual,
    await Deno.readTextFile(url),
    `${name} differs (UPDATE_GOLDEN=1 to regenerate)`,
  );
}

for (const name of ["all-kinds", "annotations", "skipped", "reinject-legacy", "grpc-agent"]) {
  Deno.test(`injectStream() output of ${name}.in.yaml equals ${name}.out.yaml`, async () => {
    const input = await Deno.readTextFile(new URL(`${name}.in.yaml`, TESTDATA));
    const r = injectStream(input, testInjector());
    await golden(
      `${name}.out.yaml`,
      r.output +
        (r.messages.length ? `# messages:\n${r.messages.map((m) => `# ${m}\n`).join("")}` : ""),
    );
  });
}

Deno.test("injectStream() is idempotent: injecting injected output changes nothing", async () => {
  for (const name of ["all-kinds", "annotations", "reinject-legacy", "grpc-agent"]) {
    const input = await Deno.readTextFile(new URL(`${name}.in.yaml`, TESTDATA));
    const once = injectStream(input, testInjector()).output;
    const twice = injectStream(once, testInjector()).output;
    assert.equal(twice, once, name);
  }
});

Deno.test("injectStream() replaces what another template injected, never duplicates", () => {
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p" },
    spec: { containers: [{ name: "app", image: "a" }] },
  };
  const other = new Injector({
    policy: "enabled",
    template:
      "containers:\n- name: old-sidecar\n  image: old\nvolumes:\n- name: old-vol\n  emptyDir: {}\n",
    meshConfig: defaultMeshConfig(),
  });
  const first = other.inject(pod);
  assert.deepEqual(first.spec.containers.map((c: { name: string }) => c.name), [
    "app",
    "old-sidecar",
  ]);
  const second = testInjector().inject(first);
  assert.deepEqual(second.spec.containers.map((c: { name: string }) => c.name), [
    "app",
    "mesh-proxy",
  ]);
  assert.deepEqual(
    (second.spec as unknown as { volumes: { name: string }[] }).volumes.map((v) => v.name),
    ["mesh-envoy", "mesh-certs"],
  );
  const status = JSON.parse(
    (second.metadata as unknown as { annotations: Record<string, string> })
      .annotations[STATUS_ANNOTATION],
  );
  assert.deepEqual(status.containers, ["mesh-proxy"]);
  assert.equal(status.version, testInjector().version);
});

Deno.test("Injector.patch() applied by a JSON-patch library equals Injector.inject()", () => {
  const pods = [
    { metadata: { name: "a" }, spec: { containers: [{ name: "a", image: "a" }] } },
    {
      metadata: { name: "b", annotations: { x: "y" } },
      spec: { containers: [{ name: "b" }], volumes: [{ name: "data" }], initContainers: [] },
    },
  ];
  for (const pod of pods) {
    const inj = testInjector();
    const once = inj.inject(pod);
    assert.deepEqual(jsonPatch(structuredClone(pod) as never, inj.patch(pod) as never), once);
    assert.deepEqual(jsonPatch(structuredClone(once) as never, inj.patch(once) as never), once);
  }
});

Deno.test("injectionRequired() follows the policy matrix", () => {
  const cases: [string, string | undefined, boolean, string, boolean][] = [
    // policy, annotation, hostNetwork, namespace, expected
    ["enabled", undefined, false, "default", true],
    ["enabled", "", false, "default", true],
    ["enabled", "false", false, "default", false],
    ["enabled", "no", false, "default", false],
    ["enabled", "YES", false, "default", true],
    ["enabled", "true", true, "default", false],
    ["enabled", "true", false, "kube-system", false],
    ["enabled", "true", false, "kube-public", false],
    ["disabled", undefined, false, "default", false],
    ["disabled", "y", false, "default", true],
    ["disabled", "On", false, "default", true],
    ["disabled", "true", true, "default", false],
    ["disabled", "bogus", false, "default", false],
    ["other", "true", false, "default", false],
  ];
  for (const [policy, ann, hostNetwork, ns, want] of cases) {
    const meta = ann === undefined ? {} : { annotations: { "sidecar.mesh.io/inject": ann } };
    const d = injectionRequired(policy, meta, { hostNetwork }, ns);
    assert.equal(d.inject, want, `${policy} ${ann} ${hostNetwork} ${ns}: ${d.reason}`);
  }
});

Deno.test("validateAnnotations() rejects bad traffic annotations with the annotation and reason", () => {
  const bad: [string, string, string][] = [
    ["sidecar.mesh.io/interceptionMode", "NAT", "must be REDIRECT or TPROXY"],
    [
      "traffic.sidecar.mesh.io/includeOutboundIPRanges",
      "10.0.0.0/33",
      "prefix length must be 0-32",
    ],
    ["traffic.sidecar.mesh.io/includeOutboundIPRanges", "10.0.0.0", "is not a CIDR"],
    [
      "traffic.sidecar.mesh.io/includeOutboundIPRanges",
      "10.0.0.0/8,*",
      `"*" must be the whole value`,
    ],
    ["traffic.sidecar.mesh.io/excludeOutboundIPRanges", "*", `"*" is not allowed here`],
    ["traffic.sidecar.mesh.io/excludeOutboundIPRanges", "300.1.1.1/32", "bad address"],
    ["traffic.sidecar.mesh.io/includeInboundPorts", "80,http", `"http" is not a port`],
    ["traffic.sidecar.mesh.io/excludeInboundPorts", "70000", "is not a port"],
    ["traffic.sidecar.mesh.io/excludeInboundPorts", "80,,81", "empty entry"],
  ];
  for (const [key, value, reason] of bad) {
    assert.throws(() => validateAnnotations({ [key]: value }), (e: Error) => {
      assert.match(e.message, new RegExp(`^annotation ${key.replaceAll(".", "\\.")}: `));
      assert.ok(e.message.includes(reason), e.message);
      return true;
    });
  }
  validateAnnotations({
    "traffic.sidecar.mesh.io/includeOutboundIPRanges": "*",
    "traffic.sidecar.mesh.io/excludeOutboundIPRanges": "10.0.0.0/8, fd00::/8",
    "traffic.sidecar.mesh.io/includeInboundPorts": "*",
    "traffic.sidecar.mesh.io/excludeInboundPorts": "",
  });
});

Deno.test("injectStream() names the document of bad YAML or a bad workload", () => {
  const inj = testInjector();
  assert.throws(
    () => injectStream("kind: A\n---\n# only a comment\n---\nkind: [\n", inj),
    /^Error: document 2: cannot parse YAML: /,
  );
  assert.throws(
    () =>
      injectStream("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: 3}\n", inj),
    /document 1 \(Pod "p"\): pod: spec.containers must be a list/,
  );
  assert.throws(
    () =>
      injectStream(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {traffic.sidecar.mesh.io/excludeInboundPorts: x}}\nspec: {containers: []}\n",
        inj,
      ),
    /document 1 \(Pod "p"\): annotation traffic.sidecar.mesh.io\/excludeInboundPorts: "x" is not a port/,
  );
});

Deno.test("injectStream() keeps separators and untouched documents byte for byte", () => {
  const input =
    "---\n# c\nkind: ConfigMap # x\n---   \napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a}]}\n--- \n{a: 1}\n";
  const out = injectStream(input, testInjector()).output;
  assert.ok(out.startsWith("---\n# c\nkind: ConfigMap # x\n---   \n"), out);
  assert.ok(out.endsWith("--- \n{a: 1}\n"), out);
  const pod = parse(out.split("---   \n")[1].split("--- \n")[0]);
  assert.equal(pod.spec.containers.length, 2);
});

Deno.test("Injector.templateOf() reads ours before Istio's annotation and names bad values", () => {
  const inj = testInjector();
  const pod = (annotations: Record<string, string>) => ({
    metadata: { annotations },
    spec: { containers: [{ name: "app", image: "x" }] },
  });
  assert.equal(inj.templateOf(pod({})), "sidecar");
  assert.equal(inj.templateOf(pod({ "inject.istio.io/templates": "grpc-agent" })), "grpc-agent");
  assert.equal(
    inj.templateOf(pod({
      "inject.mesh.io/templates": "sidecar",
      "inject.istio.io/templates": "grpc-agent",
    })),
    "sidecar",
  );
  assert.throws(
    () => inj.patch(pod({ "inject.mesh.io/templates": "grpc-gateway" })),
    {
      message:
        'annotation inject.mesh.io/templates: unknown template "grpc-gateway" (known: grpc-agent, sidecar)',
    },
  );
  assert.throws(
    () => inj.templateOf(pod({ "inject.istio.io/templates": "grpc-agent,sidecar" })),
    {
      message:
        'annotation inject.istio.io/templates: one template name expected, got "grpc-agent,sidecar"',
    },
  );
});

Deno.test("the grpc-agent template adds no init container and points every app container at the bootstrap", () => {
  const pod = {
    metadata: { annotations: { "inject.mesh.io/templates": "grpc-agent" } },
    spec: { containers: [{ name: "a", image: "x" }, { name: "b", image: "y" }] },
  };
  const out = testInjector().inject(pod) as unknown as {
    spec: {
      initContainers?: unknown[];
      containers: { name: string; args?: string[]; env?: { name: string; value?: string }[] }[];
    };
  };
  assert.equal(out.spec.initContainers, undefined);
  assert.deepEqual(out.spec.containers.map((c) => c.name), ["a", "b", "mesh-proxy"]);
  for (const c of out.spec.containers.slice(0, 2)) {
    assert.deepEqual(c.env, [{
      name: "GRPC_XDS_BOOTSTRAP",
      value: "/etc/mesh/proxy/grpc-bootstrap.json",
    }]);
  }
  assert.ok(out.spec.containers[2].args!.includes("--proxyless"));
  // the sidecar template of the same injector is untouched by the selection
  const plain: { spec: Record<string, unknown> } = testInjector().inject({
    spec: { containers: [{ name: "a", image: "x" }] },
  });
  assert.equal((plain.spec.initContainers as unknown[]).length, 2);
});
