/**
 * The orchestrator's Ingress objects, kept by list + watch ({@linkcode createInformer}) and
 * selected by the mesh ingress class (reference §8.3), for discovery's gateway generation
 * (`ingressesToConfigs` in lib/xds turns them into one Gateway and one VirtualService).
 *
 * - `networking.k8s.io/v1` Ingresses are watched when the cluster serves them; otherwise
 *   `extensions/v1beta1` when served; otherwise nothing is watched (a warning is logged).
 * - Each object is parsed with {@linkcode normalizeIngress}; an invalid one is skipped with one
 *   warning naming the field (again only when it changes).
 * - Selection follows {@linkcode ingressClassMatches} (`ingressControllerMode` OFF / DEFAULT /
 *   STRICT against `ingressClass`; the class is the `kubernetes.io/ingress.class` annotation,
 *   else `spec.ingressClassName`). With OFF nothing is listed or watched at all.
 * - {@linkcode IngressWatcher.ingresses} returns the selected Ingresses as config objects in the
 *   generator's form: `extensions/v1beta1`-style backends (`serviceName`, `servicePort`), the
 *   class copied into the annotation, and `pathType: Prefix` paths written with the `.*` suffix
 *   the generator reads as a prefix match (`Exact` and `ImplementationSpecific` paths as given).
 *
 * @example
 * ```ts ignore
 * const w = await createIngressWatcher({ kubeconfigPath, resyncMs: 60_000, meshConfig });
 * w.onChange(() => console.log(w.ingresses().length));
 * await w.start();
 * await w.stop();
 * ```
 * @module
 */
import { getLogger } from "../log/mod.ts";
import { type InClusterEnv, kubeClient, type KubeConfig, loadKubeConfig } from "../kube/mod.ts";
import { createInformer, describeApiError, type Informer } from "../kube/informer.ts";
import {
  type Ingress,
  INGRESS_CLASS_ANNOTATION,
  ingressClassMatches,
  normalizeIngress,
} from "../model/ingress.ts";
import type { MeshConfig } from "../model/meshconfig.ts";
import type { ConfigObject } from "../model/types.ts";

/** Options of {@linkcode createIngressWatcher}. */
export interface IngressWatcherOptions {
  /** Kubeconfig file; empty = in-cluster configuration. Ignored with `kubeConfig`. */
  kubeconfigPath?: string;
  /** In-cluster environment (used when `kubeconfigPath` is empty), read by the program. */
  inCluster?: InClusterEnv;
  /** Kubeconfig context other than the current one. */
  context?: string;
  /** An already loaded kubeconfig. */
  kubeConfig?: KubeConfig;
  /** Watch only this namespace (`--appNamespace`); empty = all. */
  appNamespace?: string;
  /** Relist period in ms (`--resync`); 0 = only after a 410 Gone. */
  resyncMs: number;
  /** The mesh configuration's ingress class and controller mode. */
  meshConfig: Pick<MeshConfig, "ingressClass" | "ingressControllerMode">;
  /** Server-side watch timeout in seconds (tests). */
  watchTimeoutSeconds?: number;
}

/** A running Ingress watcher. */
export interface IngressWatcher {
  /** The API version watched (`networking.k8s.io/v1`, `extensions/v1beta1`), or "" for none. */
  readonly apiVersion: string;
  /** The selected Ingresses, sorted by namespace and name, in the generator's form. */
  ingresses(): ConfigObject[];
  /** Called after the selected set changed. */
  onChange(handler: () => void): void;
  /** Lists and starts watching; resolves once the first list is in. */
  start(): Promise<void>;
  /** Stops watching. Idempotent. */
  stop(): Promise<void>;
}

const CANDIDATES = [
  { group: "networking.k8s.io", version: "v1" },
  { group: "extensions", version: "v1beta1" },
] as const;

/**
 * Converts a normalized Ingress into the config object the xDS generator reads (see the module
 * documentation).
 */
export function ingressConfigObject(ing: Ingress): ConfigObject {
  const backend = (b: { serviceName: string; servicePort: number | string }) => ({
    serviceName: b.serviceName,
    servicePort: b.servicePort,
  });
  const annotations = { ...ing.annotations };
  if (annotations[INGRESS_CLASS_ANNOTATION] === undefined && ing.ingressClassName !== undefined) {
    annotations[INGRESS_CLASS_ANNOTATION] = ing.ingressClassName;
  }
  const spec: Record<string, unknown> = {
    rules: ing.rules.map((r) => ({
      ...(r.host ? { host: r.host } : {}),
      http: {
        paths: r.paths.map((p) => ({
          path: p.pathType === "Prefix" && p.path !== "" && !p.path.endsWith(".*")
            ? `${p.path}.*`
            : p.path,
          backend: backend(p),
        })),
      },
    })),
  };
  if (ing.defaultBackend) spec.backend = backend(ing.defaultBackend);
  if (ing.tls.length) spec.tls = ing.tls.map((t) => ({ hosts: t.hosts, secretName: t.secretName }));
  return {
    apiVersion: ing.apiVersion,
    kind: "Ingress",
    metadata: { name: ing.name, namespace: ing.namespace, annotations },
    spec,
  };
}

// long: closure over the Ingress informer's cache and handlers; split left to issue 25
/**
 * Creates the watcher (loads the kubeconfig and the client library); nothing is read until
 * `start()`. With `ingressControllerMode: OFF` the watcher never contacts the cluster.
 */
