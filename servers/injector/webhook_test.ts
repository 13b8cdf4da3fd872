import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { stringify } from "../../lib/deps/yaml.ts";
import { injectStream } from "../../lib/inject/mod.ts";
import { jsonPatch } from "../../tests/harness/_patch.ts";
import { testInjector as injector } from "../../lib/inject/testing.ts";
import { answerReview } from "./webhook.ts";

const TESTDATA = new URL("./testdata/", import.meta.url);

// deno-lint-ignore no-explicit-any
type Any = any;

function decode(body: string): Any {
  const review = JSON.parse(body);
  if (review.response?.patch) {
    review.response.patch = JSON.parse(Buffer.from(review.response.patch, "base64").toString());
  }
  return review;
}

for (const name of ["review-v1", "review-v1beta1", "review-skip", "review-grpc-agent"]) {
  Deno.test(`answerReview() answers ${name}.json as ${name}.out.json (patch decoded)`, async () => {
    const input = await Deno.readTextFile(new URL(`${name}.json`, TESTDATA));
    const a = answerReview(input, "application/json", injector());
    assert.equal(a.status, 200);
    const actual =
      JSON.stringify({ status: a.status, outcome: a.outcome, review: decode(a.body) }, null, 2) +
      "\n";
    const url = new URL(`${name}.out.json`, TESTDATA);
    if (Deno.env.get("UPDATE_GOLDEN")) await Deno.writeTextFile(url, actual);
    assert.equal(actual, await Deno.readTextFile(url));
  });
}

Deno.test("answerReview(): the patch applied with a JSON-patch library equals kube-inject's output", async () => {
  for (const name of ["review-v1", "review-v1beta1", "review-grpc-agent"]) {
    const review = JSON.parse(await Deno.readTextFile(new URL(`${name}.json`, TESTDATA)));
    const pod = review.request.object;
    const a = decode(answerReview(JSON.stringify(review), "application/json", injector()).body);
    const patched = jsonPatch(structuredClone(pod), a.response.patch);
    const kubeInject =
      injectStream(stringify({ apiVersion: "v1", kind: "Pod", ...pod }), injector()).output;
    const { parse } = await import("../../lib/deps/yaml.ts");
    assert.deepEqual({ apiVersion: "v1", kind: "Pod", ...(patched as object) }, parse(kubeInject));
    // and re-injecting the patched pod changes nothing
    review.request.object = patched;
    const again = decode(answerReview(JSON.stringify(review), "application/json", injector()).body);
    assert.deepEqual(jsonPatch(structuredClone(patched), again.response.patch), patched);
  }
});

Deno.test("answerReview() refuses bad requests as the reference does", () => {
  const inj = injector();
  assert.deepEqual(
    [
      answerReview("", "application/json", inj).status,
      answerReview("", "application/json", inj).body,
    ],
    [400, "no body found\n"],
  );
  const ct = answerReview("{}", "text/plain", inj);
  assert.equal(ct.status, 415);
  assert.equal(ct.body, "invalid Content-Type, want `application/json`\n");
  const cases: [string, RegExp][] = [
    ["{not json", /^cannot decode AdmissionReview: /],
    ["[]", /must be a JSON object/],
    [`{"kind":"Pod","apiVersion":"v1"}`, /kind must be AdmissionReview, got "Pod"/],
    [
      `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v2"}`,
      /apiVersion must be admission.k8s.io\/v1 or admission.k8s.io\/v1beta1/,
    ],
    [`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"}`, /request is missing/],
    [
      `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{}}`,
      /request.uid is missing/,
    ],
    [
      `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u","object":{"spec":{}}}}`,
      /request.object: spec.containers must be a list/,
    ],
    [
      `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u","kind":{"kind":"Service"}}}`,
      /request.kind must be Pod, got "Service"/,
    ],
    [
      `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u","object":{"metadata":{"annotations":{"sidecar.mesh.io/interceptionMode":"X"}},"spec":{"containers":[]}}}}`,
      /annotation sidecar.mesh.io\/interceptionMode: must be REDIRECT or TPROXY/,
    ],
  ];
  for (const [body, re] of cases) {
    const a = answerReview(body, "application/json", inj);
    assert.equal(a.status, 200, body);
    const r = JSON.parse(a.body);
    assert.equal(r.kind, "AdmissionReview");
    assert.equal(r.response.allowed, false);
    assert.match(r.response.result.message, re);
  }
});

