/**
 * What the parts of the fake Kubernetes API server share: resource types, the Status error,
 * names, paths and answers. The server is {@link ./fake_kube.ts}.
 * @module
 */
import { isObject, type Json, type JsonObject } from "./_patch.ts";
import type { Matcher } from "./_selectors.ts";

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

export const REASONS: Record<number, string> = {
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

export const ALL_VERBS = [
  "create",
  "delete",
  "deletecollection",
  "get",
  "list",
  "patch",
  "update",
  "watch",
];

export function str(v: Json | undefined): string {
  return v === undefined || v === null ? "" : String(v);
}

// ---------------------------------------------------------------------------------------------
// Helpers

export function nowTimestamp(): string {
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

export const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const DNS1123_SUBDOMAIN =
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

export function nameProblem(type: ResourceType, name: string): string | undefined {
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

export function randomSuffix(): string {
  const alphabet = "bcdfghjklmnpqrstvwxz2456789";
  let s = "";
  for (let i = 0; i < 5; i++) s += alphabet[Math.floor(Math.random() * alphabet.length)];
  return s;
}

export function groupVersion(t: { group: string; version: string }): string {
  return t.group === "" ? t.version : `${t.group}/${t.version}`;
}

export function groupResource(t: ResourceType): string {
  return t.group === "" ? t.resource : `${t.resource}.${t.group}`;
}

/** The `details.kind`/`details.group` pair the real API puts in NotFound/AlreadyExists. */
export function detailsFor(t: ResourceType, name: string): JsonObject {
  const d: JsonObject = { name };
  if (t.group !== "") d.group = t.group;
  d.kind = t.resource;
  return d;
}

export function notFound(t: ResourceType, name: string): KubeStatusError {
  return new KubeStatusError(
    404,
    "NotFound",
    `${groupResource(t)} "${name}" not found`,
    detailsFor(t, name),
  );
}

export function invalid(t: ResourceType, name: string, field: string, reason: string, msg: string) {
  return new KubeStatusError(422, "Invalid", `${t.kind} "${name}" is invalid: ${field}: ${msg}`, {
    name,
    ...(t.group !== "" ? { group: t.group } : {}),
    kind: t.kind,
    causes: [{ reason, message: msg, field }],
  });
}

export function jsonResponse(body: Json, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-cache, private" },
  });
}

export function statusResponse(err: KubeStatusError): Response {
  return jsonResponse(err.toStatus(), err.code);
}

export function meta(obj: Json): JsonObject {
  return isObject(obj) && isObject(obj.metadata) ? obj.metadata : {};
}

export interface HistoryEvent {
  rv: number;
  type: "ADDED" | "MODIFIED" | "DELETED";
  key: string;
  object: KubeObject;
  previous?: KubeObject;
}

export interface Watcher {
  key: string;
  namespace?: string;
  matches: Matcher;
  send: (type: string, obj: KubeObject | JsonObject) => void;
  bookmarks: boolean;
  close: () => void;
}

export interface Route {
  type: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
}

export const TABLE_COLUMNS_PREFIX = [
  {
    name: "Name",
    type: "string",
    format: "name",
    description:
      "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
    priority: 0,
  },
];

/** Reads a simple JSONPath (`.spec.replicas`, `.status.conditions[0].type`) from an object. */
export function jsonPathValue(obj: Json, path: string): Json {
  let cur: Json | undefined = obj;
  const tokens = path.replace(/^\{?\.?/, "").replace(/\}$/, "").match(/[^.[\]]+|\[\d+\]/g) ?? [];
  for (const tok of tokens) {
    if (tok.startsWith("[")) cur = Array.isArray(cur) ? cur[Number(tok.slice(1, -1))] : undefined;
    else cur = isObject(cur) ? cur[tok] : undefined;
    if (cur === undefined) return null;
  }
  return cur ?? null;
}

/** Key of a type in the type table: `group/version/resource`. */
export const typeKey = (g: string, v: string, r: string): string => `${g}/${v}/${r}`;
/** Key of a type's storage bucket: `resource.group` (shared by its versions). */
export const storeKey = (t: ResourceType): string => groupResource(t);
/** Key of an object in its bucket: `namespace/name` (`/name` when cluster-scoped). */
export const objKey = (ns: string | undefined, name: string): string => `${ns ?? ""}/${name}`;

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
