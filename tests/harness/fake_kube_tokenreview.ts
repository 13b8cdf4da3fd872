/**
 * TokenReview (`POST /apis/authentication.k8s.io/v1/tokenreviews`) for the fake API server:
 * tokens registered in a map authenticate as their username (e.g.
 * `system:serviceaccount:<ns>:<sa>`); any other token is answered `authenticated: false`.
 * Hooked into `fake_kube.ts` by a few lines.
 * @module
 */

/** The TokenReview path. */
export const TOKEN_REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews";

/**
 * Answers a TokenReview request, or returns undefined when `req` is not one. `tokens` maps a
 * token to the username it authenticates as.
 */
export async function tokenReviewResponse(
  req: Request,
  path: string,
  tokens: ReadonlyMap<string, string>,
): Promise<Response | undefined> {
  if (path !== TOKEN_REVIEW_PATH || req.method !== "POST") return undefined;
  let body: { spec?: { token?: unknown } };
  try {
    body = await req.json();
  } catch {
    return Response.json({
      kind: "Status",
      apiVersion: "v1",
      status: "Failure",
      message: "the body of the request was in an unknown format",
      reason: "BadRequest",
      code: 400,
    }, { status: 400 });
  }
  const token = typeof body.spec?.token === "string" ? body.spec.token : "";
  const username = tokens.get(token);
  return Response.json({
    kind: "TokenReview",
    apiVersion: "authentication.k8s.io/v1",
    metadata: { creationTimestamp: null },
    spec: { token },
    status: username
      ? {
        authenticated: true,
        user: { username, uid: crypto.randomUUID(), groups: ["system:serviceaccounts"] },
      }
      : { user: {}, error: "token not recognized" },
  }, { status: 201 });
}
