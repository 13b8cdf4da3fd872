/**
 * meshctl create / replace / delete / get on the `orch` platform, against the fake API server
 * with the mesh CRDs registered; `kubectl` reads what meshctl wrote.
 */
import assert from "node:assert/strict";
import { parse } from "../../lib/deps/yaml.ts";
import { startFakeKube } from "../harness/fake_kube.ts";
import { kubectlAvailable, runKubectl } from "../harness/kubectl.ts";
import {
  allSamplesText,
  expected,
  ingressText,
  meshctl,
  meshctlProcess,
  parseYamlOutput,
  samples,
  startKubeWithCrds,
  withDir,
} from "./_meshctl.ts";

const vs = (name: string, ns?: string, host = "reviews") =>
  `apiVersion: networking.istio.io/v1alpha3
kind: VirtualService
metadata:
  name: ${name}${ns ? `\n  namespace: ${ns}` : ""}
spec:
  hosts: [${host}]
  http:
    - route:
        - destination: { host: ${host} }
`;

Deno.test("meshctl create -f then get -o yaml round-trips every kind on the orch platform", async () => {
  await using kube = await startKubeWithCrds();
  const c = ["-c", kube.kubeconfigPath];
  await withDir(async (dir) => {
    const all = await samples();
    await Deno.writeTextFile(`${dir}/all.yaml`, await allSamplesText());
    // the real program; the kubeconfig comes from KUBECONFIG
    const r = await meshctlProcess(["create", "-f", `${dir}/all.yaml`], {
      env: { KUBECONFIG: kube.kubeconfigPath },
    });
    // the legacy kinds are stored, with one warning each that they are not served
    assert.deepEqual(
      r.stderr.trimEnd().split("\n").map((l) =>
        /^Warning: (\w+) is stored but not served/.exec(l)?.[1]
      ),
      ["RouteRule", "EgressRule", "DestinationPolicy"],
    );
    assert.equal(r.code, 0);
    const lines = r.stdout.trimEnd().split("\n");
    assert.equal(lines.length, all.length);
    all.forEach(({ schema, raw }, i) => {
      const meta = raw.metadata as { name: string; namespace: string };
      const type = schema.meshctl ? schema.internalType : schema.kind;
      const stored = kube.get(`${schema.plural}.${schema.group}`, meta.namespace, meta.name);
      assert.ok(stored, `${schema.kind} stored by the API server`);
      assert.equal(
        lines[i],
        `Created config ${type}/${meta.namespace}/${meta.name} at revision ${
          (stored.metadata as { resourceVersion: string }).resourceVersion
        }`,
      );
    });
  });
  for (const { schema, raw } of (await samples()).filter((s) => s.schema.meshctl)) {
    const g = await meshctl(["get", schema.type, "-o", "yaml", ...c]);
    assert.equal(g.code, 0, g.stderr);
    const got = parseYamlOutput(g.stdout);
    assert.equal(got.length, 1, schema.type);
    const meta = raw.metadata as { name: string; namespace: string };
    const stored = kube.get(`${schema.plural}.${schema.group}`, meta.namespace, meta.name)!;
    // the full object as the orchestrator holds it
    assert.equal(got[0].metadata.resourceVersion, stored.metadata.resourceVersion);
    assert.equal(got[0].metadata.uid, stored.metadata.uid);
    assert.ok(got[0].metadata.creationTimestamp);
    const { resourceVersion: _r, uid: _u, creationTimestamp: _c, generation: _g, ...meta2 } =
      got[0].metadata;
    assert.deepEqual({ ...got[0], metadata: meta2 }, expected(raw), schema.type);
  }
});

