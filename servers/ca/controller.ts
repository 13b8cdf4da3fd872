/**
 * The service-account → Secret controller (reference §6.3). For every ServiceAccount of the
 * listened namespace(s) it keeps Secret `mesh.<sa>` (type `mesh.io/key-and-cert`; keys
 * `cert-chain.pem`, `key.pem`, `root-cert.pem`) holding a key and a certificate for
 * `spiffe://cluster.local/ns/<ns>/sa/<sa>`: created when the account appears, deleted with it,
 * recreated when deleted, and rotated when less than the grace period of its life is left or
 * when its root differs from the CA's.
 * @module
 */

import type * as k8s from "../../lib/deps/kube.ts";
import {
  createInformer,
  describeApiError,
  type Informer,
  type InformerOptions,
  type ListPage,
} from "../../lib/kube/informer.ts";
import { apiErrorStatus } from "../../lib/kube/mod.ts";
import type { Logger } from "../../lib/log/mod.ts";
import {
  type CertAuthority,
  type DnsNameRules,
  dnsNamesFor,
  parseCertificates,
  spiffeId,
} from "../../lib/pki/mod.ts";
import type { OrchApis } from "./orch.ts";

/** Secret type, keys, name prefix and annotation of workload Secrets. */
export const WORKLOAD_SECRET = {
  type: "mesh.io/key-and-cert",
  prefix: "mesh.",
  annotation: "mesh.io/service-account.name",
  certChain: "cert-chain.pem",
  key: "key.pem",
  root: "root-cert.pem",
} as const;

/** Options of {@link startController}. */
export interface ControllerOptions {
  apis: OrchApis;
  /** "" = all namespaces. */
  namespace: string;
  ca: () => CertAuthority;
  workloadTtlMs: number;
  graceRatio: number;
  minGraceMs: number;
  keySize: number;
  dns: DnsNameRules;
  log: Logger;
  /** Relist period and rotation check period (default 60 s). */
  resyncMs?: number;
  /** Pause between the 3 creation attempts (default 1 s). */
  retryMs?: number;
  onSecret?: (action: string) => void;
  now?: () => number;
}

/** A running controller. */
export interface Controller {
  /** Resolves once both collections were listed and the first reconcile ran. */
  readonly ready: Promise<void>;
  /** Reconciles every account now (after a root change). */
  reconcileAll(): void;
  stop(): Promise<void>;
}

type Obj = {
  metadata?: { name?: string; namespace?: string };
  type?: string;
  data?: Record<string, string>;
};

const key = (ns: string, name: string) => `${ns}/${name}`;
const secretName = (sa: string) => WORKLOAD_SECRET.prefix + sa;

/** Starts the controller. */
export function startController(o: ControllerOptions): Controller {
  return new SecretController(o).start();
}

/**
 * The controller's state: the two informers' caches, the reconcile queue (drained by one worker
 * at a time) and the Secrets deleted while their account lives (recreated, not created).
 */
class SecretController {
  readonly sas = new Map<string, Obj>();
  readonly secrets = new Map<string, k8s.V1Secret>();
  readonly queue = new Set<string>();
  readonly recreate = new Set<string>();
  working: Promise<void> | undefined;
  stopped = false;
  secretsListed = false;
  readonly now: () => number;
  readonly resyncMs: number;

  constructor(readonly o: ControllerOptions) {
    this.now = o.now ?? Date.now;
    this.resyncMs = o.resyncMs ?? 60_000;
  }

  /** Lists and watches both collections, reconciles every account, and keeps doing so. */
  start(): Controller {
    const saInformer = this.serviceAccountInformer();
    const secretInformer = this.secretInformer();
    const timer = setInterval(() => this.enqueueAll(), this.resyncMs);
    const ready = (async () => {
      await secretInformer.start();
      await saInformer.start();
      this.enqueueAll();
      await this.working;
    })();
    ready.catch(() => {});
    return {
      ready,
      reconcileAll: () => this.enqueueAll(),
      stop: async () => {
        this.stopped = true;
        clearInterval(timer);
        await Promise.all([saInformer.stop(), secretInformer.stop()]);
        await this.working;
      },
    };
  }

