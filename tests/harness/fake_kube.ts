/**
 * A fake Kubernetes API server for tests. It speaks the real REST protocol over plain HTTP on
 * 127.0.0.1 (discovery, list, get, create, update, patch, delete, watch with resourceVersion,
 * Status errors, Table output) well enough that the real `kubectl` and
 * `@kubernetes/client-node` work against it unchanged. No real API server can run here, so this
 * stands in for one; `fake_kube_test.ts` proves its fidelity with the real `kubectl`.
 *
 * @example
 * ```ts
 * import { startFakeKube } from "./fake_kube.ts";
 *
 * await using kube = await startFakeKube();
 * const res = await fetch(`${kube.url}/api/v1/namespaces`, { headers: kube.authHeaders });
 * console.log((await res.json()).items.length); // 3: default, kube-system, mesh-system
 * ```
 *
 * @module
 */

import { tokenReviewResponse } from "./fake_kube_tokenreview.ts";
import { tokenRequestResponse } from "./fake_kube_tokenrequest.ts";
import { createWatchGate, type WatchGate } from "./fake_kube_watch_gate.ts";
import { parse as parseYaml } from "../../lib/deps/yaml.ts";
import {
  clone,
  deepEqual,
  isObject,
  type Json,
  type JsonObject,
  jsonPatch,
  mergePatch,
  PatchError,
  strategicMergePatch,
} from "./_patch.ts";
import { type AdmissionView, admitCreate } from "./fake_kube_admission.ts";
import { decodeKubeProtobuf, encodeOpenApiV2, OPENAPI_V2_PROTOBUF_TYPES } from "./_protobuf.ts";
import {
  type Matcher,
  parseFieldSelector,
  parseLabelSelector,
  SelectorError,
} from "./_selectors.ts";
import { workloadTypes } from "./_workload_types.ts";

export type { Json, JsonObject } from "./_patch.ts";

/** A Kubernetes object as stored by the fake: plain JSON with `metadata`. */
export type KubeObject = JsonObject & { metadata: JsonObject };

/** A column of `kubectl get` table output: header and how to compute the cell. */
export interface PrinterColumn {
  /** Column header, e.g. `Type` (kubectl prints it upper-cased). */
  name: string;
  /** OpenAPI type of the cell: `string`, `integer`, `number`, `boolean` or `date`. */
  type: string;
  /** Computes the cell from the object. */
  cell: (obj: KubeObject) => Json;
}

/** One resource type served by the fake, as seen by discovery and routing. */
export interface ResourceType {
  /** API group; `""` for the core group. */
  group: string;
  /** API version, e.g. `v1`. */
  version: string;
  /** Plural resource name, e.g. `services`. */
  resource: string;
  /** Singular name, e.g. `service`. */
  singular: string;
  /** Kind, e.g. `Service`. */
  kind: string;
  /** List kind, e.g. `ServiceList`. */
  listKind: string;
  /** Whether objects live in a namespace. */
  namespaced: boolean;
  /** Short names, e.g. `["svc"]`. */
  shortNames: string[];
  /** Whether a `status` subresource exists (spec writes then ignore `status`). */
  hasStatus: boolean;
  /** Extra table columns shown between NAME and AGE. */
  columns: PrinterColumn[];
  /** Name of the CustomResourceDefinition that registered the type, when any. */
  crd?: string;
}

/** A request as seen by the fake, recorded in {@linkcode FakeKube.requests}. */
export interface RecordedRequest {
  /** HTTP method. */
  method: string;
  /** URL path, e.g. `/api/v1/namespaces/default/services`. */
  path: string;
  /** URL query string including `?`, or `""`. */
  search: string;
  /** Request `Content-Type`, or `""`. */
  contentType: string;
  /** Request `Accept`, or `""`. */
  accept: string;
  /** HTTP status the fake answered with (200 for watches that started). */
  status: number;
}

/** A failure to inject with {@linkcode FakeKube.failNext}. */
export interface FailureSpec {
  /** Only requests with this method (default: any). */
  method?: string;
  /** Only requests whose path equals this string or matches this expression (default: any). */
  path?: string | RegExp;
  /** HTTP status code to answer with (e.g. 500, 409, 429). */
  code: number;
  /** Status `reason` (default derived from the code, e.g. `InternalError`). */
  reason?: string;
  /** Status `message` (default `injected failure`). */
  message?: string;
  /** How many matching requests fail (default 1). */
  times?: number;
}

/** Options for {@linkcode startFakeKube}. */
export interface FakeKubeOptions {
  /**
   * Bearer token the kubeconfig carries (default `fake-token`). A request that presents another
   * token gets 401 Unauthorized.
   */
  token?: string;
  /**
   * Also answer 401 to requests without a token (default false). `kubectl` does not send bearer
   * tokens over plain HTTP, so leave this off for tests that run `kubectl`.
   */
  requireToken?: boolean;
  /** How many watch events are kept for replay from a resourceVersion (default 1000). */
  historySize?: number;
  /** Interval of BOOKMARK events on watches that allow them, in ms (default 1000). */
  bookmarkIntervalMs?: number;
  /** Namespaces created at start (default `default`, `kube-system`, `mesh-system`). */
  namespaces?: string[];
  /** Objects created at start, after the namespaces (CRDs register their types). */
  objects?: JsonObject[];
  /** TokenReview: token → username it authenticates as (see fake_kube_tokenreview.ts). */
  reviewTokens?: Record<string, string>;
}

