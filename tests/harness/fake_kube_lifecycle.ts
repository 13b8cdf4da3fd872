/**
 * Object lifecycle in the fake Kubernetes API server: defaults, body checks, create, update
 * (with preconditions and generation), delete (with finalizers and cascades).
 * @module
 */
import { clone, deepEqual, isObject, type Json, type JsonObject } from "./_patch.ts";
import { crdStatus, validateCrd } from "./fake_kube_crd.ts";
import {
  detailsFor,
  groupResource,
  groupVersion,
  invalid,
  type KubeObject,
  KubeStatusError,
  meta,
  nameProblem,
  nowTimestamp,
  objKey,
  randomSuffix,
  type ResourceType,
  storeKey,
  str,
} from "./fake_kube_common.ts";
import type { KubeState } from "./fake_kube_state.ts";

export function defaults(s: KubeState, t: ResourceType, obj: KubeObject, existing?: KubeObject) {
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
          const n = s.nextClusterIP++;
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

export function specOf(obj: KubeObject): JsonObject {
  const rest: JsonObject = { ...obj };
  delete rest.metadata;
  delete rest.status;
  return rest;
}

export function checkBody(
  s: KubeState,
  t: ResourceType,
  body: Json,
  ns: string | undefined,
): KubeObject {
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
    const gvs = [...s.types.values()].filter((x) =>
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

export function requireNamespace(s: KubeState, t: ResourceType, ns: string | undefined) {
  if (!t.namespaced) return;
  if (ns === undefined || ns === "") {
    throw new KubeStatusError(
      400,
      "BadRequest",
      "an empty namespace may not be set during creation",
    );
  }
  if (!s.bucket(s.findType("namespaces")!).has(objKey(undefined, ns))) {
    throw new KubeStatusError(404, "NotFound", `namespaces "${ns}" not found`, {
      name: ns,
      kind: "namespaces",
    });
  }
  const nsObj = s.bucket(s.findType("namespaces")!).get(objKey(undefined, ns))!;
  if (isObject(nsObj.status) && nsObj.status.phase === "Terminating") {
    throw new KubeStatusError(
      403,
      "Forbidden",
      `${t.resource} "" is forbidden: unable to create new content in namespace ${ns} because it is being terminated`,
    );
  }
}

export function doCreate(
  s: KubeState,
  t: ResourceType,
  body: Json,
  ns: string | undefined,
  dryRun: boolean,
): KubeObject {
  const obj = checkBody(s, t, body, ns);
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
  requireNamespace(s, t, ns);
  const b = s.bucket(t);
  if (b.has(objKey(ns, name))) {
    throw new KubeStatusError(
      409,
      "AlreadyExists",
      `${groupResource(t)} "${name}" already exists`,
      detailsFor(t, name),
    );
  }
  if (t.crd === undefined && t.resource === "customresourcedefinitions") validateCrd(s, obj);
  if (t.crd !== undefined && t.hasStatus) delete obj.status;
  defaults(s, t, obj);
  delete m.resourceVersion;
  delete m.deletionTimestamp;
  delete m.deletionGracePeriodSeconds;
  m.uid = crypto.randomUUID();
  m.creationTimestamp = nowTimestamp();
  m.generation = 1;
  if (dryRun) {
    m.resourceVersion = String(s.rv);
    return obj;
  }
  m.resourceVersion = String(++s.rv);
  b.set(objKey(ns, name), obj);
  if (t.resource === "customresourcedefinitions" && t.group === "apiextensions.k8s.io") {
    s.syncCrd(obj, name);
  }
  s.record(t, "ADDED", obj);
  return clone(obj);
}

export function conflict(t: ResourceType, name: string): KubeStatusError {
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
/**
 * The real API server's rule for a PUT without `metadata.resourceVersion` (an unconditional
 * update): allowed where the type's strategy allows it (built-in types such as ConfigMap, Service,
 * Endpoints, Lease), refused with 422 for custom resources and CustomResourceDefinitions, whose
 * strategies answer `AllowUnconditionalUpdate() == false` (apiserver `registry/generic/registry/
 * store.go`: "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update").
 * Runs after the object was found (a missing one is 404 first).
 */
export function checkUnconditionalUpdate(t: ResourceType, body: Json, name: string): void {
  if (t.crd === undefined && t.resource !== "customresourcedefinitions") return;
  const rv = isObject(body) ? meta(body).resourceVersion : undefined;
  if (rv !== undefined && rv !== null && rv !== "") return;
  const field = "metadata.resourceVersion";
  const msg = "Invalid value: 0x0: must be specified for an update";
  // The real server names the group and the resource (not the kind) in this one message.
  throw new KubeStatusError(
    422,
    "Invalid",
    `${groupResource(t)} "${name}" is invalid: ${field}: ${msg}`,
    {
      name,
      ...(t.group !== "" ? { group: t.group } : {}),
      kind: t.resource,
      causes: [{ reason: "FieldValueInvalid", message: msg, field }],
    },
  );
}

export function doUpdate(
  s: KubeState,
  t: ResourceType,
  body: Json,
  ns: string | undefined,
  name: string,
  sub: string | undefined,
  dryRun: boolean,
): KubeObject {
  const existing = s.lookup(t, ns, name);
  const obj = checkBody(s, t, body, t.namespaced ? ns : undefined);
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
      `Precondition failed: UID in precondition: ${str(m.uid)}, UID in object meta: ${str(em.uid)}`,
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
    defaults(s, t, next, existing);
    if (t.resource === "customresourcedefinitions" && t.crd === undefined) validateCrd(s, next);
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
  nm.resourceVersion = String(++s.rv);
  if (nm.deletionTimestamp !== undefined && finalizers.length === 0) {
    s.bucket(t).delete(objKey(t.namespaced ? ns : undefined, name));
    s.record(t, "DELETED", next);
    afterDelete(s, t, next);
    return clone(next);
  }
  s.bucket(t).set(objKey(t.namespaced ? ns : undefined, name), next);
  if (t.resource === "customresourcedefinitions" && t.crd === undefined && sub !== "status") {
    s.syncCrd(next, name);
  }
  s.record(t, "MODIFIED", next, clone(existing));
  return clone(next);
}

export function afterDelete(s: KubeState, t: ResourceType, obj: KubeObject) {
  const name = str(obj.metadata.name);
  if (t.group === "" && t.resource === "namespaces") {
    for (const other of s.types.values()) {
      if (!other.namespaced) continue;
      const b = s.bucket(other);
      for (const [k, o] of b) {
        if (str(o.metadata.namespace) !== name) continue;
        b.delete(k);
        s.rv++;
        o.metadata.resourceVersion = String(s.rv);
        s.record(other, "DELETED", o);
      }
    }
  }
  if (t.group === "apiextensions.k8s.io" && t.resource === "customresourcedefinitions") {
    const crdTs = [...s.types.values()].filter((x) => x.crd === name);
    const seen = new Set<string>();
    for (const ct of crdTs) {
      if (seen.has(storeKey(ct))) continue;
      seen.add(storeKey(ct));
      const b = s.bucket(ct);
      for (const [k, o] of b) {
        b.delete(k);
        s.rv++;
        o.metadata.resourceVersion = String(s.rv);
        s.record(ct, "DELETED", o);
      }
      s.storage.delete(storeKey(ct));
    }
    s.syncCrd(undefined, name);
  }
}

export function doDelete(
  s: KubeState,
  t: ResourceType,
  ns: string | undefined,
  name: string,
  options: JsonObject,
  dryRun: boolean,
): Json {
  const existing = s.lookup(t, ns, name);
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
      } "${name}": Precondition failed: UID in precondition: ${str(pre.uid)}, UID in object meta: ${
        str(existing.metadata.uid)
      }`,
      detailsFor(t, name),
    );
  }
  const finalizers = Array.isArray(existing.metadata.finalizers)
    ? existing.metadata.finalizers
    : [];
  if (finalizers.length > 0) {
    if (existing.metadata.deletionTimestamp !== undefined) return s.withTypeMeta(t, existing);
    const next = clone(existing);
    next.metadata.deletionTimestamp = nowTimestamp();
    next.metadata.deletionGracePeriodSeconds = 0;
    if (dryRun) return s.withTypeMeta(t, next);
    next.metadata.resourceVersion = String(++s.rv);
    s.bucket(t).set(objKey(t.namespaced ? ns : undefined, name), next);
    s.record(t, "MODIFIED", next, clone(existing));
    return s.withTypeMeta(t, next);
  }
  if (!dryRun) {
    s.bucket(t).delete(objKey(t.namespaced ? ns : undefined, name));
    const gone = clone(existing);
    gone.metadata.resourceVersion = String(++s.rv);
    s.record(t, "DELETED", gone);
    afterDelete(s, t, gone);
  }
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Success",
    details: { ...detailsFor(t, name), uid: existing.metadata.uid ?? "" },
  };
}

export function upsert(s: KubeState, obj: JsonObject): KubeObject {
  const t = s.typeForObject(obj);
  const m = meta(obj);
  const ns = t.namespaced ? (str(m.namespace) || "default") : undefined;
  const name = str(m.name);
  const exists = s.bucket(t).has(objKey(ns, name));
  const body = clone(obj);
  if (exists && isObject(body.metadata)) delete body.metadata.resourceVersion;
  const result = exists
    ? doUpdate(s, t, body, ns, name, undefined, false)
    : doCreate(s, t, body, ns, false);
  if (exists && t.hasStatus && obj.status !== undefined) {
    return s.withTypeMeta(
      t,
      doUpdate(s, t, { ...result, status: obj.status }, ns, name, "status", false),
    );
  }
  return s.withTypeMeta(t, result);
}
