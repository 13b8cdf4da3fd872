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

import type { JsonObject } from "./_patch.ts";
import {
  type FailureSpec,
  type KubeObject,
  KubeStatusError,
  objKey,
  type ResourceType,
  statusResponse,
  storeKey,
} from "./fake_kube_common.ts";
import { type Access, bookmarkAll, endAll, handle } from "./fake_kube_http.ts";
import { doDelete, upsert } from "./fake_kube_lifecycle.ts";
import { KubeState } from "./fake_kube_state.ts";
import type { WatchGate } from "./fake_kube_watch_gate.ts";

export type { Json, JsonObject } from "./_patch.ts";
export {
  type FailureSpec,
  humanDuration,
  type KubeObject,
  KubeStatusError,
  type PrinterColumn,
  type ResourceType,
} from "./fake_kube_common.ts";

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
   * Ends every open watch of `resource` with a watch ERROR event: a Status of `message`, `code`
   * and `reason` (default 500 InternalError, an API server whose storage failed midway). Returns
   * how many watches it ended.
   */
  errorWatches(resource: string, message: string, code?: number, reason?: string): number;
  /** Ends every open watch of `resource` without an event (a proxy cutting long requests). */
  endWatches(resource: string): number;
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

/**
 * Starts a fake Kubernetes API server on 127.0.0.1 (random port) and writes a temporary
 * kubeconfig for it. Namespaces `default`, `kube-system` and `mesh-system` exist from the start.
 * Close it with `close()` (or `await using`).
 */
