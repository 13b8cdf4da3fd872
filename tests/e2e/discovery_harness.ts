/**
 * Shared helpers of the mesh-discovery end-to-end tests: start `mesh-discovery discovery` as a
 * program on free ports and read the addresses from its `listening` line; small HTTP helpers.
 * @module
 */

import { type ProgramProcess, spawnProgram } from "../harness/procs.ts";

/** Path of the mesh-discovery entry point. */
export const DISCOVERY_SCRIPT = new URL("../../cli/mesh-discovery.ts", import.meta.url).pathname;

/** A running discovery program and its addresses (`127.0.0.1:<port>`). */
export interface RunningDiscovery {
  proc: ProgramProcess;
  /** The `listening ...` line, up to the ctrlz address. */
  listening: string;
  http: string;
  grpc: string;
  /** The TLS ADS address, when `--secureGrpcAddr` is in `extra` and the port started. */
  secureGrpc?: string;
  monitoring: string;
  ctrlz: string;
}

const LISTENING =
  /listening http=\S+:(\d+) grpc=\S+:(\d+)(?: secureGrpc=\S+:(\d+))? monitoring=\S+:(\d+) ctrlz=\S+:(\d+)/;

/**
 * Starts discovery with every port free (`--port 0` ...), no TLS port unless `extra` gives
 * `--secureGrpcAddr`, a mesh config path that does not exist (defaults) unless `extra` names one,
 * plus `extra` flags (a flag given again in `extra` wins). Stops the program when
 * it does not print its listening line within 20 s.
 */
export async function startDiscovery(
  extra: string[],
  env: Record<string, string> = {},
  denoArgs?: string[],
  fileLimit?: number,
): Promise<RunningDiscovery> {
  const args = [
    "discovery",
    "--port",
    "0",
    "--grpcAddr",
    "127.0.0.1:0",
    "--secureGrpcAddr",
    "",
    "--monitoringPort",
    "0",
    "--ctrlz_port",
    "0",
    ...(extra.includes("--meshConfig") ? [] : ["--meshConfig", "/nonexistent/mesh-config"]),
    ...extra,
  ];
  const proc = spawnProgram(DISCOVERY_SCRIPT, args, { env, denoArgs, fileLimit });
  let line: string;
  try {
    line = await proc.waitFor(LISTENING, 60_000); // generous: start-up on a loaded box
  } catch (e) {
    await proc.stop();
    throw e;
  }
  const m = LISTENING.exec(line)!;
  return {
    proc,
    listening: line,
    http: `127.0.0.1:${m[1]}`,
    grpc: `127.0.0.1:${m[2]}`,
    secureGrpc: m[3] ? `127.0.0.1:${m[3]}` : undefined,
    monitoring: `127.0.0.1:${m[4]}`,
    ctrlz: `127.0.0.1:${m[5]}`,
  };
}

/** GET (or another method) returning status and text. */
export async function http(
  url: string,
  init: RequestInit = {},
): Promise<{ status: number; body: string; headers: Headers }> {
  const res = await fetch(url, init);
  return { status: res.status, body: await res.text(), headers: res.headers };
}

/** POSTs JSON (or raw text when `body` is a string). */
export function post(url: string, body: unknown): ReturnType<typeof http> {
  return http(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/**
 * A fake Consul catalog (the real HTTP API's shape) with one service, `web`, whose instances are
 * what `instances()` returns at each poll; `args` are the flags that make discovery poll it
 * (RegistryA, every 100 ms). Shut `server` down when done.
 */
export function fakeConsul(
  instances: () => readonly Record<string, unknown>[],
): { server: Deno.HttpServer<Deno.NetAddr>; args: string[] } {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/v1/catalog/services") return Response.json({ web: [] });
    if (path === "/v1/catalog/service/web") return Response.json(instances());
    return new Response("not found", { status: 404 });
  });
  const args = [
    "--registries",
    "RegistryA",
    "--regaserverURL",
    `http://127.0.0.1:${server.addr.port}`,
    "--regaserverInterval",
    "100ms",
  ];
  return { server, args };
}

/**
 * A ServiceEntry `db` (namespace default) for `db.example.internal:5432` with the one endpoint
 * `ip`; `extraPorts` is appended to its ports list (`, {number: ...}`).
 */
export function dbServiceEntry(ip: string, extraPorts = ""): string {
  return `apiVersion: networking.mesh.io/v1alpha3
kind: ServiceEntry
metadata: {name: db, namespace: default}
spec:
  hosts: [db.example.internal]
  ports: [{number: 5432, name: tcp-db, protocol: TCP}${extraPorts}]
  location: MESH_INTERNAL
  resolution: STATIC
  endpoints: [{address: ${ip}}]
`;
}
