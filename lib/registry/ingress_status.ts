/**
 * Ingress status (`mesh-discovery --ingressStatus`): the Ingress objects of the mesh class get
 * `status.loadBalancer.ingress` set to the addresses of the ingress gateway service (the mesh
 * config's `ingressService`), as the reference system's status syncer did: the service's
 * `status.loadBalancer.ingress`, else its `spec.externalIPs`, else nothing (the field is cleared).
 * Only Ingresses whose status differs are written (the `status` subresource).
 * @module
 */
import { describeApiError } from "../kube/informer.ts";
import { apiErrorStatus, kubeClient, type KubeConfig } from "../kube/mod.ts";
import { getLogger } from "../log/mod.ts";

/** One `status.loadBalancer.ingress` entry. */
export interface LoadBalancerIngress {
  ip?: string;
  hostname?: string;
}

/** Options of {@link syncIngressStatus}. */
export interface IngressStatusOptions {
  kubeConfig: KubeConfig;
  /** The Ingress API (`networking.k8s.io/v1` or `extensions/v1beta1`). */
  apiVersion: string;
  /** The gateway service: name and namespace. */
  service: { name: string; namespace: string };
  /** The Ingresses to update (those of the mesh class). */
  ingresses: readonly { name: string; namespace: string }[];
}

/** The addresses a gateway service is reachable at, in `status.loadBalancer.ingress` form. */
export function serviceAddresses(svc: unknown): LoadBalancerIngress[] {
  const s = svc as {
    status?: { loadBalancer?: { ingress?: LoadBalancerIngress[] } };
    spec?: { externalIPs?: string[] };
  };
  const lb: LoadBalancerIngress[] = [];
  for (const i of s.status?.loadBalancer?.ingress ?? []) {
    if (i.ip) lb.push({ ip: i.ip });
    else if (i.hostname) lb.push({ hostname: i.hostname });
  }
  if (lb.length) return lb;
  return (s.spec?.externalIPs ?? []).map((ip) => ({ ip }));
}

/**
 * Writes the gateway service's addresses into each Ingress whose status differs. Returns the
 * number of Ingresses written; failures are logged (and retried at the next sync).
 */
export async function syncIngressStatus(opts: IngressStatusOptions): Promise<number> {
  const log = getLogger("default");
  const k8s = await kubeClient();
  const core = opts.kubeConfig.makeApiClient(k8s.CoreV1Api);
  const custom = opts.kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  const [group, version] = opts.apiVersion.split("/");
  let svc;
  try {
    svc = await core.readNamespacedService(opts.service);
  } catch (err) {
    log.warn(
      `Ingress status: cannot read service ${opts.service.namespace}/${opts.service.name}: ` +
        describeApiError(err),
    );
    return 0;
  }
  const want = serviceAddresses(svc);
  let written = 0;
  for (const ing of opts.ingresses) {
    const ref = { group, version, plural: "ingresses", namespace: ing.namespace, name: ing.name };
    try {
      const obj = await custom.getNamespacedCustomObject(ref) as {
        status?: { loadBalancer?: { ingress?: unknown } };
      };
      const have = obj.status?.loadBalancer?.ingress ?? [];
      if (JSON.stringify(have) === JSON.stringify(want)) continue;
      await custom.replaceNamespacedCustomObjectStatus({
        ...ref,
        body: { ...obj, status: { ...obj.status, loadBalancer: { ingress: want } } },
      });
      written++;
    } catch (err) {
      if (apiErrorStatus(err)?.code === 404) continue; // gone meanwhile
      log.warn(
        `Ingress status: cannot update ${ing.namespace}/${ing.name}: ${describeApiError(err)}`,
      );
    }
  }
  return written;
}
