/**
 * meshctl context-create: the kubeconfig it writes is read by the real kubectl.
 */
import assert from "node:assert/strict";
import { parse } from "../../lib/deps/yaml.ts";
import { kubectlAvailable, runKubectl } from "../harness/kubectl.ts";
import { meshctl, meshctlProcess, startKubeWithCrds, withDir } from "./_meshctl.ts";

Deno.test("meshctl context-create writes a kubeconfig kubectl uses", async () => {
  assert.ok(await kubectlAvailable(), "kubectl is on PATH");
  await withDir(async (dir) => {
    const path = `${dir}/kube/config`; // neither the file nor its directory exist yet
    const r = await meshctlProcess(
      ["context-create", "--api-server", "http://127.0.0.1:8080"],
      { env: { KUBECONFIG: path } },
    );
    assert.deepEqual(r, {
      code: 0,
      stdout: `Context "mesh" created in ${path}\n`,
      stderr: "",
    });
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    // no temp file left behind
    assert.deepEqual(await Array.fromAsync(Deno.readDir(`${dir}/kube`), (e) => e.name), [
      "config",
    ]);

    const current = await runKubectl(path, ["config", "current-context"]);
    assert.equal(current.stdout, "mesh\n");
    const view = await runKubectl(path, ["config", "view", "-o", "json"]);
    assert.equal(view.code, 0, view.stderr);
    const cfg = JSON.parse(view.stdout);
    assert.deepEqual(cfg.clusters, [{
      name: "mesh",
      cluster: { server: "http://127.0.0.1:8080", "insecure-skip-tls-verify": true },
    }]);
    assert.deepEqual(cfg.contexts, [{ name: "mesh", context: { cluster: "mesh", user: "mesh" } }]);
    assert.deepEqual(cfg.users.map((u: { name: string }) => u.name), ["mesh"]);

    // another context: the switch is reported, the first context stays
    const r2 = await meshctl([
      "context-create",
      "--api-server",
      "https://10.0.0.1:6443",
      "--context",
      "other",
      "-n",
      "team",
      "-c",
      path,
    ]);
    assert.deepEqual(r2, {
      code: 0,
      stdout: `kubeconfig context switched to "other"\nContext "other" created in ${path}\n`,
      stderr: "",
    });
    const cfg2 = JSON.parse((await runKubectl(path, ["config", "view", "-o", "json"])).stdout);
    assert.equal(cfg2["current-context"], "other");
    assert.deepEqual(
      cfg2.contexts.map((c: { name: string }) => c.name).sort(),
      ["mesh", "other"],
    );
    const other = cfg2.clusters.find((c: { name: string }) => c.name === "other");
    assert.deepEqual(other.cluster, { server: "https://10.0.0.1:6443" });
    assert.equal(
      cfg2.contexts.find((c: { name: string }) => c.name === "other").context.namespace,
      "team",
    );
    // again with the same context: no switch message, server updated in place
    const r3 = await meshctl([
      "context-create",
      "--api-server",
      "http://10.0.0.2:8080",
      "--context",
      "other",
      "-c",
      path,
    ]);
    assert.equal(r3.stdout, `Context "other" created in ${path}\n`);
    const cfg3 = parse(await Deno.readTextFile(path)) as {
      clusters: { name: string; cluster: Record<string, unknown> }[];
    };
    assert.equal(cfg3.clusters.length, 2);
    assert.deepEqual(cfg3.clusters.find((c) => c.name === "other")!.cluster, {
      server: "http://10.0.0.2:8080",
      "insecure-skip-tls-verify": true,
    });
  });
});

Deno.test("meshctl context-create keeps existing entries and points kubectl at the server", async () => {
  await using kube = await startKubeWithCrds();
  await withDir(async (dir) => {
    const path = `${dir}/config`;
    await kube.writeKubeconfig(path);
    const before = await runKubectl(path, ["config", "current-context"]);
    const r = await meshctl([
      "context-create",
      "--api-server",
      kube.url,
      "--context",
      "local",
      "-c",
      path,
    ]);
    assert.equal(
      r.stdout,
      `kubeconfig context switched to "local"\nContext "local" created in ${path}\n`,
    );
    const view = JSON.parse((await runKubectl(path, ["config", "view", "-o", "json"])).stdout);
    assert.ok(view.contexts.some((c: { name: string }) => c.name === before.stdout.trim()));
    // kubectl talks to the fake API server through the new context
    const ns = await runKubectl(path, ["get", "namespaces", "-o", "name"]);
    assert.equal(ns.code, 0, ns.stderr);
    assert.match(ns.stdout, /namespace\/default/);
    // and so does meshctl itself
    const get = await meshctl(["get", "virtualservices", "-c", path]);
    assert.deepEqual(get, { code: 0, stdout: "", stderr: "No resources found.\n" });
  });
});

Deno.test("meshctl context-create refuses a missing or bad --api-server with exit 2", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/config`;
    const cases: [string[], string][] = [
      [[], "specify the api server address with --api-server"],
      [
        ["--api-server", "not a url"],
        'Invalid value for --api-server: "not a url": not a URL (want http://<ip>:<port>)',
      ],
      [
        ["--api-server", "ftp://1.2.3.4"],
        'Invalid value for --api-server: "ftp://1.2.3.4": scheme must be http or https, got "ftp"',
      ],
    ];
    for (const [args, message] of cases) {
      const r = await meshctl(["context-create", ...args, "-c", path]);
      assert.deepEqual(r, {
        code: 2,
        stdout: "",
        stderr: `Error: ${message}\nRun 'meshctl context-create --help' for usage.\n`,
      });
    }
    await assert.rejects(Deno.stat(path), Deno.errors.NotFound);
    // an unreadable kubeconfig is a failure, and is left alone
    await Deno.writeTextFile(path, "clusters: 7\n");
    const bad = await meshctl(["context-create", "--api-server", "http://a:1", "-c", path]);
    assert.equal(bad.code, 1);
    assert.equal(
      bad.stderr,
      `Error: Cannot parse kubeconfig "${path}": clusters must be a list of entries\n`,
    );
    assert.equal(await Deno.readTextFile(path), "clusters: 7\n");
  });
});
