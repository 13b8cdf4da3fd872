/**
 * sidecar-injector's server: the mutating admission webhook `POST /inject` over HTTPS (hono app
 * on node:https, see {@link serve}), plus
 * `/metrics` and `/ready`. The injection configuration, the mesh configuration and the TLS
 * key pair are watched and reloaded without a restart; at start (and when the CA file changes)
 * the CA certificate is written into the caBundle of the webhook's entry in its
 * MutatingWebhookConfiguration; a health file is refreshed when asked.
 *
 * ```ts ignore
 * const config = toConfig(flags, { KUBERNETES_SERVICE_HOST: env.KUBERNETES_SERVICE_HOST });
 * const handle = await start(config);
 * await handle.ready;            // caBundle written (or the attempt logged)
 * await handle.shutdown();
 * ```
 * See docs/sidecar-injector.md.
 * @module
 */

import { Buffer } from "node:buffer";
import https from "node:https";
import { basename, dirname, resolve } from "node:path";
import { Hono } from "../../lib/deps/hono.ts";
import {
  builtinGrpcAgentTemplate,
  builtinTemplate,
  defaultTemplateParams,
  GRPC_AGENT_TEMPLATE,
  Injector,
} from "../../lib/inject/mod.ts";
import { getLogger, type Logger } from "../../lib/log/mod.ts";
import {
  defaultMeshConfig,
  type MeshConfig,
  parseInjectConfig,
  parseMeshConfig,
} from "../../lib/model/meshconfig.ts";
import { startProbeUpdater } from "../../lib/probe/mod.ts";
import type { KubeConfig } from "../../lib/kube/mod.ts";
import type { InjectorConfig } from "./config.ts";
import { createMetrics, type InjectorMetrics } from "./metrics.ts";
import { answerReview, MAX_BODY_BYTES } from "./webhook.ts";

export {
  ConfigError,
  type InjectorConfig,
  type InjectorEnv,
  type InjectorFlags,
  toConfig,
} from "./config.ts";
export { answerReview, MAX_BODY_BYTES, type Outcome, type WebhookAnswer } from "./webhook.ts";

/** What {@link start} needs besides the config. */
export interface InjectorDeps {
  /** Logger (default scope `default`). */
  logger?: Logger;
  /** A loaded kubeconfig (default: loaded from `config.orchconfig`, or in-cluster). */
  kubeConfig?: KubeConfig;
  /** Quiet time after a file change before reloading, ms (default 100). */
  debounceMs?: number;
  /** Delay between attempts to write the caBundle after a failure, ms (default 5000). */
  caBundleRetryMs?: number;
}

/** A running sidecar-injector. */
export interface InjectorHandle {
  /** `https` is the bound `host:port`. */
  readonly addresses: { https: string };
  /** Resolves after the first attempt to write the caBundle. */
  readonly ready: Promise<void>;
  /** Number of completed reloads (configuration or certificates), for tests and logs. */
  readonly reloads: number;
  /** Stops watching and serving; idempotent. */
  shutdown(): Promise<void>;
}

async function readFile(path: string, flag: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    const reason = err instanceof Deno.errors.NotFound
      ? "no such file"
      : String((err as Error).message).replace(/ \(os error \d+\).*$/s, "");
    throw new Error(`Cannot read ${flag} ${JSON.stringify(path)}: ${reason}`);
  }
}

interface KeyPair {
  cert: string;
  key: string;
}

async function loadKeyPair(config: InjectorConfig): Promise<KeyPair> {
  return {
    cert: await readFile(config.tlsCertFile, "--tlsCertFile"),
    key: await readFile(config.tlsKeyFile, "--tlsKeyFile"),
  };
}

/**
 * Loads the injection configuration (required) and the mesh configuration (the default one
 * when the file does not exist). An empty template means the built-in one.
 */
