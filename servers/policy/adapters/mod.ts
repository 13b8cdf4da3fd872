/**
 * The adapters of mesh-policy, by kind.
 * @module
 */

import { denier } from "./denier.ts";
import { kubernetesenv } from "./kubernetesenv.ts";
import { listchecker } from "./listchecker.ts";
import { memquota } from "./memquota.ts";
import { prometheus } from "./prometheus.ts";
import { rbac } from "./rbac.ts";
import { statsd } from "./statsd.ts";
import { stdio } from "./stdio.ts";
import { zipkin } from "./zipkin.ts";
import type { Adapter } from "./types.ts";

export * from "./types.ts";

/** Implemented adapters by kind. */
export const ADAPTERS: ReadonlyMap<string, Adapter> = new Map(
  [denier, kubernetesenv, listchecker, memquota, prometheus, rbac, statsd, stdio, zipkin].map((
    a,
  ) => [a.kind, a]),
);
