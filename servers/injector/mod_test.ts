import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { stringify } from "../../lib/deps/yaml.ts";
import { builtinTemplate, defaultTemplateParams } from "../../lib/inject/mod.ts";
import { makeTestPki, type TestPki } from "../../tests/harness/certs.ts";
import { type FakeKube, type JsonObject, startFakeKube } from "../../tests/harness/fake_kube.ts";
import { waitUntil } from "../../tests/harness/procs.ts";
import { ConfigError, type InjectorHandle, start, toConfig } from "./mod.ts";
import { webhookConfiguration } from "./_testutil.ts";

const REVIEW = await Deno.readTextFile(new URL("./testdata/review-v1.json", import.meta.url));
const REVIEW_V1BETA1 = await Deno.readTextFile(
  new URL("./testdata/review-v1beta1.json", import.meta.url),
);

interface Setup {
  dir: string;
  pki: TestPki;
  kube: FakeKube;
  handle: InjectorHandle;
  url: string;
  client: Deno.HttpClient;
  [Symbol.asyncDispose](): Promise<void>;
}

async function setup(opts: { webhookConfig?: boolean; health?: boolean } = {}): Promise<Setup> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-injector-" });
  const pki = await makeTestPki();
  const leaf = await pki.issue("injector", { ips: ["127.0.0.1"] });
  await Deno.copyFile(leaf.cert, `${dir}/cert-chain.pem`);
  await Deno.copyFile(leaf.key, `${dir}/key.pem`);
  await Deno.copyFile(pki.caCert, `${dir}/root-cert.pem`);
  await Deno.writeTextFile(
    `${dir}/inject-config`,
    stringify({
      policy: "enabled",
      template: builtinTemplate({ ...defaultTemplateParams(), tag: "test" }),
    }),
  );
  const kube = await startFakeKube({
    objects: opts.webhookConfig === false
      ? []
      : [webhookConfiguration("https://127.0.0.1:1/inject")],
  });
  const config = toConfig({
    caCertFile: `${dir}/root-cert.pem`,
    healthCheckFile: opts.health ? `${dir}/health` : "",
    healthCheckInterval: opts.health ? 200 : 0,
    injectConfig: `${dir}/inject-config`,
    orchconfig: kube.kubeconfigPath,
    meshConfig: `${dir}/mesh`,
    port: 0,
    tlsCertFile: `${dir}/cert-chain.pem`,
    tlsKeyFile: `${dir}/key.pem`,
    webhookConfigName: "mesh-sidecar-injector",
    webhookName: "sidecar-injector.mesh.io",
  }, {});
  const handle = await start(config, { debounceMs: 20, caBundleRetryMs: 50 });
  await handle.ready;
  const port = handle.addresses.https.split(":").pop();
  const client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(pki.caCert)] });
  return {
    dir,
    pki,
    kube,
    handle,
    url: `https://127.0.0.1:${port}`,
    client,
    async [Symbol.asyncDispose]() {
      client.close();
      await handle.shutdown();
      await kube.close();
      await pki.remove();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

async function post(s: { url: string; client: Deno.HttpClient }, body: string, client = s.client) {
  const res = await fetch(`${s.url}/inject`, {
    method: "POST",
    client,
    headers: { "content-type": "application/json" },
    body,
  });
  return { status: res.status, body: await res.text() };
}

function caBundleOf(kube: FakeKube): string {
  const cfg = kube.get("mutatingwebhookconfigurations", undefined, "mesh-sidecar-injector");
  return String(((cfg?.webhooks as JsonObject[])[0].clientConfig as JsonObject).caBundle ?? "");
}

Deno.test("sidecar-injector writes the CA into the webhook's caBundle and answers POST /inject over HTTPS", async () => {
  await using s = await setup();
  assert.equal(caBundleOf(s.kube), btoa(await Deno.readTextFile(`${s.dir}/root-cert.pem`)));
  const r = await post(s, REVIEW);
  assert.equal(r.status, 200);
  const review = JSON.parse(r.body);
  assert.equal(review.response.allowed, true);
  const ops = JSON.parse(Buffer.from(review.response.patch, "base64").toString());
  assert.ok(ops.some((o: { path: string }) => o.path === "/spec/containers/-"));
  const empty = await fetch(`${s.url}/inject`, { method: "POST", client: s.client });
  assert.equal(empty.status, 400);
  assert.equal(await empty.text(), "no body found\n");
  const wrong = await fetch(`${s.url}/inject`, {
    method: "POST",
    client: s.client,
    headers: { "content-type": "text/yaml" },
    body: "x",
  });
  assert.equal(wrong.status, 415);
  await wrong.body?.cancel();
});

Deno.test("sidecar-injector reloads its key pair when the files change, without a restart", async () => {
  await using s = await setup();
  const pki2 = await makeTestPki();
  try {
    const leaf = await pki2.issue("injector2", { ips: ["127.0.0.1"] });
    // replace both files by rename, as a mounted secret changes
    await Deno.copyFile(leaf.key, `${s.dir}/.key.tmp`);
    await Deno.copyFile(leaf.cert, `${s.dir}/.cert.tmp`);
    await Deno.rename(`${s.dir}/.key.tmp`, `${s.dir}/key.pem`);
    await Deno.rename(`${s.dir}/.cert.tmp`, `${s.dir}/cert-chain.pem`);
    const client2 = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(pki2.caCert)] });
    try {
      await waitUntil(
        async () => (await post(s, REVIEW, client2)).status === 200,
        10_000,
        "the new certificate",
      );
      await assert.rejects(() => post(s, REVIEW, s.client)); // the old CA no longer verifies
    } finally {
      client2.close();
    }
  } finally {
    await pki2.remove();
  }
});

