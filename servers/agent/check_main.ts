/**
 * Subprocess entry of {@link checkBootstrapIsolated}: reads a bootstrap (JSON) on stdin, checks
 * it, and prints `{"size": n}` or `{"error": "..."}`.
 * @module
 */

import { checkBootstrap } from "./bootstrap.ts";

if (import.meta.main) {
  const doc = JSON.parse(await new Response(Deno.stdin.readable).text());
  try {
    console.log(JSON.stringify({ size: await checkBootstrap(doc) }));
  } catch (e) {
    console.log(JSON.stringify({ error: (e as Error).message }));
  }
}
