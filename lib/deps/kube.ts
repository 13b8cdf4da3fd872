/** Kubernetes client (1.4.x: 2.x does not run on Deno 2.7). Costs ~0.7 s to import: load lazily. */
export * from "npm:@kubernetes/client-node@1.4.0";
