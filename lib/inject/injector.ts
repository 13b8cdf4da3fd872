/**
 * The injector shared by sidecar-injector and `meshctl kube-inject`: renders the sidecar
 * template for a pod, and builds the RFC 6902 JSON patch that injects it (removing what an
 * earlier injection added first, so injecting twice never duplicates). kube-inject applies that
 * same patch, so both produce the same pod.
 * @module
 */

import { createHash } from "node:crypto";
import { parse as parseYaml } from "../deps/yaml.ts";
import { firstErrorLine } from "../model/errors.ts";
import type { MeshConfig } from "../model/meshconfig.ts";
import { INJECTED_NAMES } from "./default_template.ts";
import { SIDECAR_TEMPLATE } from "./grpc_agent_template.ts";
import {
  type Decision,
  injectionRequired,
  type Policy,
  STATUS_ANNOTATION,
  validateAnnotations,
} from "./policy.ts";
import { parseTemplate, type Template, TemplateError } from "./template.ts";

/** A pod (or the pod template of a workload) that cannot be injected; the message says why. */
export class InjectError extends Error {
  /** Creates the error. */
  constructor(message: string) {
    super(message);
    this.name = "InjectError";
  }
}

/** What a template renders to. */
export interface SidecarSpec {
  initContainers: Record<string, unknown>[];
  containers: Record<string, unknown>[];
  volumes: Record<string, unknown>[];
  imagePullSecrets: Record<string, unknown>[];
  /**
   * Added to every application container (the pod's own, not the injected ones): `env` entries
   * and `volumeMounts`, each replacing an entry of the same name. The `grpc-agent` template
   * uses it for `GRPC_XDS_BOOTSTRAP`.
   */
  appContainers: AppContainerPatch;
}

/** What a template adds to each application container. */
export interface AppContainerPatch {
  env: Record<string, unknown>[];
  volumeMounts: Record<string, unknown>[];
}

/** Pod annotation that selects the template by name (`grpc-agent`; default `sidecar`). */
export const TEMPLATES_ANNOTATION = "inject.mesh.io/templates";
/** Istio's spelling of {@link TEMPLATES_ANNOTATION}, read when ours is absent. */
export const ISTIO_TEMPLATES_ANNOTATION = "inject.istio.io/templates";

/** The fields a sidecar adds to the pod spec, in patch order. */
export const SIDECAR_FIELDS = [
  "initContainers",
  "containers",
  "volumes",
  "imagePullSecrets",
] as const;

/** The value of the status annotation (JSON). */
export interface SidecarStatus {
  /** sha256 (hex) of the template. */
  version: string;
  initContainers: string[] | null;
  containers: string[] | null;
  volumes: string[] | null;
  imagePullSecrets: string[] | null;
}

/** One JSON-patch operation. */
export type PatchOp =
  | { op: "add" | "replace"; path: string; value: unknown }
  | { op: "remove"; path: string };

/** What the injector needs. */
export interface InjectorConfig {
  /** `enabled`, `disabled` (anything else: inject nothing). */
  policy: Policy;
  /** The `[[ ]]` sidecar template. */
  template: string;
  /** The mesh configuration (its `defaultConfig` is the template's `.ProxyConfig`). */
  meshConfig: MeshConfig;
  /**
   * Further templates by name, chosen per pod with {@link TEMPLATES_ANNOTATION} (e.g.
   * `grpc-agent`); `template` is the one named `sidecar`, used when the pod names none.
   */
  templates?: Readonly<Record<string, string>>;
}

/** A pod as the injector sees it. */
export interface PodLike {
  metadata?: Record<string, unknown>;
  spec: Record<string, unknown>;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Escapes a JSON-pointer segment (`~` → `~0`, `/` → `~1`). */
export function escapePointer(s: string): string {
  return s.replaceAll("~", "~0").replaceAll("/", "~1");
}

/**
 * Checks that `v` has the shape of a pod: `metadata` (optional) and `spec` objects,
 * `spec.containers` a list of objects with names, `metadata.annotations` string values.
 * Throws {@link InjectError} naming the field.
 */
export function checkPod(v: unknown, what = "pod"): PodLike {
  if (!isRecord(v)) throw new InjectError(`${what}: must be an object`);
  if (v.metadata !== undefined && !isRecord(v.metadata)) {
    throw new InjectError(`${what}: metadata must be an object`);
  }
  if (!isRecord(v.spec)) throw new InjectError(`${what}: spec must be an object`);
  const meta = (v.metadata ?? {}) as Record<string, unknown>;
  for (const k of ["annotations", "labels"]) {
    if (meta[k] === undefined || meta[k] === null) continue;
    if (!isRecord(meta[k])) throw new InjectError(`${what}: metadata.${k} must be a map`);
    for (const [key, val] of Object.entries(meta[k] as Record<string, unknown>)) {
      if (typeof val !== "string") {
        throw new InjectError(`${what}: metadata.${k}.${key} must be a string`);
      }
    }
  }
  if (!Array.isArray(v.spec.containers)) {
    throw new InjectError(`${what}: spec.containers must be a list`);
  }
  for (const f of SIDECAR_FIELDS) {
    const list = v.spec[f];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) throw new InjectError(`${what}: spec.${f} must be a list`);
    list.forEach((item, i) => {
      if (!isRecord(item)) throw new InjectError(`${what}: spec.${f}[${i}] must be an object`);
    });
  }
  if (v.spec.serviceAccountName !== undefined && typeof v.spec.serviceAccountName !== "string") {
    throw new InjectError(`${what}: spec.serviceAccountName must be a string`);
  }
  return v as unknown as PodLike;
}