async function loadInjector(config: InjectorConfig, log: Logger): Promise<Injector> {
  const inject = parseInjectConfig(
    await readFile(config.injectConfigFile, "--injectConfig"),
    config.injectConfigFile,
  );
  let text: string | undefined;
  try {
    text = await Deno.readTextFile(config.meshConfigFile);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) {
      await readFile(config.meshConfigFile, "--meshConfig");
    }
  }
  let mesh: MeshConfig;
  if (text === undefined) {
    log.warn("mesh configuration file not found, using the default mesh configuration", {
      path: config.meshConfigFile,
    });
    mesh = defaultMeshConfig();
  } else mesh = parseMeshConfig(text, config.meshConfigFile);
  try {
    return new Injector({
      policy: inject.policy,
      template: inject.template || builtinTemplate(defaultTemplateParams()),
      meshConfig: mesh,
      templates: { [GRPC_AGENT_TEMPLATE]: builtinGrpcAgentTemplate(defaultTemplateParams()) },
    });
  } catch (err) {
    throw new Error(`Invalid template in ${config.injectConfigFile}: ${(err as Error).message}`);
  }
}

function app(current: () => Injector, metrics: InjectorMetrics, log: Logger): Hono {
  const app = new Hono({ strict: false });
  app.post("/inject", async (c) => {
    const t0 = performance.now();
    const length = Number(c.req.header("content-length") ?? 0);
    if (length > MAX_BODY_BYTES) {
      metrics.observe("error", (performance.now() - t0) / 1000);
      return c.text(`request body larger than ${MAX_BODY_BYTES} bytes\n`, 413);
    }
    let body: string;
    try {
      body = await c.req.text();
    } catch {
      metrics.observe("error", (performance.now() - t0) / 1000);
      return c.text("cannot read the request body\n", 400);
    }
    if (body.length > MAX_BODY_BYTES) {
      metrics.observe("error", (performance.now() - t0) / 1000);
      return c.text(`request body larger than ${MAX_BODY_BYTES} bytes\n`, 413);
    }
    const a = answerReview(body, c.req.header("content-type"), current());
    metrics.observe(a.outcome, (performance.now() - t0) / 1000);
    if (a.outcome === "error") log.warn("admission review refused", { reason: a.reason });
    else log.debug("admission review answered", { outcome: a.outcome, reason: a.reason });
    return c.body(a.body, a.status as 200, { "content-type": a.contentType });
  });
  app.get(
    "/metrics",
    async (c) => c.body(await metrics.text(), 200, { "content-type": metrics.contentType }),
  );
  app.get("/ready", (c) => c.text("ok\n"));
  app.notFound((c) => c.text(`404 page not found: ${c.req.method} ${c.req.path}\n`, 404));
  return app;
}

/**
 * Serves a fetch handler (the hono app) on a node:https server. Not Deno.serve: it leaves Nagle's
 * algorithm on, so a response written in two parts (headers, then a body of a few KB, as a patch
 * is) waits for the client's delayed ACK, ~40 ms on Linux; node:https sockets get TCP_NODELAY.
 * It also swaps the key pair in place (`setSecureContext`), so a reload never closes the port.
 */
async function serve(
  config: InjectorConfig,
  pair: KeyPair,
  fetch: (req: Request) => Response | Promise<Response>,
  log: Logger,
): Promise<https.Server> {
  const server = https.createServer({ cert: pair.cert, key: pair.key }, (req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      // past the limit the body is dropped; the handler then answers 413 from content-length
      if (size <= MAX_BODY_BYTES + 1) chunks.push(c);
    });
    req.on("error", () => res.destroy());
    req.on("end", async () => {
      try {
        const headers = new Headers();
        for (const [k, v] of Object.entries(req.headers)) {
          if (typeof v === "string") headers.set(k, v);
          else if (Array.isArray(v)) headers.set(k, v.join(", "));
        }
        if (size > MAX_BODY_BYTES) headers.set("content-length", String(size));
        const method = req.method ?? "GET";
        const body = method === "GET" || method === "HEAD" ? undefined : Buffer.concat(chunks);
        const response = await fetch(
          new Request(`https://${req.headers.host ?? "localhost"}${req.url ?? "/"}`, {
            method,
            headers,
            body: size > MAX_BODY_BYTES ? undefined : body,
          }),
        );
        const out = Buffer.from(await response.arrayBuffer());
        const h: Record<string, string> = {};
        response.headers.forEach((v, k) => (h[k] = v));
        h["content-length"] = String(out.length);
        res.writeHead(response.status, h);
        res.end(out);
      } catch (err) {
        log.error("request failed", { error: (err as Error).message });
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end("internal error\n");
      }
    });
  });
  server.on("secureConnection", (socket) => socket.setNoDelay(true));
  server.on("tlsClientError", () => {}); // a client that fails the handshake is its problem
  await new Promise<void>((resolve, reject) => {
    server.once(
      "error",
      (err: Error) => reject(new Error(`Cannot listen on port ${config.port}: ${err.message}`)),
    );
    server.listen(config.port, config.hostname, () => resolve());
  });
  return server;
}

