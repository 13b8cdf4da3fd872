/**
 * mesh_ca's orchestrator access: the self-signed root kept in Secret `mesh-ca-secret` of the
 * storage namespace, and TokenReviews of callers' service-account tokens. The client library is
 * loaded here (lazily, by `mod.ts`).
 * @module
 */

import type * as k8s from "../../lib/deps/kube.ts";
import { apiErrorStatus, kubeClient, type KubeConfig } from "../../lib/kube/mod.ts";
import { describeApiError } from "../../lib/kube/informer.ts";
import { ROOT_FILES, RootExistsError, type RootStore } from "./keys.ts";
import type { TokenReviewer } from "./signer.ts";

/** Name and type of the Secret holding a self-signed root. */
export const CA_SECRET = { name: "mesh-ca-secret", type: "mesh.io/ca-root" } as const;

/** The client APIs mesh_ca uses. */
export interface OrchApis {
  kubeConfig: KubeConfig;
  core: k8s.CoreV1Api;
  authn: k8s.AuthenticationV1Api;
}

/** Creates the API clients of a loaded kubeconfig. */
export async function orchApis(kubeConfig: KubeConfig): Promise<OrchApis> {
  const lib = await kubeClient();
  return {
    kubeConfig,
    core: kubeConfig.makeApiClient(lib.CoreV1Api),
    authn: kubeConfig.makeApiClient(lib.AuthenticationV1Api),
  };
}

const b64 = (s: string) => btoa(s);
const unb64 = (s: string | undefined) => (s === undefined ? undefined : atob(s));

/** A {@link RootStore} in Secret `mesh-ca-secret` of `namespace`. */
export function secretRootStore(core: k8s.CoreV1Api, namespace: string): RootStore {
  return {
    where: `Secret ${namespace}/${CA_SECRET.name}`,
    async load() {
      let s: k8s.V1Secret;
      try {
        s = await core.readNamespacedSecret({ name: CA_SECRET.name, namespace });
      } catch (e) {
        if (apiErrorStatus(e)?.code === 404) return undefined;
        throw new Error(
          `Cannot read Secret ${namespace}/${CA_SECRET.name}: ${describeApiError(e)}`,
        );
      }
      const cert = unb64(s.data?.[ROOT_FILES.cert]);
      const key = unb64(s.data?.[ROOT_FILES.key]);
      if (!cert || !key) {
        throw new Error(
          `Secret ${namespace}/${CA_SECRET.name} lacks ${ROOT_FILES.cert} or ${ROOT_FILES.key}`,
        );
      }
      return { cert, key };
    },
    async save(root) {
      try {
        await core.createNamespacedSecret({
          namespace,
          body: {
            apiVersion: "v1",
            kind: "Secret",
            metadata: { name: CA_SECRET.name, namespace },
            type: CA_SECRET.type,
            data: { [ROOT_FILES.cert]: b64(root.cert), [ROOT_FILES.key]: b64(root.key) },
          },
        });
      } catch (e) {
        if (apiErrorStatus(e)?.code === 409) {
          throw new RootExistsError(`Secret ${namespace}/${CA_SECRET.name} exists already`);
        }
        throw new Error(describeApiError(e));
      }
    },
  };
}

/** A {@link TokenReviewer} through the API server's TokenReview. */
export function kubeTokenReviewer(authn: k8s.AuthenticationV1Api): TokenReviewer {
  return async (token) => {
    let r: k8s.V1TokenReview;
    try {
      r = await authn.createTokenReview({
        body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } },
      });
    } catch (e) {
      throw new Error(describeApiError(e));
    }
    if (r.status?.authenticated && r.status.user?.username) {
      return { authenticated: true, username: r.status.user.username };
    }
    return { authenticated: false, error: r.status?.error ?? "" };
  };
}
