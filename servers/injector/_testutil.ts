/**
 * Test helpers of sidecar-injector (used by its tests and the end-to-end tests).
 * @module
 */
import type { JsonObject } from "../../tests/harness/fake_kube.ts";

/** The MutatingWebhookConfiguration an install creates (caBundle left for the injector). */
export function webhookConfiguration(url: string, caBundle = ""): JsonObject {
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "MutatingWebhookConfiguration",
    metadata: { name: "mesh-sidecar-injector" },
    webhooks: [{
      name: "sidecar-injector.mesh.io",
      clientConfig: { url, caBundle },
      rules: [{
        operations: ["CREATE"],
        apiGroups: [""],
        apiVersions: ["v1"],
        resources: ["pods"],
      }],
      namespaceSelector: { matchLabels: { "mesh-injection": "enabled" } },
      failurePolicy: "Fail",
      sideEffects: "None",
      admissionReviewVersions: ["v1", "v1beta1"],
    }],
  };
}
