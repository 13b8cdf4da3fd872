import assert from "node:assert/strict";
import { ConflictError, NotFoundError, ValidationError } from "../store/types.ts";
import {
  apiErrorStatus,
  currentNamespace,
  loadKubeConfig,
  resolveKubeconfigPath,
  toStoreError,
} from "./mod.ts";

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- name: c1
  cluster: { server: "http://127.0.0.1:1", insecure-skip-tls-verify: true }
users:
- name: u1
  user: { token: t }
contexts:
- name: one
  context: { cluster: c1, user: u1, namespace: team-a }
- name: two
  context: { cluster: c1, user: u1 }
current-context: one
`;

Deno.test("resolveKubeconfigPath() prefers the flag, then KUBECONFIG's first entry, then HOME", () => {
  assert.equal(resolveKubeconfigPath("/flag", { KUBECONFIG: "/a:/b", HOME: "/h" }), "/flag");
  assert.equal(resolveKubeconfigPath("", { KUBECONFIG: ":/a:/b", HOME: "/h" }), "/a");
  assert.equal(resolveKubeconfigPath(undefined, { HOME: "/h" }), "/h/.kube/config");
  assert.equal(resolveKubeconfigPath(undefined, {}), "");
});

Deno.test("loadKubeConfig() reads a file, selects a context and reports the namespace", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/config`;
    await Deno.writeTextFile(path, KUBECONFIG);
    const kc = await loadKubeConfig(path);
    assert.equal(kc.getCurrentContext(), "one");
    assert.equal(currentNamespace(kc), "team-a");
    const kc2 = await loadKubeConfig(path, "two");
    assert.equal(currentNamespace(kc2), "default");
    await assert.rejects(loadKubeConfig(path, "three"), /Context "three" not found.*one, two/);
    await assert.rejects(loadKubeConfig(`${dir}/missing`), /Cannot read kubeconfig ".*missing"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("toStoreError() maps 409, 404 and 422 Status answers to store errors", () => {
  const ex = (code: number, message: string) => ({
    code,
    body: JSON.stringify({ kind: "Status", code, message, reason: "X" }),
    message: `HTTP-Code: ${code}`,
  });
  const c = toStoreError(ex(409, "already exists"), "create VirtualService/default/a");
  assert.ok(c instanceof ConflictError);
  assert.equal(c.message, "create VirtualService/default/a: already exists");
  assert.ok(toStoreError(ex(404, "gone"), "get x") instanceof NotFoundError);
  const v = toStoreError(ex(422, "spec.hosts: Required value"), "create y");
  assert.ok(v instanceof ValidationError);
  assert.match(v.message, /spec\.hosts: Required value/);
  const other = toStoreError(ex(500, "boom"), "list z");
  assert.equal(other.message, "list z: boom (HTTP 500)");
  assert.equal(toStoreError(new Error("ECONNREFUSED"), "list z").message, "list z: ECONNREFUSED");
  assert.equal(apiErrorStatus(new Error("plain")), undefined);
  assert.deepEqual(apiErrorStatus({ statusCode: 410, message: "Gone" }), {
    code: 410,
    message: "Gone",
    reason: undefined,
  });
});

Deno.test("loadKubeConfig() without a path uses the in-cluster environment it is given, not the process's", async () => {
  await assert.rejects(
    () => loadKubeConfig("", undefined, {}),
    /KUBERNETES_SERVICE_HOST is not set \(give a kubeconfig path\)/,
  );
  const kc = await loadKubeConfig("", undefined, {
    KUBERNETES_SERVICE_HOST: "10.96.0.1",
    KUBERNETES_SERVICE_PORT: "443",
  });
  assert.equal(kc.getCurrentCluster()?.server, "https://10.96.0.1:443");
  const v6 = await loadKubeConfig("", undefined, { KUBERNETES_SERVICE_HOST: "fd00::1" });
  assert.equal(v6.getCurrentCluster()?.server, "https://[fd00::1]:443");
});
