/**
 * `mesh-policy crd adapter|instance|all`: prints the CustomResourceDefinitions of the policy
 * kinds (apiextensions.k8s.io/v1), each document followed by `---`. `all` is `rule`,
 * `attributemanifest`, then the adapters, then the instances.
 * @module
 */

import { stringify } from "../../lib/deps/yaml.ts";
import { crdManifest } from "../../lib/model/crds.ts";
import { type PolicyCategory, policySchemas } from "../../lib/model/registry.ts";
import type { CliContext } from "../_shared/context.ts";
import type { CrdOptions } from "./flags.ts";

/** The CRD documents of the given categories, in listing order. */
export function crdText(categories: readonly PolicyCategory[]): string {
  return categories
    .flatMap((c) => policySchemas.filter((s) => s.policyCategory === c))
    .map((s) => stringify(crdManifest(s), { lineWidth: 0 }) + "---\n")
    .join("");
}

const listing = (categories: PolicyCategory[]) => ({
  async run(_opts: CrdOptions, _args: string[], ctx: CliContext) {
    await ctx.stdout.write(crdText(categories));
  },
});

/** `crd adapter`. */
export const adapter = listing(["adapter"]);
/** `crd instance`. */
export const instance = listing(["instance"]);
/** `crd all`. */
export const all = listing(["core", "adapter", "instance"]);
