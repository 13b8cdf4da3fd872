/**
 * gRPC deadlines: the `grpc-timeout` request header (PROTOCOL-HTTP2.md: `TimeoutValue
 * TimeoutUnit`, at most 8 ASCII digits and one of `H M S m u n`).
 * @module
 */

import type { HeaderList } from "./h2/hpack.ts";

const UNIT_MS: Record<string, number> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 1e-3,
  n: 1e-6,
};

/**
 * The call's timeout in milliseconds from its `grpc-timeout` header: undefined without one.
 * @throws Error naming the header and the reason when the value is malformed.
 */
export function grpcTimeoutMs(headers: HeaderList): number | undefined {
  const v = headers.find(([k]) => k === "grpc-timeout")?.[1];
  if (v === undefined) return undefined;
  const m = /^(\d{1,8})([HMSmun])$/.exec(v);
  if (!m) {
    throw new Error(
      `malformed grpc-timeout header ${
        JSON.stringify(v)
      }: want 1 to 8 digits and a unit of H, M, S, m, u, n`,
    );
  }
  return Number(m[1]) * UNIT_MS[m[2]];
}
