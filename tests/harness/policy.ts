/**
 * mesh-policy for tests and benches: its server arguments and addresses, a deny configuration, and
 * independent clients of its API (`@grpc/grpc-js` over the mixer package definition).
 * @module
 */

import { DEFAULT_MANIFEST, type Value } from "../../lib/expr/mod.ts";
import { type CheckResponse, compress, mixerCodec } from "../../lib/mixer/mod.ts";
import type { ProgramProcess } from "./procs.ts";

/**
 * Arguments of `mesh-policy server` on 127.0.0.1, port 0, monitoring port 0, reading its
 * configuration from `configDir` (`fs://`), then `extra`.
 */
export function policyServerArgs(configDir: string, ...extra: string[]): string[] {
  return [
    "server",
    "--address",
    "tcp://127.0.0.1:0",
    "--monitoringPort",
    "0",
    "--configStoreURL",
    `fs://${configDir}`,
    ...extra,
  ];
}

/** The Policy API and monitoring addresses (`host:port`) a mesh-policy server logs. */
export async function policyAddresses(
  proc: ProgramProcess,
  timeoutMs: number,
): Promise<{ address: string; monitoring: string }> {
  const address = (await proc.waitFor(/Policy API listening on (\S+)/, timeoutMs)).split(" ").at(
    -1,
  )!;
  const monitoring = (await proc.waitFor(/Monitoring listening on (\S+)/, timeoutMs)).split(" ")
    .at(-1)!;
  return { address, monitoring };
}

/**
 * Policy configuration (YAML) that denies, with code 7 and `message`, the calls `match` selects:
 * a denier, a checknothing instance and the rule `deny-bad`.
 */
export function denyConfig(match: string, message = "blocked by policy"): string {
  return `apiVersion: config.mesh.io/v1alpha2
kind: denier
metadata: {name: deny, namespace: mesh-system}
spec:
  status: {code: 7, message: ${JSON.stringify(message)}}
---
apiVersion: config.mesh.io/v1alpha2
kind: checknothing
metadata: {name: nothing, namespace: mesh-system}
spec: {}
---
apiVersion: config.mesh.io/v1alpha2
kind: rule
metadata: {name: deny-bad, namespace: mesh-system}
spec:
  match: ${JSON.stringify(match)}
  actions: [{handler: deny.denier, instances: [nothing.checknothing]}]
`;
}

/**
 * A client of the mixer API on one connection: `call` (any method), `check` (the status code),
 * `report`, `close`.
 */
export async function mixerClient(address: string) {
  const grpc = await import("../../lib/deps/grpc.ts");
  // deno-lint-ignore no-explicit-any
  const pkg = grpc.loadPackageDefinition((await mixerCodec()).definition) as any;
  const c = new pkg.mesh.mixer.v1.Mixer(address, grpc.credentials.createInsecure());
  const call = (method: string, req: unknown) =>
    new Promise<Record<string, unknown>>((resolve, reject) =>
      c[method](req, (e: Error | null, r: Record<string, unknown>) => (e ? reject(e) : resolve(r)))
    );
  const attrs = (b: Record<string, Value>) => compress(b, DEFAULT_MANIFEST);
  return {
    call,
    check: async (bag: Record<string, Value>) => {
      const r = await call("Check", { attributes: attrs(bag) });
      return ((r.precondition as { status: { code?: number } }).status.code ?? 0) as number;
    },
    report: (bags: Record<string, Value>[]) => call("Report", { attributes: bags.map(attrs) }),
    close: () => c.close(),
  };
}

/**
 * One Check of `attrs` (plus request fields `extra`) on a connection of its own (grpc-js with a
 * private subchannel pool, closed after the call).
 */
export async function freshCheck(
  address: string,
  attrs: Record<string, Value>,
  extra: Record<string, unknown> = {},
): Promise<CheckResponse> {
  const grpc = await import("../../lib/deps/grpc.ts");
  // deno-lint-ignore no-explicit-any
  const pkg = grpc.loadPackageDefinition((await mixerCodec()).definition) as any;
  const c = new pkg.mesh.mixer.v1.Mixer(address, grpc.credentials.createInsecure(), {
    "grpc.use_local_subchannel_pool": 1,
  });
  try {
    return await new Promise((resolve, reject) =>
      c.Check(
        { attributes: compress(attrs, DEFAULT_MANIFEST), ...extra },
        (e: Error | null, r: CheckResponse) => e ? reject(e) : resolve(r),
      )
    );
  } finally {
    c.close();
  }
}
