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

/**
 * Creates the watcher (loads the kubeconfig and the client library); nothing is read until
 * `start()`. With `ingressControllerMode: OFF` the watcher never contacts the cluster.
 */
export async function createIngressWatcher(
  options: IngressWatcherOptions,
): Promise<IngressWatcher> {
  const off = options.meshConfig.ingressControllerMode === "OFF";
  const k8s = off ? undefined : await kubeClient();
  const kc = off ? undefined : options.kubeConfig ??
    await loadKubeConfig(options.kubeconfigPath, options.context, options.inCluster);
  return new IngressWatcherImpl(options, k8s, kc);
}

type KubeModule = Awaited<ReturnType<typeof kubeClient>>;

const keyOf = (o: unknown) => {
  const m = (o as { metadata?: { namespace?: string; name?: string } })?.metadata;
  return `${m?.namespace ?? ""}/${m?.name ?? ""}`;
};

/**
 * The watcher's state: each Ingress by key (the selected config object, or null when not
 * selected or invalid), the warnings already logged, and the sorted output handlers last saw.
 */
class IngressWatcherImpl implements IngressWatcher {
  apiVersion = "";
  readonly handlers: (() => void)[] = [];
  readonly state = new Map<string, ConfigObject | null>();
  readonly warned = new Map<string, string>();
  output: ConfigObject[] = [];
  outputText = "[]";
  informer: Informer | undefined;
  stopped = false;
  readonly log = getLogger("default");
  readonly ns: string;

  constructor(
    readonly options: IngressWatcherOptions,
    readonly k8s: KubeModule | undefined,
    readonly kc: KubeConfig | undefined,
  ) {
    this.ns = options.appNamespace ?? "";
  }

  ingresses(): ConfigObject[] {
    return this.output;
  }

  onChange(h: () => void): void {
    this.handlers.push(h);
  }

  async start() {
    const log = this.log;
    if (this.options.meshConfig.ingressControllerMode === "OFF") {
      log.info("Ingress: ingressControllerMode is OFF; Ingress objects are not watched");
      return;
    }
    const c = await this.servedVersion();
    if (!c) {
      log.warn(
        "Ingress: the orchestrator serves neither networking.k8s.io/v1 nor extensions/v1beta1 " +
          "Ingresses; none are watched",
      );
      return;
    }
    if (this.stopped) return;
    const gv = `${c.group}/${c.version}`;
    this.apiVersion = gv;
    const informer = this.informer = this.ingressInformer(c);
    try {
      await informer.start();
    } catch (err) {
      this.informer = undefined;
      throw new Error(`Cannot start the Ingress watcher: ${(err as Error).message}`);
    }
    log.info(`Ingress: watching ${gv} ingresses; ${this.output.length} selected`);
  }

  async stop() {
    this.stopped = true;
    await this.informer?.stop();
  }

  /** The informer of `c`'s Ingresses (of `--appNamespace`, or all). */
  ingressInformer(c: { group: string; version: string }): Informer {
    const { ns, options } = this;
    const gv = `${c.group}/${c.version}`;
    const custom = this.kc!.makeApiClient(this.k8s!.CustomObjectsApi);
    const base = { group: c.group, version: c.version, plural: "ingresses" };
    return createInformer({
      name: `ingresses (${gv})${ns ? ` in namespace ${ns}` : ""}`,
      kubeConfig: this.kc!,
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
        this.state.clear();
        for (const it of items) this.state.set(keyOf(it), this.convert(it, gv));
        this.flush();
      },
      onEvent: (type, obj) => {
        if (type === "DELETED") {
          this.state.delete(keyOf(obj));
          this.warned.delete(keyOf(obj));
        } else this.state.set(keyOf(obj), this.convert(obj, gv));
        this.flush();
      },
    });
  }

  /** The config object of a selected, valid Ingress; null otherwise (warned once per problem). */
  convert(raw: unknown, gv: string): ConfigObject | null {
    const key = keyOf(raw);
    const obj = { ...(raw as Record<string, unknown>), apiVersion: gv, kind: "Ingress" };
    const { ingress, issues } = normalizeIngress(obj, `Ingress/${key}`);
    if (!ingress) {
      const msg = issues.map((i) => `${i.path ? `${i.path}: ` : ""}${i.reason}`).join("; ");
      if (this.warned.get(key) !== msg) {
        this.warned.set(key, msg);
        this.log.warn(`Ignoring invalid Ingress ${key}: ${msg}`);
      }
      return null;
    }
    this.warned.delete(key);
    return ingressClassMatches(ingress, this.options.meshConfig)
      ? ingressConfigObject(ingress)
      : null;
  }

  /** Recomputes the output; tells the handlers when it changed. */
  flush() {
    const next = [...this.state.entries()].filter(([, o]) => o).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0
    ).map(([, o]) => o!);
    const text = JSON.stringify(next);
    if (text === this.outputText) return;
    this.output = next;
    this.outputText = text;
    for (const h of [...this.handlers]) {
      try {
        h();
      } catch (err) {
        this.log.error(`Ingress watcher: change handler failed: ${(err as Error).message}`);
      }
    }
  }

  /** The first candidate API version the cluster serves, or undefined. */
  async servedVersion(): Promise<{ group: string; version: string } | undefined> {
    const api = this.kc!.makeApiClient(this.k8s!.ApisApi);
    let groups;
    try {
      groups = await api.getAPIVersions();
    } catch (err) {
      throw new Error(`Cannot read the API groups: ${describeApiError(err)}`);
    }
    for (const c of CANDIDATES) {
      const g = (groups.groups ?? []).find((x) => x.name === c.group);
      if (!g?.versions?.some((v) => v.version === c.version)) continue;
      const res = await this.fetchResources(c.group, c.version);
      if (res.includes("ingresses")) return c;
    }
    return undefined;
  }

  async fetchResources(group: string, version: string): Promise<string[]> {
    const custom = this.kc!.makeApiClient(this.k8s!.CustomObjectsApi);
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
}
