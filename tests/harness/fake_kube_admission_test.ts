import assert from "node:assert/strict";
import { makeTestPki } from "./certs.ts";
import { type JsonObject, startFakeKube } from "./fake_kube.ts";
import { selectorMatches } from "./fake_kube_admission.ts";

Deno.test("selectorMatches() follows LabelSelector rules", () => {
  const l = { a: "1", b: "2" };
  assert.ok(selectorMatches(undefined, l));
  assert.ok(selectorMatches({}, l));
  assert.ok(selectorMatches({ matchLabels: { a: "1" } }, l));
  assert.ok(!selectorMatches({ matchLabels: { a: "2" } }, l));
  assert.ok(
    selectorMatches({ matchExpressions: [{ key: "a", operator: "In", values: ["1", "3"] }] }, l),
  );
  assert.ok(
    !selectorMatches({ matchExpressions: [{ key: "b", operator: "NotIn", values: ["2"] }] }, l),
  );
  assert.ok(selectorMatches({ matchExpressions: [{ key: "c", operator: "DoesNotExist" }] }, l));
  assert.ok(!selectorMatches({ matchExpressions: [{ key: "c", operator: "Exists" }] }, l));
});

Deno.test("the fake API server calls mutating webhooks on create as the real one does", async () => {
  const pki = await makeTestPki();
  const leaf = await pki.issue("hook", { ips: ["127.0.0.1"] });
  const seen: JsonObject[] = [];
  const server = Deno.serve({
    port: 0,
    hostname: "127.0.0.1",
    cert: await Deno.readTextFile(leaf.cert),
    key: await Deno.readTextFile(leaf.key),
    onListen: () => {},
  }, async (req) => {
    const review = await req.json();
    seen.push(review);
    const obj = review.request.object;
    const deny = obj.metadata.labels?.deny === "yes";
    const patch = btoa(
      JSON.stringify([{ op: "add", path: "/metadata/labels/mutated", value: "yes" }]),
    );
    return Response.json({
      apiVersion: review.apiVersion,
      kind: "AdmissionReview",
      response: deny
        ? { uid: review.request.uid, allowed: false, result: { message: "no thanks", code: 403 } }
        : { uid: review.request.uid, allowed: true, patchType: "JSONPatch", patch },
    });
  });
  const ca = btoa(await Deno.readTextFile(pki.caCert));
  const hook = (name: string, extra: JsonObject): JsonObject => ({
    name,
    clientConfig: { url: `https://127.0.0.1:${server.addr.port}/`, caBundle: ca },
    rules: [{ operations: ["CREATE"], apiGroups: [""], apiVersions: ["v1"], resources: ["pods"] }],
    sideEffects: "None",
    admissionReviewVersions: ["v1"],
    ...extra,
  });
  try {
    await using kube = await startFakeKube({
      objects: [{
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "MutatingWebhookConfiguration",
        metadata: { name: "a" },
        webhooks: [
          hook("labelled.example.com", {
            objectSelector: { matchExpressions: [{ key: "skip", operator: "DoesNotExist" }] },
            admissionReviewVersions: ["v1beta1"],
          }),
          hook("down-ignored.example.com", {
            clientConfig: { url: "https://127.0.0.1:1/", caBundle: ca },
            failurePolicy: "Ignore",
          }),
          hook("untrusted.example.com", {
            clientConfig: { url: `https://127.0.0.1:${server.addr.port}/` },
            namespaceSelector: { matchLabels: { strict: "on" } },
          }),
        ],
      }],
    });
    kube.upsert({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "strict", labels: { strict: "on" } },
    });
    const create = (ns: string, labels: Record<string, string>) =>
      fetch(`${kube.url}/api/v1/namespaces/${ns}/pods`, {
        method: "POST",
        headers: { ...kube.authHeaders, "content-type": "application/json" },
        body: JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: `p-${Object.keys(labels).join("-") || "x"}`, labels },
          spec: { containers: [{ name: "c", image: "i" }] },
        }),
      });
    const ok = await create("default", {});
    assert.equal(ok.status, 201, await ok.clone().text());
    assert.equal((await ok.json()).metadata.labels.mutated, "yes");
    assert.equal(seen.length, 1);
    assert.equal(seen[0].apiVersion, "admission.k8s.io/v1beta1");
    assert.equal((seen[0].request as JsonObject).operation, "CREATE");

    const skipped = await create("default", { skip: "1" });
    assert.equal(skipped.status, 201);
    assert.equal((await skipped.json()).metadata.labels.mutated, undefined);
    assert.equal(seen.length, 1);

    const denied = await create("default", { deny: "yes" });
    assert.equal(denied.status, 403);
    assert.match(
      (await denied.json()).message,
      /admission webhook "labelled.example.com" denied the request: no thanks/,
    );

    const untrusted = await create("strict", {});
    assert.equal(untrusted.status, 500);
    assert.match(
      (await untrusted.json()).message,
      /^Internal error occurred: failed calling webhook "untrusted.example.com": failed to call webhook: /,
    );
    assert.equal(kube.get("pods", "strict", "p-x"), undefined);
  } finally {
    await server.shutdown();
    await pki.remove();
  }
});
