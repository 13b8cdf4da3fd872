/**
 * Worker entry of {@link checkBootstrapInWorker}: checks one bootstrap and posts the outcome.
 * Loading Envoy's protos costs ~30 MB that the long-running agent should not keep.
 * @module
 */

import { checkBootstrap } from "./bootstrap.ts";

// deno-lint-ignore no-explicit-any
const scope = self as any;
scope.onmessage = async (e: MessageEvent<Record<string, unknown>>) => {
  try {
    scope.postMessage({ size: await checkBootstrap(e.data) });
  } catch (err) {
    scope.postMessage({ error: (err as Error).message });
  }
};
