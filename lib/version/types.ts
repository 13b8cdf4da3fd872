/**
 * Types shared by the version module and its build stamp.
 * @module
 */

/** Values stamped into a compiled program. */
export interface Stamp {
  /** Release version, e.g. `0.1.0`. */
  version: string;
  /** Full git commit hash of the build, or `unknown`. */
  gitRevision: string;
  /** RFC 3339 UTC time of the build. */
  buildTime: string;
}
