/**
 * The `kubernetesenv` adapter (attribute generation, Istio 0.8's `kubernetesenv`): from the
 * source, destination and origin pod UIDs (`kubernetes://<pod>.<namespace>`) or IPs of a
 * `kubernetes` instance, it looks the pods up through the orchestrator and outputs their IP,
 * name, labels, namespace, service account, host IP and service
 * (`<labels[pod_label_for_app]>.<namespace>.<cluster_domain_name>`). Lookups are cached for
 * `cache_refresh_duration` (absent pods too); concurrent lookups of one pod share one request.
 * On the fs platform (no orchestrator, no `kubeconfig_path`) it generates nothing. A call whose
 * deadline passes or whose client cancels stops waiting for a lookup (the shared lookup goes on
 * and is cached for the calls after it).
 * @module
 */

import { parseIp, type Value } from "../../../lib/expr/mod.ts";
import { kubeClient, type KubeConfig, loadKubeConfig } from "../../../lib/kube/mod.ts";
import { abortable } from "../abort.ts";
import { Params } from "./params.ts";
import type { Adapter, Handler } from "./types.ts";

/** The pod facts the adapter outputs. */
interface PodFacts {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  serviceAccount: string;
  podIp: string;
  hostIp: string;
}

// deno-lint-ignore no-explicit-any
type Pod = any;

/** The text form of an IP_ADDRESS value (4 or 16 bytes). */
function ipText(v: Value | undefined): string | undefined {
  if (!(v instanceof Uint8Array)) return typeof v === "string" && parseIp(v) ? v : undefined;
  if (v.length === 4) return v.join(".");
  if (v.length !== 16) return undefined;
  const groups = [];
  for (let i = 0; i < 16; i += 2) groups.push(((v[i] << 8) | v[i + 1]).toString(16));
  return new URL(`http://[${groups.join(":")}]`).hostname.slice(1, -1);
}

/** `kubernetes://<pod>.<namespace>` → name and namespace (namespaces hold no dots). */
export function parsePodUid(uid: string): { name: string; namespace: string } | undefined {
  const m = /^kubernetes:\/\/(.+)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)$/.exec(uid);
  return m ? { name: m[1], namespace: m[2] } : undefined;
}

function facts(pod: Pod): PodFacts {
  return {
    name: pod.metadata?.name ?? "",
    namespace: pod.metadata?.namespace ?? "",
    labels: { ...(pod.metadata?.labels ?? {}) },
    serviceAccount: pod.spec?.serviceAccountName ?? pod.spec?.serviceAccount ?? "",
    podIp: pod.status?.podIP ?? "",
    hostIp: pod.status?.hostIP ?? "",
  };
}

/** See the module doc. */
export const kubernetesenv: Adapter = {
  kind: "kubernetesenv",
  templates: ["kubernetes"],
  build(spec, env, object) {
    const p = new Params(spec, object).only([
      "kubeconfig_path",
      "cache_refresh_duration",
      "cluster_domain_name",
      "pod_label_for_app",
    ]);
    const path = p.string("kubeconfig_path", "");
    const ttlMs = p.durationMs("cache_refresh_duration", 5 * 60_000);
    const domain = p.string("cluster_domain_name", "svc.cluster.local");
    const appLabel = p.string("pod_label_for_app", "app");
    const config: (() => Promise<KubeConfig>) | undefined = path
      ? () => loadKubeConfig(path)
      : env.kubeConfig;
    if (!config) return {}; // the fs platform: nothing to look up, nothing generated

    let core: Promise<Pod> | undefined;
    const api = () =>
      core ??= Promise.all([kubeClient(), config()]).then(([k8s, kc]) =>
        kc.makeApiClient(k8s.CoreV1Api)
      ).catch((e) => {
        core = undefined;
        throw e;
      });
    const cache = new Map<string, { at: number; pod: Promise<PodFacts | undefined> }>();
    const lookup = (key: string, fetchPod: (core: Pod) => Promise<Pod | undefined>) => {
      const hit = cache.get(key);
      if (hit && env.now() - hit.at < ttlMs) return hit.pod;
      const pod = api().then(fetchPod).then((x) => x ? facts(x) : undefined).catch((e) => {
        cache.delete(key); // errors are not cached: the next request asks again
        const code = (e as { code?: number }).code;
        if (code === 404) return undefined;
        env.log.warn(`${object}: cannot look up pod ${key}: ${(e as Error).message}`);
        return undefined;
      });
      if (cache.size > 10_000) cache.clear();
      cache.set(key, { at: env.now(), pod });
      return pod;
    };
    const byUid = (uid: string) => {
      const id = parsePodUid(uid);
      if (!id) return Promise.resolve(undefined);
      return lookup(`uid:${uid}`, async (c) => {
        try {
          return await c.readNamespacedPod(id);
        } catch (e) {
          if ((e as { code?: number }).code === 404) return undefined;
          throw e;
        }
      });
    };
    const byIp = (ip: string) =>
      lookup(`ip:${ip}`, async (c) => {
        const list = await c.listPodForAllNamespaces({ fieldSelector: `status.podIP=${ip}` });
        return (list.items as Pod[]).find((x) => x.spec?.hostNetwork !== true) ?? list.items[0];
      });

    const handler: Handler = {
      async generate(inst, signal) {
        const v = inst.value;
        const out: Record<string, Value> = {};
        for (const party of ["source", "destination", "origin"]) {
          const uid = v[`${party}_uid`];
          const ip = ipText(v[`${party}_ip`] as Value | undefined);
          const pod = typeof uid === "string" && uid !== ""
            ? await abortable(byUid(uid), signal)
            : ip && ip !== "0.0.0.0"
            ? await abortable(byIp(ip), signal)
            : undefined;
          if (!pod) continue;
          out[`${party}_pod_name`] = pod.name;
          out[`${party}_namespace`] = pod.namespace;
          out[`${party}_labels`] = pod.labels;
          if (pod.serviceAccount) out[`${party}_service_account_name`] = pod.serviceAccount;
          const podIp = parseIp(pod.podIp), hostIp = parseIp(pod.hostIp);
          if (podIp) out[`${party}_pod_ip`] = podIp;
          if (hostIp) out[`${party}_host_ip`] = hostIp;
          const app = pod.labels[appLabel];
          if (app) out[`${party}_service`] = `${app}.${pod.namespace}.${domain}`;
        }
        return out;
      },
      close() {
        cache.clear();
      },
    };
    return handler;
  },
};
