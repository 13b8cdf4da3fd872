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

/**
 * The command line of a `sidecar-injector` run on `port` with a key pair, the CA that issued it,
 * the injection and mesh configuration files `<dir>/inject` and `<dir>/mesh`, and a kubeconfig.
 */
export function injectorArgs(o: {
  port: number;
  cert: string;
  key: string;
  caCert: string;
  dir: string;
  kubeconfig: string;
}): string[] {
  return [
    "--port",
    String(o.port),
    "--tlsCertFile",
    o.cert,
    "--tlsKeyFile",
    o.key,
    "--caCertFile",
    o.caCert,
    "--injectConfig",
    `${o.dir}/inject`,
    "--meshConfig",
    `${o.dir}/mesh`,
    "--orchconfig",
    o.kubeconfig,
  ];
}
