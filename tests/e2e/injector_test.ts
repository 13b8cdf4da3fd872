/**
 * sidecar-injector end to end: the real program against the fake API server, which calls the
 * webhook on pod creation as the real one does; `kubectl apply -f pod.yaml` stores the injected
 * pod, equal to what `meshctl kube-inject` produces for the same pod.
 */
import assert from "node:assert/strict";
import { parse, stringify } from "../../lib/deps/yaml.ts";
import { builtinTemplate, defaultTemplateParams } from "../../lib/inject/mod.ts";
import { injectorArgs, webhookConfiguration } from "../../servers/injector/_testutil.ts";
import { makeTestPki } from "../harness/certs.ts";
import { type JsonObject, startFakeKube } from "../harness/fake_kube.ts";
import { kubectlAvailable, runKubectl } from "../harness/kubectl.ts";
import { freePort, runProgram, spawnProgram, waitUntil, withTempDir } from "../harness/procs.ts";
import { meshctl } from "./_meshctl.ts";

const pod = (name: string, ns: string, annotations: Record<string, string> = {}) =>
  `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: ${ns}
  labels: {app: ${name}}
  annotations: ${JSON.stringify(annotations)}
spec:
  serviceAccountName: ${name}
  containers:
  - name: ${name}
    image: nginx
    ports: [{containerPort: 8080}]
`;

Deno.test("kubectl apply through the fake API server stores the pod sidecar-injector injected", async () => {
  if (!(await kubectlAvailable())) throw new Error("kubectl is required (Debian package kubectl)");
  await withTempDir(async (dir) => {
    const pki = await makeTestPki();
    try {
      const leaf = await pki.issue("injector", { ips: ["127.0.0.1"] });
      const template = builtinTemplate({
        ...defaultTemplateParams(),
        hub: "reg.local",
        tag: "e2e",
      });
      await Deno.writeTextFile(`${dir}/inject`, stringify({ policy: "enabled", template }));
      await Deno.writeTextFile(`${dir}/mesh`, "defaultConfig:\n  discoveryAddress: disco:15007\n");
      const port = freePort();
      await using kube = await startFakeKube({
        namespaces: ["default", "kube-system", "mesh-system"],
        objects: [
          {
            apiVersion: "v1",
            kind: "Namespace",
            metadata: { name: "shop", labels: { "mesh-injection": "enabled" } },
          },
          webhookConfiguration(`https://127.0.0.1:${port}/inject`),
        ],
      });
      await using proc = spawnProgram("sidecar-injector", [
        ...injectorArgs({
          port,
          cert: leaf.cert,
          key: leaf.key,
          caCert: pki.caCert,
          dir,
          kubeconfig: kube.kubeconfigPath,
        }),
        "--healthCheckFile",
        `${dir}/health`,
        "--healthCheckInterval",
        "1s",
      ], { clearEnv: true });
      const cfg = () =>
        kube.get("mutatingwebhookconfigurations", undefined, "mesh-sidecar-injector")!;
      const ca = await Deno.readTextFile(pki.caCert);
      await waitUntil(
        () =>
          ((cfg().webhooks as JsonObject[])[0].clientConfig as JsonObject).caBundle === btoa(ca),
        20_000,
        `caBundle written; output: ${proc.output()}`,
      );
      await waitUntil(
        async () => (await Deno.stat(`${dir}/health`)).isFile,
        10_000,
        "the health file",
      );

      const apply = (text: string) =>
        runKubectl(kube.kubeconfigPath, ["apply", "-f", "-"], { stdin: text });
      const r = await apply(pod("web", "shop"));
      assert.equal(r.code, 0, r.stderr + proc.output());
      const stored = kube.get("pods", "shop", "web")!;
      const spec = stored.spec as JsonObject & { containers: JsonObject[] };
      assert.deepEqual(spec.containers.map((c) => c.name), ["web", "mesh-proxy"]);
      assert.equal(spec.containers[1].image, "reg.local/proxy:e2e");

      // the same pod through kube-inject, with the same configuration files
      const ki = await meshctl([
        "kube-inject",
        "--injectConfigFile",
        `${dir}/inject`,
        "--meshConfigFile",
        `${dir}/mesh`,
        "-f",
        "-",
      ], { stdin: pod("web", "shop") });
      assert.equal(ki.code, 0, ki.stderr);
      const expected = parse(ki.stdout);
      // kubectl apply adds its last-applied annotation; the injected status is the same
      const status = "sidecar.mesh.io/status";
      assert.equal(
        (stored.metadata.annotations as JsonObject)[status],
        expected.metadata.annotations[status],
      );
      for (const f of ["containers", "initContainers", "volumes"]) {
        assert.deepEqual(spec[f], expected.spec[f], f);
      }

      // not in a labelled namespace, or opted out: stored as given
      assert.equal((await apply(pod("plain", "default"))).code, 0);
      assert.equal(
        (kube.get("pods", "default", "plain")!.spec as { containers: unknown[] }).containers.length,
        1,
      );
      assert.equal(
        (await apply(pod("optout", "shop", { "sidecar.mesh.io/inject": "false" }))).code,
        0,
      );
      assert.equal(
        (kube.get("pods", "shop", "optout")!.spec as { containers: unknown[] }).containers.length,
        1,
      );

      // a bad annotation: the webhook denies the pod and kubectl says why
      const bad = await apply(
        pod("bad", "shop", { "traffic.sidecar.mesh.io/includeInboundPorts": "http" }),
      );
      assert.notEqual(bad.code, 0);
      assert.match(
        bad.stderr,
        /admission webhook "sidecar-injector.mesh.io" denied the request: annotation traffic.sidecar.mesh.io\/includeInboundPorts: "http" is not a port/,
      );
      assert.equal(kube.get("pods", "shop", "bad"), undefined);

      // failurePolicy Fail: with the injector stopped, creation in the labelled namespace fails
      await proc.stop();
      const down = await apply(pod("down", "shop"));
      assert.notEqual(down.code, 0);
      assert.match(down.stderr, /failed calling webhook "sidecar-injector.mesh.io"/);
    } finally {
      await pki.remove();
    }
  });
});

Deno.test("sidecar-injector outside the orchestrator without --orchconfig is a clear startup error", async () => {
  const r = await runProgram("sidecar-injector", ["--port", "0"], { clearEnv: true });
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    /^Error: --orchconfig is required when not running inside the orchestrator \(KUBERNETES_SERVICE_HOST is not set\)\n/,
  );
  const certs = await runProgram("sidecar-injector", [
    "--port",
    "0",
    "--orchconfig",
    "/nonexistent",
  ], { clearEnv: true });
  assert.equal(certs.code, 1);
  assert.match(
    certs.stderr,
    /Error: Cannot read --injectConfig "\/etc\/mesh\/inject\/config": no such file/,
  );
});