/** Handle on a running fake API server. */
export interface FakeKube {
  /** Base URL, `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Bound port. */
  readonly port: number;
  /** Path of a temporary kubeconfig whose current context points at this server. */
  readonly kubeconfigPath: string;
  /** The bearer token requests must carry. */
  readonly token: string;
  /** `{ Authorization: "Bearer <token>" }`, for raw `fetch` calls. */
  readonly authHeaders: Record<string, string>;
  /** Every request served so far, oldest first (a live array; clear it with `length = 0`). */
  readonly requests: RecordedRequest[];
  /** The current (last issued) resourceVersion. */
  readonly resourceVersion: number;
  /** Number of watch streams currently open. */
  readonly watchCount: number;
  /** Writes a kubeconfig pointing at this server to `path` (written to a temp file, renamed). */
  writeKubeconfig(path: string, opts?: { namespace?: string }): Promise<void>;
  /** The kubeconfig YAML text pointing at this server. */
  kubeconfig(opts?: { namespace?: string }): string;
  /**
   * Deep copies of the stored objects of a resource, sorted by namespace then name.
   * `resource` is the plural, optionally qualified by group: `services`, `endpointslices`,
   * `customresourcedefinitions.apiextensions.k8s.io`, `virtualservices.networking.mesh.io`.
   */
  objects(resource: string, namespace?: string): KubeObject[];
  /** One stored object (deep copy), or undefined. */
  get(resource: string, namespace: string | undefined, name: string): KubeObject | undefined;
  /**
   * Creates or replaces an object directly (no HTTP), with the same defaulting, validation,
   * resourceVersion bump and watch events as the REST path. The type comes from
   * `apiVersion`/`kind`. Throws a {@linkcode KubeStatusError} when the REST path would fail.
   */
  upsert(obj: JsonObject): KubeObject;
  /** Deletes an object directly (watch sees DELETED). Returns false when it did not exist. */
  remove(resource: string, namespace: string | undefined, name: string): boolean;
  /** Drops the watch history: watches from any older resourceVersion then get 410 Expired. */
  expireHistory(): void;
  /** Sends a BOOKMARK now on every open watch that allowed bookmarks. */
  bookmark(): void;
  /**
   * The next `n` (default 1) changes of `resource` (`services`, `ingresses.networking.k8s.io`)
   * reach no open watch: `watchGate.drop` for one resource.
   */
  missEvents(resource: string, n?: number): void;
  /** Makes the next matching request(s) fail with the given Status. */
  failNext(spec: FailureSpec): void;
  /** Holds or drops watch events (a slow watch, a missed change): fake_kube_watch_gate.ts. */
  readonly watchGate: WatchGate;
  /** The resource types currently served (built-ins and CRD-registered). */
  resourceTypes(): ResourceType[];
  /** TokenReview tokens (token → username); add or delete entries at any time. */
  readonly reviewTokens: Map<string, string>;
  /** Ends every watch, stops the server and removes the temp kubeconfig. Idempotent. */
  close(): Promise<void>;
  /** Same as {@linkcode FakeKube.close}. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** A Kubernetes `Status` failure, thrown inside the fake and by {@linkcode FakeKube.upsert}. */
export class KubeStatusError extends Error {
  /** HTTP status code. */
  readonly code: number;
  /** Status `reason`, e.g. `NotFound`. */
  readonly reason: string;
  /** Status `details`, when any. */
  readonly details?: JsonObject;
  constructor(code: number, reason: string, message: string, details?: JsonObject) {
    super(message);
    this.name = "KubeStatusError";
    this.code = code;
    this.reason = reason;
    this.details = details;
  }
  /** The `Status` body the real API server sends. */
  toStatus(): JsonObject {
    const body: JsonObject = {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: this.message,
      reason: this.reason,
    };
    if (this.details) body.details = this.details;
    body.code = this.code;
    return body;
  }
}

const REASONS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  406: "NotAcceptable",
  409: "Conflict",
  410: "Expired",
  415: "UnsupportedMediaType",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

const ALL_VERBS = [
  "create",
  "delete",
  "deletecollection",
  "get",
  "list",
  "patch",
  "update",
  "watch",
];

// ---------------------------------------------------------------------------------------------
// Built-in types

function str(v: Json | undefined): string {
  return v === undefined || v === null ? "" : String(v);
}

function servicePorts(obj: KubeObject): string {
  const spec = isObject(obj.spec) ? obj.spec : {};
  const ports = Array.isArray(spec.ports) ? spec.ports.filter(isObject) : [];
  if (ports.length === 0) return "<none>";
  return ports.map((p) => {
    const node = p.nodePort ? `:${p.nodePort}` : "";
    return `${p.port}${node}/${p.protocol ?? "TCP"}`;
  }).join(",");
}

function serviceColumns(): PrinterColumn[] {
  const spec = (o: KubeObject) => (isObject(o.spec) ? o.spec : {});
  return [
    { name: "Type", type: "string", cell: (o) => str(spec(o).type) || "ClusterIP" },
    { name: "Cluster-IP", type: "string", cell: (o) => str(spec(o).clusterIP) || "<none>" },
    {
      name: "External-IP",
      type: "string",
      cell: (o) => {
        const ips = spec(o).externalIPs;
        return Array.isArray(ips) && ips.length > 0 ? ips.join(",") : "<none>";
      },
    },
    { name: "Port(s)", type: "string", cell: servicePorts },
  ];
}

function builtin(
  group: string,
  version: string,
  resource: string,
  kind: string,
  namespaced: boolean,
  shortNames: string[] = [],
  extra: Partial<ResourceType> = {},
): ResourceType {
  return {
    group,
    version,
    resource,
    singular: kind.toLowerCase(),
    kind,
    listKind: `${kind}List`,
    namespaced,
    shortNames,
    hasStatus: false,
    columns: [],
    ...extra,
  };
}

function builtinTypes(): ResourceType[] {
  const status = { hasStatus: true };
  return [
    builtin("", "v1", "namespaces", "Namespace", false, ["ns"], {
      hasStatus: true,
      columns: [{
        name: "Status",
        type: "string",
        cell: (o) => str(isObject(o.status) ? o.status.phase : "") || "Active",
      }],
    }),
    builtin("", "v1", "nodes", "Node", false, ["no"], status),
    builtin("", "v1", "services", "Service", true, ["svc"], {
      hasStatus: true,
      columns: serviceColumns(),
    }),
    builtin("", "v1", "endpoints", "Endpoints", true, ["ep"]),
    builtin("", "v1", "pods", "Pod", true, ["po"], {
      hasStatus: true,
      columns: [{
        name: "Status",
        type: "string",
        cell: (o) => str(isObject(o.status) ? o.status.phase : "") || "Pending",
      }],
    }),
    builtin("", "v1", "serviceaccounts", "ServiceAccount", true, ["sa"]),
    builtin("", "v1", "secrets", "Secret", true, [], {
      columns: [
        { name: "Type", type: "string", cell: (o) => str(o.type) || "Opaque" },
        {
          name: "Data",
          type: "integer",
          cell: (o) => Object.keys(isObject(o.data) ? o.data : {}).length,
        },
      ],
    }),
    builtin("", "v1", "configmaps", "ConfigMap", true, ["cm"], {
      columns: [{
        name: "Data",
        type: "integer",
        cell: (o) =>
          Object.keys(isObject(o.data) ? o.data : {}).length +
          Object.keys(isObject(o.binaryData) ? o.binaryData : {}).length,
      }],
    }),
    builtin(
      "admissionregistration.k8s.io",
      "v1",
      "mutatingwebhookconfigurations",
      "MutatingWebhookConfiguration",
      false,
      [],
      {
        columns: [{
          name: "Webhooks",
          type: "integer",
          cell: (o) => (Array.isArray(o.webhooks) ? o.webhooks.length : 0),
        }],
      },
    ),
    builtin("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true),
    builtin("networking.k8s.io", "v1", "ingresses", "Ingress", true, ["ing"], { hasStatus: true }),
    builtin(
      "apiextensions.k8s.io",
      "v1",
      "customresourcedefinitions",
      "CustomResourceDefinition",
      false,
      ["crd", "crds"],
      { hasStatus: true },
    ),
  ];
}

// ---------------------------------------------------------------------------------------------
// Helpers

function nowTimestamp(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Kubernetes `duration.HumanDuration`, as printed in the AGE column. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const d = Math.floor(hours / 24) % 365;
    return d === 0 ? `${Math.floor(hours / 24 / 365)}y` : `${Math.floor(hours / 24 / 365)}y${d}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

function nameProblem(type: ResourceType, name: string): string | undefined {
  if (type.resource === "namespaces") {
    if (name.length > 63 || !DNS1123_LABEL.test(name)) {
      return `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`;
    }
    return undefined;
  }
  if (type.resource === "services") {
    if (name.length > 63 || !DNS1035_LABEL.test(name)) {
      return `a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`;
    }
    return undefined;
  }
  if (name.length > 253 || !DNS1123_SUBDOMAIN.test(name)) {
    return `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`;
  }
  return undefined;
}

function randomSuffix(): string {
  const alphabet = "bcdfghjklmnpqrstvwxz2456789";
  let s = "";
  for (let i = 0; i < 5; i++) s += alphabet[Math.floor(Math.random() * alphabet.length)];
  return s;
}

function groupVersion(t: { group: string; version: string }): string {
  return t.group === "" ? t.version : `${t.group}/${t.version}`;
}

function groupResource(t: ResourceType): string {
  return t.group === "" ? t.resource : `${t.resource}.${t.group}`;
}

/** The `details.kind`/`details.group` pair the real API puts in NotFound/AlreadyExists. */
function detailsFor(t: ResourceType, name: string): JsonObject {
  const d: JsonObject = { name };
  if (t.group !== "") d.group = t.group;
  d.kind = t.resource;
  return d;
}

function notFound(t: ResourceType, name: string): KubeStatusError {
  return new KubeStatusError(
    404,
    "NotFound",
    `${groupResource(t)} "${name}" not found`,
    detailsFor(t, name),
  );
}

function invalid(t: ResourceType, name: string, field: string, reason: string, msg: string) {
  return new KubeStatusError(422, "Invalid", `${t.kind} "${name}" is invalid: ${field}: ${msg}`, {
    name,
    ...(t.group !== "" ? { group: t.group } : {}),
    kind: t.kind,
    causes: [{ reason, message: msg, field }],
  });
}

function jsonResponse(body: Json, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-cache, private" },
  });
}

function statusResponse(err: KubeStatusError): Response {
  return jsonResponse(err.toStatus(), err.code);
}

function meta(obj: Json): JsonObject {
  return isObject(obj) && isObject(obj.metadata) ? obj.metadata : {};
}

interface HistoryEvent {
  rv: number;
  type: "ADDED" | "MODIFIED" | "DELETED";
  key: string;
  object: KubeObject;
  previous?: KubeObject;
}

interface Watcher {
  key: string;
  namespace?: string;
  matches: Matcher;
  send: (type: string, obj: KubeObject | JsonObject) => void;
  bookmarks: boolean;
  close: () => void;
}

interface Route {
  type: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
}

const TABLE_COLUMNS_PREFIX = [
  {
    name: "Name",
    type: "string",
    format: "name",
    description:
      "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
    priority: 0,
  },
];

// ---------------------------------------------------------------------------------------------
// The server

/**
 * Starts a fake Kubernetes API server on 127.0.0.1 (random port) and writes a temporary
 * kubeconfig for it. Namespaces `default`, `kube-system` and `mesh-system` exist from the start.
 * Close it with `close()` (or `await using`).
 */
export async function startFakeKube(opts: FakeKubeOptions = {}): Promise<FakeKube> {
  const reviewTokens = new Map(Object.entries(opts.reviewTokens ?? {}));
  const token = opts.token ?? "fake-token";
  if (token === "" || /\s/.test(token)) {
    throw new TypeError(`startFakeKube: "token" must be non-empty without spaces, got "${token}"`);
  }
  const historySize = opts.historySize ?? 1000;
  if (!Number.isInteger(historySize) || historySize < 1) {
    throw new TypeError(
      `startFakeKube: "historySize" must be a positive integer, got ${historySize}`,
    );
  }
  const bookmarkIntervalMs = opts.bookmarkIntervalMs ?? 1000;
  if (!(bookmarkIntervalMs > 0)) {
    throw new TypeError(
      `startFakeKube: "bookmarkIntervalMs" must be positive, got ${bookmarkIntervalMs}`,
    );
  }

  const types = new Map<string, ResourceType>(); // "group/version/resource"
  const storage = new Map<string, Map<string, KubeObject>>(); // "resource.group" -> "ns/name"
  const history: HistoryEvent[] = [];
  let historyStart = 0; // every event with rv > historyStart is in `history`
  let rv = 0;
  const watchers = new Set<Watcher>();
  const watchGate = createWatchGate();
  const failures: (FailureSpec & { left: number })[] = [];
  const requests: RecordedRequest[] = [];
  let nextClusterIP = 1;
  let closed = false;

  const typeKey = (g: string, v: string, r: string) => `${g}/${v}/${r}`;
  const storeKey = (t: ResourceType) => groupResource(t);
  const objKey = (ns: string | undefined, name: string) => `${ns ?? ""}/${name}`;

  function register(t: ResourceType) {
    types.set(typeKey(t.group, t.version, t.resource), t);
    if (!storage.has(storeKey(t))) storage.set(storeKey(t), new Map());
  }
  for (const t of [...builtinTypes(), ...workloadTypes()]) register(t);

  function bucket(t: ResourceType): Map<string, KubeObject> {
    let b = storage.get(storeKey(t));
    if (!b) {
      b = new Map();
      storage.set(storeKey(t), b);
    }
    return b;
  }

  function findType(resource: string): ResourceType | undefined {
    const dot = resource.indexOf(".");
    const plural = dot < 0 ? resource : resource.slice(0, dot);
    const group = dot < 0 ? undefined : resource.slice(dot + 1);
    for (const t of types.values()) {
      if (t.resource === plural && (group === undefined || t.group === group)) return t;
    }
    return undefined;
  }

  // mutating admission webhooks on create (fake_kube_admission.ts)
  const admission: AdmissionView = {
    configurations: () => [
      ...bucket(findType("mutatingwebhookconfigurations.admissionregistration.k8s.io")!).values(),
    ],
    namespace: (name) => bucket(findType("namespaces")!).get(objKey(undefined, name)),
    error: (code, reason, message) => new KubeStatusError(code, reason, message),
  };

  function typeForObject(obj: JsonObject): ResourceType {
    const apiVersion = str(obj.apiVersion);
    const kind = str(obj.kind);
    for (const t of types.values()) {
      if (groupVersion(t) === apiVersion && t.kind === kind) return t;
    }
    throw new KubeStatusError(
      404,
      "NotFound",
      `the server could not find the requested resource (kind "${kind}" in "${apiVersion}")`,
    );
  }

  /** Types of one group/version. */
  function typesOf(group: string, version: string): ResourceType[] {
    return [...types.values()].filter((t) => t.group === group && t.version === version);
  }

  function withTypeMeta(t: ResourceType, obj: KubeObject): KubeObject {
    const out = clone(obj);
    return { apiVersion: groupVersion(t), kind: t.kind, ...out } as KubeObject;
  }

  // ---- watch events

  function record(t: ResourceType, type: HistoryEvent["type"], obj: KubeObject, prev?: KubeObject) {
    const ev: HistoryEvent = { rv, type, key: storeKey(t), object: clone(obj), previous: prev };
    history.push(ev);
    while (history.length > historySize) historyStart = history.shift()!.rv;
    watchGate.pass(type, obj, () => {
      for (const w of watchers) deliver(w, ev, t);
    }, ev.key);
  }

  function deliver(w: Watcher, ev: HistoryEvent, t: ResourceType) {
    if (w.key !== ev.key) return;
    if (w.namespace !== undefined && str(meta(ev.object).namespace) !== w.namespace) return;
    const now = w.matches(ev.object);
    if (ev.type === "MODIFIED" && ev.previous) {
      const before = w.matches(ev.previous);
      if (before && !now) return w.send("DELETED", withTypeMeta(t, ev.object));
      if (!before && now) return w.send("ADDED", withTypeMeta(t, ev.object));
    }
    if (now) w.send(ev.type, withTypeMeta(t, ev.object));
  }

  // ---- CRDs

  function crdTypes(crd: KubeObject): ResourceType[] {
    const spec = isObject(crd.spec) ? crd.spec : {};
    const names = isObject(spec.names) ? spec.names : {};
    const group = str(spec.group);
    const versions = Array.isArray(spec.versions) ? spec.versions.filter(isObject) : [];
    const name = str(crd.metadata.name);
    return versions.filter((v) => v.served !== false).map((v) => {
      const columns: PrinterColumn[] = (Array.isArray(v.additionalPrinterColumns)
        ? v.additionalPrinterColumns.filter(isObject)
        : [])
        .filter((c) =>
          str(c.jsonPath) !== ".metadata.creationTimestamp"
        )
        .map((c) => ({
          name: str(c.name),
          type: str(c.type) || "string",
          cell: (o: KubeObject) => jsonPathValue(o, str(c.jsonPath)),
        }));
      return {
        group,
        version: str(v.name),
        resource: str(names.plural),
        singular: str(names.singular) || str(names.kind).toLowerCase(),
        kind: str(names.kind),
        listKind: str(names.listKind) || `${str(names.kind)}List`,
        namespaced: spec.scope !== "Cluster",
        shortNames: Array.isArray(names.shortNames) ? names.shortNames.map(str) : [],
        hasStatus: isObject(v.subresources) && isObject(v.subresources.status),
        columns,
        crd: name,
      };
    });
  }

  function validateCrd(crd: KubeObject) {
    const t = findType("customresourcedefinitions.apiextensions.k8s.io")!;
    const name = str(crd.metadata.name);
    const spec = isObject(crd.spec) ? crd.spec : undefined;
    if (!spec) throw invalid(t, name, "spec", "FieldValueRequired", "Required value");
    const names = isObject(spec.names) ? spec.names : {};
    const check = (ok: boolean, field: string, msg: string) => {
      if (!ok) throw invalid(t, name, field, "FieldValueInvalid", msg);
    };
    check(str(spec.group) !== "", "spec.group", "Required value");
    check(DNS1123_LABEL.test(str(names.plural)), "spec.names.plural", "Required value");
    check(str(names.kind) !== "", "spec.names.kind", "Required value");
    check(
      name === `${str(names.plural)}.${str(spec.group)}`,
      "metadata.name",
      `Invalid value: "${name}": must be spec.names.plural+"."+spec.group`,
    );
    check(
      spec.scope === "Namespaced" || spec.scope === "Cluster",
      "spec.scope",
      `Unsupported value: "${str(spec.scope)}": supported values: "Cluster", "Namespaced"`,
    );
    const versions = Array.isArray(spec.versions) ? spec.versions.filter(isObject) : [];
    check(
      versions.length > 0,
      "spec.versions",
      "Invalid value: must have exactly one version marked as storage version",
    );
    check(
      versions.filter((v) => v.storage === true).length === 1,
      "spec.versions",
      "Invalid value: must have exactly one version marked as storage version",
    );
    for (const [i, v] of versions.entries()) {
      check(DNS1123_LABEL.test(str(v.name)), `spec.versions[${i}].name`, "Required value");
    }
  }

  function syncCrd(crd: KubeObject | undefined, name: string) {
    for (const [k, t] of types) if (t.crd === name) types.delete(k);
    if (crd) { for (const t of crdTypes(crd)) register(t); }
  }

  function crdStatus(crd: KubeObject): JsonObject {
    const spec = isObject(crd.spec) ? crd.spec : {};
    const time = nowTimestamp();
    const cond = (type: string, reason: string, message: string): JsonObject => ({
      type,
      status: "True",
      lastTransitionTime: time,
      reason,
      message,
    });
    return {
      conditions: [
        cond("NamesAccepted", "NoConflicts", "no conflicts found"),
        cond("Established", "InitialNamesAccepted", "the initial names have been accepted"),
      ],
      acceptedNames: clone(isObject(spec.names) ? spec.names : {}),
      storedVersions: (Array.isArray(spec.versions) ? spec.versions.filter(isObject) : [])
        .filter((v) => v.storage === true).map((v) => str(v.name)),
    };
  }

  // ---- object lifecycle

  function defaults(t: ResourceType, obj: KubeObject, existing?: KubeObject) {
    const g = t.group;
    if (g === "" && t.resource === "namespaces") {
      const name = str(obj.metadata.name);
      const labels = isObject(obj.metadata.labels) ? obj.metadata.labels : {};
      obj.metadata.labels = { ...labels, "kubernetes.io/metadata.name": name };
      obj.spec = isObject(obj.spec) ? obj.spec : { finalizers: ["kubernetes"] };
      obj.status = existing?.status ?? { phase: "Active" };
    }
    if (g === "" && t.resource === "services") {
      const spec: JsonObject = isObject(obj.spec) ? obj.spec : {};
      obj.spec = spec;
      const old = existing && isObject(existing.spec) ? existing.spec : {};
      spec.type ??= "ClusterIP";
      spec.sessionAffinity ??= "None";
      if (spec.type !== "ExternalName") {
        if (spec.clusterIP === undefined || spec.clusterIP === "") {
          if (old.clusterIP) spec.clusterIP = old.clusterIP;
          else {
            const n = nextClusterIP++;
            spec.clusterIP = `10.96.${Math.floor(n / 250)}.${(n % 250) + 1}`;
          }
        }
        if (spec.clusterIP !== "None") spec.clusterIPs ??= [spec.clusterIP];
        spec.ipFamilies ??= ["IPv4"];
        spec.ipFamilyPolicy ??= "SingleStack";
        spec.internalTrafficPolicy ??= "Cluster";
      }
      if (Array.isArray(spec.ports)) {
        for (const p of spec.ports) {
          if (!isObject(p)) continue;
          p.protocol ??= "TCP";
          if (p.targetPort === undefined && p.port !== undefined) p.targetPort = p.port;
        }
      }
      obj.status ??= { loadBalancer: {} };
    }
    if (g === "" && t.resource === "secrets") obj.type ??= "Opaque";
    if (g === "apiextensions.k8s.io" && t.resource === "customresourcedefinitions") {
      obj.status = crdStatus(obj);
    }
  }

  function specOf(obj: KubeObject): JsonObject {
    const rest: JsonObject = { ...obj };
    delete rest.metadata;
    delete rest.status;
    return rest;
  }

  function checkBody(t: ResourceType, body: Json, ns: string | undefined): KubeObject {
    if (!isObject(body)) {
      throw new KubeStatusError(
        400,
        "BadRequest",
        `the body of the request must be a ${t.kind} object`,
      );
    }
    if (body.kind !== undefined && body.kind !== t.kind) {
      throw new KubeStatusError(
        400,
        "BadRequest",
        `the kind in the data (${str(body.kind)}) does not match the expected kind (${t.kind})`,
      );
    }
    if (body.apiVersion !== undefined && body.apiVersion !== groupVersion(t)) {
      const gvs = [...types.values()].filter((x) =>
        x.resource === t.resource && x.group === t.group
      )
        .map(groupVersion);
      if (!gvs.includes(str(body.apiVersion))) {
        throw new KubeStatusError(
          400,
          "BadRequest",
          `the API version in the data (${
            str(body.apiVersion)
          }) does not match the expected API version (${groupVersion(t)})`,
        );
      }
    }
    const obj = clone(body) as KubeObject;
    if (obj.metadata === undefined || obj.metadata === null) obj.metadata = {};
    if (!isObject(obj.metadata)) {
      throw invalid(t, "", "metadata", "FieldValueInvalid", "Invalid value: must be an object");
    }
    obj.apiVersion = groupVersion(t);
    obj.kind = t.kind;
    if (t.namespaced) {
      const bodyNs = obj.metadata.namespace;
      if (bodyNs !== undefined && bodyNs !== "" && ns !== undefined && bodyNs !== ns) {
        throw new KubeStatusError(
          400,
          "BadRequest",
          "the namespace of the provided object does not match the namespace sent on the request",
        );
      }
      if (ns !== undefined) obj.metadata.namespace = ns;
    } else {
      delete obj.metadata.namespace;
    }
    return obj;
  }

  function requireNamespace(t: ResourceType, ns: string | undefined) {
    if (!t.namespaced) return;
    if (ns === undefined || ns === "") {
      throw new KubeStatusError(
        400,
        "BadRequest",
        "an empty namespace may not be set during creation",
      );
    }
    if (!bucket(findType("namespaces")!).has(objKey(undefined, ns))) {
      throw new KubeStatusError(404, "NotFound", `namespaces "${ns}" not found`, {
        name: ns,
        kind: "namespaces",
      });
    }
    const nsObj = bucket(findType("namespaces")!).get(objKey(undefined, ns))!;
    if (isObject(nsObj.status) && nsObj.status.phase === "Terminating") {
      throw new KubeStatusError(
        403,
        "Forbidden",
        `${t.resource} "" is forbidden: unable to create new content in namespace ${ns} because it is being terminated`,
      );
    }
  }

  function doCreate(
    t: ResourceType,
    body: Json,
    ns: string | undefined,
    dryRun: boolean,
  ): KubeObject {
    const obj = checkBody(t, body, ns);
    const m = obj.metadata;
    ns = t.namespaced ? str(m.namespace) || ns : undefined;
    if (t.namespaced) m.namespace = ns ?? "";
    if (
      (m.name === undefined || m.name === "") && typeof m.generateName === "string" &&
      m.generateName !== ""
    ) {
      m.name = m.generateName + randomSuffix();
    }
    const name = str(m.name);
    if (name === "") {
      throw invalid(
        t,
        "",
        "metadata.name",
        "FieldValueRequired",
        "Required value: name or generateName is required",
      );
    }
    const problem = nameProblem(t, name);
    if (problem) {
      throw invalid(
        t,
        name,
        "metadata.name",
        "FieldValueInvalid",
        `Invalid value: "${name}": ${problem}`,
      );
    }
    requireNamespace(t, ns);
    const b = bucket(t);
    if (b.has(objKey(ns, name))) {
      throw new KubeStatusError(
        409,
        "AlreadyExists",
        `${groupResource(t)} "${name}" already exists`,
        detailsFor(t, name),
      );
    }
    if (t.crd === undefined && t.resource === "customresourcedefinitions") validateCrd(obj);
    if (t.crd !== undefined && t.hasStatus) delete obj.status;
    defaults(t, obj);
    delete m.resourceVersion;
    delete m.deletionTimestamp;
    delete m.deletionGracePeriodSeconds;
    m.uid = crypto.randomUUID();
    m.creationTimestamp = nowTimestamp();
    m.generation = 1;
    if (dryRun) {
      m.resourceVersion = String(rv);
      return obj;
    }
    m.resourceVersion = String(++rv);
    b.set(objKey(ns, name), obj);
    if (t.resource === "customresourcedefinitions" && t.group === "apiextensions.k8s.io") {
      syncCrd(obj, name);
    }
    record(t, "ADDED", obj);
    return clone(obj);
  }

  function lookup(t: ResourceType, ns: string | undefined, name: string): KubeObject {
    const existing = bucket(t).get(objKey(t.namespaced ? ns : undefined, name));
    if (!existing) throw notFound(t, name);
    return existing;
  }

  function conflict(t: ResourceType, name: string): KubeStatusError {
    return new KubeStatusError(
      409,
      "Conflict",
      `Operation cannot be fulfilled on ${
        groupResource(t)
      } "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      detailsFor(t, name),
    );
  }