Deno.test("kubectl sees what meshctl created; get lists all namespaces or one", async () => {
  await using kube = await startKubeWithCrds();
  const c = ["-c", kube.kubeconfigPath];
  const r = await meshctl(["create", ...c], {
    stdin: vs("reviews") + "---\n" + vs("ratings", "team", "ratings"),
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^Created config virtual-service\/default\/reviews at revision \d+\n/);

  const short = await meshctl(["get", "virtualservices", ...c]);
  assert.equal(
    short.stdout,
    "NAME      KIND                                         NAMESPACE\n" +
      "reviews   VirtualService.networking.mesh.io.v1alpha3   default\n" +
      "ratings   VirtualService.networking.mesh.io.v1alpha3   team\n",
  );
  const team = await meshctl(["get", "virtualservices", "-n", "team", ...c]);
  assert.equal(team.stdout.trimEnd().split("\n").length, 2);
  assert.match(team.stdout, /^ratings /m);
  const none = await meshctl(["get", "gateway", ...c]);
  assert.deepEqual(none, { code: 0, stdout: "", stderr: "No resources found.\n" });

  assert.ok(await kubectlAvailable(), "kubectl is on PATH");
  const k = await runKubectl(kube.kubeconfigPath, [
    "get",
    "virtualservices.networking.mesh.io",
    "-A",
    "-o",
    "yaml",
  ]);
  assert.equal(k.code, 0, k.stderr);
  const list = parse(k.stdout) as {
    items: { metadata: { name: string; namespace: string }; spec: { hosts: string[] } }[];
  };
  assert.deepEqual(
    list.items.map((i) => `${i.metadata.namespace}/${i.metadata.name} ${i.spec.hosts}`).sort(),
    ["default/reviews reviews", "team/ratings ratings"],
  );
});

Deno.test("meshctl on orch: default namespace from the context, conflicts, missing objects", async () => {
  await using kube = await startKubeWithCrds();
  await withDir(async (dir) => {
    // a kubeconfig whose context namespace is "team"
    const kc = `${dir}/config`;
    await kube.writeKubeconfig(kc, { namespace: "team" });
    const c = ["-c", kc];
    const created = await meshctl(["create", ...c], { stdin: vs("a") });
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /^Created config virtual-service\/team\/a at revision \d+\n$/);
    assert.ok(kube.get("virtualservices.networking.mesh.io", "team", "a"));

    const exists = await meshctl(["create", ...c], { stdin: vs("a") });
    assert.equal(exists.code, 1);
    assert.match(
      exists.stderr,
      /^Error: cannot create virtual-service\/team\/a: it already exists/,
    );

    // replace without resourceVersion takes the current one
    const rv1 = kube.get("virtualservices.networking.mesh.io", "team", "a")!.metadata
      .resourceVersion;
    const upd = await meshctl(["replace", ...c], { stdin: vs("a", undefined, "v2") });
    assert.equal(upd.code, 0, upd.stderr);
    const rv2 = kube.get("virtualservices.networking.mesh.io", "team", "a")!.metadata
      .resourceVersion;
    assert.notEqual(rv2, rv1);
    assert.equal(upd.stdout, `Updated config virtual-service/team/a to revision ${rv2}\n`);
    // a stale one is a conflict, reported as such
    const stale = vs("a").replace("  name: a\n", `  name: a\n  resourceVersion: "${rv1}"\n`);
    const conflict = await meshctl(["replace", ...c], { stdin: stale });
    assert.equal(conflict.code, 1);
    assert.match(
      conflict.stderr,
      /^Error: cannot replace virtual-service\/team\/a: conflict: it was modified since it was read/,
    );
    const one = await meshctl(["get", "virtualservice", "a", "-o", "yaml", ...c]);
    assert.deepEqual(parseYamlOutput(one.stdout)[0].spec.hosts, ["v2"]);

    const del = await meshctl(["delete", "virtualservices", "a", "nope", ...c]);
    assert.equal(del.code, 1);
    assert.equal(del.stdout, "Deleted config: virtualservices a\n");
    assert.match(del.stderr, /^Error: cannot delete nope: .*not found/);
    assert.equal(kube.get("virtualservices.networking.mesh.io", "team", "a"), undefined);

    // a missing name is an error on orch too
    const gone = await meshctl(["get", "vs", "a", "b", ...c]);
    assert.deepEqual(gone, {
      code: 1,
      stdout: "",
      stderr: 'Error: virtualservice "a" not found in namespace "team"\n' +
        'Error: virtualservice "b" not found in namespace "team"\n',
    });
  });
});

Deno.test("meshctl on orch says in one line what to do about a missing or malformed kubeconfig", async () => {
  await withDir(async (dir) => {
    // the default path: $HOME/.kube/config
    const missing = await meshctl(["get", "virtualservices"], { env: { HOME: dir } });
    assert.deepEqual(missing, {
      code: 1,
      stdout: "",
      stderr: `Error: Cannot read kubeconfig "${dir}/.kube/config": no such file (give ` +
        "-c/--orchconfig, or use -p fs --configDir <dir> to work without a cluster)\n",
    });
    const kc = `${dir}/kubeconfig`;
    await Deno.writeTextFile(kc, "a: [\nb: c\n");
    for (const args of [["get", "vs", "-c", kc], ["delete", "vs", "x", "-c", kc]]) {
      const r = await meshctl(args);
      assert.equal(r.code, 1, args.join(" "));
      assert.match(r.stderr, new RegExp(`^Error: Cannot parse kubeconfig "${kc}": [^\n]*\\S\n$`));
      assert.doesNotMatch(r.stderr, /:\n$/);
    }
    // context-create reads the same file with the same words
    const cc = await meshctl(["context-create", "--api-server", "http://127.0.0.1:1", "-c", kc]);
    assert.equal(cc.code, 1);
    assert.match(
      cc.stderr,
      new RegExp(`^Error: Cannot parse kubeconfig "${kc}": .* at line 2, column 1\n$`),
    );
    // a directory instead of a file: the reason without Deno's "(os error N)" tail
    const isDir = await meshctl(["get", "vs", "-c", dir]);
    assert.deepEqual(isDir, {
      code: 1,
      stdout: "",
      stderr: `Error: Cannot read kubeconfig "${dir}": is a directory\n`,
    });
  });
});

