/**
 * `meshctl create [-f FILE]`: creates every object of a multi-document file (standard input
 * when no file or `-`). Every document is checked first; one bad document writes nothing.
 * @module
 */
import type { CreateOptions } from "./flags.ts";
import { writeFromInput } from "./_write.ts";
import type { MeshctlContext } from "./_config_io.ts";

/** Runs `meshctl create`. */
export function run(opts: CreateOptions, args: string[], ctx: MeshctlContext): Promise<number> {
  return writeFromInput("create", opts, args, ctx);
}
