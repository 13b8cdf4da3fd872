/**
 * Types shared by the xDS server pieces: the cache, the stream state machine and the transports.
 * Messages use the proto field names (snake_case), as @grpc/proto-loader gives them with
 * `keepCase: true`.
 * @module
 */

import { TYPE_URLS } from "../protos.ts";

/** Type URLs the server treats specially (ordering, wildcard): the v3 Envoy resource types. */
export const XDS_TYPES = TYPE_URLS;

/**
 * Types whose SotW responses list every subscribed resource each time, and for which an empty
 * subscription means "everything" (wildcard): Listener and Cluster.
 */
export const DEFAULT_WILDCARD_TYPES: readonly string[] = [TYPE_URLS.listener, TYPE_URLS.cluster];

/** gRPC status codes used by the state machine when it ends a stream. */
export const Status = {
  OK: 0,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

/** One shared, pre-serialized resource: `bytes` is the encoded resource message (`Any.value`). */
export interface ResourceEntry {
  /** Version of this resource (changes whenever its bytes change). */
  readonly version: string;
  /** The encoded resource message. Shared by every client; never mutate. */
  readonly bytes: Uint8Array;
}

/** What a proxy sees of one type: resource name → shared entry. */
export type ResourceMap = ReadonlyMap<string, ResourceEntry>;

/**
 * The generator: returns the resources of `typeUrl` that `proxy` should see. `names` is the
 * subscription (`null` = wildcard: every resource of the type meant for this proxy). Entries should
 * come from a {@link ResourceCache} so that bytes are shared between clients. Names not in the
 * subscription are ignored by the server.
 */
export type ResourcesFor<P> = (
  proxy: P,
  typeUrl: string,
  names: readonly string[] | null,
) => ResourceMap | Promise<ResourceMap>;

/** The Envoy `Node` of the first request, with `metadata` converted from a Struct to plain JSON. */
export interface XdsNode {
  id: string;
  cluster?: string;
  metadata?: Record<string, unknown>;
  locality?: { region?: string; zone?: string; sub_zone?: string };
  user_agent_name?: string;
  user_agent_version?: string;
  [key: string]: unknown;
}

/** `google.rpc.Status` as carried in `error_detail`. */
export interface RpcStatus {
  code?: number;
  message?: string;
}

/** A state-of-the-world `DiscoveryRequest`. */
export interface DiscoveryRequest {
  version_info?: string;
  node?: XdsNode | null;
  resource_names?: string[];
  type_url?: string;
  response_nonce?: string;
  error_detail?: RpcStatus | null;
  /**
   * The encoded `resource_names` fields (tag, length and bytes of each, in order), when the
   * transport has them (`decodeDiscoveryRequest`): equal bytes mean equal names, so a request
   * repeating the names of the subscription is recognized without decoding them.
   */
  resource_names_raw?: Uint8Array;
}

/** A `DeltaDiscoveryRequest`. */
export interface DeltaDiscoveryRequest {
  node?: XdsNode | null;
  type_url?: string;
  resource_names_subscribe?: string[];
  resource_names_unsubscribe?: string[];
  initial_resource_versions?: Record<string, string>;
  response_nonce?: string;
  error_detail?: RpcStatus | null;
}

/** One resource of a response: its name and the shared entry. */
export interface NamedResource {
  readonly name: string;
  readonly entry: ResourceEntry;
}

/**
 * A state-of-the-world `DiscoveryResponse` as produced by the state machine. Transports encode it
 * (see `encodeDiscoveryResponse`): each resource becomes an `Any` of `type_url` whose value is the
 * entry's shared bytes.
 */
export interface DiscoveryResponse {
  version_info: string;
  type_url: string;
  nonce: string;
  resources: NamedResource[];
  control_plane?: { identifier: string };
}

/** A `DeltaDiscoveryResponse` as produced by the state machine. */
export interface DeltaDiscoveryResponse {
  system_version_info: string;
  type_url: string;
  nonce: string;
  /** Changed or added resources; each carries `name`, `version` and the `Any`. */
  resources: NamedResource[];
  removed_resources: string[];
  control_plane?: { identifier: string };
}

/** Why a stream was ended by the server. */
export interface StreamEnd {
  code: number;
  message: string;
}

/**
 * The transport side of one stream, implemented by the gRPC transport and by `MemoryStream`.
 * `send` resolves when the message has been handed to the network (backpressure); the server
 * never has more than one `send` outstanding per stream.
 */
export interface XdsTransport<R> {
  /** Peer address (`ipv4:127.0.0.1:53412`) for introspection. */
  readonly peer: string;
  /** Verified client-certificate identities (URI SANs), when the transport has them. */
  readonly peerIdentities?: readonly string[];
  send(response: R): Promise<void>;
  /** Ends the stream: with a status when `end` is given, else OK. Called at most once. */
  end(end?: StreamEnd): void;
  /**
   * Stops reading the stream's connection for now (see `GrpcCall.holdReads` in lib/grpc): a push
   * holds the connections it reaches until it is sent to all. Each call is undone
   * by one {@link releaseReads}.
   */
  holdReads?(): void;
  /** Undoes one {@link holdReads}. */
  releaseReads?(): void;
}

/** A push request, given to `XdsServer.push()`. */
export type PushEvent =
  | { kind: "full" }
  | { kind: "eds"; clusters: string[] }
  | { kind: "config"; types?: string[] };

/**
 * Metrics hooks (all optional). `XdsCounters` implements them as plain counters; a Prometheus
 * adapter can implement them with prom-client.
 */
export interface XdsMetrics {
  /** Number of connected streams, after each change. */
  connections?(count: number): void;
  /** One response of `typeUrl` was sent. */
  pushed?(typeUrl: string): void;
  /** Sending a response of `typeUrl` failed or timed out. */
  sendError?(typeUrl: string, reason: "error" | "timeout"): void;
  /** The generator threw while building a response of `typeUrl`. */
  buildError?(typeUrl: string): void;
  /** A client rejected a response of `typeUrl`. */
  nack?(typeUrl: string): void;
  /** Seconds from the flush of a debounced push until every affected client was sent its responses. */
  pushDuration?(seconds: number): void;
  /** Seconds from the first event of a push until every affected client was sent its responses. */
  convergence?(seconds: number): void;
}

/** Timer functions; injectable so tests can drive the debouncer without real time. */
export interface Clock {
  /**
   * Milliseconds since the epoch, fractional: push and convergence times are often below a
   * millisecond and must not round to 0.
   */
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The real clock (sub-millisecond `now()` from the monotonic `performance` timer). */
export const systemClock: Clock = {
  now: () => performance.timeOrigin + performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as number),
};

export { type ListenerState, sumListenerStates } from "../../grpc/listener_state.ts";