function checkSidecar(raw: unknown): SidecarSpec {
  const bad = (m: string) => new InjectError(`template output: ${m}`);
  if (raw === null || raw === undefined) raw = {};
  if (!isRecord(raw)) throw bad("must be a map with initContainers, containers, volumes");
  const out: SidecarSpec = {
    initContainers: [],
    containers: [],
    volumes: [],
    imagePullSecrets: [],
    appContainers: { env: [], volumeMounts: [] },
  };
  for (const k of Object.keys(raw)) {
    if (!(SIDECAR_FIELDS as readonly string[]).includes(k) && k !== "appContainers") {
      throw bad(
        `unknown field ${JSON.stringify(k)} (want ${SIDECAR_FIELDS.join(", ")}, appContainers)`,
      );
    }
  }
  const app = raw.appContainers;
  if (app !== undefined && app !== null) {
    if (!isRecord(app)) throw bad("appContainers must be a map with env, volumeMounts");
    for (const k of Object.keys(app)) {
      if (k !== "env" && k !== "volumeMounts") {
        throw bad(`unknown field appContainers.${k} (want env, volumeMounts)`);
      }
    }
    for (const f of ["env", "volumeMounts"] as const) {
      const list = app[f];
      if (list === undefined || list === null) continue;
      if (!Array.isArray(list)) throw bad(`appContainers.${f} must be a list`);
      list.forEach((item, i) => {
        if (!isRecord(item) || typeof item.name !== "string" || item.name === "") {
          throw bad(`appContainers.${f}[${i}] must be an object with a name`);
        }
      });
      out.appContainers[f] = list as Record<string, unknown>[];
    }
  }
  for (const f of SIDECAR_FIELDS) {
    const list = raw[f];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) throw bad(`${f} must be a list`);
    list.forEach((item, i) => {
      if (!isRecord(item) || typeof item.name !== "string" || item.name === "") {
        throw bad(`${f}[${i}] must be an object with a name`);
      }
    });
    out[f] = list as Record<string, unknown>[];
  }
  return out;
}

const NOT_JSON = Symbol("not JSON");

/** `text` as JSON, else as YAML (JSON output with YAML comments or trailing commas still works). */
function parseJsonOr(text: string): unknown {
  let v: unknown = NOT_JSON;
  try {
    v = JSON.parse(text);
  } catch {
    // not strict JSON
  }
  return v === NOT_JSON ? parseYaml(text) : v;
}

/** How many distinct rendered sidecars an injector keeps parsed. */
const PARSED_CACHE_SIZE = 128;

function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

function namesOf(list: Record<string, unknown>[]): string[] | null {
  return list.length === 0 ? null : list.map((x) => String(x.name));
}

function previousNames(annotations: Record<string, unknown>): Record<string, string[]> {
  const legacy: Record<string, string[]> = {
    initContainers: [...INJECTED_NAMES.initContainers],
    containers: [...INJECTED_NAMES.containers],
    volumes: [...INJECTED_NAMES.volumes],
    imagePullSecrets: [],
  };
  const raw = annotations[STATUS_ANNOTATION];
  if (typeof raw !== "string" || raw === "") return legacy;
  let status: unknown;
  try {
    status = JSON.parse(raw);
  } catch {
    return legacy;
  }
  if (!isRecord(status)) return legacy;
  const out: Record<string, string[]> = {};
  for (const f of SIDECAR_FIELDS) {
    const v = status[f];
    out[f] = Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
  }
  return out;
}

/**
 * A ready injector: the template parsed once, its version computed once. Safe to share; a new
 * configuration makes a new injector.
 */
export class Injector {
  /** Parsed templates and their versions by name (`sidecar` = `config.template`). */
  readonly #templates = new Map<string, { template: Template; version: string }>();
  /** Parsed sidecars by template name and rendered text: pods of one workload render the same. */
  readonly #parsed = new Map<string, SidecarSpec>();
  /** sha256 (hex) of the `sidecar` template, the `version` of its status annotation. */
  readonly version: string;

