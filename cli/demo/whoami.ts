/**
 * A tiny gRPC "whoami" service for the demo and the proxyless xDS tests: one unary method,
 * `/mesh.demo.WhoAmI/Get`, whose request and reply are JSON documents carried as raw bytes (no
 * .proto file needed). The reply names the backend's version, so a client can count where its
 * calls went.
 *
 * Request: `{"id"?: string}`. Reply: `{"version": string, "address": string, "attempt": number}`
 * where `attempt` counts how often this backend saw the request `id` (retries).
 * @module
 */

import { Buffer } from "node:buffer";

type Grpc = typeof import("../../lib/deps/grpc.ts");

/** Full path of the method. */
export const WHOAMI_METHOD = "/mesh.demo.WhoAmI/Get";

/** Request of {@link WHOAMI_METHOD}. */
export interface WhoAmIRequest {
  /** Caller-chosen request id; a backend in `failFirstAttempt` mode fails its first sighting. */
  id?: string;
}

/** Reply of {@link WHOAMI_METHOD}. */
export interface WhoAmIReply {
  /** The backend's version label (`v1`, `v2`...). */
  version: string;
  /** `<ip>:<port>` the backend serves on. */
  address: string;
  /** How many times this backend saw the request id (1 without retries). */
  attempt: number;
  /** The caller's SPIFFE identity from its TLS certificate (proxyless mTLS servers only). */
  peer?: string;
}

const toBytes = (v: unknown): Buffer => Buffer.from(JSON.stringify(v ?? {}));
const fromBytes = (b: Buffer): unknown => b.length ? JSON.parse(b.toString("utf8")) : {};

/** grpc-js service definition of the WhoAmI service (JSON over raw bytes). */
export const WHOAMI_SERVICE = {
  Get: {
    path: WHOAMI_METHOD,
    requestStream: false,
    responseStream: false,
    requestSerialize: toBytes,
    requestDeserialize: fromBytes,
    responseSerialize: toBytes,
    responseDeserialize: fromBytes,
    originalName: "get",
  },
} as const;

/**
 * Per-call credentials that add no metadata but answer from a timer, for proxyless (xDS) clients.
 * grpc-js 1.14 picks again, in a promise callback, when the subchannel it picked is no longer
 * READY once the call's credentials metadata is ready. Without call credentials that metadata is
 * an already-resolved promise, so the re-picks are a chain of microtasks that never lets a timer
 * or a socket event run: neither the picker update that would end it nor the call's deadline.
 * Seen here: a test client grew to V8's 4 GB heap limit after its channels were closed and
 * recreated while the mesh switched mutual TLS and RBAC. With these, every re-pick waits for the
 * event loop. Pass as the `credentials` call option.
 */
export function yieldingCallCredentials(grpc: Grpc) {
  return grpc.credentials.createFromMetadataGenerator((_params, done) => {
    setTimeout(() => done(null, new grpc.Metadata()), 0);
  });
}

/** Options of {@link startWhoAmI}. */
export interface WhoAmIOptions {
  /** Host to bind, e.g. `127.0.0.1` or a Mock endpoint address like `127.0.1.1`. */
  host: string;
  /** Port (0 = any free port). */
  port: number;
  /** Version label returned in replies. */
  version: string;
  /** Answer the first attempt of every request id with UNAVAILABLE (to exercise retries). */
  failFirstAttempt?: boolean;
}

/** A running WhoAmI backend. */
export interface WhoAmIBackend {
  /** `<host>:<bound port>`. */
  readonly address: string;
  /** The bound port. */
  readonly port: number;
  /** Calls answered successfully so far. */
  served(): number;
  /** Stops the server (in-flight calls are cancelled). */
  shutdown(): Promise<void>;
}

