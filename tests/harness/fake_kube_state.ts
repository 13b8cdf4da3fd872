/**
 * The state of the fake Kubernetes API server: its resource types, the objects by type, the
 * resourceVersion counter, the event history and the open watches.
 * @module
 */
import { clone, type JsonObject } from "./_patch.ts";
import type { Matcher } from "./_selectors.ts";
import { type AdmissionView } from "./fake_kube_admission.ts";
import { builtinTypes } from "./fake_kube_builtin.ts";
import {
  groupVersion,
  type HistoryEvent,
  type KubeObject,
  KubeStatusError,
  meta,
  notFound,
  objKey,
  type ResourceType,
  storeKey,
  str,
  typeKey,
  type Watcher,
} from "./fake_kube_common.ts";
import { crdTypes } from "./fake_kube_crd.ts";
import { createWatchGate } from "./fake_kube_watch_gate.ts";
import { workloadTypes } from "./_workload_types.ts";

/** Types, objects, history and watches of one fake API server. */
export class KubeState {
  /** Resource types by `group/version/resource`. */
  readonly types = new Map<string, ResourceType>();
  /** Objects by `resource.group`, then `namespace/name`. */
  readonly storage = new Map<string, Map<string, KubeObject>>();
  /** The last `historySize` events; every event with rv > historyStart is here. */
  readonly history: HistoryEvent[] = [];
  historyStart = 0;
  /** The last resourceVersion given out. */
  rv = 0;
  readonly watchers = new Set<Watcher>();
  readonly watchGate = createWatchGate();
  /** The next service cluster IP (10.96.x.y) to give out. */
  nextClusterIP = 1;
  readonly historySize: number;
  readonly bookmarkIntervalMs: number;
  /** What the mutating admission webhooks read (fake_kube_admission.ts). */
  readonly admission: AdmissionView;

  constructor(historySize: number, bookmarkIntervalMs: number) {
    this.historySize = historySize;
    this.bookmarkIntervalMs = bookmarkIntervalMs;
    for (const t of [...builtinTypes(), ...workloadTypes()]) this.register(t);
    this.admission = {
      configurations: () => [
        ...this.bucket(
          this.findType("mutatingwebhookconfigurations.admissionregistration.k8s.io")!,
        ).values(),
      ],
      namespace: (name) => this.bucket(this.findType("namespaces")!).get(objKey(undefined, name)),
      error: (code, reason, message) => new KubeStatusError(code, reason, message),
    };
  }

  register(t: ResourceType): void {
    this.types.set(typeKey(t.group, t.version, t.resource), t);
    if (!this.storage.has(storeKey(t))) this.storage.set(storeKey(t), new Map());
  }

  bucket(t: ResourceType): Map<string, KubeObject> {
    let b = this.storage.get(storeKey(t));
    if (!b) {
      b = new Map();
      this.storage.set(storeKey(t), b);
    }
    return b;
  }

  /** The type of `plural` or `plural.group`. */
  findType(resource: string): ResourceType | undefined {
    const dot = resource.indexOf(".");
    const plural = dot < 0 ? resource : resource.slice(0, dot);
    const group = dot < 0 ? undefined : resource.slice(dot + 1);
    for (const t of this.types.values()) {
      if (t.resource === plural && (group === undefined || t.group === group)) return t;
    }
    return undefined;
  }

  typeForObject(obj: JsonObject): ResourceType {
    const apiVersion = str(obj.apiVersion);
    const kind = str(obj.kind);
    for (const t of this.types.values()) {
      if (groupVersion(t) === apiVersion && t.kind === kind) return t;
    }
    throw new KubeStatusError(
      404,
      "NotFound",
      `the server could not find the requested resource (kind "${kind}" in "${apiVersion}")`,
    );
  }

  /** Types of one group/version. */
  typesOf(group: string, version: string): ResourceType[] {
    return [...this.types.values()].filter((t) => t.group === group && t.version === version);
  }

  withTypeMeta(t: ResourceType, obj: KubeObject): KubeObject {
    const out = clone(obj);
    return { apiVersion: groupVersion(t), kind: t.kind, ...out } as KubeObject;
  }

  /** Records an event at the current resourceVersion and delivers it to the watches. */
  record(t: ResourceType, type: HistoryEvent["type"], obj: KubeObject, prev?: KubeObject): void {
    const ev: HistoryEvent = {
      rv: this.rv,
      type,
      key: storeKey(t),
      object: clone(obj),
      previous: prev,
    };
    this.history.push(ev);
    while (this.history.length > this.historySize) this.historyStart = this.history.shift()!.rv;
    this.watchGate.pass(type, obj, () => {
      for (const w of this.watchers) this.deliver(w, ev, t);
    }, ev.key);
  }

  /** Sends `ev` to `w` when it matches (a selector change is an ADDED or DELETED). */
  deliver(w: Watcher, ev: HistoryEvent, t: ResourceType): void {
    if (w.key !== ev.key) return;
    if (w.namespace !== undefined && str(meta(ev.object).namespace) !== w.namespace) return;
    const now = w.matches(ev.object);
    if (ev.type === "MODIFIED" && ev.previous) {
      const before = w.matches(ev.previous);
      if (before && !now) return w.send("DELETED", this.withTypeMeta(t, ev.object));
      if (!before && now) return w.send("ADDED", this.withTypeMeta(t, ev.object));
    }
    if (now) w.send(ev.type, this.withTypeMeta(t, ev.object));
  }

  /** Replaces the types a CRD defines (none when `crd` is undefined: it was deleted). */
  syncCrd(crd: KubeObject | undefined, name: string): void {
    for (const [k, t] of this.types) if (t.crd === name) this.types.delete(k);
    if (crd) { for (const t of crdTypes(crd)) this.register(t); }
  }

  lookup(t: ResourceType, ns: string | undefined, name: string): KubeObject {
    const existing = this.bucket(t).get(objKey(t.namespaced ? ns : undefined, name));
    if (!existing) throw notFound(t, name);
    return existing;
  }

  /** The objects of `t` (in `ns`, when given) that match, sorted by namespace and name. */
  listObjects(t: ResourceType, ns: string | undefined, matches: Matcher): KubeObject[] {
    const out: KubeObject[] = [];
    for (const o of this.bucket(t).values()) {
      if (ns !== undefined && str(o.metadata.namespace) !== ns) continue;
      if (matches(o)) out.push(this.withTypeMeta(t, o));
    }
    out.sort((a, b) =>
      objKey(str(a.metadata.namespace), str(a.metadata.name)).localeCompare(
        objKey(str(b.metadata.namespace), str(b.metadata.name)),
      )
    );
    return out;
  }
}
