/**
 * `meshctl get` on orch over the direct REST path (no client library): bearer-token and
 * client-certificate kubeconfigs, and the client-library fallback for an exec plugin. The direct
 * path lists once; the client library's store lists and then watches, so the fake API server's
 * request log tells them apart.
 */
import assert from "node:assert/strict";
import { makeTestPki } from "../harness/certs.ts";
import { type FakeKube, startFakeKube } from "../harness/fake_kube.ts";
import { startKubeTlsFront } from "../harness/fake_kube_tls.ts";
import { crdManifests } from "../../lib/model/mod.ts";
import type { JsonObject } from "../harness/fake_kube.ts";
import { meshctlProcess, withDir } from "./_meshctl.ts";

const VS = (name: string) => ({
  apiVersion: "networking.mesh.io/v1alpha3",
  kind: "VirtualService",
  metadata: { name, namespace: "default" },
  spec: { hosts: [name], http: [{ route: [{ destination: { host: name } }] }] },
});

const TABLE = "NAME      KIND                                         NAMESPACE\n" +
  "a         VirtualService.networking.mesh.io.v1alpha3   default\n";

async function kubeWithOne(): Promise<FakeKube> {
  const kube = await startFakeKube({
    objects: crdManifests() as JsonObject[],
    requireToken: true,
    token: "s3cret",
  });
  kube.upsert(VS("a"));
  return kube;
}

function kubeconfig(server: string, user: Record<string, unknown>, cluster = {}): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster: { server, ...cluster } }],
    users: [{ name: "u", user }],
    contexts: [{ name: "x", context: { cluster: "c", user: "u", namespace: "default" } }],
    "current-context": "x",
  });
}

const watches = (kube: FakeKube) => kube.requests.filter((r) => /watch=(1|true)/.test(r.search));

Deno.test("meshctl get on orch with a bearer token lists over the direct path (no watch); a wrong token is refused", async () => {
  await using kube = await kubeWithOne();
  await withDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/kc`, kubeconfig(kube.url, { token: "s3cret" }));
    const g = await meshctlProcess(["get", "virtualservices", "-c", `${dir}/kc`]);
    assert.deepEqual(g, { code: 0, stdout: TABLE, stderr: "" });
    assert.deepEqual(watches(kube), []);
    const lists = kube.requests.filter((r) => r.path.endsWith("/virtualservices"));
    assert.equal(lists.length, 1);
    assert.match(lists[0].search, /limit=500/);

    await Deno.writeTextFile(`${dir}/token`, "s3cret\n");
    await Deno.writeTextFile(`${dir}/kc2`, kubeconfig(kube.url, { tokenFile: "token" }));
    const fromFile = await meshctlProcess(["get", "vs", "-c", `${dir}/kc2`]);
    assert.deepEqual(fromFile, { code: 0, stdout: TABLE, stderr: "" });

    await Deno.writeTextFile(`${dir}/kc3`, kubeconfig(kube.url, { token: "wrong" }));
    const bad = await meshctlProcess(["get", "vs", "-c", `${dir}/kc3`]);
    assert.equal(bad.code, 1);
    assert.match(
      bad.stderr,
      /^Error: Cannot open the orchestrator config store: cannot list virtualservices\.networking\.mesh\.io\/v1alpha3 from http:\/\/127\.0\.0\.1:\d+: .*\(HTTP 401\)\n$/,
    );
  });
});

Deno.test("meshctl get on orch with a client certificate (files and -data) over TLS; without one the API refuses", async () => {
  const kube = await startFakeKube({ objects: crdManifests() as JsonObject[] });
  kube.upsert(VS("a"));
  const pki = await makeTestPki();
  const front = await startKubeTlsFront(pki, kube.port);
  try {
    await withDir(async (dir) => {
      const client = await pki.issue("admin");
      const b64 = async (f: string) => btoa(String.fromCharCode(...await Deno.readFile(f)));
      await Deno.writeTextFile(
        `${dir}/files`,
        kubeconfig(front.url, { "client-certificate": client.cert, "client-key": client.key }, {
          "certificate-authority": pki.caCert,
        }),
      );
      await Deno.writeTextFile(
        `${dir}/data`,
        kubeconfig(front.url, {
          "client-certificate-data": await b64(client.cert),
          "client-key-data": await b64(client.key),
        }, { "certificate-authority-data": await b64(pki.caCert) }),
      );
      for (const kc of ["files", "data"]) {
        const g = await meshctlProcess(["get", "virtualservices", "-c", `${dir}/${kc}`]);
        assert.deepEqual(g, { code: 0, stdout: TABLE, stderr: "" }, kc);
      }
      assert.deepEqual(watches(kube), []);

      const refusedBefore = front.refused;
      await Deno.writeTextFile(
        `${dir}/nocert`,
        kubeconfig(front.url, {}, { "certificate-authority": pki.caCert }),
      );
      const none = await meshctlProcess(["get", "vs", "-c", `${dir}/nocert`]);
      assert.equal(none.code, 1);
      assert.match(none.stderr, /^Error: Cannot open the orchestrator config store: cannot list /);
      assert.ok(front.refused > refusedBefore, "the front saw no refused handshake");
    });
  } finally {
    await front.close();
    await pki.remove();
    await kube.close();
  }
});

Deno.test("meshctl get on orch with an exec credential plugin goes through the client library", async () => {
  await using kube = await kubeWithOne();
  await withDir(async (dir) => {
    const credential = JSON.stringify({
      apiVersion: "client.authentication.k8s.io/v1beta1",
      kind: "ExecCredential",
      status: { token: "s3cret" },
    });
    await Deno.writeTextFile(
      `${dir}/kc`,
      kubeconfig(kube.url, {
        exec: {
          apiVersion: "client.authentication.k8s.io/v1beta1",
          command: "/bin/sh",
          args: ["-c", `echo '${credential}'`],
          interactiveMode: "Never",
        },
      }, { "insecure-skip-tls-verify": true }),
    );
    const g = await meshctlProcess(["get", "virtualservices", "-c", `${dir}/kc`], {
      env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
    });
    assert.deepEqual(g, { code: 0, stdout: TABLE, stderr: "" });
    // the client library's store: a list, then a watch
    assert.ok(watches(kube).length > 0, JSON.stringify(kube.requests));
  });
});