  /** Replaces an existing object (update, patch, status update). */
  function doUpdate(
    t: ResourceType,
    body: Json,
    ns: string | undefined,
    name: string,
    sub: string | undefined,
    dryRun: boolean,
  ): KubeObject {
    const existing = lookup(t, ns, name);
    const obj = checkBody(t, body, t.namespaced ? ns : undefined);
    const m = obj.metadata;
    if (m.name !== undefined && m.name !== name) {
      throw new KubeStatusError(
        400,
        "BadRequest",
        `the name of the object (${str(m.name)}) does not match the name on the URL (${name})`,
      );
    }
    const em = existing.metadata;
    if (
      m.resourceVersion !== undefined && m.resourceVersion !== "" &&
      m.resourceVersion !== em.resourceVersion
    ) {
      throw conflict(t, name);
    }
    if (m.uid !== undefined && m.uid !== "" && m.uid !== em.uid) {
      throw new KubeStatusError(
        409,
        "Conflict",
        `Precondition failed: UID in precondition: ${str(m.uid)}, UID in object meta: ${
          str(em.uid)
        }`,
        detailsFor(t, name),
      );
    }
    let next: KubeObject;
    if (sub === "status") {
      next = clone(existing);
      if (obj.status === undefined) delete next.status;
      else next.status = obj.status;
    } else {
      next = obj;
      if (t.hasStatus && existing.status !== undefined) next.status = clone(existing.status);
      else if (t.hasStatus) delete next.status;
      next.metadata.name = name;
      if (t.namespaced) next.metadata.namespace = em.namespace;
      defaults(t, next, existing);
      if (t.resource === "customresourcedefinitions" && t.crd === undefined) validateCrd(next);
    }
    const nm = next.metadata;
    nm.uid = em.uid;
    nm.creationTimestamp = em.creationTimestamp;
    if (em.deletionTimestamp !== undefined) nm.deletionTimestamp = em.deletionTimestamp;
    if (em.deletionGracePeriodSeconds !== undefined) {
      nm.deletionGracePeriodSeconds = em.deletionGracePeriodSeconds;
    }
    nm.generation = em.generation ?? 1;
    nm.resourceVersion = em.resourceVersion;
    if (deepEqual(next, existing)) return clone(existing);
    if (!deepEqual(specOf(next), specOf(existing))) nm.generation = Number(em.generation ?? 1) + 1;
    const finalizers = Array.isArray(nm.finalizers) ? nm.finalizers : [];
    if (dryRun) return next;
    nm.resourceVersion = String(++rv);
    if (nm.deletionTimestamp !== undefined && finalizers.length === 0) {
      bucket(t).delete(objKey(t.namespaced ? ns : undefined, name));
      record(t, "DELETED", next);
      afterDelete(t, next);
      return clone(next);
    }
    bucket(t).set(objKey(t.namespaced ? ns : undefined, name), next);
    if (t.resource === "customresourcedefinitions" && t.crd === undefined && sub !== "status") {
      syncCrd(next, name);
    }
    record(t, "MODIFIED", next, clone(existing));
    return clone(next);
  }