export async function startFakeKube(opts: FakeKubeOptions = {}): Promise<FakeKube> {
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
  const state = new KubeState(historySize, bookmarkIntervalMs);
  const access: Access = {
    token,
    requireToken: opts.requireToken,
    reviewTokens: new Map(Object.entries(opts.reviewTokens ?? {})),
    failures: [],
  };
  const requests: RecordedRequest[] = [];
  const { server, port } = await serveFakeKube(state, access, requests);
  const tempDir = await Deno.makeTempDir({ prefix: "fake-kube-" });
  const kube = new RunningFakeKube(state, access, requests, server, port, tempDir);
  try {
    await kube.writeKubeconfig(kube.kubeconfigPath);
    for (const ns of opts.namespaces ?? ["default", "kube-system", "mesh-system"]) {
      upsert(state, { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
    }
    for (const o of opts.objects ?? []) upsert(state, o);
  } catch (e) {
    await kube.close();
    throw e;
  }
  return kube;
}

/** Serves `state` on 127.0.0.1 (random port), recording every request. */
async function serveFakeKube(
  state: KubeState,
  access: Access,
  requests: RecordedRequest[],
): Promise<{ server: Deno.HttpServer<Deno.NetAddr>; port: number }> {
  const ready = Promise.withResolvers<number>();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: ({ port }) => ready.resolve(port),
  }, async (req) => {
    const url = new URL(req.url);
    let res: Response;
    try {
      res = await handle(state, access, req, server.addr.port);
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
  return { server, port: await ready.promise };
}

/** A running fake API server: the {@link FakeKube} handle over its state. */
class RunningFakeKube implements FakeKube {
  readonly url: string;
  readonly port: number;
  readonly kubeconfigPath: string;
  readonly token: string;
  readonly authHeaders: Record<string, string>;
  readonly requests: RecordedRequest[];
  readonly reviewTokens: Map<string, string>;
  readonly watchGate: WatchGate;
  readonly #state: KubeState;
  readonly #access: Access;
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #tempDir: string;
  #closed = false;

  constructor(
    state: KubeState,
    access: Access,
    requests: RecordedRequest[],
    server: Deno.HttpServer<Deno.NetAddr>,
    port: number,
    tempDir: string,
  ) {
    this.#state = state;
    this.#access = access;
    this.#server = server;
    this.#tempDir = tempDir;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
    this.kubeconfigPath = `${tempDir}/kubeconfig`;
    this.token = access.token;
    this.authHeaders = { Authorization: `Bearer ${access.token}` };
    this.requests = requests;
    this.reviewTokens = access.reviewTokens;
    this.watchGate = state.watchGate;
  }

  get resourceVersion(): number {
    return this.#state.rv;
  }

  get watchCount(): number {
    return this.#state.watchers.size;
  }

  kubeconfig(o: { namespace?: string } = {}): string {
    const ns = o.namespace ?? "default";
    return [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      "- name: fake",
      "  cluster:",
      `    server: ${this.url}`,
      "    insecure-skip-tls-verify: true",
      "users:",
      "- name: fake-user",
      "  user:",
      `    token: ${this.token}`,
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

  async writeKubeconfig(path: string, o: { namespace?: string } = {}): Promise<void> {
    const tmp = `${path}.tmp-${crypto.randomUUID()}`;
    await Deno.writeTextFile(tmp, this.kubeconfig(o), { mode: 0o600 });
    await Deno.rename(tmp, path);
  }

  #type(what: string, resource: string): ResourceType {
    const t = this.#state.findType(resource);
    if (!t) throw new TypeError(`FakeKube.${what}: unknown resource "${resource}"`);
    return t;
  }

  objects(resource: string, namespace?: string): KubeObject[] {
    const t = this.#type("objects", resource);
    return this.#state.listObjects(t, t.namespaced ? namespace : undefined, () => true);
  }

  get(resource: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const t = this.#type("get", resource);
    const o = this.#state.bucket(t).get(objKey(t.namespaced ? namespace : undefined, name));
    return o ? this.#state.withTypeMeta(t, o) : undefined;
  }

  upsert(obj: JsonObject): KubeObject {
    return upsert(this.#state, obj);
  }

  remove(resource: string, namespace: string | undefined, name: string): boolean {
    const s = this.#state;
    const t = this.#type("remove", resource);
    if (!s.bucket(t).has(objKey(t.namespaced ? namespace : undefined, name))) return false;
    const existing = s.lookup(t, namespace, name);
    if (Array.isArray(existing.metadata.finalizers)) existing.metadata.finalizers = [];
    doDelete(s, t, namespace, name, {}, false);
    return true;
  }

  expireHistory(): void {
    this.#state.history.length = 0;
    this.#state.historyStart = this.#state.rv;
  }

  bookmark(): void {
    bookmarkAll(this.#state);
  }

  errorWatches(resource: string, message: string, code = 500, reason = "InternalError"): number {
    const t = this.#type("errorWatches", resource);
    const status = new KubeStatusError(code, reason, message).toStatus();
    return endAll(this.#state, storeKey(t), status);
  }

  endWatches(resource: string): number {
    return endAll(this.#state, storeKey(this.#type("endWatches", resource)));
  }

  missEvents(resource: string, n = 1): void {
    const t = this.#type("missEvents", resource);
    this.#state.watchGate.drop({ resource: storeKey(t) }, n);
  }

  failNext(spec: FailureSpec): void {
    if (!Number.isInteger(spec.code) || spec.code < 400 || spec.code > 599) {
      throw new TypeError(
        `FakeKube.failNext: "code" must be an HTTP error code, got ${spec.code}`,
      );
    }
    const times = spec.times ?? 1;
    if (!Number.isInteger(times) || times < 1) {
      throw new TypeError(`FakeKube.failNext: "times" must be a positive integer, got ${times}`);
    }
    this.#access.failures.push({ ...spec, left: times });
  }

  resourceTypes(): ResourceType[] {
    return [...this.#state.types.values()].map((t) => ({
      ...t,
      shortNames: [...t.shortNames],
      columns: [...t.columns],
    }));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const w of [...this.#state.watchers]) w.close();
    await this.#server.shutdown();
    await Deno.remove(this.#tempDir, { recursive: true }).catch(() => {});
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
