/**
 * Our hardened HTTP/2 gRPC transport, shared by every gRPC server of mesh (ADS of mesh-discovery,
 * the mesh_ca signing API, ...): `server.ts` (connections, streams, flow control, gRPC calls),
 * `hpack.ts` (RFC 7541), `frames.ts` (frame constants and the buffer pool) and `messages.ts`
 * (gRPC length-prefixed message assembly). Moved here from `lib/xds/server/h2/` when a second
 * server started to use it.
 * @module
 */

export {
  type CallHandler,
  checkRequestHeaders,
  DEFAULT_LIMITS,
  type GrpcCall,
  type GrpcListener,
  type GrpcListenOptions,
  GrpcStatus,
  H2Error,
  type H2Limits,
  type H2Options,
  listenGrpc,
  peerUris,
  percentEncode,
} from "./server.ts";
export { GrpcMessageReader, type MessageError, type MessageReaderOptions } from "./messages.ts";
export { callUnary, type UnaryCallOptions, type UnaryResult } from "./client.ts";
export { grpcTimeoutMs } from "./deadline.ts";