  function afterDelete(t: ResourceType, obj: KubeObject) {
    const name = str(obj.metadata.name);
    if (t.group === "" && t.resource === "namespaces") {
      for (const other of types.values()) {
        if (!other.namespaced) continue;
        const b = bucket(other);
        for (const [k, o] of b) {
          if (str(o.metadata.namespace) !== name) continue;
          b.delete(k);
          rv++;
          o.metadata.resourceVersion = String(rv);
          record(other, "DELETED", o);
        }
      }
    }
    if (t.group === "apiextensions.k8s.io" && t.resource === "customresourcedefinitions") {
      const crdTs = [...types.values()].filter((x) => x.crd === name);
      const seen = new Set<string>();
      for (const ct of crdTs) {
        if (seen.has(storeKey(ct))) continue;
        seen.add(storeKey(ct));
        const b = bucket(ct);
        for (const [k, o] of b) {
          b.delete(k);
          rv++;
          o.metadata.resourceVersion = String(rv);
          record(ct, "DELETED", o);
        }
        storage.delete(storeKey(ct));
      }
      syncCrd(undefined, name);
    }
  }

  function doDelete(
    t: ResourceType,
    ns: string | undefined,
    name: string,
    options: JsonObject,
    dryRun: boolean,
  ): Json {
    const existing = lookup(t, ns, name);
    const pre = isObject(options.preconditions) ? options.preconditions : {};
    if (
      pre.resourceVersion !== undefined && pre.resourceVersion !== existing.metadata.resourceVersion
    ) {
      throw new KubeStatusError(
        409,
        "Conflict",
        `Operation cannot be fulfilled on ${
          groupResource(t)
        } "${name}": Precondition failed: ResourceVersion in precondition: ${
          str(pre.resourceVersion)
        }, ResourceVersion in object meta: ${str(existing.metadata.resourceVersion)}`,
        detailsFor(t, name),
      );
    }
    if (pre.uid !== undefined && pre.uid !== existing.metadata.uid) {
      throw new KubeStatusError(
        409,
        "Conflict",
        `Operation cannot be fulfilled on ${
          groupResource(t)
        } "${name}": Precondition failed: UID in precondition: ${
          str(pre.uid)
        }, UID in object meta: ${str(existing.metadata.uid)}`,
        detailsFor(t, name),
      );
    }
    const finalizers = Array.isArray(existing.metadata.finalizers)
      ? existing.metadata.finalizers
      : [];
    if (finalizers.length > 0) {
      if (existing.metadata.deletionTimestamp !== undefined) return withTypeMeta(t, existing);
      const next = clone(existing);
      next.metadata.deletionTimestamp = nowTimestamp();
      next.metadata.deletionGracePeriodSeconds = 0;
      if (dryRun) return withTypeMeta(t, next);
      next.metadata.resourceVersion = String(++rv);
      bucket(t).set(objKey(t.namespaced ? ns : undefined, name), next);
      record(t, "MODIFIED", next, clone(existing));
      return withTypeMeta(t, next);
    }
    if (!dryRun) {
      bucket(t).delete(objKey(t.namespaced ? ns : undefined, name));
      const gone = clone(existing);
      gone.metadata.resourceVersion = String(++rv);
      record(t, "DELETED", gone);
      afterDelete(t, gone);
    }
    return {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Success",
      details: { ...detailsFor(t, name), uid: existing.metadata.uid ?? "" },
    };
  }

