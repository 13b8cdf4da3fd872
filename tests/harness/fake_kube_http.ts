/**
 * Requests to the fake Kubernetes API server: bodies, list, watch, patch and the verbs on one
 * resource, Table output, injected failures, and {@link handle} that routes a request.
 * @module
 */
import { parse as parseYaml } from "../../lib/deps/yaml.ts";
import {
  isObject,
  type Json,
  type JsonObject,
  jsonPatch,
  mergePatch,
  PatchError,
  strategicMergePatch,
} from "./_patch.ts";
import { decodeKubeProtobuf } from "./_protobuf.ts";
import {
  type Matcher,
  parseFieldSelector,
  parseLabelSelector,
  SelectorError,
} from "./_selectors.ts";
import { admitCreate } from "./fake_kube_admission.ts";
import {
  type FailureSpec,
  groupVersion,
  humanDuration,
  jsonResponse,
  type KubeObject,
  KubeStatusError,
  meta,
  notFound,
  objKey,
  REASONS,
  type ResourceType,
  type Route,
  statusResponse,
  storeKey,
  str,
  TABLE_COLUMNS_PREFIX,
  type Watcher,
} from "./fake_kube_common.ts";
import { checkUnconditionalUpdate, doCreate, doDelete, doUpdate } from "./fake_kube_lifecycle.ts";
import { openapiV2Response, openapiV3 } from "./fake_kube_openapi.ts";
import { discovery, route } from "./fake_kube_routes.ts";
import type { KubeState } from "./fake_kube_state.ts";
import { tokenReviewResponse } from "./fake_kube_tokenreview.ts";
import { tokenRequestResponse } from "./fake_kube_tokenrequest.ts";

/** Who may call, and the failures to inject (see `FakeKube.failNext`). */
export interface Access {
  token: string;
  requireToken?: boolean;
  reviewTokens: Map<string, string>;
  failures: (FailureSpec & { left: number })[];
}

export function tableFor(
  t: ResourceType,
  objs: KubeObject[],
  includeObject: string,
  listRv?: string,
) {
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

export function wantsTable(req: Request): boolean {
  return /as=Table/.test(req.headers.get("accept") ?? "");
}

export async function readBody(req: Request): Promise<{ text: string; contentType: string }> {
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

export function parseJsonBody(text: string): Json {
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

export function parseBody(text: string, contentType: string): Json {
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

export function dryRunOf(q: URLSearchParams): boolean {
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

export async function handlePatch(
  s: KubeState,
  req: Request,
  r: Route,
  q: URLSearchParams,
): Promise<Response> {
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
  const existing = s.bucket(t).get(objKey(t.namespaced ? r.namespace : undefined, name));
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
        s.admission,
        t,
        { ...patch, metadata: { ...meta(patch), name } },
        r.namespace,
        dryRun,
      );
      const created = doCreate(s, t, admitted, r.namespace, dryRun);
      return jsonResponse(s.withTypeMeta(t, created), 201);
    }
  }
  if (!existing) throw notFound(t, name);
  const current = s.withTypeMeta(t, existing);
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
  const updated = doUpdate(s, t, result, r.namespace, name, r.subresource, dryRun);
  return jsonResponse(s.withTypeMeta(t, updated));
}

export function openWatch(
  s: KubeState,
  req: Request,
  r: Route,
  q: URLSearchParams,
  matches: Matcher,
): Response {
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
        s.watchers.delete(watcher);
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
        for (const o of s.listObjects(t, ns, matches)) send("ADDED", o);
      } else if (from < s.historyStart) {
        send(
          "ERROR",
          new KubeStatusError(
            410,
            "Expired",
            `too old resource version: ${from} (${s.historyStart + 1})`,
          )
            .toStatus(),
        );
        done = true;
        controller.close();
        return;
      } else {
        for (const ev of s.history) if (ev.rv > from) s.deliver(watcher, ev, t);
      }
      s.watchers.add(watcher);
      if (timeoutSeconds !== undefined && timeoutSeconds > 0) {
        timer = setTimeout(close, timeoutSeconds * 1000);
      }
      if (watcher.bookmarks) {
        bookmarkTimer = setInterval(() => sendBookmark(watcher), s.bookmarkIntervalMs);
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
        resourceVersion: String(s.rv),
        annotations: { "k8s.io/initial-events-end": "true" },
      },
    });
  }
}

/**
 * Ends every open watch of the store key `key`: with an ERROR event carrying `status`, as the API
 * server does when a watch fails midway (etcd unavailable: 500 InternalError), or without a word
 * (no `status`), as a proxy that cuts long requests. Returns how many.
 */
export function endAll(s: KubeState, key: string, status?: JsonObject): number {
  let n = 0;
  for (const w of [...s.watchers]) {
    if (w.key !== key) continue;
    if (status) w.send("ERROR", status);
    w.close();
    n++;
  }
  return n;
}

export function bookmarkAll(s: KubeState) {
  for (const w of s.watchers) {
    if (!w.bookmarks) continue;
    const t = [...s.types.values()].find((x) => storeKey(x) === w.key);
    if (!t) continue;
    w.send("BOOKMARK", {
      kind: t.kind,
      apiVersion: groupVersion(t),
      metadata: { resourceVersion: String(s.rv) },
    });
  }
}

