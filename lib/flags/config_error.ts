/**
 * The usage error of every program's `toConfig(flags, env)`: bad flags or environment, all of
 * them at once. The CLI prints the message and exits 2.
 * @module
 */

/** Bad flags or environment; the message lists every problem, separated by "; ". */
export class ConfigError extends Error {
  /** `ConfigError`. */
  override name = "ConfigError";
  /** Creates the error from every problem found (each a sentence naming the flag). */
  constructor(readonly problems: readonly string[]) {
    super(problems.join("; "));
  }
}
