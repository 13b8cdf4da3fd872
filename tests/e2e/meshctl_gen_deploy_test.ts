/**
 * meshctl gen-deploy: golden output per feature set, accepted by `kubectl apply --dry-run=server`
 * against the fake API server; the config maps parse as the programs parse them; every flag the
 * Deployments pass exists in the program's flag table and configures it (mesh_ca, sidecar-injector:
 * the injector's files come from the secret mesh_ca writes, RBAC of what they call); the injector
 * config maps inject pods (lib/inject, kube-inject); flags vs values file; custom charts.
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "../../lib/deps/yaml.ts";
import { crdManifests } from "../../lib/model/crds.ts";
import {
  normalizeObject,
  parseInjectConfig,
  parseMeshConfig,
  validateMeshConfig,
} from "../../lib/model/mod.ts";
import { allFlags, type CommandSpec, type ProgramSpec } from "../../cli/_shared/command.ts";
import { program as discoveryProgram } from "../../cli/mesh-discovery.ts";
import { program as policyProgram } from "../../cli/mesh-policy.ts";
import { program as caProgram } from "../../cli/mesh_ca.ts";
import { program as injectorProgram } from "../../cli/sidecar-injector.ts";
import { program as agentProgram } from "../../cli/mesh-agent.ts";
import { applyPatch, Injector, STATUS_ANNOTATION } from "../../lib/inject/mod.ts";
import { defaultValues, mergeValues, sidecarTemplate } from "../../lib/deploy/mod.ts";
import { resolveOptions } from "../../lib/flags/mod.ts";
import { dnsNamesFor } from "../../lib/pki/mod.ts";
import { toConfig as caConfig, WORKLOAD_SECRET } from "../../servers/ca/mod.ts";
import { toConfig as injectorConfig } from "../../servers/injector/mod.ts";
import { convertConfigs } from "../../lib/convert/mod.ts";
import { parseNodeId } from "../../lib/xds/node.ts";
import { selectedGateways } from "../../lib/xds/generate/gateway.ts";
import { ECHO_INGRESS, model } from "../../lib/xds/testdata/model.ts";
import { startFakeKube } from "../harness/fake_kube.ts";
import { kubectlAvailable, runKubectl } from "../harness/kubectl.ts";
import { meshctl, meshctlProcess, withDir } from "./_meshctl.ts";

const GOLDEN = new URL("./testdata/gen-deploy/", import.meta.url);
const UPDATE = Deno.env.get("UPDATE_GOLDEN") === "1";

// deno-lint-ignore no-explicit-any
type Obj = any;

/** The feature sets with a golden file each: name → arguments and values file. */
const SETS: Record<string, { args: string[]; values?: string }> = {
  default: { args: [] },
  minimal: {
    args: [],
    values: "policy: {enabled: false}\ntelemetry: {enabled: false}\ningress: {enabled: false}\n" +
      "sidecarInjector: {enabled: false}\n",
  },
  mtls: { args: [], values: "mtls: {enabled: true}\n" },
  "telemetry-only": { args: [], values: "policy: {enabled: false}\n" },
  "ingress-node-port-debug": {
    args: ["--ingress-node-port", "31380", "--debug", "--hyperkube-tag", "v1.30.0"],
  },
  "custom-images": {
    args: ["-i", "mesh-prod"],
    values: "global: {hub: registry.example.com/mesh, tag: 1.2.3, imagePullPolicy: Always}\n" +
      "discovery: {replicas: 3}\n",
  },
};

/** The merged values of a feature set that sets no flags (its values file over the defaults). */
function chartValues(name: string): Record<string, unknown> {
  const set = SETS[name];
  assert.deepEqual(set.args, [], `${name}: flags are not merged here`);
  const over = set.values ? docs(set.values)[0] : {};
  return mergeValues(defaultValues(), over);
}

