/**
 * Mutating admission for the fake Kubernetes API server: on create, every matching webhook of
 * every MutatingWebhookConfiguration (in name order) is called as the real API server calls it
 * — an `admission.k8s.io/v1` AdmissionReview (v1beta1 when that is all the webhook accepts)
 * POSTed over HTTPS to `clientConfig.url`, trusting only `clientConfig.caBundle` — and its JSON
 * patch is applied. `rules`, `namespaceSelector`, `objectSelector`, `failurePolicy` (default
 * `Fail`) and `timeoutSeconds` are honoured; a denial or a failed call under `Fail` rejects the
 * create with the real server's messages. `clientConfig.service` cannot be reached from the
 * fake: such a webhook counts as a failed call.
 * @module
 */

import { isObject, type Json, type JsonObject, jsonPatch } from "./_patch.ts";

/** What admission needs from the fake's storage. */
export interface AdmissionView {
  /** The stored MutatingWebhookConfigurations. */
  configurations(): JsonObject[];
  /** A stored namespace. */
  namespace(name: string): JsonObject | undefined;
  /** Makes the Status error the fake answers with. */
  error(code: number, reason: string, message: string): Error;
}

/** The type of the object being created. */
export interface AdmittedType {
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
}

function strings(v: Json | undefined): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
}

function labelsOf(obj: Json | undefined): Record<string, string> {
  const meta = isObject(obj) && isObject(obj.metadata) ? obj.metadata : {};
  const labels = isObject(meta.labels) ? meta.labels : {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels)) if (typeof v === "string") out[k] = v;
  return out;
}