  function listObjects(t: ResourceType, ns: string | undefined, matches: Matcher): KubeObject[] {
    const out: KubeObject[] = [];
    for (const o of bucket(t).values()) {
      if (ns !== undefined && str(o.metadata.namespace) !== ns) continue;
      if (matches(o)) out.push(withTypeMeta(t, o));
    }
    out.sort((a, b) =>
      objKey(str(a.metadata.namespace), str(a.metadata.name)).localeCompare(
        objKey(str(b.metadata.namespace), str(b.metadata.name)),
      )
    );
    return out;
  }

  // ---- tables

  function tableFor(t: ResourceType, objs: KubeObject[], includeObject: string, listRv?: string) {
    const columns = [
      ...TABLE_COLUMNS_PREFIX,
      ...t.columns.map((c) => ({
        name: c.name,
        type: c.type,
        format: "",
        description: "",
        priority: 0,
      })),
      {
        name: "Age",
        type: "string",
        format: "",
        description:
          "CreationTimestamp is a timestamp representing the server time when this object was created.",
        priority: 0,
      },
    ];
    const now = Date.now();
    const rows = objs.map((o) => {
      const created = Date.parse(str(o.metadata.creationTimestamp));
      const row: JsonObject = {
        cells: [
          str(o.metadata.name),
          ...t.columns.map((c) => c.cell(o)),
          Number.isNaN(created) ? "<unknown>" : humanDuration(now - created),
        ],
      };
      if (includeObject === "Object") row.object = o;
      else if (includeObject !== "None") {
        row.object = {
          kind: "PartialObjectMetadata",
          apiVersion: "meta.k8s.io/v1",
          metadata: o.metadata,
        };
      }
      return row;
    });
    const table: JsonObject = {
      kind: "Table",
      apiVersion: "meta.k8s.io/v1",
      metadata: listRv === undefined ? {} : { resourceVersion: listRv },
      columnDefinitions: columns,
      rows,
    };
    return table;
  }

  function wantsTable(req: Request): boolean {
    return /as=Table/.test(req.headers.get("accept") ?? "");
  }

  // ---- OpenAPI v3 (just enough for kubectl: PATCH operations that accept fieldValidation)

  function openapiV3(rest: string[]): JsonObject | undefined {
    const gvs = new Map<string, { group: string; version: string }>();
    for (const t of types.values()) {
      gvs.set(groupVersion(t), { group: t.group, version: t.version });
    }
    const apiPath = (gv: { group: string; version: string }) =>
      gv.group === "" ? `api/${gv.version}` : `apis/${gv.group}/${gv.version}`;
    if (rest.length === 0) {
      const paths: JsonObject = {};
      for (const gv of gvs.values()) {
        paths[apiPath(gv)] = { serverRelativeURL: `/openapi/v3/${apiPath(gv)}?hash=${rv}` };
      }
      return { paths };
    }
    const gv = [...gvs.values()].find((x) => apiPath(x) === rest.join("/"));
    if (!gv) return undefined;
    const paths: JsonObject = {};
    const schemas: JsonObject = {};
    for (const t of typesOf(gv.group, gv.version)) {
      const gvk = { group: t.group, version: t.version, kind: t.kind };
      const prefix = `/${apiPath(gv)}${
        t.namespaced ? "/namespaces/{namespace}" : ""
      }/${t.resource}`;
      paths[`${prefix}/{name}`] = {
        patch: {
          operationId: `patch${t.kind}`,
          parameters: [
            { name: "fieldValidation", in: "query", schema: { type: "string", uniqueItems: true } },
            { name: "fieldManager", in: "query", schema: { type: "string", uniqueItems: true } },
            { name: "dryRun", in: "query", schema: { type: "string", uniqueItems: true } },
          ],
          responses: { "200": { description: "OK" } },
          "x-kubernetes-action": "patch",
          "x-kubernetes-group-version-kind": gvk,
        },
      };
      schemas[`${t.group || "core"}.${t.version}.${t.kind}`] = {
        type: "object",
        "x-kubernetes-group-version-kind": [gvk],
        "x-kubernetes-preserve-unknown-fields": true,
      };
    }
    return {
      openapi: "3.0.0",
      info: { title: "Kubernetes", version: "v1.32.0-fake" },
      paths,
      components: { schemas },
    };
  }

  // ---- OpenAPI v2 (kubectl 1.20 fetches it before `create -f`/`apply` to build its validator,
  // and reads the PATCH operations to see whether a kind supports `dryRun`; 1.32 prefers v3)

  function openapiV2(): JsonObject {
    const paths: JsonObject = {};
    const sorted = [...types.values()].sort((a, b) =>
      groupVersion(a).localeCompare(groupVersion(b)) || a.resource.localeCompare(b.resource)
    );
    const query = (name: string, description: string): JsonObject => ({
      name,
      in: "query",
      description,
      type: "string",
      uniqueItems: true,
    });
    for (const t of sorted) {
      const base = t.group === "" ? `/api/${t.version}` : `/apis/${t.group}/${t.version}`;
      const prefix = `${base}${t.namespaced ? "/namespaces/{namespace}" : ""}/${t.resource}`;
      const title = (w: string) => w === "" ? "Core" : w[0].toUpperCase() + w.slice(1);
      const opGv = `${title(t.group.split(".")[0])}${title(t.version)}`; // patchCoreV1...
      paths[`${prefix}/{name}`] = {
        patch: {
          operationId: `patch${opGv}${t.namespaced ? "Namespaced" : ""}${t.kind}`,
          consumes: [
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
          ],
          produces: ["application/json", "application/yaml"],
          parameters: [
            query("dryRun", "When present, indicates that modifications should not be persisted."),
            query(
              "fieldManager",
              "fieldManager is a name associated with the actor making changes.",
            ),
            query("fieldValidation", "Strict, Warn or Ignore: how to treat unknown fields."),
          ],
          responses: { "200": { description: "OK" } },
          "x-kubernetes-action": "patch",
          "x-kubernetes-group-version-kind": { group: t.group, version: t.version, kind: t.kind },
        },
      };
    }
    return {
      swagger: "2.0",
      info: { title: "Kubernetes", version: "v1.32.0-fake" },
      paths,
    };
  }