/**
 * Starts the server: reads the key pair and the configurations (a problem is an Error: the
 * program logs it and exits 1), listens, writes the caBundle, watches the files.
 */
export async function start(
  config: InjectorConfig,
  deps: InjectorDeps = {},
): Promise<InjectorHandle> {
  const log = deps.logger ?? getLogger("default");
  const injector = await loadInjector(config, log);
  const pair = await loadKeyPair(config);
  const caPem = await readFile(config.caCertFile, "--caCertFile");
  const kc = deps.kubeConfig ?? await (await import("../../lib/kube/mod.ts")).loadKubeConfig(
    config.orchconfig,
  );
  const metrics = await createMetrics();
  let current = injector;
  const server = await serve(config, pair, app(() => current, metrics, log).fetch, log)
    .catch((e) => {
      metrics.close();
      throw e;
    });
  const port = (server.address() as { port: number }).port;
  log.info("sidecar-injector listening", {
    port,
    webhook: `${config.webhookConfigName}/${config.webhookName}`,
  });
  const state = new InjectorState(config, deps, log, kc, server, { injector, pair, caPem });
  state.onInjector = (i) => current = i;
  const ready = state.writeCaBundle();
  const probe = config.healthCheckFile
    ? startProbeUpdater({
      path: config.healthCheckFile,
      intervalMs: config.healthCheckIntervalMs,
      available: () => !state.stopped,
    })
    : undefined;
  await state.watch();
  let shutdownPromise: Promise<void> | undefined;
  return {
    addresses: { https: `${config.hostname}:${port}` },
    ready,
    get reloads() {
      return state.reloads;
    },
    shutdown() {
      shutdownPromise ??= (async () => {
        await state.stop();
        await ready;
        await probe?.stop();
        const closed = new Promise<void>((r) => server.close(() => r()));
        server.closeAllConnections();
        await closed;
        metrics.close();
      })();
      return shutdownPromise;
    },
  };
}

/**
 * What a running injector reloads: the injection configuration, the TLS key pair (swapped into
 * the server in place) and the CA certificate (written to the webhook's caBundle), with the
 * watches of their files.
 */
class InjectorState {
  injector: Injector;
  pair: KeyPair;
  caPem: string;
  stopped = false;
  reloads = 0;
  /** Called with each newly loaded injector. */
  onInjector: (i: Injector) => void = () => {};
  retryTimer: number | undefined;
  debounce: number | undefined;
  reloading: Promise<void> = Promise.resolve();
  lastTexts = "";
  watchers: Deno.FsWatcher[] = [];
  loops: Promise<void>[] = [];

  constructor(
    readonly config: InjectorConfig,
    readonly deps: InjectorDeps,
    readonly log: Logger,
    readonly kc: KubeConfig,
    readonly server: https.Server,
    first: { injector: Injector; pair: KeyPair; caPem: string },
  ) {
    this.injector = first.injector;
    this.pair = first.pair;
    this.caPem = first.caPem;
  }

