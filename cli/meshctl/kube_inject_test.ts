import assert from "node:assert/strict";
import { type ClusterModules, lazyCluster } from "./kube_inject.ts";
import type { KubeInjectOptions } from "./flags.ts";
import type { MeshctlContext } from "./_config_io.ts";

const ctx = { cwd: "/", env: {}, args: [] } as unknown as MeshctlContext;

Deno.test("lazyCluster().value() rejects once with the clean kubeconfig error when module loading is slow (cold cache)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const opts = {
      meshNamespace: "mesh-system",
      orchconfig: `${dir}/missing-kubeconfig`,
    } as KubeInjectOptions;
    // A first run on a fresh DENO_DIR compiles the orchestrator modules: loading them takes far
    // longer than the failing stat of the kubeconfig. Nothing may reject unobserved meanwhile
    // (Deno fails the test on an unhandled rejection).
    const slowLoad = async (): Promise<ClusterModules> => {
      const kube = await import("../../lib/kube/mod.ts");
      await new Promise((r) => setTimeout(r, 200));
      return { kube, orch: await import("../../lib/inject/orch.ts") };
    };
    const cluster = lazyCluster(opts, ctx, slowLoad);
    await assert.rejects(
      cluster.value("mesh-sidecar-injector", "config", "--injectConfigFile, or --hub and --tag"),
      (e: Error) => {
        assert.match(e.message, /^Cannot read kubeconfig ".*missing-kubeconfig" to get config map/);
        assert.match(e.message, /give -c\/--orchconfig, or --injectConfigFile/);
        return true;
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
