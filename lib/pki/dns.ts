/**
 * DNS names put in workload certificates besides the SPIFFE ID (reference §6.3):
 * `--custom-dns-names` (`account.namespace:dnsname,...`) and `--append-dns-names` (the webhook
 * services of the mesh system namespace).
 * @module
 */

/** Service accounts (in the CA's storage namespace) whose certificates name their service. */
export const WEBHOOK_SERVICE_ACCOUNTS: Readonly<Record<string, string>> = {
  "mesh-sidecar-injector-service-account": "mesh-sidecar-injector",
  "mesh-galley-service-account": "mesh-galley",
};

/** How DNS names are chosen for an identity. */
export interface DnsNameRules {
  /** `"<sa>.<ns>"` → extra DNS names (from `--custom-dns-names`). */
  custom: ReadonlyMap<string, readonly string[]>;
  /** `--append-dns-names`. */
  appendWebhookNames: boolean;
  /** The CA's storage namespace (the mesh system namespace). */
  systemNamespace: string;
}

const DNS_RE =
  /^(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;

/**
 * Parses `--custom-dns-names`: comma-separated `account.namespace:dnsname` entries.
 * @throws Error naming the bad entry.
 */
export function parseCustomDnsNames(value: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const raw of value.split(",")) {
    const entry = raw.trim();
    if (!entry) continue;
    const m = /^([^.:\s]+)\.([^.:\s]+):(.+)$/.exec(entry);
    if (!m) {
      throw new Error(
        `--custom-dns-names: bad entry "${entry}": want account.namespace:dnsname`,
      );
    }
    if (!DNS_RE.test(m[3]) || m[3].length > 253) {
      throw new Error(`--custom-dns-names: bad DNS name "${m[3]}" in "${entry}"`);
    }
    const key = `${m[1]}.${m[2]}`;
    out.set(key, [...(out.get(key) ?? []), m[3]]);
  }
  return out;
}

/** The DNS names for service account `sa` of namespace `ns`. */
export function dnsNamesFor(ns: string, sa: string, rules: DnsNameRules): string[] {
  const names: string[] = [];
  const svc = WEBHOOK_SERVICE_ACCOUNTS[sa];
  if (rules.appendWebhookNames && svc && ns === rules.systemNamespace) {
    names.push(`${svc}.${ns}.svc`, `${svc}.${ns}`);
  }
  for (const n of rules.custom.get(`${sa}.${ns}`) ?? []) if (!names.includes(n)) names.push(n);
  return names;
}
