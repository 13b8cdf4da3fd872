/**
 * `meshctl create [-f FILE]`: creates every object of a multi-document file (standard input
 * when no file or `-`). Every document is checked first; one bad document writes nothing.
 * @module
 */
import type { CliContext } from "../_shared/context.ts";
import type { CreateOptions } from "./flags.ts";
import { writeFromInput } from "./_write.ts";

/** Runs `meshctl create`. */
export function run(opts: CreateOptions, args: string[], ctx: CliContext): Promise<number> {
  return writeFromInput("create", opts, args, ctx);
}
