/**
 * `POST /inject`: an AdmissionReview (`admission.k8s.io/v1` or `v1beta1`) in, an
 * AdmissionReview with a base64 JSON patch out (behaviour reference §2.2). Pure: no I/O, so
 * the HTTP layer, the tests and the fuzzer call the same function.
 * @module
 */

import { Buffer } from "node:buffer";
import { checkPod, InjectError, type Injector } from "../../lib/inject/mod.ts";

/** Largest request body accepted (the API server's objects are at most ~1.5 MB). */
export const MAX_BODY_BYTES = 8 << 20;

/** How one review ended, for the metrics. */
export type Outcome = "injected" | "skipped" | "error";

/** The HTTP answer and what happened. */
export interface WebhookAnswer {
  status: number;
  body: string;
  contentType: string;
  outcome: Outcome;
  /** Why (skip reason or error message). */
  reason: string;
}

const API_VERSIONS = ["admission.k8s.io/v1", "admission.k8s.io/v1beta1"];

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function text(status: number, message: string, reason = message): WebhookAnswer {
  return {
    status,
    body: message + "\n",
    contentType: "text/plain; charset=utf-8",
    outcome: "error",
    reason,
  };
}

function review(
  apiVersion: string,
  response: Record<string, unknown>,
  outcome: Outcome,
  reason: string,
): WebhookAnswer {
  return {
    status: 200,
    body: JSON.stringify({ apiVersion, kind: "AdmissionReview", response }),
    contentType: "application/json",
    outcome,
    reason,
  };
}

/** An answer refusing the review with `message` (HTTP 200, `allowed: false`). */
function refuse(apiVersion: string, uid: string, message: string): WebhookAnswer {
  return review(
    apiVersion,
    { uid, allowed: false, result: { status: "Failure", message, code: 400 } },
    "error",
    message,
  );
}

/**
 * Answers one `POST /inject`. Empty body → 400 `no body found`; a content type other than
 * `application/json` → 415; a body that is not an AdmissionReview, or a pod that cannot be
 * injected → HTTP 200 with `allowed: false` and the reason in `result.message`; a pod the
 * policy skips → `allowed: true` without a patch; otherwise `allowed: true` with the patch.
 * Never throws.
 */
export function answerReview(
  body: string,
  contentType: string | null | undefined,
  injector: Injector,
): WebhookAnswer {
  if (body.length === 0) return text(400, "no body found");
  if (contentType !== "application/json") {
    return text(415, "invalid Content-Type, want `application/json`", "invalid Content-Type");
  }
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch (err) {
    return refuse(API_VERSIONS[0], "", `cannot decode AdmissionReview: ${(err as Error).message}`);
  }
  if (!isRecord(raw)) return refuse(API_VERSIONS[0], "", "AdmissionReview: must be a JSON object");
  const apiVersion = typeof raw.apiVersion === "string" && API_VERSIONS.includes(raw.apiVersion)
    ? raw.apiVersion
    : API_VERSIONS[0];
  const req = raw.request;
  const uid = isRecord(req) && typeof req.uid === "string" ? req.uid : "";
  if (raw.kind !== "AdmissionReview") {
    return refuse(
      apiVersion,
      uid,
      `AdmissionReview: kind must be AdmissionReview, got ${JSON.stringify(raw.kind)}`,
    );
  }
  if (!API_VERSIONS.includes(String(raw.apiVersion))) {
    return refuse(
      apiVersion,
      uid,
      `AdmissionReview: apiVersion must be ${API_VERSIONS.join(" or ")}, got ${
        JSON.stringify(raw.apiVersion)
      }`,
    );
  }
  if (!isRecord(req)) return refuse(apiVersion, uid, "AdmissionReview: request is missing");
  if (uid === "") return refuse(apiVersion, uid, "AdmissionReview: request.uid is missing");
  if (isRecord(req.kind) && req.kind.kind !== undefined && req.kind.kind !== "Pod") {
    return refuse(
      apiVersion,
      uid,
      `AdmissionReview: request.kind must be Pod, got ${JSON.stringify(req.kind.kind)}`,
    );
  }
  if (req.namespace !== undefined && typeof req.namespace !== "string") {
    return refuse(apiVersion, uid, "AdmissionReview: request.namespace must be a string");
  }
  try {
    const pod = checkPod(req.object, "request.object");
    const podNs = pod.metadata?.namespace;
    const namespace = (req.namespace as string | undefined) ||
      (typeof podNs === "string" ? podNs : "") || "default";
    const decision = injector.decide(pod, namespace);
    if (!decision.inject) {
      return review(apiVersion, { uid, allowed: true }, "skipped", decision.reason);
    }
    const patch = Buffer.from(JSON.stringify(injector.patch(pod))).toString("base64");
    return review(
      apiVersion,
      { uid, allowed: true, patchType: "JSONPatch", patch },
      "injected",
      decision.reason,
    );
  } catch (err) {
    if (err instanceof InjectError) return refuse(apiVersion, uid, err.message);
    // a bug, not bad input: still an answer, never a crash
    return refuse(apiVersion, uid, `internal error: ${(err as Error)?.message ?? String(err)}`);
  }
}