  /**
   * `/openapi/v2` as protobuf or JSON, whichever comes first in `Accept` (kubectl asks only for
   * protobuf); 406 when neither is acceptable, like kube-openapi's handler.
   */
  function openapiV2Response(req: Request): Response {
    const accepted = (req.headers.get("accept") ?? "*/*").split(",")
      .map((a) => a.split(";")[0].trim().toLowerCase()).filter((a) => a !== "");
    for (const a of accepted.length > 0 ? accepted : ["*/*"]) {
      if ((OPENAPI_V2_PROTOBUF_TYPES as readonly string[]).includes(a)) {
        return new Response(encodeOpenApiV2(openapiV2()), {
          headers: {
            "content-type": OPENAPI_V2_PROTOBUF_TYPES[1],
            "cache-control": "no-cache, private",
            vary: "Accept",
          },
        });
      }
      if (a === "application/json" || a === "application/*" || a === "*/*") {
        return jsonResponse(openapiV2());
      }
    }
    return statusResponse(
      new KubeStatusError(
        406,
        "NotAcceptable",
        `only the following media types are accepted: application/json, ${
          OPENAPI_V2_PROTOBUF_TYPES.join(", ")
        }`,
      ),
    );
  }

  // ---- routing

  function route(parts: string[]): Route | Response {
    let group: string;
    let version: string;
    let rest: string[];
    if (parts[0] === "api") {
      group = "";
      version = parts[1];
      rest = parts.slice(2);
    } else {
      group = parts[1];
      version = parts[2];
      rest = parts.slice(3);
    }
    const gvTypes = typesOf(group, version);
    const byName = (r: string) => gvTypes.find((x) => x.resource === r);
    let type: ResourceType | undefined;
    let namespace: string | undefined;
    let name: string | undefined;
    let subresource: string | undefined;
    if (rest[0] === "namespaces" && rest.length >= 3 && byName(rest[2])?.namespaced) {
      namespace = rest[1];
      type = byName(rest[2]);
      name = rest[3];
      subresource = rest[4];
      if (rest.length > 5) type = undefined;
    } else {
      type = byName(rest[0]);
      name = rest[1];
      subresource = rest[2];
      if (rest.length > 3) type = undefined;
    }
    if (!type || (subresource !== undefined && !(subresource === "status" && type.hasStatus))) {
      return statusResponse(
        new KubeStatusError(
          404,
          "NotFound",
          "the server could not find the requested resource",
          {},
        ),
      );
    }
    return { type, namespace, name, subresource };
  }

  function discoveryResources(group: string, version: string): JsonObject[] {
    const out: JsonObject[] = [];
    for (const t of typesOf(group, version).sort((a, b) => a.resource.localeCompare(b.resource))) {
      const r: JsonObject = {
        name: t.resource,
        singularName: t.singular,
        namespaced: t.namespaced,
        kind: t.kind,
        verbs: ALL_VERBS,
      };
      if (t.shortNames.length > 0) r.shortNames = t.shortNames;
      if (t.crd === undefined && t.group === "") r.storageVersionHash = btoa(t.kind).slice(0, 11);
      out.push(r);
      if (t.hasStatus) {
        out.push({
          name: `${t.resource}/status`,
          singularName: "",
          namespaced: t.namespaced,
          kind: t.kind,
          verbs: ["get", "patch", "update"],
        });
      }
    }
    return out;
  }

