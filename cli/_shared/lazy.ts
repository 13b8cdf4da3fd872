/**
 * Loading a command module through a computed specifier. Deno resolves a dynamic import whose
 * specifier is a string literal (and everything that module reaches) when the program starts,
 * even if the branch never runs; a computed one is resolved only when called. So `version` and
 * `--help` of a program do not pay for the graphs of its commands (measured: ~150-250 ms of
 * mesh-discovery's `version` on a loaded 2-core box). `deno compile` must be told to include
 * these modules: compile.ts lists them per program (`INCLUDES`, checked by compile_test.ts).
 * @module
 */

/**
 * A `load` for {@linkcode command}: imports `specifier` (relative to `base`, the caller's
 * `import.meta.url`) when the command runs. Give the module type for type checking:
 * `lazyCommand<typeof import("./x.ts")>("./x.ts", import.meta.url)` (a type-only import).
 */
export function lazyCommand<M>(specifier: string, base: string): () => Promise<M> {
  return () => import(new URL(specifier, base).href);
}