Deno.test("meshctl on orch gets and deletes policy-server kinds by name", async () => {
  await using kube = await startKubeWithCrds();
  const c = ["-c", kube.kubeconfigPath];
  const created = await meshctl(["create", ...c], {
    stdin: "apiVersion: config.istio.io/v1alpha2\nkind: rule\nmetadata: { name: r1 }\n" +
      "spec: { actions: [{ handler: h.denier, instances: [i.checknothing] }] }\n",
  });
  assert.equal(created.code, 0, created.stderr);
  const g = await meshctl(["get", "rules", ...c]);
  assert.deepEqual(g, {
    code: 0,
    stdout: "NAME      KIND                           NAMESPACE\n" +
      "r1        rule.config.mesh.io.v1alpha2   default\n",
    stderr: "",
  });
  const d = await meshctl(["delete", "rule", "r1", ...c]);
  assert.deepEqual(d, { code: 0, stdout: "Deleted config: rule r1\n", stderr: "" });
  assert.equal(kube.get("rules.config.mesh.io", "default", "r1"), undefined);
});

Deno.test("meshctl on orch fails clearly when the CRD is not installed", async () => {
  await using kube = await startFakeKube();
  const c = ["-c", kube.kubeconfigPath, "--log_output_level", "none"];
  const line = (names: string) =>
    `Error: the CRDs of mesh are not installed in the cluster at ${kube.url} ` +
    `(kubectl apply -f lib/model/crds/crds.yaml); missing: ${names}\n`;
  const get = await meshctl(["get", "virtualservices", ...c]);
  assert.deepEqual(get, {
    code: 1,
    stdout: "",
    stderr: line("virtualservices.networking.mesh.io"),
  });
  // one line, naming every missing definition the input needs; nothing is written
  const create = await meshctl(["create", ...c], {
    stdin: vs("a") + "---\napiVersion: config.istio.io/v1alpha2\nkind: rule\n" +
      "metadata: { name: r }\nspec: {}\n",
  });
  assert.deepEqual(create, {
    code: 1,
    stdout: "",
    stderr: line("virtualservices.networking.mesh.io, rules.config.mesh.io"),
  });
  const del = await meshctl(["delete", "rules", "r", ...c]);
  assert.deepEqual(del, { code: 1, stdout: "", stderr: line("rules.config.mesh.io") });
});

Deno.test("meshctl get on orch names an invalid stored object once, on stderr, and keeps stdout for results", async () => {
  await using kube = await startKubeWithCrds();
  const c = ["-c", kube.kubeconfigPath];
  const good = `apiVersion: networking.istio.io/v1alpha3
kind: DestinationRule
metadata: { name: kgood, namespace: default }
spec: { host: reviews }
`;
  assert.equal((await meshctl(["create", ...c], { stdin: good })).code, 0);
  kube.upsert({
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "DestinationRule",
    metadata: { name: "kbad", namespace: "default" },
    spec: { subsets: [{ name: "v1" }] },
  });
  // the real program, logging at its defaults (stdout)
  const g = await meshctlProcess(["get", "destinationrules", "-o", "yaml", ...c]);
  assert.equal(g.code, 0, g.stderr);
  assert.deepEqual(parseYamlOutput(g.stdout).map((o) => o.metadata.name), ["kgood"]);
  assert.equal(g.stderr, "Warning: DestinationRule/default/kbad: spec.host: is required\n");
  const r = await meshctlProcess(["replace", ...c], { stdin: g.stdout });
  assert.equal(r.code, 0, r.stderr);
});

Deno.test("meshctl on orch creates an extensions/v1beta1 Ingress as networking.k8s.io/v1, gets and deletes it", async () => {
  await using kube = await startKubeWithCrds();
  const c = ["-c", kube.kubeconfigPath];
  const created = await meshctl(["create", "-f", "-", ...c], { stdin: ingressText() });
  assert.equal(created.stderr, "");
  assert.match(
    created.stdout,
    /^Created config ingress\/default\/web at revision \d+ \(as networking\.k8s\.io\/v1\)\n$/,
  );
  const stored = kube.get("ingresses.networking.k8s.io", "default", "web") as unknown as {
    apiVersion: string;
    metadata: { annotations: Record<string, string> };
    spec: unknown;
  };
  assert.equal(stored.apiVersion, "networking.k8s.io/v1");
  assert.deepEqual(stored.metadata.annotations, { "kubernetes.io/ingress.class": "mesh" });
  assert.deepEqual(stored.spec, {
    rules: [{
      http: {
        paths: [{
          path: "/echo",
          pathType: "ImplementationSpecific",
          backend: { service: { name: "echo", port: { number: 80 } } },
        }],
      },
    }],
  });
  const g = await meshctl(["get", "ingress", ...c]);
  assert.equal(g.code, 0, g.stderr);
  assert.match(g.stdout, /\nweb +Ingress\.networking\.k8s\.io\.v1 +default\n$/);
  const d = await meshctl(["delete", "ingress", "web", ...c]);
  assert.equal(d.stdout, "Deleted config: ingress web\n", d.stderr);
  assert.equal(kube.get("ingresses.networking.k8s.io", "default", "web"), undefined);
});