  function groups(): JsonObject[] {
    const byGroup = new Map<string, string[]>();
    for (const t of types.values()) {
      if (t.group === "") continue;
      const vs = byGroup.get(t.group) ?? [];
      if (!vs.includes(t.version)) vs.push(t.version);
      byGroup.set(t.group, vs);
    }
    return [...byGroup.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, versions]) => {
      const crd = [...types.values()].find((t) => t.group === name && t.crd !== undefined);
      let preferred = versions[0];
      if (crd) {
        const crdObj = bucket(findType("customresourcedefinitions")!).get(
          objKey(undefined, crd.crd!),
        );
        const vs = isObject(crdObj?.spec) && Array.isArray(crdObj.spec.versions)
          ? crdObj.spec.versions.filter(isObject)
          : [];
        preferred = str(vs.find((v) => v.storage === true)?.name) || preferred;
      }
      return {
        name,
        versions: versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v })),
        preferredVersion: { groupVersion: `${name}/${preferred}`, version: preferred },
      };
    });
  }

  function discovery(parts: string[], port: number): Response | undefined {
    if (parts.length === 1 && parts[0] === "api") {
      return jsonResponse({
        kind: "APIVersions",
        versions: ["v1"],
        serverAddressByClientCIDRs: [{
          clientCIDR: "0.0.0.0/0",
          serverAddress: `127.0.0.1:${port}`,
        }],
      });
    }
    if (parts.length === 1 && parts[0] === "apis") {
      return jsonResponse({ kind: "APIGroupList", apiVersion: "v1", groups: groups() });
    }
    if (parts.length === 2 && parts[0] === "apis") {
      const g = groups().find((x) => x.name === parts[1]);
      if (!g) return undefined;
      return jsonResponse({ kind: "APIGroup", apiVersion: "v1", ...g });
    }
    const gv = parts[0] === "api" && parts.length === 2
      ? { group: "", version: parts[1] }
      : parts[0] === "apis" && parts.length === 3
      ? { group: parts[1], version: parts[2] }
      : undefined;
    if (!gv) return undefined;
    if (typesOf(gv.group, gv.version).length === 0) return undefined;
    return jsonResponse({
      kind: "APIResourceList",
      apiVersion: "v1",
      groupVersion: groupVersion(gv),
      resources: discoveryResources(gv.group, gv.version),
    });
  }

  async function readBody(req: Request): Promise<{ text: string; contentType: string }> {
    const contentType = (req.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
    if (contentType === "application/vnd.kubernetes.protobuf") {
      // kubectl's generator commands (`create namespace`, `create configmap`...) send protobuf.
      let obj: JsonObject;
      try {
        obj = decodeKubeProtobuf(new Uint8Array(await req.arrayBuffer()));
      } catch (e) {
        throw new KubeStatusError(
          415,
          "UnsupportedMediaType",
          `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (${
            (e as Error).message
          })`,
        );
      }
      return { text: JSON.stringify(obj), contentType: "application/json" };
    }
    return { text: await req.text(), contentType };
  }

  function parseJsonBody(text: string): Json {
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new KubeStatusError(
        400,
        "BadRequest",
        `error decoding request body: ${(e as Error).message}`,
      );
    }
  }

  function parseBody(text: string, contentType: string): Json {
    if (contentType === "application/yaml" || contentType === "application/apply-patch+yaml") {
      try {
        return parseYaml(text) as Json;
      } catch (e) {
        throw new KubeStatusError(
          400,
          "BadRequest",
          `error decoding YAML: ${(e as Error).message}`,
        );
      }
    }
    return parseJsonBody(text);
  }

  function dryRunOf(q: URLSearchParams): boolean {
    const d = q.getAll("dryRun");
    if (d.some((x) => x !== "All")) {
      throw new KubeStatusError(
        400,
        "BadRequest",
        `dryRun: Unsupported value: "${d.join(",")}": supported values: "All"`,
      );
    }
    return d.length > 0;
  }

  async function handlePatch(req: Request, r: Route, q: URLSearchParams): Promise<Response> {
    const t = r.type;
    const name = r.name!;
    const { text, contentType } = await readBody(req);
    const dryRun = dryRunOf(q);
    const patchTypes = [
      "application/json-patch+json",
      "application/merge-patch+json",
      "application/strategic-merge-patch+json",
      "application/apply-patch+yaml",
    ];
    if (!patchTypes.includes(contentType)) {
      throw new KubeStatusError(
        415,
        "UnsupportedMediaType",
        `the body of the request was in an unknown format - accepted media types include: ${
          patchTypes.join(", ")
        }`,
      );
    }
    if (contentType === "application/strategic-merge-patch+json" && t.crd !== undefined) {
      throw new KubeStatusError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
      );
    }
    const patch = parseBody(text, contentType);
    const existing = bucket(t).get(objKey(t.namespaced ? r.namespace : undefined, name));
    if (contentType === "application/apply-patch+yaml") {
      if (!q.get("fieldManager")) {
        throw new KubeStatusError(
          422,
          "Invalid",
          `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`,
        );
      }
      if (!isObject(patch)) {
        throw new KubeStatusError(400, "BadRequest", "apply patch must be an object");
      }
      if (!existing) {
        const admitted = await admitCreate(
          admission,
          t,
          { ...patch, metadata: { ...meta(patch), name } },
          r.namespace,
          dryRun,
        );
        const created = doCreate(t, admitted, r.namespace, dryRun);
        return jsonResponse(withTypeMeta(t, created), 201);
      }
    }
    if (!existing) throw notFound(t, name);
    const current = withTypeMeta(t, existing);
    let result: Json;
    try {
      if (contentType === "application/json-patch+json") result = jsonPatch(current, patch);
      else if (contentType === "application/merge-patch+json") result = mergePatch(current, patch);
      else result = strategicMergePatch(current, patch);
    } catch (e) {
      if (e instanceof PatchError) throw new KubeStatusError(e.code, REASONS[e.code], e.message);
      throw e;
    }
    if (isObject(result) && isObject(result.metadata)) {
      // A resourceVersion in the patch is a precondition; otherwise patches apply to the latest.
      const patchedRv = contentType === "application/json-patch+json"
        ? (result.metadata.resourceVersion !== current.metadata.resourceVersion
          ? result.metadata.resourceVersion
          : undefined)
        : meta(patch).resourceVersion;
      if (patchedRv === undefined || patchedRv === null) delete result.metadata.resourceVersion;
    }
    const updated = doUpdate(t, result, r.namespace, name, r.subresource, dryRun);
    return jsonResponse(withTypeMeta(t, updated));
  }

  function openWatch(req: Request, r: Route, q: URLSearchParams, matches: Matcher): Response {
    const t = r.type;
    const rvParam = q.get("resourceVersion") ?? "";
    if (rvParam !== "" && !/^\d+$/.test(rvParam)) {
      throw new KubeStatusError(
        400,
        "BadRequest",
        `resourceVersion: Invalid value: "${rvParam}": must be a number`,
      );
    }
    const timeoutParam = q.get("timeoutSeconds");
    const timeoutSeconds = timeoutParam === null ? undefined : Number(timeoutParam);
    if (
      timeoutSeconds !== undefined && !(Number.isInteger(timeoutSeconds) && timeoutSeconds >= 0)
    ) {
      throw new KubeStatusError(
        400,
        "BadRequest",
        `timeoutSeconds: Invalid value: "${timeoutParam}"`,
      );
    }
    const table = wantsTable(req);
    const includeObject = q.get("includeObject") ?? "Metadata";
    const enc = new TextEncoder();
    const ns = t.namespaced ? r.namespace : undefined;
    let watcher: Watcher;
    let timer: number | undefined;
    let bookmarkTimer: number | undefined;
    let done = false;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        const close = () => {
          if (done) return;
          done = true;
          watchers.delete(watcher);
          if (timer !== undefined) clearTimeout(timer);
          if (bookmarkTimer !== undefined) clearInterval(bookmarkTimer);
          try {
            controller.close();
          } catch { /* already closed */ }
        };
        const send = (type: string, obj: KubeObject | JsonObject) => {
          if (done) return;
          let object: Json = obj;
          if (table && type !== "ERROR" && type !== "BOOKMARK") {
            object = tableFor(t, [obj as KubeObject], includeObject);
          }
          try {
            controller.enqueue(enc.encode(JSON.stringify({ type, object }) + "\n"));
          } catch {
            close();
          }
        };
        watcher = {
          key: storeKey(t),
          namespace: ns,
          matches,
          send,
          bookmarks: q.get("allowWatchBookmarks") === "true",
          close,
        };
        const from = rvParam === "" ? 0 : Number(rvParam);
        if (from === 0) {
          for (const o of listObjects(t, ns, matches)) send("ADDED", o);
        } else if (from < historyStart) {
          send(
            "ERROR",
            new KubeStatusError(
              410,
              "Expired",
              `too old resource version: ${from} (${historyStart + 1})`,
            )
              .toStatus(),
          );
          done = true;
          controller.close();
          return;
        } else {
          for (const ev of history) if (ev.rv > from) deliver(watcher, ev, t);
        }
        watchers.add(watcher);
        if (timeoutSeconds !== undefined && timeoutSeconds > 0) {
          timer = setTimeout(close, timeoutSeconds * 1000);
        }
        if (watcher.bookmarks) {
          bookmarkTimer = setInterval(() => sendBookmark(watcher), bookmarkIntervalMs);
        }
      },
      cancel() {
        watcher?.close();
      },
    });
    return new Response(stream, {
      status: 200,
      headers: { "content-type": "application/json", "cache-control": "no-cache, private" },
    });

    function sendBookmark(w: Watcher) {
      w.send("BOOKMARK", {
        kind: t.kind,
        apiVersion: groupVersion(t),
        metadata: {
          resourceVersion: String(rv),
          annotations: { "k8s.io/initial-events-end": "true" },
        },
      });
    }
  }

  function bookmarkAll() {
    for (const w of watchers) {
      if (!w.bookmarks) continue;
      const t = [...types.values()].find((x) => storeKey(x) === w.key);
      if (!t) continue;
      w.send("BOOKMARK", {
        kind: t.kind,
        apiVersion: groupVersion(t),
        metadata: { resourceVersion: String(rv) },
      });
    }
  }

  function handleList(req: Request, r: Route, q: URLSearchParams, matches: Matcher): Response {
    const t = r.type;
    const ns = t.namespaced ? r.namespace : undefined;
    let items = listObjects(t, ns, matches);
    const limit = Number(q.get("limit") ?? "0");
    const cont = q.get("continue");
    let listRv = String(rv);
    if (cont) {
      let token: { rv: string; after: string };
      try {
        token = JSON.parse(atob(cont));
      } catch {
        throw new KubeStatusError(
          400,
          "BadRequest",
          `continue: Invalid value: "${cont}": invalid continue token`,
        );
      }
      listRv = token.rv;
      items = items.filter((o) =>
        objKey(str(o.metadata.namespace), str(o.metadata.name)).localeCompare(token.after) > 0
      );
    }
    const listMeta: JsonObject = { resourceVersion: listRv };
    if (limit > 0 && items.length > limit) {
      items = items.slice(0, limit);
      const last = items[items.length - 1];
      listMeta.continue = btoa(JSON.stringify({
        rv: listRv,
        after: objKey(str(last.metadata.namespace), str(last.metadata.name)),
      }));
    }
    if (wantsTable(req)) {
      const table = tableFor(t, items, q.get("includeObject") ?? "Metadata", listRv);
      table.metadata = listMeta;
      return jsonResponse(table);
    }
    return jsonResponse({
      kind: t.listKind,
      apiVersion: groupVersion(t),
      metadata: listMeta,
      items,
    });
  }

  async function handleResource(req: Request, r: Route, q: URLSearchParams): Promise<Response> {
    const t = r.type;
    const method = req.method;
    if (r.namespace !== undefined && t.namespaced === false) {
      throw new KubeStatusError(
        404,
        "NotFound",
        "the server could not find the requested resource",
      );
    }
    const ns = r.namespace;
    const name = r.name;
    if (name === undefined) {
      let matches: Matcher;
      try {
        const labels = parseLabelSelector(q.get("labelSelector"));
        const fields = parseFieldSelector(q.get("fieldSelector"));
        matches = (o) => labels(o) && fields(o);
      } catch (e) {
        if (e instanceof SelectorError) throw new KubeStatusError(400, "BadRequest", e.message);
        throw e;
      }
      if (method === "GET") {
        const watch = q.get("watch");
        if (watch === "true" || watch === "1") return openWatch(req, r, q, matches);
        return handleList(req, r, q, matches);
      }
      if (method === "POST") {
        if (t.namespaced && ns === undefined) throw methodNotAllowed();
        const { text, contentType } = await readBody(req);
        const body = await admitCreate(admission, t, parseBody(text, contentType), ns, dryRunOf(q));
        const created = doCreate(t, body, ns, dryRunOf(q));
        if (wantsTable(req)) return jsonResponse(tableFor(t, [created], "Metadata"), 201);
        return jsonResponse(withTypeMeta(t, created), 201);
      }
      if (method === "DELETE") {
        const dryRun = dryRunOf(q);
        const victims = listObjects(t, ns, matches);
        for (const v of victims) {
          doDelete(t, str(v.metadata.namespace) || undefined, str(v.metadata.name), {}, dryRun);
        }
        return jsonResponse({
          kind: t.listKind,
          apiVersion: groupVersion(t),
          metadata: { resourceVersion: String(rv) },
          items: victims,
        });
      }
      throw methodNotAllowed();
    }
    switch (method) {
      case "GET": {
        const obj = withTypeMeta(t, lookup(t, ns, name));
        if (wantsTable(req)) {
          return jsonResponse(tableFor(t, [obj], q.get("includeObject") ?? "Metadata"));
        }
        return jsonResponse(obj);
      }
      case "PUT": {
        const { text, contentType } = await readBody(req);
        const body = parseBody(text, contentType);
        const dryRun = dryRunOf(q);
        if (
          !bucket(t).has(objKey(t.namespaced ? ns : undefined, name)) &&
          r.subresource === undefined &&
          t.group === "" && t.resource === "endpoints"
        ) {
          return jsonResponse(withTypeMeta(t, doCreate(t, body, ns, dryRun)), 201);
        }
        return jsonResponse(withTypeMeta(t, doUpdate(t, body, ns, name, r.subresource, dryRun)));
      }
      case "PATCH":
        return await handlePatch(req, r, q);
      case "DELETE": {
        if (r.subresource !== undefined) throw methodNotAllowed();
        const text = await req.text();
        let options: JsonObject = {};
        if (text.trim() !== "") {
          const parsed = parseJsonBody(text);
          if (isObject(parsed)) options = parsed;
        }
        return jsonResponse(doDelete(t, ns, name, options, dryRunOf(q)));
      }
      default:
        throw methodNotAllowed();
    }
  }

  function methodNotAllowed(): KubeStatusError {
    return new KubeStatusError(
      405,
      "MethodNotAllowed",
      "the server does not allow this method on the requested resource",
      {},
    );
  }

  function injected(req: Request, path: string): Response | undefined {
    const i = failures.findIndex((f) =>
      (f.method === undefined || f.method.toUpperCase() === req.method) &&
      (f.path === undefined || (typeof f.path === "string" ? f.path === path : f.path.test(path)))
    );
    if (i < 0) return undefined;
    const f = failures[i];
    if (--f.left <= 0) failures.splice(i, 1);
    return statusResponse(
      new KubeStatusError(
        f.code,
        f.reason ?? REASONS[f.code] ?? "Unknown",
        f.message ?? "injected failure",
      ),
    );
  }

  async function handle(req: Request, port: number): Promise<Response> {
    const url = new URL(req.url);
    const path = url.pathname;
    const parts = path.split("/").filter((p) => p !== "").map(decodeURIComponent);
    const auth = req.headers.get("authorization");
    if ((auth !== null || opts.requireToken) && auth !== `Bearer ${token}`) {
      return statusResponse(new KubeStatusError(401, "Unauthorized", "Unauthorized"));
    }
    const fail = injected(req, path);
    if (fail) return fail;
    const review = await tokenReviewResponse(req, path, reviewTokens);
    if (review) return review;
    const tokenRequest = await tokenRequestResponse(req, path, {
      serviceAccountExists: (ns, name) =>
        bucket(findType("serviceaccounts")!).has(objKey(ns, name)),
      reviewTokens,
    });
    if (tokenRequest) return tokenRequest;
    if (path === "/version") {
      return jsonResponse({
        major: "1",
        minor: "32",
        gitVersion: "v1.32.0-fake",
        gitCommit: "0000000000000000000000000000000000000000",
        gitTreeState: "clean",
        buildDate: "2025-01-01T00:00:00Z",
        goVersion: "go1.23.0",
        compiler: "gc",
        platform: "linux/amd64",
      });
    }
    if (path === "/healthz" || path === "/readyz" || path === "/livez") {
      return new Response("ok", { headers: { "content-type": "text/plain; charset=utf-8" } });
    }
    if (path === "/openapi/v2" && req.method === "GET") return openapiV2Response(req);
    if (parts[0] === "openapi" && parts[1] === "v3" && req.method === "GET") {
      const doc = openapiV3(parts.slice(2));
      if (doc) return jsonResponse(doc);
    }
    if (parts[0] !== "api" && parts[0] !== "apis") {
      return new Response("404 page not found\n", {
        status: 404,
        headers: { "content-type": "text/plain; charset=utf-8" },
      });
    }
    if (req.method === "GET") {
      const d = discovery(parts, port);
      if (d) return d;
    }
    if ((parts[0] === "api" && parts.length < 3) || (parts[0] === "apis" && parts.length < 4)) {
      return new Response("404 page not found\n", {
        status: 404,
        headers: { "content-type": "text/plain; charset=utf-8" },
      });
    }
    const r = route(parts);
    if (r instanceof Response) return r;
    return await handleResource(req, r, url.searchParams);
  }

  // ---- start

  const ready = Promise.withResolvers<number>();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: ({ port }) => ready.resolve(port),
  }, async (req) => {
    const url = new URL(req.url);
    let res: Response;
    try {
      res = await handle(req, server.addr.port);
    } catch (e) {
      if (e instanceof KubeStatusError) res = statusResponse(e);
      else {
        res = statusResponse(
          new KubeStatusError(500, "InternalError", `internal error: ${(e as Error).message}`),
        );
      }
    }
    requests.push({
      method: req.method,
      path: url.pathname,
      search: url.search,
      contentType: req.headers.get("content-type") ?? "",
      accept: req.headers.get("accept") ?? "",
      status: res.status,
    });
    return res;
  });
  const port = await ready.promise;
  const url = `http://127.0.0.1:${port}`;
  const tempDir = await Deno.makeTempDir({ prefix: "fake-kube-" });
  const kubeconfigPath = `${tempDir}/kubeconfig`;

  function kubeconfig(o: { namespace?: string } = {}): string {
    const ns = o.namespace ?? "default";
    return [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      "- name: fake",
      "  cluster:",
      `    server: ${url}`,
      "    insecure-skip-tls-verify: true",
      "users:",
      "- name: fake-user",
      "  user:",
      `    token: ${token}`,
      "contexts:",
      "- name: fake",
      "  context:",
      "    cluster: fake",
      "    user: fake-user",
      `    namespace: ${JSON.stringify(ns)}`,
      "current-context: fake",
      "preferences: {}",
      "",
    ].join("\n");
  }

  async function writeKubeconfig(path: string, o: { namespace?: string } = {}) {
    const tmp = `${path}.tmp-${crypto.randomUUID()}`;
    await Deno.writeTextFile(tmp, kubeconfig(o), { mode: 0o600 });
    await Deno.rename(tmp, path);
  }

  function upsert(obj: JsonObject): KubeObject {
    const t = typeForObject(obj);
    const m = meta(obj);
    const ns = t.namespaced ? (str(m.namespace) || "default") : undefined;
    const name = str(m.name);
    const exists = bucket(t).has(objKey(ns, name));
    const body = clone(obj);
    if (exists && isObject(body.metadata)) delete body.metadata.resourceVersion;
    const result = exists
      ? doUpdate(t, body, ns, name, undefined, false)
      : doCreate(t, body, ns, false);
    if (exists && t.hasStatus && obj.status !== undefined) {
      return withTypeMeta(
        t,
        doUpdate(t, { ...result, status: obj.status }, ns, name, "status", false),
      );
    }
    return withTypeMeta(t, result);
  }

  const handle_: FakeKube = {
    url,
    port,
    kubeconfigPath,
    token,
    authHeaders: { Authorization: `Bearer ${token}` },
    requests,
    get resourceVersion() {
      return rv;
    },
    get watchCount() {
      return watchers.size;
    },
    kubeconfig,
    writeKubeconfig,
    objects(resource, namespace) {
      const t = findType(resource);
      if (!t) throw new TypeError(`FakeKube.objects: unknown resource "${resource}"`);
      return listObjects(t, t.namespaced ? namespace : undefined, () => true);
    },
    get(resource, namespace, name) {
      const t = findType(resource);
      if (!t) throw new TypeError(`FakeKube.get: unknown resource "${resource}"`);
      const o = bucket(t).get(objKey(t.namespaced ? namespace : undefined, name));
      return o ? withTypeMeta(t, o) : undefined;
    },
    upsert,
    remove(resource, namespace, name) {
      const t = findType(resource);
      if (!t) throw new TypeError(`FakeKube.remove: unknown resource "${resource}"`);
      if (!bucket(t).has(objKey(t.namespaced ? namespace : undefined, name))) return false;
      const existing = lookup(t, namespace, name);
      if (Array.isArray(existing.metadata.finalizers)) existing.metadata.finalizers = [];
      doDelete(t, namespace, name, {}, false);
      return true;
    },
    expireHistory() {
      history.length = 0;
      historyStart = rv;
    },
    bookmark: bookmarkAll,
    missEvents(resource, n = 1) {
      const t = findType(resource);
      if (!t) throw new TypeError(`FakeKube.missEvents: unknown resource "${resource}"`);
      watchGate.drop({ resource: storeKey(t) }, n);
    },
    failNext(spec) {
      if (!Number.isInteger(spec.code) || spec.code < 400 || spec.code > 599) {
        throw new TypeError(
          `FakeKube.failNext: "code" must be an HTTP error code, got ${spec.code}`,
        );
      }
      const times = spec.times ?? 1;
      if (!Number.isInteger(times) || times < 1) {
        throw new TypeError(`FakeKube.failNext: "times" must be a positive integer, got ${times}`);
      }
      failures.push({ ...spec, left: times });
    },
    reviewTokens,
    watchGate,
    resourceTypes() {
      return [...types.values()].map((t) => ({
        ...t,
        shortNames: [...t.shortNames],
        columns: [...t.columns],
      }));
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const w of [...watchers]) w.close();
      await server.shutdown();
      await Deno.remove(tempDir, { recursive: true }).catch(() => {});
    },
    [Symbol.asyncDispose]() {
      return this.close();
    },
  };

  try {
    await writeKubeconfig(kubeconfigPath);
    for (const ns of opts.namespaces ?? ["default", "kube-system", "mesh-system"]) {
      upsert({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
    }
    for (const o of opts.objects ?? []) upsert(o);
  } catch (e) {
    await handle_.close();
    throw e;
  }
  return handle_;
}

/** Reads a simple JSONPath (`.spec.replicas`, `.status.conditions[0].type`) from an object. */
function jsonPathValue(obj: Json, path: string): Json {
  let cur: Json | undefined = obj;
  const tokens = path.replace(/^\{?\.?/, "").replace(/\}$/, "").match(/[^.[\]]+|\[\d+\]/g) ?? [];
  for (const tok of tokens) {
    if (tok.startsWith("[")) cur = Array.isArray(cur) ? cur[Number(tok.slice(1, -1))] : undefined;
    else cur = isObject(cur) ? cur[tok] : undefined;
    if (cur === undefined) return null;
  }
  return cur ?? null;
}
