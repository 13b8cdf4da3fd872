/**
 * The orchestrator's kubeconfig of an `orch://<path>` `--configStoreURL` (attribute generation).
 * @module
 */

import { type KubeConfig, loadKubeConfig } from "../../lib/kube/mod.ts";

/** The kubeconfig of an `orch://<path>` store URL (loaded once, on first use). */
export function orchKubeConfig(url: string): (() => Promise<KubeConfig>) | undefined {
  const m = /^orch:\/\/(.*)$/is.exec(url);
  if (!m) return undefined;
  let kc: Promise<KubeConfig> | undefined;
  return () =>
    kc ??= loadKubeConfig(m[1] || undefined).catch((e) => {
      kc = undefined;
      throw e;
    });
}
