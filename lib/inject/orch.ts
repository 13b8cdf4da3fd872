/**
 * What injection needs from the orchestrator API: reading a config map key (kube-inject's
 * `--injectConfigMapName` / `--meshConfigMapName`) and writing the CA bundle of the injector's
 * entry in its MutatingWebhookConfiguration (sidecar-injector at start). The client library is
 * loaded only when these are called.
 * @module
 */

import { apiErrorStatus, kubeClient, type KubeConfig } from "../kube/mod.ts";

/**
 * The value of `key` in config map `namespace/name`. Throws an Error naming the config map when
 * it or the key is missing, or the API fails.
 */
export async function readConfigMapValue(
  kc: KubeConfig,
  namespace: string,
  name: string,
  key: string,
): Promise<string> {
  const k8s = await kubeClient();
  const api = kc.makeApiClient(k8s.CoreV1Api);
  let cm;
  try {
    cm = await api.readNamespacedConfigMap({ name, namespace });
  } catch (err) {
    const st = apiErrorStatus(err);
    if (st?.code === 404) throw new Error(`config map ${namespace}/${name} not found`);
    throw new Error(
      `Cannot read config map ${namespace}/${name}: ${st?.message ?? (err as Error).message}`,
    );
  }
  const value = cm.data?.[key];
  if (value === undefined) throw new Error(`config map ${namespace}/${name} has no key "${key}"`);
  return value;
}

/**
 * Writes `caBundle` (PEM text, stored base64) into the webhook entry `webhookName` of the
 * MutatingWebhookConfiguration `configName`, unless it already holds it. Returns whether it
 * changed. Throws an Error naming what is missing.
 */
export async function patchWebhookCaBundle(
  kc: KubeConfig,
  configName: string,
  webhookName: string,
  caPem: string,
): Promise<boolean> {
  const k8s = await kubeClient();
  const api = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
  const what = `MutatingWebhookConfiguration ${configName}`;
  const bundle = btoa(caPem);
  for (let attempt = 0; attempt < 5; attempt++) {
    let cfg;
    try {
      cfg = await api.readMutatingWebhookConfiguration({ name: configName });
    } catch (err) {
      const st = apiErrorStatus(err);
      if (st?.code === 404) throw new Error(`${what} not found`);
      throw new Error(`Cannot read ${what}: ${st?.message ?? (err as Error).message}`);
    }
    const hook = (cfg.webhooks ?? []).find((w) => w.name === webhookName);
    if (!hook) {
      const known = (cfg.webhooks ?? []).map((w) => w.name).join(", ") || "none";
      throw new Error(`${what} has no webhook "${webhookName}" (has: ${known})`);
    }
    const current = hook.clientConfig.caBundle as unknown;
    const currentText = typeof current === "string"
      ? current
      : current instanceof Uint8Array
      ? btoa(String.fromCharCode(...current))
      : "";
    if (currentText === bundle) return false;
    hook.clientConfig.caBundle = bundle;
    try {
      await api.replaceMutatingWebhookConfiguration({ name: configName, body: cfg });
      return true;
    } catch (err) {
      const st = apiErrorStatus(err);
      if (st?.code === 409) continue; // changed meanwhile: read again
      throw new Error(`Cannot update ${what}: ${st?.message ?? (err as Error).message}`);
    }
  }
  throw new Error(`Cannot update ${what}: it kept changing (5 conflicts)`);
}