  /** Parses the templates; throws {@link TemplateError} naming the one that does not parse. */
  constructor(readonly config: InjectorConfig) {
    const all: [string, string][] = [
      ...Object.entries(config.templates ?? {}),
      [SIDECAR_TEMPLATE, config.template],
    ];
    for (const [name, text] of all) {
      let template: Template;
      try {
        template = parseTemplate(text);
      } catch (e) {
        if (e instanceof TemplateError && name !== SIDECAR_TEMPLATE) {
          throw new TemplateError(`template ${name}: ${e.message}`);
        }
        throw e;
      }
      this.#templates.set(name, {
        template,
        version: createHash("sha256").update(text).digest("hex"),
      });
    }
    this.version = this.#templates.get(SIDECAR_TEMPLATE)!.version;
  }

  /** The names of the templates a pod can select. */
  get templateNames(): string[] {
    return [...this.#templates.keys()].sort();
  }

  /**
   * The template a pod selects: {@link TEMPLATES_ANNOTATION}, else
   * {@link ISTIO_TEMPLATES_ANNOTATION}, else `sidecar`. Throws {@link InjectError} for a name
   * that is not known or for more than one name.
   */
  templateOf(pod: PodLike): string {
    const meta = pod.metadata ?? {};
    const annotations = isRecord(meta.annotations) ? meta.annotations : {};
    for (const key of [TEMPLATES_ANNOTATION, ISTIO_TEMPLATES_ANNOTATION]) {
      const raw = annotations[key];
      if (typeof raw !== "string" || raw.trim() === "") continue;
      const names = raw.split(",").map((n) => n.trim()).filter((n) => n !== "");
      if (names.length !== 1) {
        throw new InjectError(
          `annotation ${key}: one template name expected, got ${JSON.stringify(raw)}`,
        );
      }
      if (!this.#templates.has(names[0])) {
        throw new InjectError(
          `annotation ${key}: unknown template ${JSON.stringify(names[0])} (known: ${
            this.templateNames.join(", ")
          })`,
        );
      }
      return names[0];
    }
    return SIDECAR_TEMPLATE;
  }

  /** The policy decision for a pod in `namespace`. */
  decide(pod: PodLike, namespace: string): Decision {
    return injectionRequired(this.config.policy, pod.metadata, pod.spec, namespace);
  }

  /**
   * Renders the sidecar for a pod (deeply frozen: shared between pods that render the same
   * text). Throws {@link InjectError} for bad annotations, a template that fails or output that
   * is not a sidecar.
   */
  render(pod: PodLike): SidecarSpec {
    const meta = pod.metadata ?? {};
    const annotations = isRecord(meta.annotations) ? meta.annotations : {};
    try {
      validateAnnotations(annotations);
    } catch (e) {
      throw new InjectError((e as Error).message);
    }
    const data = {
      ObjectMeta: { ...meta, annotations, labels: isRecord(meta.labels) ? meta.labels : {} },
      Spec: pod.spec,
      ProxyConfig: this.config.meshConfig.defaultConfig,
      MeshConfig: this.config.meshConfig,
    };
    const name = this.templateOf(pod);
    let text: string;
    try {
      text = this.#templates.get(name)!.template.render(data);
    } catch (e) {
      if (e instanceof TemplateError) throw new InjectError(e.message);
      throw e;
    }
    const key = `${name}\n${text}`;
    const cached = this.#parsed.get(key);
    if (cached) return cached;
    let raw: unknown;
    try {
      // JSON is YAML too, and parses ~40 times faster: try it first
      raw = /^\s*\{/.test(text) ? parseJsonOr(text) : parseYaml(text);
    } catch (e) {
      throw new InjectError(
        `template output is not YAML: ${firstErrorLine((e as Error).message)}`,
      );
    }
    const sidecar = deepFreeze(checkSidecar(raw));
    if (this.#parsed.size >= PARSED_CACHE_SIZE) {
      this.#parsed.delete(this.#parsed.keys().next().value!);
    }
    this.#parsed.set(key, sidecar);
    return sidecar;
  }

  /** The status annotation value for a sidecar rendered from template `name` (default `sidecar`). */
  status(sidecar: SidecarSpec, name: string = SIDECAR_TEMPLATE): string {
    const s: SidecarStatus = {
      version: this.#templates.get(name)?.version ?? this.version,
      initContainers: namesOf(sidecar.initContainers),
      containers: namesOf(sidecar.containers),
      volumes: namesOf(sidecar.volumes),
      imagePullSecrets: namesOf(sidecar.imagePullSecrets),
    };
    return JSON.stringify(s);
  }

  /**
   * The JSON patch injecting `pod` (no policy check: see {@link decide}): removes what the
   * status annotation (else the built-in names) says was injected, adds the rendered
   * init containers, containers, volumes and pull secrets, then sets the status annotation.
   */
  patch(pod: PodLike): PatchOp[] {
    const sidecar = this.render(pod);
    let kept = 0;
    const ops: PatchOp[] = [];
    const meta = pod.metadata ?? {};
    const annotations = isRecord(meta.annotations) ? meta.annotations : {};
    const prev = previousNames(annotations);
    for (const f of SIDECAR_FIELDS) {
      const current = Array.isArray(pod.spec[f]) ? pod.spec[f] as Record<string, unknown>[] : [];
      const drop = new Set(prev[f]);
      const keep: number[] = [];
      // remove from the end so that earlier indices stay valid
      for (let i = current.length - 1; i >= 0; i--) {
        if (drop.has(String(current[i]?.name))) ops.push({ op: "remove", path: `/spec/${f}/${i}` });
        else keep.push(i);
      }
      if (f === "containers") kept = keep.length;
      let size = keep.length;
      for (const item of sidecar[f]) {
        if (size === 0) ops.push({ op: "add", path: `/spec/${f}`, value: [item] });
        else ops.push({ op: "add", path: `/spec/${f}/-`, value: item });
        size++;
      }
    }
    // the pod's own containers are the first `kept` ones: removals keep their order, adds append
    const containers = pod.spec.containers as Record<string, unknown>[];
    const drop = new Set(prev.containers);
    const own = containers.filter((c) => !drop.has(String(c?.name)));
    own.forEach((c, i) => {
      if (i >= kept) return;
      for (const f of ["env", "volumeMounts"] as const) {
        ops.push(...mergeByName(c[f], sidecar.appContainers[f], `/spec/containers/${i}/${f}`));
      }
    });
    const value = this.status(sidecar, this.templateOf(pod));
    if (pod.metadata === undefined) {
      ops.push({
        op: "add",
        path: "/metadata",
        value: { annotations: { [STATUS_ANNOTATION]: value } },
      });
    } else if (!isRecord(meta.annotations)) {
      ops.push({ op: "add", path: "/metadata/annotations", value: { [STATUS_ANNOTATION]: value } });
    } else {
      const existing = annotations[STATUS_ANNOTATION];
      ops.push({
        op: typeof existing === "string" && existing !== "" ? "replace" : "add",
        path: `/metadata/annotations/${escapePointer(STATUS_ANNOTATION)}`,
        value,
      });
    }
    return ops;
  }

  /** `pod` with the sidecar injected (a new object; `pod` is not changed). */
  inject<T extends PodLike>(pod: T): T {
    return applyPatch(pod, this.patch(pod));
  }
}

/** Ops setting `items` into the list at `path` (`current`), replacing entries of the same name. */
function mergeByName(current: unknown, items: Record<string, unknown>[], path: string): PatchOp[] {
  if (items.length === 0) return [];
  const list = Array.isArray(current) ? current as Record<string, unknown>[] : [];
  if (list.length === 0) return [{ op: "add", path, value: [...items] }];
  return items.map((item): PatchOp => {
    const i = list.findIndex((x) => isRecord(x) && x.name === item.name);
    return i >= 0
      ? { op: "replace", path: `${path}/${i}`, value: item }
      : { op: "add", path: `${path}/-`, value: item };
  });
}

function unescapePointer(s: string): string {
  return s.replaceAll("~1", "/").replaceAll("~0", "~");
}

/**
 * Applies the operations {@link Injector.patch} produces (`add`, `replace`, `remove` on maps
 * and lists, `-` appends) to a deep copy of `doc`.
 */
export function applyPatch<T>(doc: T, ops: readonly PatchOp[]): T {
  const root = structuredClone(doc) as unknown;
  for (const op of ops) {
    const parts = op.path.split("/").slice(1).map(unescapePointer);
    const last = parts.pop()!;
    let parent: unknown = root;
    for (const p of parts) {
      parent = Array.isArray(parent) ? parent[Number(p)] : (parent as Record<string, unknown>)[p];
      if (typeof parent !== "object" || parent === null) {
        throw new Error(`patch: path ${op.path} does not exist`);
      }
    }
    if (Array.isArray(parent)) {
      const i = last === "-" ? parent.length : Number(last);
      if (op.op === "add") parent.splice(i, 0, structuredClone(op.value));
      else if (op.op === "remove") parent.splice(i, 1);
      else parent[i] = structuredClone(op.value);
    } else {
      const obj = parent as Record<string, unknown>;
      if (op.op === "remove") delete obj[last];
      else obj[last] = structuredClone(op.value);
    }
  }
  return root as T;
}
