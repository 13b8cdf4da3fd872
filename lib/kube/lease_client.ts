/**
 * A {@link LeaseClient} over the orchestrator API (`coordination.k8s.io/v1` Leases), through the
 * client library's untyped object API so that Lease times keep the API's MicroTime form.
 * @module
 */

import type { Lease, LeaseClient } from "./leader.ts";
import { apiErrorStatus, kubeClient, type KubeConfig } from "./mod.ts";

const REF = { group: "coordination.k8s.io", version: "v1", plural: "leases" };

/** Leases through the orchestrator API of `kc` (errors keep their HTTP `code`, 409 included). */
export async function kubeLeaseClient(kc: KubeConfig): Promise<LeaseClient> {
  const k8s = await kubeClient();
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  return {
    async get(namespace, name) {
      try {
        return await api.getNamespacedCustomObject({ ...REF, namespace, name }) as Lease;
      } catch (err) {
        if (apiErrorStatus(err)?.code === 404) return null;
        throw err;
      }
    },
    async create(lease) {
      return await api.createNamespacedCustomObject({
        ...REF,
        namespace: lease.metadata.namespace,
        body: lease,
      }) as Lease;
    },
    async replace(lease) {
      return await api.replaceNamespacedCustomObject({
        ...REF,
        namespace: lease.metadata.namespace,
        name: lease.metadata.name,
        body: lease,
      }) as Lease;
    },
  };
}
