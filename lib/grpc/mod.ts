/**
 * Our hardened HTTP/2 gRPC transport, shared by every gRPC server of mesh (ADS of mesh-discovery,
 * the mesh_ca signing API, ...). This module is its only surface for code outside `lib/grpc/`.
 *
 * - `listener.ts`: {@link listenGrpc} (accept loop, connection cap, failure throttle, TLS and its
 *   reload, recovery from EMFILE);
 * - `h2/`: the HTTP/2 server side: `connection.ts` (frame parsing and dispatch, streams, budgets),
 *   `outbound.ts` (the flush scheduler), `stream.ts` (one call), `keepalive.ts`,
 *   `request_headers.ts`, `limits.ts` (error codes, settings, {@link H2Limits}), `hpack.ts`
 *   (RFC 7541) and `frames.ts` (frame constants and the buffer pool);
 * - `messages.ts` (gRPC length-prefixed message assembly), `client.ts` ({@link callUnary}),
 *   `deadline.ts`, `throttle.ts`; `testing.ts` holds the raw-frame client of the tests.
 * @module
 */

export { type GrpcListener, type GrpcListenOptions, listenGrpc, peerUris } from "./listener.ts";
export {
  DEFAULT_MAX_FAILED_CONNECTIONS_PER_SECOND,
  type ListenerState,
  sumListenerStates,
} from "./listener_state.ts";
export { type Connection, type H2Options } from "./h2/connection.ts";
export { type CallHandler, type GrpcCall, percentEncode } from "./h2/stream.ts";
export { DEFAULT_LIMITS, GrpcStatus, H2Error, type H2Limits } from "./h2/limits.ts";
export { checkRequestHeaders } from "./h2/request_headers.ts";
export { GrpcMessageReader, type MessageError, type MessageReaderOptions } from "./messages.ts";
export { callUnary, type UnaryCallOptions, type UnaryResult } from "./client.ts";
export { grpcTimeoutMs } from "./deadline.ts";
export { SharedAddressCounts } from "./address_counts.ts";
