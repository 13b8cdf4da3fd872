/**
 * TokenRequest (`POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`, the `token`
 * subresource of a ServiceAccount) for the fake API server, as the real one answers it: the
 * ServiceAccount must exist (404 NotFound otherwise), the body must be an
 * `authentication.k8s.io/v1` `TokenRequest` whose `spec.expirationSeconds`, when given, is at
 * least 600 (422 Invalid otherwise); the answer (201) is the TokenRequest with `status.token`
 * and `status.expirationTimestamp`. The token has the shape of the real one — a JWT whose `sub`
 * is `system:serviceaccount:<ns>:<name>`, `iss` `https://kubernetes.default.svc.cluster.local`,
 * `aud` the requested audiences (default: the issuer), `exp`/`iat`/`nbf` — with a random
 * signature, and it is registered for TokenReview (fake_kube_tokenreview.ts) so it
 * authenticates as that service account. Hooked into `fake_kube.ts` by a few lines.
 * @module
 */

/** The issuer (and default audience) of the tokens. */
export const FAKE_TOKEN_ISSUER = "https://kubernetes.default.svc.cluster.local";

const PATH = /^\/api\/v1\/namespaces\/([^/]+)\/serviceaccounts\/([^/]+)\/token$/;

/** What the hook needs from the fake API server. */
export interface TokenRequestView {
  /** True when the ServiceAccount exists. */
  serviceAccountExists(namespace: string, name: string): boolean;
  /** TokenReview tokens (token → username): the new token is added. */
  readonly reviewTokens: Map<string, string>;
}

function b64url(s: string | Uint8Array): string {
  const bytes = typeof s === "string" ? new TextEncoder().encode(s) : s;
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(
    /=+$/,
    "",
  );
}

function status(code: number, reason: string, message: string, details?: unknown): Response {
  return Response.json({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  }, { status: code });
}

/**
 * Answers a TokenRequest, or returns undefined when `req` is not one.
 */
export async function tokenRequestResponse(
  req: Request,
  path: string,
  view: TokenRequestView,
): Promise<Response | undefined> {
  const m = PATH.exec(path);
  if (!m || req.method !== "POST") return undefined;
  const [namespace, name] = [decodeURIComponent(m[1]), decodeURIComponent(m[2])];
  if (!view.serviceAccountExists(namespace, name)) {
    return status(404, "NotFound", `serviceaccounts "${name}" not found`, {
      name,
      kind: "serviceaccounts",
    });
  }
  let body: Record<string, unknown>;
  try {
    body = await req.json();
  } catch {
    return status(400, "BadRequest", "the body of the request was in an unknown format");
  }
  if (body?.kind !== "TokenRequest" || body?.apiVersion !== "authentication.k8s.io/v1") {
    return status(
      400,
      "BadRequest",
      `the API version in the data (${body?.apiVersion}) does not match the expected API version (authentication.k8s.io/v1)`,
    );
  }
  const spec = (body.spec ?? {}) as { audiences?: unknown; expirationSeconds?: unknown };
  const secs = spec.expirationSeconds === undefined ? 3600 : Number(spec.expirationSeconds);
  if (!Number.isInteger(secs) || secs < 600) {
    return status(
      422,
      "Invalid",
      `TokenRequest.authentication.k8s.io "${name}" is invalid: spec.expirationSeconds: Invalid value: ${spec.expirationSeconds}: may not specify a duration less than 10 minutes`,
    );
  }
  const audiences = Array.isArray(spec.audiences) && spec.audiences.length
    ? spec.audiences.map(String)
    : [FAKE_TOKEN_ISSUER];
  const now = Math.floor(Date.now() / 1000);
  const username = `system:serviceaccount:${namespace}:${name}`;
  const token = [
    b64url(JSON.stringify({ alg: "RS256", kid: "fake-kube" })),
    b64url(JSON.stringify({
      aud: audiences,
      exp: now + secs,
      iat: now,
      iss: FAKE_TOKEN_ISSUER,
      nbf: now,
      sub: username,
      "kubernetes.io": { namespace, serviceaccount: { name, uid: crypto.randomUUID() } },
    })),
    b64url(crypto.getRandomValues(new Uint8Array(32))),
  ].join(".");
  view.reviewTokens.set(token, username);
  return Response.json({
    kind: "TokenRequest",
    apiVersion: "authentication.k8s.io/v1",
    metadata: { name, namespace, creationTimestamp: null },
    spec: { audiences, expirationSeconds: secs, boundObjectRef: null },
    status: { token, expirationTimestamp: new Date((now + secs) * 1000).toISOString() },
  }, { status: 201 });
}