/** Starts a WhoAmI backend on a grpc-js server (plaintext). */
export async function startWhoAmI(opts: WhoAmIOptions): Promise<WhoAmIBackend> {
  const grpc: Grpc = await import("../../lib/deps/grpc.ts");
  const server = new grpc.Server();
  const seen = new Map<string, number>();
  let served = 0;
  let address = "";
  server.addService(
    WHOAMI_SERVICE as unknown as import("../../lib/deps/grpc.ts").ServiceDefinition,
    {
      get: (
        call: { request: WhoAmIRequest },
        cb: (err: { code: number; details: string } | null, reply?: WhoAmIReply) => void,
      ) => {
        const id = typeof call.request?.id === "string" ? call.request.id : "";
        const attempt = id ? (seen.get(id) ?? 0) + 1 : 1;
        if (id) seen.set(id, attempt);
        if (opts.failFirstAttempt && attempt === 1) {
          return cb({ code: grpc.status.UNAVAILABLE, details: `first attempt of "${id}" refused` });
        }
        if (id) seen.delete(id);
        served++;
        cb(null, { version: opts.version, address, attempt });
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      `${opts.host}:${opts.port}`,
      grpc.ServerCredentials.createInsecure(),
      (err, p) =>
        err
          ? reject(new Error(`Cannot listen on ${opts.host}:${opts.port}: ${err.message}`))
          : resolve(p),
    )
  );
  address = `${opts.host}:${port}`;
  return {
    address,
    port,
    served: () => served,
    shutdown: () => {
      server.forceShutdown();
      return Promise.resolve();
    },
  };
}

/** Creates a WhoAmI client constructor (grpc.makeGenericClientConstructor). */
export function whoAmIClientConstructor(grpc: Grpc) {
  return grpc.makeGenericClientConstructor(
    WHOAMI_SERVICE as unknown as import("../../lib/deps/grpc.ts").ServiceDefinition,
    "WhoAmI",
  );
}

/** `spiffe://...` of a call's TLS peer certificate (its URI SAN), or "" over plaintext. */
export function peerIdentity(
  call: { getAuthContext?: () => { sslPeerCertificate?: { subjectaltname?: string } } | null },
): string {
  const san = call.getAuthContext?.()?.sslPeerCertificate?.subjectaltname ?? "";
  return /URI:(spiffe:\/\/[^,\s]+)/.exec(san)?.[1] ?? "";
}

/** A proxyless WhoAmI backend (an xDS-enabled gRPC server). */
export interface XdsWhoAmIBackend {
  /** The bound port. */
  readonly port: number;
  /** Stops the server. */
  shutdown(): void;
}

/**
 * Starts a WhoAmI backend as a proxyless gRPC server (grpc-js-xds `XdsServer` with
 * `XdsServerCredentials`): it serves once mesh-discovery sends the Listener for `address`
 * (gRFC A36) and uses TLS and RBAC as that Listener says; replies name the caller's SPIFFE
 * identity (`peer`). The process's bootstrap (`GRPC_XDS_BOOTSTRAP`) names the control plane.
 * Note: grpc-js-xds 1.14 listens on the port on every address (it ignores the host).
 */
export async function startXdsWhoAmI(
  opts: { address: string; version: string },
): Promise<XdsWhoAmIBackend> {
  const grpc: Grpc = await import("../../lib/deps/grpc.ts");
  const xds = await import("../../lib/deps/grpc_xds.ts");
  xds.register();
  const server = new xds.XdsServer();
  server.addService(
    WHOAMI_SERVICE as unknown as import("../../lib/deps/grpc.ts").ServiceDefinition,
    {
      // deno-lint-ignore no-explicit-any
      get: (call: any, cb: (e: null, r: WhoAmIReply) => void) =>
        cb(null, {
          version: opts.version,
          address: opts.address,
          attempt: 1,
          peer: peerIdentity(call),
        }),
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      opts.address,
      new xds.XdsServerCredentials(grpc.ServerCredentials.createInsecure()),
      (err, p) =>
        err ? reject(new Error(`Cannot listen on ${opts.address}: ${err.message}`)) : resolve(p),
    )
  );
  return { port, shutdown: () => server.forceShutdown() };
}