  /** Writes the CA certificate into the webhook's caBundle; retries until it succeeds. */
  async writeCaBundle(): Promise<void> {
    const { config, log } = this;
    clearTimeout(this.retryTimer);
    const { patchWebhookCaBundle } = await import("../../lib/inject/orch.ts");
    try {
      const changed = await patchWebhookCaBundle(
        this.kc,
        config.webhookConfigName,
        config.webhookName,
        this.caPem,
      );
      log.info(changed ? "caBundle written" : "caBundle already up to date", {
        configuration: config.webhookConfigName,
        webhook: config.webhookName,
      });
    } catch (err) {
      log.error("cannot write the caBundle of the webhook; retrying", {
        error: (err as Error).message,
      });
      if (!this.stopped) {
        this.retryTimer = setTimeout(
          () => void this.writeCaBundle(),
          this.deps.caBundleRetryMs ?? 5000,
        );
      }
    }
  }

  /** The texts of the two configuration files (empty when unreadable). */
  configTexts(): Promise<string> {
    return Promise.all(
      [this.config.injectConfigFile, this.config.meshConfigFile].map((f) =>
        Deno.readTextFile(f).catch(() => "")
      ),
    ).then((t) => t.join("\0"));
  }

  /** Reloads what changed; a problem keeps the previous version in force. */
  async reload() {
    await this.reloadConfigs();
    await this.reloadKeyPair();
    await this.reloadCa();
    this.reloads++;
  }

  async reloadConfigs() {
    try {
      const texts = await this.configTexts();
      if (texts !== this.lastTexts) {
        this.injector = await loadInjector(this.config, this.log);
        this.onInjector(this.injector);
        this.lastTexts = texts;
        this.log.info("injection configuration loaded", { version: this.injector.version });
      }
    } catch (err) {
      this.log.error("cannot reload the injection configuration; keeping the previous one", {
        error: (err as Error).message,
      });
    }
  }

  async reloadKeyPair() {
    try {
      const next = await loadKeyPair(this.config);
      if (next.cert !== this.pair.cert || next.key !== this.pair.key) {
        // new connections get the new pair; a bad pair throws and the old one stays
        this.server.setSecureContext({ cert: next.cert, key: next.key });
        this.pair = next;
        this.log.info("TLS key pair reloaded");
      }
    } catch (err) {
      this.log.error("cannot reload the TLS key pair; keeping the previous one", {
        error: (err as Error).message,
      });
    }
  }

  async reloadCa() {
    try {
      const ca = await readFile(this.config.caCertFile, "--caCertFile");
      if (ca !== this.caPem) {
        this.caPem = ca;
        await this.writeCaBundle();
      }
    } catch (err) {
      this.log.error("cannot reload the CA certificate", { error: (err as Error).message });
    }
  }

  /** Watches the directories of the five files; a change there reloads, debounced. */
  async watch() {
    const { config, log } = this;
    this.lastTexts = await this.configTexts();
    const files = [
      config.injectConfigFile,
      config.meshConfigFile,
      config.tlsCertFile,
      config.tlsKeyFile,
      config.caCertFile,
    ].map((f) => resolve(f));
    const dirs = [...new Set(files.map((f) => dirname(f)))];
    const relevant = (p: string) => files.includes(resolve(p)) || basename(p).startsWith("..");
    for (const d of dirs) {
      try {
        this.watchers.push(Deno.watchFs(d, { recursive: false }));
      } catch (err) {
        log.warn("cannot watch directory; changes there will not be reloaded", {
          dir: d,
          error: (err as Error).message,
        });
      }
    }
    this.loops = this.watchers.map(async (w) => {
      try {
        for await (const ev of w) {
          // our files, or the `..data` link a mounted config map or secret is switched through
          if (ev.kind !== "access" && ev.paths.some(relevant)) this.schedule();
        }
      } catch {
        // closed
      }
    });
  }

  schedule() {
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      this.reloading = this.reloading.then(() => this.stopped ? undefined : this.reload());
    }, this.deps.debounceMs ?? 100);
  }

  /** Stops the watches, the retries and the reloads (waiting for the one under way). */
  async stop() {
    this.stopped = true;
    clearTimeout(this.debounce);
    clearTimeout(this.retryTimer);
    for (const w of this.watchers) w.close();
    await Promise.all(this.loops);
    await this.reloading;
  }
}