Deno.test("sidecar-injector reloads --injectConfig and --meshConfig; a bad file keeps the previous one", async () => {
  await using s = await setup();
  const outcome = async () => {
    const r = JSON.parse((await post(s, REVIEW)).body).response;
    return r.patch ? JSON.parse(Buffer.from(r.patch, "base64").toString()) : "skipped";
  };
  await Deno.writeTextFile(
    `${s.dir}/mesh`,
    "defaultConfig:\n  discoveryAddress: disco.example:15007\n",
  );
  await waitUntil(
    async () => JSON.stringify(await outcome()).includes("disco.example:15007"),
    10_000,
    "the mesh configuration",
  );
  await Deno.writeTextFile(
    `${s.dir}/inject-config`,
    "policy: disabled\ntemplate: 'containers: []'\n",
  );
  await waitUntil(async () => (await outcome()) === "skipped", 10_000, "policy disabled");
  const before = s.handle.reloads;
  await Deno.writeTextFile(`${s.dir}/inject-config`, "policy: [\n");
  await waitUntil(() => s.handle.reloads > before, 10_000, "a reload");
  assert.equal(await outcome(), "skipped");
});

Deno.test("sidecar-injector /metrics counts injections, skips, errors and their latency", async () => {
  await using s = await setup();
  await post(s, REVIEW);
  await post(s, REVIEW_V1BETA1);
  await post(
    s,
    JSON.stringify({
      ...JSON.parse(REVIEW),
      request: {
        ...JSON.parse(REVIEW).request,
        object: {
          metadata: { annotations: { "sidecar.mesh.io/inject": "off" } },
          spec: { containers: [] },
        },
      },
    }),
  );
  await post(s, "{broken");
  const text = await (await fetch(`${s.url}/metrics`, { client: s.client })).text();
  assert.match(text, /^sidecar_injection_requests_total 4$/m);
  assert.match(text, /^sidecar_injection_success_total 2$/m);
  assert.match(text, /^sidecar_injection_skip_total 1$/m);
  assert.match(text, /^sidecar_injection_failure_total 1$/m);
  assert.match(text, /^sidecar_injection_duration_seconds_count 4$/m);
});

