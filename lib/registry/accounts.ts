/**
 * Service accounts named by annotations (reference §1.10): `alpha.mesh.io/orchestrator-serviceaccounts`
 * (comma list of account names of the object's namespace) and
 * `alpha.mesh.io/canonical-serviceaccounts` (comma list of identities without `spiffe://`), with
 * their `alpha.istio.io/kubernetes-serviceaccounts` and `alpha.istio.io/canonical-serviceaccounts`
 * spellings. Read from orchestrator Services and from ServiceEntries (`meshctl register` writes
 * the first one on the ServiceEntry of registered VMs).
 * @module
 */

/** The annotation naming service accounts of the object's namespace (what `meshctl register` writes). */
export const SERVICE_ACCOUNT_ANNOTATION = "alpha.mesh.io/orchestrator-serviceaccounts";

const SA_ANNOTATIONS = [SERVICE_ACCOUNT_ANNOTATION, "alpha.istio.io/kubernetes-serviceaccounts"];
const CANONICAL_SA_ANNOTATIONS = [
  "alpha.mesh.io/canonical-serviceaccounts",
  "alpha.istio.io/canonical-serviceaccounts",
];

/** `spiffe://<domain>/ns/<ns>/sa/<sa>`. */
export function spiffeId(domain: string, namespace: string, serviceAccount: string): string {
  return `spiffe://${domain}/ns/${namespace}/sa/${serviceAccount}`;
}

/**
 * The identities the service-account annotations of an object of `namespace` name, sorted and
 * without duplicates: `spiffe://<domain>/ns/<namespace>/sa/<account>` per account name,
 * `spiffe://<id>` per canonical account. Blank entries are skipped.
 */
export function annotatedServiceAccounts(
  annotations: Readonly<Record<string, string>> | undefined,
  domain: string,
  namespace: string,
): string[] {
  const accounts = new Set<string>();
  for (const a of SA_ANNOTATIONS) {
    for (const v of String(annotations?.[a] ?? "").split(",")) {
      if (v.trim()) accounts.add(spiffeId(domain, namespace, v.trim()));
    }
  }
  for (const a of CANONICAL_SA_ANNOTATIONS) {
    for (const v of String(annotations?.[a] ?? "").split(",")) {
      if (v.trim()) accounts.add(`spiffe://${v.trim()}`);
    }
  }
  return [...accounts].sort();
}
