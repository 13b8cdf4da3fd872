/**
 * `deno task demo-integration`: the integration procedure for an API-managed HTTP service, run
 * locally on the `fs` platform with the real programs (mesh_ca, mesh-discovery, meshctl,
 * mesh-agent). Prints each step, the commands it ran and whether each check held; exits 0 when
 * every check held, 1 otherwise. No flags, no cluster. See docs/integration.md.
 * @module
 */

import { runIntegrationDemo } from "./demo_integration/steps.ts";

if (import.meta.main) {
  if (Deno.args.length > 0) {
    console.error(
      `Error: demo-integration takes no arguments, got ${JSON.stringify(Deno.args[0])}\n` +
        "Run: deno task demo-integration",
    );
    Deno.exit(2);
  }
  const out = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));
  out("The integration procedure on the local fs platform (docs/integration.md)");
  // Ctrl-C (or a test's SIGTERM) stops the programs the demo started and removes its directory
  const abort = new AbortController();
  const stop = () => abort.abort();
  for (const sig of ["SIGINT", "SIGTERM"] as const) Deno.addSignalListener(sig, stop);
  const { held, steps } = await runIntegrationDemo({ out, signal: abort.signal });
  if (abort.signal.aborted) {
    out("\nStopped.");
    Deno.exit(130);
  }
  const checks = steps.flatMap((s) => s.checks);
  const failed = checks.filter((c) => !c.held).length;
  out(
    `\n${held ? "Every step held" : "Some steps did NOT hold"}: ${
      checks.length - failed
    } of ${checks.length} checks held.`,
  );
  Deno.exit(held ? 0 : 1);
}