const CRDS_SECTION = /(# Source: mesh\/templates\/01-crds\.yaml\n)[\s\S]*?(?=---\n# Source:)/;

async function render(name: string, dir: string) {
  const set = SETS[name];
  const args = ["gen-deploy", ...set.args];
  if (set.values) {
    await Deno.writeTextFile(`${dir}/${name}.yaml`, set.values);
    args.push("--values", `${name}.yaml`);
  }
  return await meshctl(args, { cwd: dir });
}

function docs(text: string): Obj[] {
  const all = parseAllDocuments(text);
  return (Array.isArray(all) ? all : [all]).map((d) => d.toJS()).filter((d) => d);
}

Deno.test("meshctl gen-deploy output per feature set matches its golden file", async () => {
  await withDir(async (dir) => {
    for (const name of Object.keys(SETS)) {
      const r = await render(name, dir);
      assert.equal(r.code, 0, `${name}: ${r.stderr}`);
      assert.equal(r.stderr, "", name);
      // the CRDs are lib/model/crds.ts's: checked here, left out of the golden files
      const m = CRDS_SECTION.exec(r.stdout);
      assert.ok(m, `${name}: no CRDs section`);
      assert.deepEqual(docs(m[0]), crdManifests(), `${name}: CRDs`);
      const text = r.stdout.replace(CRDS_SECTION, "$1# (the CRDs of lib/model/crds.ts)\n");
      const file = new URL(`${name}.yaml`, GOLDEN);
      if (UPDATE) await Deno.writeTextFile(file, text);
      assert.equal(text, await Deno.readTextFile(file), `${name}.yaml differs (UPDATE_GOLDEN=1)`);
    }
  });
});

Deno.test("kubectl apply --dry-run=server accepts gen-deploy's output for every feature set", async () => {
  assert.ok(await kubectlAvailable(), "kubectl is on PATH");
  await using kube = await startFakeKube({ namespaces: ["default", "mesh-system", "mesh-prod"] });
  await withDir(async (dir) => {
    for (const name of Object.keys(SETS)) {
      const r = await render(name, dir);
      const n = docs(r.stdout).length;
      const k = await runKubectl(kube.kubeconfigPath, ["apply", "--dry-run=server", "-f", "-"], {
        stdin: r.stdout,
      });
      assert.equal(k.code, 0, `${name}: ${k.stderr}`);
      const lines = k.stdout.trimEnd().split("\n");
      assert.equal(lines.length, n, `${name}: one line per document`);
      assert.ok(lines.every((l) => l.endsWith("(server dry run)")), `${name}: ${k.stdout}`);
    }
    // nothing was stored by the dry run; a real apply creates the workloads
    assert.deepEqual(kube.objects("deployments"), []);
    const r = await render("default", dir);
    const k = await runKubectl(kube.kubeconfigPath, ["apply", "-f", "-"], { stdin: r.stdout });
    assert.equal(k.code, 0, k.stderr);
    assert.deepEqual(kube.objects("deployments", "mesh-system").map((d) => d.metadata.name), [
      "mesh-ca",
      "mesh-discovery",
      "mesh-ingressgateway",
      "mesh-policy",
      "mesh-sidecar-injector",
      "mesh-telemetry",
    ]);
    assert.equal(
      kube.objects("mutatingwebhookconfigurations")[0]?.metadata.name,
      "mesh-sidecar-injector",
    );
  });
});

/** The command of `program` reached by `path` (`["discovery"]`); the root for `[]`. */
function commandAt(program: ProgramSpec, path: string[]): CommandSpec {
  let cmd = program.root;
  for (const p of path) cmd = cmd.subcommands.find((c) => c.name === p)!;
  return cmd;
}

const PROGRAMS: Record<string, { program: ProgramSpec; path: (args: string[]) => string[] }> = {
  "mesh-discovery": { program: discoveryProgram, path: () => ["discovery"] },
  "mesh-policy": { program: policyProgram, path: () => ["server"] },
  "mesh_ca": { program: caProgram, path: () => [] },
  "sidecar-injector": { program: injectorProgram, path: () => [] },
  "proxy": { program: agentProgram, path: () => ["proxy"] },
};

Deno.test("gen-deploy's config maps parse as the programs parse them, and every flag passed exists", async () => {
  await withDir(async (dir) => {
    for (const name of ["default", "mtls", "minimal"]) {
      const all = docs((await render(name, dir)).stdout);
      const cm = (n: string) => all.find((d) => d.kind === "ConfigMap" && d.metadata.name === n);
      const mesh = parseMeshConfig(cm("mesh").data.mesh, "mesh");
      assert.deepEqual(validateMeshConfig(mesh), [], name);
      assert.equal(mesh.authPolicy, name === "mtls" ? "MUTUAL_TLS" : "NONE", name);
      assert.equal(mesh.disablePolicyChecks, name === "minimal", name);
      assert.equal(mesh.ingressControllerMode, name === "minimal" ? "OFF" : "STRICT", name);
      if (name !== "minimal") {
        const inject = parseInjectConfig(cm("mesh-sidecar-injector").data.config, "inject");
        assert.equal(inject.policy, "enabled");
        assert.equal(inject.template, sidecarTemplate(chartValues(name)), name);
        const crs = docs(cm("mesh-policy-custom-resources").data["custom-resources.yaml"]);
        assert.deepEqual(crs.map((c) => c.kind), ["metric", "prometheus", "rule", "kubernetesenv"]);
        for (const c of crs) assert.deepEqual(normalizeObject(c, c.kind).issues, [], c.kind);
      } else {
        assert.equal(cm("mesh-sidecar-injector"), undefined);
      }
      for (const d of all.filter((d) => d.kind === "Deployment")) {
        const labels = d.spec.template.metadata.labels;
        for (const [k, v] of Object.entries(d.spec.selector.matchLabels)) {
          assert.equal(labels[k], v, `${d.metadata.name}: selector matches the pod labels`);
        }
        for (const c of d.spec.template.spec.containers) {
          const image = c.image.split("/").at(-1).split(":")[0];
          const p = PROGRAMS[image];
          assert.ok(p, `${d.metadata.name}: unknown image ${c.image}`);
          const cmd = commandAt(p.program, p.path(c.args).length ? [c.args[0]] : []);
          const known = new Set(allFlags(cmd).map((f) => f.name));
          for (const a of c.args.filter((a: string) => a.startsWith("--"))) {
            const flag = a.slice(2).split("=")[0];
            assert.ok(known.has(flag), `${d.metadata.name}: ${image} has no flag --${flag}`);
          }
        }
      }
    }
  });
});

Deno.test("gen-deploy: the values file wins over flags, with warnings; bad values are refused", async () => {
  await withDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/no-ingress.yaml`, "ingress:\n  enabled: false\n");
    const r = await meshctl([
      "gen-deploy",
      "--values",
      "no-ingress.yaml",
      "--ingress-node-port",
      "31380",
    ], {
      cwd: dir,
    });
    assert.equal(r.code, 0);
    assert.equal(r.stderr, "Warning: --ingress-node-port is ignored: the ingress feature is off\n");
    assert.doesNotMatch(r.stdout, /mesh-ingressgateway|NodePort/);

    await Deno.writeTextFile(`${dir}/debug-off.yaml`, "global: {debug: false}\n");
    const d = await meshctl(["gen-deploy", "--values", `${dir}/debug-off.yaml`, "--debug"]);
    assert.equal(d.stderr, "Warning: --debug is ignored: the values file sets global.debug\n");
    assert.doesNotMatch(d.stdout, /_debug/);

    const np = await meshctl(["gen-deploy", "--ingress-node-port", "31380"]);
    const svc = docs(np.stdout).find((o) =>
      o.kind === "Service" && o.metadata.name === "mesh-ingressgateway"
    );
    assert.equal(svc.spec.type, "NodePort");
    assert.deepEqual(svc.spec.ports[0], { name: "http", port: 80, nodePort: 31380 });

    await Deno.writeTextFile(
      `${dir}/bad.yaml`,
      "ingress: {nodePort: http}\nglobal: {hub: 'Not A Hub'}\n",
    );
    const bad = await meshctl(["gen-deploy", "--values", "bad.yaml"], { cwd: dir });
    assert.equal(bad.code, 1);
    assert.equal(
      bad.stderr,
      "Error: invalid values (bad.yaml): global.hub: must be an image repository (lowercase letters, digits, '.', '_', '-' and '/'), got \"Not A Hub\"; ingress.nodePort: must be 0 (none) or a port between 1 and 65535, got \"http\"\n",
    );
    await Deno.writeTextFile(`${dir}/list.yaml`, "- a\n- b\n");
    const list = await meshctl(["gen-deploy", "--values", "list.yaml"], { cwd: dir });
    assert.equal(list.stderr, 'Error: Cannot use values file "list.yaml": not a mapping\n');
    const missing = await meshctl(["gen-deploy", "--values", "nope.yaml"], { cwd: dir });
    assert.equal(
      missing.stderr,
      'Error: Cannot read values file "nope.yaml": no such file or directory\n',
    );
    const ns = await meshctl(["gen-deploy", "-i", "Mesh_System"]);
    assert.equal(ns.code, 2);
    assert.match(
      ns.stderr,
      /^Error: Invalid --meshNamespace "Mesh_System": must be a DNS-1123 label\n/,
    );
  });
});

Deno.test("gen-deploy --chart-dir renders the templates of a directory; problems name the file and line", async () => {
  await withDir(async (dir) => {
    await Deno.mkdir(`${dir}/chart/templates`, { recursive: true });
    await Deno.writeTextFile(`${dir}/chart/values.yaml`, "greeting: hello\n");
    await Deno.writeTextFile(
      `${dir}/chart/templates/cm.yaml`,
      `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Values.greeting }}
  namespace: {{ .Release.Namespace }}
data:
  hub: {{ .Values.global.hub | quote }}
{{- if .Values.mtls.enabled }}
  mtls: "on"
{{- end }}
`,
    );
    const r = await meshctlProcess(["gen-deploy", "--chart-dir", "chart", "-i", "team"], {
      cwd: dir,
    });
    assert.equal(r.stderr, "");
    assert.equal(
      r.stdout,
      `---
# Source: mesh/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: hello
  namespace: team
data:
  hub: "ghcr.io/mesh-project"
`,
    );
    // the default "." uses a templates/ directory of the working directory when there is one
    const dot = await meshctl(["gen-deploy"], { cwd: `${dir}/chart` });
    assert.match(dot.stdout, /name: hello/);

    await Deno.writeTextFile(
      `${dir}/chart/templates/cm.yaml`,
      "metadata:\n  name: {{ .Values.nope.x }}\n",
    );
    const bad = await meshctl(["gen-deploy", "--chart-dir", `${dir}/chart`]);
    assert.equal(bad.code, 1);
    assert.equal(bad.stderr, "Error: templates/cm.yaml:2: .Values.nope.x is not set\n");
    await Deno.writeTextFile(`${dir}/chart/templates/cm.yaml`, "metadata:\n  name: x\n");
    const noKind = await meshctl(["gen-deploy", "--chart-dir", `${dir}/chart`]);
    assert.equal(noKind.stderr, "Error: templates/cm.yaml document 1: apiVersion is required\n");
    const none = await meshctl(["gen-deploy", "--chart-dir", `${dir}/nochart`]);
    assert.equal(
      none.stderr,
      'Error: Cannot use chart directory "' + dir + '/nochart": no such directory\n',
    );
  });
});

/** A workload as a user writes it. */
const WEB_DEPLOYMENT = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      serviceAccountName: web-sa
      containers:
        - name: web
          image: nginx
`;

/** The images, pull policy and certificate secret of an injected pod spec. */
function injected(spec: Obj) {
  const names = (l: Obj[] | undefined) => (l ?? []).map((c) => `${c.name} ${c.image}`);
  return {
    initContainers: names(spec.initContainers),
    containers: names(spec.containers),
    pull: spec.containers[1]?.imagePullPolicy,
    secret: spec.volumes?.find((v: Obj) => v.name === "mesh-certs")?.secret.secretName,
  };
}

Deno.test("gen-deploy's injector config maps inject pods with the chart's images (sidecar-injector and kube-inject)", async () => {
  const expected = {
    "default": {
      hub: "ghcr.io/mesh-project",
      tag: undefined,
      pull: "IfNotPresent",
      proxy: "proxy",
    },
    "custom-images": {
      hub: "registry.example.com/mesh",
      tag: "1.2.3",
      pull: "Always",
      proxy: "proxy",
    },
    "ingress-node-port-debug": {
      hub: "ghcr.io/mesh-project",
      tag: undefined,
      pull: "IfNotPresent",
      proxy: "proxy_debug",
    },
  };
  await withDir(async (dir) => {
    for (const [name, want] of Object.entries(expected)) {
      const all = docs((await render(name, dir)).stdout);
      const cm = (n: string) => all.find((d) => d.kind === "ConfigMap" && d.metadata.name === n);
      const tag = want.tag ?? all.find((d) => d.metadata.name === "mesh-discovery")
        .spec.template.spec.containers[0].image.split(":").at(-1);
      const pod = docs(WEB_DEPLOYMENT)[0].spec.template;
      const wantSpec = {
        initContainers: [
          `mesh-init ${want.hub}/proxy_init:${tag}`,
          `enable-core-dump ${want.hub}/proxy_init:${tag}`,
        ],
        containers: ["web nginx", `mesh-proxy ${want.hub}/${want.proxy}:${tag}`],
        pull: want.pull,
        secret: "mesh.web-sa",
      };

      // as sidecar-injector does: both config maps parsed, the JSON patch applied to the pod
      const injectConfig = parseInjectConfig(cm("mesh-sidecar-injector").data.config, "inject");
      const injector = new Injector({
        policy: injectConfig.policy,
        template: injectConfig.template,
        meshConfig: parseMeshConfig(cm("mesh").data.mesh, "mesh"),
      });
      assert.equal(injector.decide(pod, "shop").inject, true, name);
      const out = applyPatch(pod, injector.patch(pod));
      assert.deepEqual(injected(out.spec), wantSpec, name);
      assert.ok(out.metadata.annotations[STATUS_ANNOTATION], `${name}: status annotation`);
      const proxyArgs = out.spec.containers[1].args;
      assert.equal(
        proxyArgs[proxyArgs.indexOf("--discoveryAddress") + 1],
        `mesh-discovery.${name === "custom-images" ? "mesh-prod" : "mesh-system"}:15007`,
        name,
      );

      // meshctl kube-inject with the same two config maps as files
      await Deno.writeTextFile(`${dir}/inject-config`, cm("mesh-sidecar-injector").data.config);
      await Deno.writeTextFile(`${dir}/mesh.yaml`, cm("mesh").data.mesh);
      const r = await meshctl([
        "kube-inject",
        "-f",
        "-",
        "--injectConfigFile",
        "inject-config",
        "--meshConfigFile",
        "mesh.yaml",
      ], { cwd: dir, stdin: WEB_DEPLOYMENT });
      assert.equal(r.stderr, "", name);
      assert.equal(r.code, 0, name);
      const kube = docs(r.stdout)[0].spec.template;
      assert.deepEqual(injected(kube.spec), wantSpec, `${name}: kube-inject`);
      assert.deepEqual(kube, out, `${name}: kube-inject and sidecar-injector agree`);
    }
  });
});

/** The options `program` gets from a container's `--name=value` arguments (as its CLI parses them). */
function optionsOf(program: ProgramSpec, args: string[]): Obj {
  const flags = allFlags(program.root);
  const values = new Map<string, unknown>();
  for (const a of args) {
    const m = /^--([^=]+)(?:=(.*))?$/.exec(a);
    assert.ok(m, `${program.name}: argument ${a} is not --name=value`);
    const spec = flags.find((f) => f.name === m[1]);
    assert.ok(spec, `${program.name}: no flag --${m[1]}`);
    values.set(spec.name, spec.type.parse(m[2] ?? "true", values.get(spec.name) as never));
  }
  return resolveOptions(flags, [values]);
}

/** Where a file of a container comes from: `secret <name> <key>` or `configMap <name> <key>`. */
function fileSource(pod: Obj, container: Obj, path: string): string {
  const mount = (container.volumeMounts ?? [])
    .filter((m: Obj) => path.startsWith(m.mountPath.replace(/\/?$/, "/")))
    .sort((a: Obj, b: Obj) => b.mountPath.length - a.mountPath.length)[0];
  assert.ok(mount, `${container.name}: ${path} is on no volume`);
  const rel = path.slice(mount.mountPath.replace(/\/?$/, "/").length);
  const volume = pod.volumes.find((v: Obj) => v.name === mount.name);
  assert.ok(volume, `${container.name}: volume ${mount.name} is not defined`);
  const kind = volume.secret ? "secret" : "configMap";
  const src = volume.secret ?? volume.configMap;
  const name = volume.secret ? src.secretName : src.name;
  const key = src.items ? src.items.find((i: Obj) => i.path === rel)?.key : rel;
  assert.ok(key, `${container.name}: ${path}: volume ${mount.name} has no item ${rel}`);
  return `${kind} ${name} ${key}`;
}

/** The verbs a ClusterRole grants on `resource`. */
function verbs(role: Obj, resource: string): string[] {
  return role.rules.filter((r: Obj) => r.resources.includes(resource)).flatMap((r: Obj) => r.verbs);
}

Deno.test("gen-deploy's mesh_ca and sidecar-injector: the flags configure the programs, the injector's files come from the secret mesh_ca writes", async () => {
  await withDir(async (dir) => {
    for (const name of ["default", "mtls", "custom-images"]) {
      const out = await render(name, dir);
      const all = docs(out.stdout);
      const find = (kind: string, n: string) =>
        all.find((d) => d.kind === kind && d.metadata.name === n);
      const ns = find("Deployment", "mesh-ca").metadata.namespace;
      const env = { KUBERNETES_SERVICE_HOST: "10.0.0.1" };

      // mesh_ca: a self-signed root in the orchestrator, secrets for the injector's service name
      const caPod = find("Deployment", "mesh-ca").spec.template.spec;
      const ca = caConfig(optionsOf(caProgram, caPod.containers[0].args), env);
      assert.equal(ca.keys.kind, "self-signed", name);
      assert.equal(ca.storageNamespace, ns, name);
      assert.deepEqual(ca.orchestrator, { kubeconfig: "" }, name);
      assert.deepEqual(ca.warnings, [], name);
      const caRole = find("ClusterRole", `mesh-ca-${ns}`);
      for (const v of ["create", "get", "list", "watch", "update", "delete"]) {
        assert.ok(verbs(caRole, "secrets").includes(v), `${name}: mesh_ca may ${v} secrets`);
      }
      for (const v of ["list", "watch"]) {
        assert.ok(verbs(caRole, "serviceaccounts").includes(v), `${name}: ${v} serviceaccounts`);
      }
      // gRPC callers' tokens are checked by a TokenReview (servers/ca/orch.ts)
      assert.ok(verbs(caRole, "tokenreviews").includes("create"), `${name}: TokenReviews`);

      // sidecar-injector: its flags pass toConfig, its files are in volumes that exist
      const deploy = find("Deployment", "mesh-sidecar-injector");
      const pod = deploy.spec.template.spec;
      const container = pod.containers[0];
      const inj = injectorConfig(optionsOf(injectorProgram, container.args), env);
      const secret = `${WORKLOAD_SECRET.prefix}${pod.serviceAccountName}`;
      assert.ok(find("ServiceAccount", pod.serviceAccountName), `${name}: service account`);
      assert.deepEqual({
        ca: fileSource(pod, container, inj.caCertFile),
        cert: fileSource(pod, container, inj.tlsCertFile),
        key: fileSource(pod, container, inj.tlsKeyFile),
      }, {
        ca: `secret ${secret} ${WORKLOAD_SECRET.root}`,
        cert: `secret ${secret} ${WORKLOAD_SECRET.certChain}`,
        key: `secret ${secret} ${WORKLOAD_SECRET.key}`,
      }, name);
      for (const file of [inj.injectConfigFile, inj.meshConfigFile]) {
        const [kind, cmName, key] = fileSource(pod, container, file).split(" ");
        assert.equal(kind, "configMap", `${name}: ${file}`);
        assert.equal(typeof find("ConfigMap", cmName)?.data[key], "string", `${name}: ${file}`);
      }
      // the webhook calls the service whose name is in the certificate mesh_ca issues
      const webhooks = find("MutatingWebhookConfiguration", inj.webhookConfigName).webhooks;
      const webhook = webhooks.find((w: Obj) => w.name === inj.webhookName);
      assert.ok(webhook, `${name}: webhook ${inj.webhookName}`);
      const svc = webhook.clientConfig.service;
      const dns = dnsNamesFor(ns, pod.serviceAccountName, {
        custom: ca.customDnsNames,
        appendWebhookNames: ca.appendDnsNames,
        systemNamespace: ca.storageNamespace,
      });
      assert.ok(dns.includes(`${svc.name}.${svc.namespace}.svc`), `${name}: ${dns}`);
      const service = find("Service", svc.name);
      assert.equal(service.metadata.namespace, svc.namespace, name);
      for (const [k, v] of Object.entries(service.spec.selector)) {
        assert.equal(deploy.spec.template.metadata.labels[k], v, `${name}: service selects it`);
      }
      assert.equal(
        service.spec.ports.find((p: Obj) => p.port === 443)?.targetPort,
        inj.port,
        `${name}: service port 443 reaches --port`,
      );
      // it reads the webhook configuration and replaces it with the caBundle (lib/inject/orch.ts)
      const injRole = find("ClusterRole", `mesh-sidecar-injector-${ns}`);
      for (const v of ["get", "update"]) {
        assert.ok(
          verbs(injRole, "mutatingwebhookconfigurations").includes(v),
          `${name}: the injector may ${v} mutatingwebhookconfigurations`,
        );
      }

      // every workload secret mounted is the one of the pod's own service account
      for (const d of all.filter((d) => d.kind === "Deployment")) {
        const spec = d.spec.template.spec;
        for (const v of spec.volumes ?? []) {
          const s = v.secret?.secretName;
          if (!s?.startsWith(WORKLOAD_SECRET.prefix)) continue;
          assert.equal(s, `${WORKLOAD_SECRET.prefix}${spec.serviceAccountName}`, d.metadata.name);
          assert.ok(find("ServiceAccount", spec.serviceAccountName), d.metadata.name);
        }
      }
    }
  });
});

Deno.test("gen-deploy's ingress gateway is what discovery's Ingress Gateway and convert-networking-config's Gateway select; their certificates are in its mount", async () => {
  await withDir(async (dir) => {
    const all = docs((await render("default", dir)).stdout);
    const deploy = all.find((d) =>
      d.kind === "Deployment" && d.metadata.name === "mesh-ingressgateway"
    );
    const pod = deploy.spec.template.spec;
    const labels = deploy.spec.template.metadata.labels;
    assert.equal(labels.mesh, "ingressgateway");

    // mesh-discovery: an Ingress object becomes a Gateway that selects the gateway's pod labels,
    // also for a proxy that is not of the `ingress` type (a router)
    const ctx = model({ configs: { ingresses: [ECHO_INGRESS] } });
    const router = parseNodeId(
      "router~10.0.9.9~mesh-ingressgateway-1.mesh-system~mesh-system.svc.cluster.local",
      { labels },
    );
    const fromIngress = selectedGateways(ctx, router).filter((g) => g.fromIngress);
    assert.equal(fromIngress.length, 1, "the Ingress-derived Gateway selects the gateway");
    const other = parseNodeId("router~10.0.9.9~r.default~default.svc.cluster.local", {
      labels: { mesh: "ingress" },
    });
    assert.deepEqual(selectedGateways(ctx, other).filter((g) => g.fromIngress), []);

    // convert-networking-config: the Gateway it writes selects the same labels
    const { configs } = convertConfigs([ECHO_INGRESS]);
    const converted = configs.find((c) => c.kind === "Gateway")!;
    const selector = (converted.spec as Obj).selector;
    for (const [k, v] of Object.entries(selector)) assert.equal(labels[k], v, `selector ${k}`);

    // both TLS servers read files of the gateway's certificate secret
    const tlsOf = (spec: Obj) => spec.servers.find((s: Obj) => s.tls).tls;
    for (const tls of [tlsOf(fromIngress[0].spec), tlsOf(converted.spec)]) {
      assert.deepEqual([
        fileSource(pod, pod.containers[0], tls.serverCertificate),
        fileSource(pod, pod.containers[0], tls.privateKey),
      ], ["secret mesh-ingressgateway-certs tls.crt", "secret mesh-ingressgateway-certs tls.key"]);
    }
  });
});
