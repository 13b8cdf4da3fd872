/**
 * Binding helpers of mesh-discovery's `start`: address forms and the one-line listen error.
 * @module
 */

import type { DiscoveryConfig, ListenAddress } from "./config.ts";

/** The host to bind for a `--grpcAddr`-style address (empty = every IPv4 address). */
export function hostOf(a: ListenAddress): string {
  return a.host === "" ? "0.0.0.0" : a.host;
}

/**
 * The ADS listeners of the process that accept at once (`GrpcListenOptions.acceptLoops`): one per
 * serving isolate (`isolates`: 1, or the `--workers`) and port (`--grpcAddr`, and
 * `--secureGrpcAddr` unless off), whether or not the TLS port has started yet.
 */
export function adsAcceptLoops(config: DiscoveryConfig, isolates: number): number {
  return isolates * (config.secureGrpcAddr ? 2 : 1);
}

export { hostPort } from "../../lib/net/mod.ts";

/**
 * `Cannot listen on <flag> <address>: address already in use`, from a Deno or grpc-js (Node
 * `EADDRINUSE`...) listen error.
 */
export function listenError(where: string, e: unknown): Error {
  const text = e instanceof Error ? e.message : String(e);
  const reason = e instanceof Deno.errors.AddrInUse || /EADDRINUSE/.test(text)
    ? "address already in use"
    : e instanceof Deno.errors.AddrNotAvailable || /EADDRNOTAVAIL/.test(text)
    ? "address not available"
    : e instanceof Deno.errors.PermissionDenied || /EACCES/.test(text)
    ? "permission denied"
    : text;
  return new Error(`Cannot listen on ${where}: ${reason}`);
}