export async function createIngressWatcher(
  options: IngressWatcherOptions,
): Promise<IngressWatcher> {
  const log = getLogger("default");
  const mode = options.meshConfig.ingressControllerMode;
  const handlers: (() => void)[] = [];
  // key → the selected object, or null (not selected or invalid)
  const state = new Map<string, ConfigObject | null>();
  const warned = new Map<string, string>();
  let output: ConfigObject[] = [];
  let outputText = "[]";
  let informer: Informer | undefined;
  let apiVersion = "";
  let stopped = false;

  const k8s = mode === "OFF" ? undefined : await kubeClient();
  const kc = mode === "OFF" ? undefined : options.kubeConfig ??
    await loadKubeConfig(options.kubeconfigPath, options.context, options.inCluster);
  const ns = options.appNamespace ?? "";

  const keyOf = (o: unknown) => {
    const m = (o as { metadata?: { namespace?: string; name?: string } })?.metadata;
    return `${m?.namespace ?? ""}/${m?.name ?? ""}`;
  };

  function convert(raw: unknown, gv: string): ConfigObject | null {
    const key = keyOf(raw);
    const obj = { ...(raw as Record<string, unknown>), apiVersion: gv, kind: "Ingress" };
    const { ingress, issues } = normalizeIngress(obj, `Ingress/${key}`);
    if (!ingress) {
      const msg = issues.map((i) => `${i.path ? `${i.path}: ` : ""}${i.reason}`).join("; ");
      if (warned.get(key) !== msg) {
        warned.set(key, msg);
        log.warn(`Ignoring invalid Ingress ${key}: ${msg}`);
      }
      return null;
    }
    warned.delete(key);
    return ingressClassMatches(ingress, options.meshConfig) ? ingressConfigObject(ingress) : null;
  }

  function flush() {
    const next = [...state.entries()].filter(([, o]) => o).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0
    ).map(([, o]) => o!);
    const text = JSON.stringify(next);
    if (text === outputText) return;
    output = next;
    outputText = text;
    for (const h of [...handlers]) {
      try {
        h();
      } catch (err) {
        log.error(`Ingress watcher: change handler failed: ${(err as Error).message}`);
      }
    }
  }

  /** The first candidate API version the cluster serves, or undefined. */
  async function servedVersion(): Promise<{ group: string; version: string } | undefined> {
    const api = kc!.makeApiClient(k8s!.ApisApi);
    let groups;
    try {
      groups = await api.getAPIVersions();
    } catch (err) {
      throw new Error(`Cannot read the API groups: ${describeApiError(err)}`);
    }
    for (const c of CANDIDATES) {
      const g = (groups.groups ?? []).find((x) => x.name === c.group);
      if (!g?.versions?.some((v) => v.version === c.version)) continue;
      const res = await fetchResources(c.group, c.version);
      if (res.includes("ingresses")) return c;
    }
    return undefined;
  }

  async function fetchResources(group: string, version: string): Promise<string[]> {
    const custom = kc!.makeApiClient(k8s!.CustomObjectsApi);
    try {
      const r = await custom.getAPIResources({ group, version }) as {
        resources?: { name?: string }[];
      };
      return (r.resources ?? []).map((x) => x.name ?? "");
    } catch (err) {
      if ((err as { code?: number }).code === 404) return [];
      throw new Error(`Cannot read the ${group}/${version} API: ${describeApiError(err)}`);
    }
  }

  return {
    get apiVersion() {
      return apiVersion;
    },
    ingresses: () => output,
    onChange: (h) => void handlers.push(h),
    async start() {
      if (mode === "OFF") {
        log.info("Ingress: ingressControllerMode is OFF; Ingress objects are not watched");
        return;
      }
      const c = await servedVersion();
      if (!c) {
        log.warn(
          "Ingress: the orchestrator serves neither networking.k8s.io/v1 nor extensions/v1beta1 " +
            "Ingresses; none are watched",
        );
        return;
      }
      if (stopped) return;
      const gv = `${c.group}/${c.version}`;
      apiVersion = gv;
      const custom = kc!.makeApiClient(k8s!.CustomObjectsApi);
      const base = { group: c.group, version: c.version, plural: "ingresses" };
      informer = createInformer({
        name: `ingresses (${gv})${ns ? ` in namespace ${ns}` : ""}`,
        kubeConfig: kc!,
        watchPath: `/apis/${gv}${ns ? `/namespaces/${encodeURIComponent(ns)}` : ""}/ingresses`,
        resyncMs: options.resyncMs,
        watchTimeoutSeconds: options.watchTimeoutSeconds,
        list: (cont) =>
          (ns
            ? custom.listNamespacedCustomObject({
              ...base,
              namespace: ns,
              limit: 500,
              _continue: cont,
            })
            : custom.listClusterCustomObject({ ...base, limit: 500, _continue: cont })) as Promise<
              { items?: unknown[] }
            >,
        onList: (items) => {
          state.clear();
          for (const it of items) state.set(keyOf(it), convert(it, gv));
          flush();
        },
        onEvent: (type, obj) => {
          if (type === "DELETED") {
            state.delete(keyOf(obj));
            warned.delete(keyOf(obj));
          } else state.set(keyOf(obj), convert(obj, gv));
          flush();
        },
      });
      try {
        await informer.start();
      } catch (err) {
        informer = undefined;
        throw new Error(`Cannot start the Ingress watcher: ${(err as Error).message}`);
      }
      log.info(`Ingress: watching ${gv} ingresses; ${output.length} selected`);
    },
    async stop() {
      stopped = true;
      await informer?.stop();
    },
  };
}
