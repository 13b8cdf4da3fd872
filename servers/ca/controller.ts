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
import { createInformer, describeApiError, type Informer } from "../../lib/kube/informer.ts";
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

// long: closure over the controller's caches and queue; a class split is left to issue 25
/** Starts the controller. */
export function startController(o: ControllerOptions): Controller {
  const sas = new Map<string, Obj>();
  const secrets = new Map<string, k8s.V1Secret>();
  const now = o.now ?? Date.now;
  const resyncMs = o.resyncMs ?? 60_000;
  const queue = new Set<string>();
  let working: Promise<void> | undefined;
  let stopped = false;

  const secretName = (sa: string) => WORKLOAD_SECRET.prefix + sa;

  const build = async (ns: string, sa: string): Promise<k8s.V1Secret> => {
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
  };

  /** Why `s` must be rotated, or "" when it is fine. */
  const rotationReason = (s: k8s.V1Secret): string => {
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
    if (root.trim() !== o.ca().rootPem.trim()) return "root certificate changed";
    const nb = leaf.notBefore.getTime();
    const na = leaf.notAfter.getTime();
    const grace = Math.max(o.graceRatio * (na - nb), o.minGraceMs);
    if (na - now() < grace) return "within the grace period";
    return "";
  };

  const reconcile = async (k: string) => {
    const [ns, name] = k.split("/");
    const sa = sas.get(k);
    const sName = secretName(name);
    const existing = secrets.get(key(ns, sName));
    if (!sa) {
      if (!existing) return;
      try {
        await o.apis.core.deleteNamespacedSecret({ name: sName, namespace: ns });
        o.log.info(`controller: deleted Secret ${ns}/${sName} (service account removed)`);
        o.onSecret?.("deleted");
      } catch (e) {
        if (apiErrorStatus(e)?.code !== 404) {
          o.log.error(`controller: cannot delete Secret ${ns}/${sName}: ${describeApiError(e)}`);
        }
      }
      secrets.delete(key(ns, sName));
      return;
    }
    if (!existing) {
      for (let attempt = 1; attempt <= 3 && !stopped; attempt++) {
        try {
          const body = await build(ns, name);
          const created = await o.apis.core.createNamespacedSecret({ namespace: ns, body });
          secrets.set(key(ns, sName), created);
          const action = recreate.delete(key(ns, sName)) ? "recreated" : "created";
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
      return;
    }
    if (existing.type !== WORKLOAD_SECRET.type) return;
    const why = rotationReason(existing);
    if (!why) return;
    try {
      const body = await build(ns, name);
      body.metadata!.resourceVersion = existing.metadata?.resourceVersion;
      const updated = await o.apis.core.replaceNamespacedSecret({
        name: sName,
        namespace: ns,
        body,
      });
      secrets.set(key(ns, sName), updated);
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
  };

  const recreate = new Set<string>();
  const kick = () => {
    if (working || stopped) return working;
    working = (async () => {
      while (queue.size && !stopped) {
        const [k] = queue;
        queue.delete(k);
        try {
          await reconcile(k);
        } catch (e) {
          o.log.error(`controller: ${k}: ${(e as Error).message}`);
        }
      }
    })().finally(() => {
      working = undefined;
      if (queue.size && !stopped) kick();
    });
    return working;
  };
  const enqueue = (k: string) => {
    queue.add(k);
    kick();
  };
  const enqueueAll = () => {
    for (const k of sas.keys()) queue.add(k);
    for (const s of secrets.values()) {
      const sa = s.metadata?.annotations?.[WORKLOAD_SECRET.annotation];
      if (sa && s.type === WORKLOAD_SECRET.type) queue.add(key(s.metadata!.namespace!, sa));
    }
    kick();
  };

  const ns = o.namespace;
  const core = o.apis.core;
  const saInformer: Informer = createInformer({
    name: ns ? `serviceaccounts in namespace ${ns}` : "serviceaccounts",
    kubeConfig: o.apis.kubeConfig,
    watchPath: ns ? `/api/v1/namespaces/${ns}/serviceaccounts` : "/api/v1/serviceaccounts",
    list: (cont) =>
      ns
        ? core.listNamespacedServiceAccount({ namespace: ns, limit: 500, _continue: cont })
        : core.listServiceAccountForAllNamespaces({ limit: 500, _continue: cont }),
    resyncMs,
    onList(items) {
      sas.clear();
      for (const i of items as Obj[]) sas.set(key(i.metadata!.namespace!, i.metadata!.name!), i);
      if (secretsListed) enqueueAll();
    },
    onEvent(type, obj) {
      const i = obj as Obj;
      const k = key(i.metadata!.namespace!, i.metadata!.name!);
      if (type === "DELETED") sas.delete(k);
      else sas.set(k, i);
      enqueue(k);
    },
  });
  let secretsListed = false;
  const secretInformer: Informer = createInformer({
    name: ns ? `secrets in namespace ${ns}` : "secrets",
    kubeConfig: o.apis.kubeConfig,
    watchPath: ns ? `/api/v1/namespaces/${ns}/secrets` : "/api/v1/secrets",
    list: (cont) =>
      ns
        ? core.listNamespacedSecret({ namespace: ns, limit: 500, _continue: cont })
        : core.listSecretForAllNamespaces({ limit: 500, _continue: cont }),
    resyncMs,
    onList(items) {
      secrets.clear();
      for (const s of items as k8s.V1Secret[]) {
        if (s.type === WORKLOAD_SECRET.type) {
          secrets.set(key(s.metadata!.namespace!, s.metadata!.name!), s);
        }
      }
      secretsListed = true;
      enqueueAll();
    },
    onEvent(type, obj) {
      const s = obj as k8s.V1Secret;
      if (s.type !== WORKLOAD_SECRET.type) return;
      const sk = key(s.metadata!.namespace!, s.metadata!.name!);
      const sa = s.metadata?.annotations?.[WORKLOAD_SECRET.annotation] ??
        s.metadata!.name!.slice(WORKLOAD_SECRET.prefix.length);
      const saKey = key(s.metadata!.namespace!, sa);
      if (type === "DELETED") {
        secrets.delete(sk);
        if (sas.has(saKey)) recreate.add(sk);
      } else {
        const known = secrets.get(sk);
        // Our own writes come back as events: keep the newer resourceVersion.
        if (
          !known || Number(s.metadata?.resourceVersion) >= Number(known.metadata?.resourceVersion)
        ) {
          secrets.set(sk, s);
        }
      }
      enqueue(saKey);
    },
  });
  const timer = setInterval(enqueueAll, resyncMs);
  const ready = (async () => {
    await secretInformer.start();
    await saInformer.start();
    enqueueAll();
    await working;
  })();
  ready.catch(() => {});
  return {
    ready,
    reconcileAll: enqueueAll,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await Promise.all([saInformer.stop(), secretInformer.stop()]);
      await working;
    },
  };
}