  /** A new workload Secret for `ns/sa`: a fresh key and certificate from the CA. */
  async build(ns: string, sa: string): Promise<k8s.V1Secret> {
    const o = this.o;
    const ca = o.ca();
    const issued = await ca.issueWithKey({
      uris: [spiffeId(ns, sa)],
      dns: dnsNamesFor(ns, sa, o.dns),
      ttlMs: o.workloadTtlMs,
    }, { kind: "rsa", bits: o.keySize });
    // Leaf, then the CA's chain without the root.
    const chain = issued.chain.slice(0, -1).join("");
    return {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: secretName(sa),
        namespace: ns,
        annotations: { [WORKLOAD_SECRET.annotation]: sa },
      },
      type: WORKLOAD_SECRET.type,
      data: {
        [WORKLOAD_SECRET.certChain]: btoa(chain),
        [WORKLOAD_SECRET.key]: btoa(issued.keyPem),
        [WORKLOAD_SECRET.root]: btoa(ca.rootPem),
      },
    };
  }

  /** Why `s` must be rotated, or "" when it is fine. */
  rotationReason(s: k8s.V1Secret): string {
    const d = s.data ?? {};
    let root = "";
    let leaf;
    try {
      root = atob(d[WORKLOAD_SECRET.root] ?? "");
      leaf = parseCertificates(atob(d[WORKLOAD_SECRET.certChain] ?? ""))[0];
    } catch {
      return "unreadable certificate";
    }
    if (!leaf) return "no certificate";
    if (root.trim() !== this.o.ca().rootPem.trim()) return "root certificate changed";
    const nb = leaf.notBefore.getTime();
    const na = leaf.notAfter.getTime();
    const grace = Math.max(this.o.graceRatio * (na - nb), this.o.minGraceMs);
    if (na - this.now() < grace) return "within the grace period";
    return "";
  }

  /** Brings the Secret of account `ns/name` in line: delete, create or rotate it. */
  async reconcile(k: string) {
    const [ns, name] = k.split("/");
    const sName = secretName(name);
    const existing = this.secrets.get(key(ns, sName));
    if (!this.sas.has(k)) {
      if (existing) await this.remove(ns, sName);
      return;
    }
    if (!existing) return await this.create(ns, name, sName);
    if (existing.type !== WORKLOAD_SECRET.type) return;
    const why = this.rotationReason(existing);
    if (why) await this.rotate(ns, name, existing, why);
  }

  /** Deletes the Secret of an account that is gone. */
  async remove(ns: string, sName: string) {
    const o = this.o;
    try {
      await o.apis.core.deleteNamespacedSecret({ name: sName, namespace: ns });
      o.log.info(`controller: deleted Secret ${ns}/${sName} (service account removed)`);
      o.onSecret?.("deleted");
    } catch (e) {
      if (apiErrorStatus(e)?.code !== 404) {
        o.log.error(`controller: cannot delete Secret ${ns}/${sName}: ${describeApiError(e)}`);
      }
    }
    this.secrets.delete(key(ns, sName));
  }

  /** Creates the Secret of account `ns/name`, in up to 3 attempts. */
  async create(ns: string, name: string, sName: string) {
    const o = this.o;
    for (let attempt = 1; attempt <= 3 && !this.stopped; attempt++) {
      try {
        const body = await this.build(ns, name);
        const created = await o.apis.core.createNamespacedSecret({ namespace: ns, body });
        this.secrets.set(key(ns, sName), created);
        const action = this.recreate.delete(key(ns, sName)) ? "recreated" : "created";
        o.log.info(`controller: ${action} Secret ${ns}/${sName}`);
        o.onSecret?.(action);
        return;
      } catch (e) {
        const st = apiErrorStatus(e);
        if (st?.code === 409) return; // created meanwhile: the watch brings it
        o.log.warn(
          `controller: cannot create Secret ${ns}/${sName} (attempt ${attempt} of 3): ${
            describeApiError(e)
          }`,
        );
        await new Promise((r) => setTimeout(r, o.retryMs ?? 1000));
      }
    }
  }

  /** Replaces `existing` with a new key and certificate (a write conditional on its version). */
  async rotate(ns: string, name: string, existing: k8s.V1Secret, why: string) {
    const o = this.o;
    const sName = secretName(name);
    try {
      const body = await this.build(ns, name);
      body.metadata!.resourceVersion = existing.metadata?.resourceVersion;
      const updated = await o.apis.core.replaceNamespacedSecret({
        name: sName,
        namespace: ns,
        body,
      });
      this.secrets.set(key(ns, sName), updated);
      o.log.info(`controller: rotated Secret ${ns}/${sName} (${why})`);
      o.onSecret?.("rotated");
    } catch (e) {
      if (apiErrorStatus(e)?.code === 409) {
        // Another replica rotated it first (the write is conditional): the watch brings it.
        o.log.debug(`controller: Secret ${ns}/${sName} was changed meanwhile; not rotated`);
        return;
      }
      o.log.warn(`controller: cannot rotate Secret ${ns}/${sName}: ${describeApiError(e)}`);
    }
  }

  /** Starts the worker unless one runs: it drains the queue, one account at a time. */
  kick(): Promise<void> | undefined {
    if (this.working || this.stopped) return this.working;
    this.working = (async () => {
      while (this.queue.size && !this.stopped) {
        const [k] = this.queue;
        this.queue.delete(k);
        try {
          await this.reconcile(k);
        } catch (e) {
          this.o.log.error(`controller: ${k}: ${(e as Error).message}`);
        }
      }
    })().finally(() => {
      this.working = undefined;
      if (this.queue.size && !this.stopped) this.kick();
    });
    return this.working;
  }

  enqueue(k: string) {
    this.queue.add(k);
    this.kick();
  }

  /** Queues every known account and every account a workload Secret names. */
  enqueueAll() {
    for (const k of this.sas.keys()) this.queue.add(k);
    for (const s of this.secrets.values()) {
      const sa = s.metadata?.annotations?.[WORKLOAD_SECRET.annotation];
      if (sa && s.type === WORKLOAD_SECRET.type) this.queue.add(key(s.metadata!.namespace!, sa));
    }
    this.kick();
  }

  /**
   * An informer of the core/v1 collection `resource` (`secrets`) in the listened namespace, or in
   * every namespace when there is none; `list` lists one page of 500 in `ns` (or everywhere).
   */
  coreInformer(
    resource: string,
    list: (ns: string, page: { limit: number; _continue?: string }) => Promise<ListPage>,
    handlers: Pick<InformerOptions, "onList" | "onEvent">,
  ): Informer {
    const ns = this.o.namespace;
    return createInformer({
      name: ns ? `${resource} in namespace ${ns}` : resource,
      kubeConfig: this.o.apis.kubeConfig,
      watchPath: ns ? `/api/v1/namespaces/${ns}/${resource}` : `/api/v1/${resource}`,
      list: (cont) => list(ns, { limit: 500, _continue: cont }),
      resyncMs: this.resyncMs,
      ...handlers,
    });
  }

  /** The ServiceAccount informer: its list replaces the cache, each event queues the account. */
  serviceAccountInformer(): Informer {
    const core = this.o.apis.core;
    return this.coreInformer(
      "serviceaccounts",
      (ns, page) =>
        ns
          ? core.listNamespacedServiceAccount({ namespace: ns, ...page })
          : core.listServiceAccountForAllNamespaces(page),
      {
        onList: (items) => {
          this.sas.clear();
          for (const i of items as Obj[]) {
            this.sas.set(key(i.metadata!.namespace!, i.metadata!.name!), i);
          }
          if (this.secretsListed) this.enqueueAll();
        },
        onEvent: (type, obj) => {
          const i = obj as Obj;
          const k = key(i.metadata!.namespace!, i.metadata!.name!);
          if (type === "DELETED") this.sas.delete(k);
          else this.sas.set(k, i);
          this.enqueue(k);
        },
      },
    );
  }

  /** The workload Secret informer: keeps the newest version of each, queues its account. */
  secretInformer(): Informer {
    const core = this.o.apis.core;
    return this.coreInformer(
      "secrets",
      (ns, page) =>
        ns
          ? core.listNamespacedSecret({ namespace: ns, ...page })
          : core.listSecretForAllNamespaces(page),
      {
        onList: (items) => {
          this.secrets.clear();
          for (const s of items as k8s.V1Secret[]) {
            if (s.type === WORKLOAD_SECRET.type) {
              this.secrets.set(key(s.metadata!.namespace!, s.metadata!.name!), s);
            }
          }
          this.secretsListed = true;
          this.enqueueAll();
        },
        onEvent: (type, obj) => this.onSecretEvent(type, obj as k8s.V1Secret),
      },
    );
  }

  onSecretEvent(type: string, s: k8s.V1Secret) {
    if (s.type !== WORKLOAD_SECRET.type) return;
    const sk = key(s.metadata!.namespace!, s.metadata!.name!);
    const sa = s.metadata?.annotations?.[WORKLOAD_SECRET.annotation] ??
      s.metadata!.name!.slice(WORKLOAD_SECRET.prefix.length);
    const saKey = key(s.metadata!.namespace!, sa);
    if (type === "DELETED") {
      this.secrets.delete(sk);
      if (this.sas.has(saKey)) this.recreate.add(sk);
    } else {
      const known = this.secrets.get(sk);
      // Our own writes come back as events: keep the newer resourceVersion.
      if (
        !known || Number(s.metadata?.resourceVersion) >= Number(known.metadata?.resourceVersion)
      ) {
        this.secrets.set(sk, s);
      }
    }
    this.enqueue(saKey);
  }
}