Deno.test("sidecar-injector refreshes --healthCheckFile and retries the caBundle until the configuration exists", async () => {
  await using s = await setup({ webhookConfig: false, health: true });
  await waitUntil(async () => (await Deno.stat(`${s.dir}/health`)).isFile, 5000, "the health file");
  const first = (await Deno.stat(`${s.dir}/health`)).mtime!.getTime();
  await waitUntil(
    async () => (await Deno.stat(`${s.dir}/health`)).mtime!.getTime() > first,
    5000,
    "a refresh",
  );
  s.kube.upsert(webhookConfiguration("https://127.0.0.1:1/inject"));
  await waitUntil(() => caBundleOf(s.kube) !== "", 10_000, "the caBundle");
});

Deno.test("toConfig() requires --orchconfig outside the orchestrator and checks the flags", () => {
  const flags = {
    caCertFile: "ca",
    healthCheckFile: "",
    healthCheckInterval: 0,
    injectConfig: "i",
    orchconfig: "",
    meshConfig: "m",
    port: 443,
    tlsCertFile: "c",
    tlsKeyFile: "k",
    webhookConfigName: "w",
    webhookName: "n",
  };
  assert.throws(() => toConfig(flags, {}), (e: Error) => {
    assert.ok(e instanceof ConfigError);
    assert.match(e.message, /--orchconfig is required when not running inside the orchestrator/);
    return true;
  });
  assert.equal(toConfig(flags, { KUBERNETES_SERVICE_HOST: "10.0.0.1" }).orchconfig, "");
  assert.throws(
    () => toConfig({ ...flags, orchconfig: "k", port: 70000, healthCheckFile: "h" }, {}),
    /--port: must be 0-65535.*--healthCheckFile and --healthCheckInterval must be given together/,
  );
});

Deno.test("sidecar-injector answers garbage over HTTP with a status and a reason, and keeps serving", async () => {
  await using s = await setup();
  const seed = Number(Deno.env.get("FUZZ_SEED") ?? Date.now() % 2 ** 31);
  console.log(`fuzz seed ${seed}`);
  let a = seed >>> 0;
  const rnd = () => {
    a = (a * 1103515245 + 12345) >>> 0;
    return a / 2 ** 32;
  };
  for (let i = 0; i < 300; i++) {
    const len = Math.floor(rnd() * 2000);
    const bytes = Uint8Array.from({ length: len }, () => Math.floor(rnd() * 256));
    const body = rnd() < 0.5 ? bytes : REVIEW.slice(0, Math.floor(rnd() * REVIEW.length));
    const method = rnd() < 0.9 ? "POST" : "PUT";
    const res = await fetch(`${s.url}/inject`, {
      method,
      client: s.client,
      headers: { "content-type": rnd() < 0.8 ? "application/json" : "text/plain" },
      body,
    });
    const text = await res.text();
    assert.ok([200, 400, 404, 415].includes(res.status), `case ${i} (seed ${seed}): ${res.status}`);
    assert.ok(text.length > 0, `case ${i} (seed ${seed}): empty answer`);
  }
  assert.equal((await post(s, REVIEW)).status, 200);
});

Deno.test("sidecar-injector reloads a mounted config map switched through its ..data link", async () => {
  await using s = await setup();
  const d = s.dir;
  // the layout the kubelet makes: inject-config -> ..data/inject-config, ..data -> ..v1
  await Deno.mkdir(`${d}/..v1`);
  await Deno.copyFile(`${d}/inject-config`, `${d}/..v1/inject-config`);
  await Deno.symlink("..v1", `${d}/..data`);
  await Deno.remove(`${d}/inject-config`);
  await Deno.symlink("..data/inject-config", `${d}/inject-config`);
  assert.equal((await post(s, REVIEW)).status, 200);
  // an update: a new directory, then ..data switched by renaming a new link over it
  await Deno.mkdir(`${d}/..v2`);
  await Deno.writeTextFile(`${d}/..v2/inject-config`, "policy: disabled\n");
  await Deno.symlink("..v2", `${d}/..data_tmp`);
  await Deno.rename(`${d}/..data_tmp`, `${d}/..data`);
  await waitUntil(
    async () => !JSON.parse((await post(s, REVIEW)).body).response.patch,
    10_000,
    "the switched configuration (policy disabled)",
  );
});