/** mulberry32: a small seeded PRNG, so a failing case can be replayed from the printed seed. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

Deno.test("answerReview() answers 10,000 malformed reviews and pods with a reason, never a crash", async () => {
  const seed = Number(Deno.env.get("FUZZ_SEED") ?? Date.now() % 2 ** 31);
  console.log(`fuzz seed ${seed} (FUZZ_SEED=${seed} to replay)`);
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  const base = JSON.parse(await Deno.readTextFile(new URL("review-v1.json", TESTDATA)));
  const junk: unknown[] = [
    null,
    0,
    -1,
    1e308,
    "",
    "x",
    "*",
    "10.0.0.0/33",
    "REDIRECT",
    "TPROXY",
    "yes",
    true,
    false,
    [],
    {},
    [1, "a"],
    { name: 3 },
    "a".repeat(5000),
    "[[ .X ]]",
    "\u0000",
    "-",
    "8080,",
    "0",
    "65536",
    { containerPort: "80" },
  ];
  const keys = [
    "apiVersion",
    "kind",
    "request",
    "uid",
    "object",
    "metadata",
    "spec",
    "containers",
    "initContainers",
    "volumes",
    "imagePullSecrets",
    "annotations",
    "labels",
    "name",
    "namespace",
    "hostNetwork",
    "serviceAccountName",
    "ports",
    "containerPort",
    "sidecar.mesh.io/inject",
    "sidecar.mesh.io/status",
    "sidecar.mesh.io/interceptionMode",
    "traffic.sidecar.mesh.io/includeOutboundIPRanges",
    "traffic.sidecar.mesh.io/excludeInboundPorts",
    "sidecar.mesh.io/proxyImage",
  ];
  const mutate = (v: unknown, depth: number): unknown => {
    if (depth > 6 || rnd() < 0.15) return rnd() < 0.5 ? pick(junk) : v;
    if (Array.isArray(v)) {
      const out = v.map((x) => rnd() < 0.3 ? mutate(x, depth + 1) : x);
      if (rnd() < 0.2) out.push(mutate(pick(junk), depth + 1));
      return out;
    }
    if (v && typeof v === "object") {
      const out: Record<string, unknown> = { ...(v as Record<string, unknown>) };
      for (const k of Object.keys(out)) {
        const r = rnd();
        if (r < 0.1) delete out[k];
        else if (r < 0.5) out[k] = mutate(out[k], depth + 1);
      }
      if (rnd() < 0.3) out[pick(keys)] = pick(junk);
      return out;
    }
    return rnd() < 0.5 ? pick(junk) : v;
  };
  const inj = injector();
  const counts = { injected: 0, skipped: 0, refused: 0, http: 0 };
  for (let i = 0; i < 10_000; i++) {
    let body: string;
    const mode = rnd();
    if (mode < 0.8) body = JSON.stringify(mutate(structuredClone(base), 0));
    else if (mode < 0.9) {
      const s = JSON.stringify(base);
      body = s.slice(0, Math.floor(rnd() * s.length));
    } else {body = Array.from({ length: Math.floor(rnd() * 64) }, () =>
        String.fromCharCode(Math.floor(rnd() * 256))).join("");}
    const ct = rnd() < 0.97
      ? "application/json"
      : pick(["text/plain", "", "application/json; charset=utf-8"]);
    const a = answerReview(body, ct, inj);
    const where = `case ${i} (seed ${seed}): ${body.slice(0, 300)}`;
    if (a.status !== 200) {
      assert.ok([400, 415].includes(a.status), where);
      assert.ok(a.body.trim().length > 0, where);
      counts.http++;
      continue;
    }
    const r = JSON.parse(a.body);
    assert.equal(r.kind, "AdmissionReview", where);
    assert.equal(typeof r.response.allowed, "boolean", where);
    if (!r.response.allowed) {
      assert.ok(
        typeof r.response.result.message === "string" && r.response.result.message !== "",
        where,
      );
      counts.refused++;
    } else if (r.response.patch) {
      const ops = JSON.parse(Buffer.from(r.response.patch, "base64").toString());
      const obj = JSON.parse(body).request.object;
      jsonPatch(obj, ops); // a patch the API server can apply
      counts.injected++;
    } else counts.skipped++;
  }
  console.log(counts);
  assert.ok(counts.injected > 0 && counts.refused > 0 && counts.http > 0);
});
