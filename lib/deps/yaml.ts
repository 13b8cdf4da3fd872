/**
 * YAML parsing and printing (`yaml`), with one measured change: its parsing runs with a plain
 * `process.env`.
 *
 * The package's Node build (the one Deno resolves) reads `process.env.LOG_TOKENS` for every token
 * and `process.env.LOG_STREAM` for every document. In Deno `process.env` is a proxy whose every
 * read is a call into the runtime (~0.26 µs), a quarter of the parse time of a file of
 * VirtualServices (2,000 documents: 345-370 ms against 253-294 ms with a plain object). So
 * {@link withPlainEnv} hands the parser, for one synchronous step, an object holding those two
 * variables as they are, and puts the real one back. Nothing else can run during the step.
 * @module
 */
import process from "node:process";
import * as yaml from "npm:yaml@2.9.1";

export * from "npm:yaml@2.9.1";

/** The variables the parser reads (`dist/parse/parser.js`, `dist/compose/composer.js`). */
const READ = ["LOG_TOKENS", "LOG_STREAM"] as const;

/**
 * Runs `fn` (synchronous) with `process.env` a plain object holding the variables the parser
 * reads, then puts the real `process.env` back (also when `fn` throws). Nested calls run as one.
 */
export function withPlainEnv<T>(fn: () => T): T {
  const real = Object.getOwnPropertyDescriptor(process, "env");
  if (!real || swapped) return fn();
  const plain: Record<string, string | undefined> = {};
  for (const k of READ) plain[k] = process.env[k];
  swapped = true;
  Object.defineProperty(process, "env", { ...real, value: plain });
  try {
    return fn();
  } finally {
    Object.defineProperty(process, "env", real);
    swapped = false;
  }
}
let swapped = false;

/** `f` run by {@link withPlainEnv} (its overloads kept). */
// deno-lint-ignore no-explicit-any
function inPlainEnv<F extends (...args: any[]) => unknown>(f: F): F {
  return ((...args: Parameters<F>) => withPlainEnv(() => f(...args))) as F;
}

/** `yaml.parse` with a plain `process.env` ({@link withPlainEnv}). */
export const parse = inPlainEnv(yaml.parse);
/** `yaml.parseAllDocuments` with a plain `process.env` ({@link withPlainEnv}). */
export const parseAllDocuments = inPlainEnv(yaml.parseAllDocuments);
/** `yaml.parseDocument` with a plain `process.env` ({@link withPlainEnv}). */
export const parseDocument = inPlainEnv(yaml.parseDocument);