export function handleList(
  s: KubeState,
  req: Request,
  r: Route,
  q: URLSearchParams,
  matches: Matcher,
): Response {
  const t = r.type;
  const ns = t.namespaced ? r.namespace : undefined;
  let items = s.listObjects(t, ns, matches);
  const limit = Number(q.get("limit") ?? "0");
  const cont = q.get("continue");
  let listRv = String(s.rv);
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

export async function handleResource(
  s: KubeState,
  req: Request,
  r: Route,
  q: URLSearchParams,
): Promise<Response> {
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
      if (watch === "true" || watch === "1") return openWatch(s, req, r, q, matches);
      return handleList(s, req, r, q, matches);
    }
    if (method === "POST") {
      if (t.namespaced && ns === undefined) throw methodNotAllowed();
      const { text, contentType } = await readBody(req);
      const body = await admitCreate(s.admission, t, parseBody(text, contentType), ns, dryRunOf(q));
      const created = doCreate(s, t, body, ns, dryRunOf(q));
      if (wantsTable(req)) return jsonResponse(tableFor(t, [created], "Metadata"), 201);
      return jsonResponse(s.withTypeMeta(t, created), 201);
    }
    if (method === "DELETE") {
      const dryRun = dryRunOf(q);
      const victims = s.listObjects(t, ns, matches);
      for (const v of victims) {
        doDelete(s, t, str(v.metadata.namespace) || undefined, str(v.metadata.name), {}, dryRun);
      }
      return jsonResponse({
        kind: t.listKind,
        apiVersion: groupVersion(t),
        metadata: { resourceVersion: String(s.rv) },
        items: victims,
      });
    }
    throw methodNotAllowed();
  }
  switch (method) {
    case "GET": {
      const obj = s.withTypeMeta(t, s.lookup(t, ns, name));
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
        !s.bucket(t).has(objKey(t.namespaced ? ns : undefined, name)) &&
        r.subresource === undefined &&
        t.group === "" && t.resource === "endpoints"
      ) {
        return jsonResponse(s.withTypeMeta(t, doCreate(s, t, body, ns, dryRun)), 201);
      }
      s.lookup(t, ns, name); // 404 before the precondition, as the real server
      checkUnconditionalUpdate(t, body, name);
      return jsonResponse(s.withTypeMeta(t, doUpdate(s, t, body, ns, name, r.subresource, dryRun)));
    }
    case "PATCH":
      return await handlePatch(s, req, r, q);
    case "DELETE": {
      if (r.subresource !== undefined) throw methodNotAllowed();
      const text = await req.text();
      let options: JsonObject = {};
      if (text.trim() !== "") {
        const parsed = parseJsonBody(text);
        if (isObject(parsed)) options = parsed;
      }
      return jsonResponse(doDelete(s, t, ns, name, options, dryRunOf(q)));
    }
    default:
      throw methodNotAllowed();
  }
}

export function methodNotAllowed(): KubeStatusError {
  return new KubeStatusError(
    405,
    "MethodNotAllowed",
    "the server does not allow this method on the requested resource",
    {},
  );
}

export function injected(
  failures: Access["failures"],
  req: Request,
  path: string,
): Response | undefined {
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

/** Answers one request. */
export async function handle(
  s: KubeState,
  access: Access,
  req: Request,
  port: number,
): Promise<Response> {
  const url = new URL(req.url);
  const path = url.pathname;
  const parts = path.split("/").filter((p) => p !== "").map(decodeURIComponent);
  const auth = req.headers.get("authorization");
  if ((auth !== null || access.requireToken) && auth !== `Bearer ${access.token}`) {
    return statusResponse(new KubeStatusError(401, "Unauthorized", "Unauthorized"));
  }
  const fail = injected(access.failures, req, path);
  if (fail) return fail;
  const review = await tokenReviewResponse(req, path, access.reviewTokens);
  if (review) return review;
  const tokenRequest = await tokenRequestResponse(req, path, {
    serviceAccountExists: (ns, name) =>
      s.bucket(s.findType("serviceaccounts")!).has(objKey(ns, name)),
    reviewTokens: access.reviewTokens,
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
  if (path === "/openapi/v2" && req.method === "GET") return openapiV2Response(s, req);
  if (parts[0] === "openapi" && parts[1] === "v3" && req.method === "GET") {
    const doc = openapiV3(s, parts.slice(2));
    if (doc) return jsonResponse(doc);
  }
  if (parts[0] !== "api" && parts[0] !== "apis") {
    return new Response("404 page not found\n", {
      status: 404,
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  }
  if (req.method === "GET") {
    const d = discovery(s, parts, port);
    if (d) return d;
  }
  if ((parts[0] === "api" && parts.length < 3) || (parts[0] === "apis" && parts.length < 4)) {
    return new Response("404 page not found\n", {
      status: 404,
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  }
  const r = route(s, parts);
  if (r instanceof Response) return r;
  return await handleResource(s, req, r, url.searchParams);
}
