/**
 * `credentialName` (Gateway server TLS, DestinationRule client TLS) → certificate files. Istio
 * fetches the named orchestrator Secret through SDS; mesh reads the Secret's files where the
 * proxy's pod mounts it, as Istio 1.0's gateways did with `ingressgateway-certs`:
 * `/etc/mesh/credentials/<credentialName>/` with the Secret's keys `tls.crt`, `tls.key` and
 * `ca.crt` (the keys of a `kubernetes.io/tls` Secret plus the CA). Paths given in the object
 * (`serverCertificate`, `clientCertificate`, `privateKey`, `caCertificates`) win.
 * @module
 */

// deno-lint-ignore no-explicit-any
type Any = any;

/** Where a proxy's pod mounts the Secret a `credentialName` names. */
export const CREDENTIALS_DIR = "/etc/mesh/credentials";

/** The files of a credential: certificate chain, key and CA bundle. */
export function credentialFiles(name: string): { cert: string; key: string; ca: string } {
  const dir = `${CREDENTIALS_DIR}/${name}`;
  return { cert: `${dir}/tls.crt`, key: `${dir}/tls.key`, ca: `${dir}/ca.crt` };
}

function named(tls: Any): string | undefined {
  const n = tls?.credentialName;
  return typeof n === "string" && n !== "" && !n.includes("/") && !n.includes("..") ? n : undefined;
}

/**
 * A Gateway server's `tls` with the files of its `credentialName` filled in where no path is
 * given (the CA only for MUTUAL); the object itself without a credentialName.
 */
export function withServerCredential(tls: Any): Any {
  const n = named(tls);
  if (!n) return tls;
  const f = credentialFiles(n);
  return {
    ...tls,
    serverCertificate: tls.serverCertificate || f.cert,
    privateKey: tls.privateKey || f.key,
    ...(tls.mode === "MUTUAL" ? { caCertificates: tls.caCertificates || f.ca } : {}),
  };
}

/**
 * A DestinationRule's client `tls` with the files of its `credentialName` filled in where no
 * path is given: the CA for SIMPLE and MUTUAL, the client certificate and key for MUTUAL.
 */
export function withClientCredential(tls: Any): Any {
  const n = named(tls);
  if (!n || (tls.mode !== "SIMPLE" && tls.mode !== "MUTUAL")) return tls;
  const f = credentialFiles(n);
  return {
    ...tls,
    caCertificates: tls.caCertificates || f.ca,
    ...(tls.mode === "MUTUAL"
      ? { clientCertificate: tls.clientCertificate || f.cert, privateKey: tls.privateKey || f.key }
      : {}),
  };
}
