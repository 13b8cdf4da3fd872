/**
 * `meshctl replace [-f FILE]`: replaces existing objects with the file's content (standard input
 * when no file or `-`). Without `metadata.resourceVersion` the current one is used (last writer
 * wins); a stale one is reported as a conflict.
 * @module
 */
import type { ReplaceOptions } from "./flags.ts";
import { writeFromInput } from "./_write.ts";
import type { MeshctlContext } from "./_config_io.ts";

/** Runs `meshctl replace`. */
export function run(opts: ReplaceOptions, args: string[], ctx: MeshctlContext): Promise<number> {
  return writeFromInput("replace", opts, args, ctx);
}