/** Whether a LabelSelector (matchLabels, matchExpressions) matches; absent or empty matches all. */
export function selectorMatches(
  selector: Json | undefined,
  labels: Record<string, string>,
): boolean {
  if (!isObject(selector)) return true;
  const ml = isObject(selector.matchLabels) ? selector.matchLabels : {};
  for (const [k, v] of Object.entries(ml)) if (labels[k] !== v) return false;
  for (const e of Array.isArray(selector.matchExpressions) ? selector.matchExpressions : []) {
    if (!isObject(e) || typeof e.key !== "string") return false;
    const has = Object.hasOwn(labels, e.key);
    const values = strings(e.values);
    switch (e.operator) {
      case "In":
        if (!has || !values.includes(labels[e.key])) return false;
        break;
      case "NotIn":
        if (has && values.includes(labels[e.key])) return false;
        break;
      case "Exists":
        if (!has) return false;
        break;
      case "DoesNotExist":
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

function ruleMatches(rule: Json, t: AdmittedType): boolean {
  if (!isObject(rule)) return false;
  const has = (list: Json | undefined, v: string) => {
    const xs = strings(list);
    return xs.includes("*") || xs.includes(v);
  };
  const scope = typeof rule.scope === "string" ? rule.scope : "*";
  const scopeOk = scope === "*" || (scope === "Namespaced") === t.namespaced;
  return has(rule.operations, "CREATE") && has(rule.apiGroups, t.group) &&
    has(rule.apiVersions, t.version) && has(rule.resources, t.resource) && scopeOk;
}

function pemOf(caBundle: Json | undefined): string[] {
  if (typeof caBundle !== "string" || caBundle === "") return [];
  try {
    return [atob(caBundle)];
  } catch {
    return [];
  }
}

async function call(hook: JsonObject, review: JsonObject): Promise<JsonObject> {
  const cc = isObject(hook.clientConfig) ? hook.clientConfig : {};
  if (typeof cc.url !== "string") {
    throw new Error("the fake API server reaches webhooks by clientConfig.url only");
  }
  if (!cc.url.startsWith("https://")) throw new Error(`webhook URL must be https: ${cc.url}`);
  const caCerts = pemOf(cc.caBundle);
  const client = Deno.createHttpClient(caCerts.length ? { caCerts } : {});
  const timeout = typeof hook.timeoutSeconds === "number" ? hook.timeoutSeconds : 10;
  try {
    const res = await fetch(cc.url, {
      method: "POST",
      client,
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(review),
      signal: AbortSignal.timeout(timeout * 1000),
    });
    const text = await res.text();
    if (res.status !== 200) {
      throw new Error(`the server responded with HTTP ${res.status}: ${text.trim()}`);
    }
    const body = JSON.parse(text);
    if (!isObject(body) || !isObject(body.response)) {
      throw new Error("response has no AdmissionReview.response");
    }
    return body.response;
  } finally {
    client.close();
  }
}

/**
 * Runs mutating admission for a create of `obj` (type `t`, namespace `ns`) and returns the
 * object to store. Throws `view.error(...)` when a webhook denies it, or when a call fails under
 * `failurePolicy: Fail`.
 */
export async function admitCreate(
  view: AdmissionView,
  t: AdmittedType,
  obj: Json,
  ns: string | undefined,
  dryRun: boolean,
): Promise<Json> {
  const configs = view.configurations()
    .sort((a, b) =>
      String((a.metadata as JsonObject).name).localeCompare(String((b.metadata as JsonObject).name))
    );
  let current = obj;
  for (const cfg of configs) {
    for (const hook of Array.isArray(cfg.webhooks) ? cfg.webhooks : []) {
      if (!isObject(hook)) continue;
      const rules = Array.isArray(hook.rules) ? hook.rules : [];
      if (!rules.some((r) => ruleMatches(r, t))) continue;
      const meta = isObject(current) && isObject(current.metadata) ? current.metadata : {};
      const objNs = t.namespaced
        ? (typeof meta.namespace === "string" && meta.namespace) || ns || ""
        : "";
      if (
        t.namespaced && !selectorMatches(hook.namespaceSelector, labelsOf(view.namespace(objNs)))
      ) continue;
      if (!selectorMatches(hook.objectSelector, labelsOf(current))) continue;
      const name = String(hook.name);
      const versions = strings(hook.admissionReviewVersions);
      const apiVersion = versions.length === 0 || versions.includes("v1")
        ? "admission.k8s.io/v1"
        : "admission.k8s.io/v1beta1";
      const uid = crypto.randomUUID();
      const gvk = { group: t.group, version: t.version, kind: t.kind };
      const gvr = { group: t.group, version: t.version, resource: t.resource };
      const review: JsonObject = {
        apiVersion,
        kind: "AdmissionReview",
        request: {
          uid,
          kind: gvk,
          resource: gvr,
          requestKind: gvk,
          requestResource: gvr,
          name: typeof meta.name === "string" ? meta.name : "",
          namespace: objNs,
          operation: "CREATE",
          userInfo: { username: "fake-kube-user", groups: ["system:authenticated"] },
          object: current,
          oldObject: null,
          dryRun,
          options: { apiVersion: "meta.k8s.io/v1", kind: "CreateOptions" },
        },
      };
      const ignore = hook.failurePolicy === "Ignore";
      let response: JsonObject;
      try {
        response = await call(hook, review);
        if (response.uid !== uid) {
          throw new Error(`expected response.uid="${uid}", got "${response.uid}"`);
        }
      } catch (err) {
        if (ignore) continue;
        throw view.error(
          500,
          "InternalError",
          `Internal error occurred: failed calling webhook "${name}": failed to call webhook: ${
            (err as Error).message
          }`,
        );
      }
      if (response.allowed !== true) {
        const result = isObject(response.result) ? response.result : {};
        const code = typeof result.code === "number" && result.code >= 400 ? result.code : 400;
        const message = typeof result.message === "string" ? result.message : "";
        throw view.error(
          code,
          "BadRequest",
          `admission webhook "${name}" denied the request: ${message}`,
        );
      }
      if (typeof response.patch === "string" && response.patch !== "") {
        try {
          const ops = JSON.parse(
            new TextDecoder().decode(Uint8Array.from(atob(response.patch), (c) => c.charCodeAt(0))),
          );
          current = jsonPatch(current, ops);
        } catch (err) {
          if (ignore) continue;
          throw view.error(
            500,
            "InternalError",
            `Internal error occurred: webhook "${name}" returned a patch that cannot be applied: ${
              (err as Error).message
            }`,
          );
        }
      }
    }
  }
  return current;
}
