/**
 * The vocabulary of the HTTP/2 transport: error codes (RFC 7540 §7), the SETTINGS we speak and
 * our windows (§6.5.2, §6.9), gRPC status codes, the per-connection limits ({@link H2Limits})
 * with their defaults, and the errors that end a connection.
 * @module
 */

/** HTTP/2 error codes (RFC 7540 §7). */
export const H2Error = {
  NO_ERROR: 0,
  PROTOCOL_ERROR: 1,
  INTERNAL_ERROR: 2,
  FLOW_CONTROL_ERROR: 3,
  STREAM_CLOSED: 5,
  FRAME_SIZE_ERROR: 6,
  REFUSED_STREAM: 7,
  CANCEL: 8,
  COMPRESSION_ERROR: 9,
  ENHANCE_YOUR_CALM: 11,
} as const;

/** SETTINGS identifiers (RFC 7540 §6.5.2). */
export const Setting = {
  HEADER_TABLE_SIZE: 1,
  ENABLE_PUSH: 2,
  MAX_CONCURRENT_STREAMS: 3,
  INITIAL_WINDOW_SIZE: 4,
  MAX_FRAME_SIZE: 5,
  MAX_HEADER_LIST_SIZE: 6,
} as const;

/** The initial flow-control window of the protocol (§6.9.2). */
export const DEFAULT_WINDOW = 65535;
/** The largest flow-control window (§6.9.1), also the mask of a 31-bit stream identifier. */
export const MAX_WINDOW = 0x7fffffff;
/** The largest frame payload we accept (our SETTINGS_MAX_FRAME_SIZE: the protocol default). */
export const OUR_MAX_FRAME = 16384;
/** Our per-stream receive window. */
export const RECV_WINDOW = 4 * 1024 * 1024;
/** Our connection receive window (raised by a WINDOW_UPDATE at start). */
export const CONN_RECV_WINDOW = 16 * 1024 * 1024;
/** Our SETTINGS_MAX_HEADER_LIST_SIZE. */
export const MAX_HEADER_LIST = 65536;

/**
 * Per-connection limits of the transport. Defaults ({@link DEFAULT_LIMITS}) follow Envoy's
 * `Http2ProtocolOptions`, grpc-go's keepalive defaults as Istio sets them, and nghttp2; every
 * budget that is exceeded ends the connection with GOAWAY ENHANCE_YOUR_CALM unless said otherwise.
 */
export interface H2Limits {
  /** SETTINGS_MAX_CONCURRENT_STREAMS, advertised and enforced (REFUSED_STREAM beyond it). */
  maxConcurrentStreams: number;
  /** Control frames (PING/SETTINGS acks, RST_STREAM, WINDOW_UPDATE) queued but not yet written. */
  maxOutboundControlFrames: number;
  /** Consecutive DATA/HEADERS/CONTINUATION frames with an empty payload and no END_STREAM. */
  maxConsecutiveEmptyFrames: number;
  /** WINDOW_UPDATEs allowed: 5 + 2 × (streams opened + this × DATA frames sent) (Envoy). */
  maxWindowUpdatesPerDataFrameSent: number;
  /** PRIORITY frames allowed: 5 + 2 × streams opened × (1 + this) (Envoy). */
  maxPriorityFramesPerStream: number;
  /**
   * Rapid reset (CVE-2023-44487): once this many streams were opened, the connection is closed
   * when at least half of them were reset by the client (or refused by us) within a second of
   * opening, before their response ended (Envoy's premature-reset protection).
   */
  prematureResetMinStreams: number;
  /** Frames of one header block (HEADERS + CONTINUATIONs), besides its byte bound. */
  maxHeaderBlockFrames: number;
  /** Bytes of partly received request messages held per connection (RESOURCE_EXHAUSTED beyond). */
  maxBufferedRequestBytes: number;
  /**
   * Bytes written to the socket but not yet taken by the kernel: past it we stop reading from the
   * socket and sending stream data until it drains.
   */
  maxOutboundBytes: number;
  /** A connection whose outbound backlog stays over the limit this long is closed (ms). */
  sendTimeoutMs: number;
  /** The client preface and its first SETTINGS must arrive within this (ms). */
  prefaceTimeoutMs: number;
  /**
   * Keepalive enforcement (grpc-go `EnforcementPolicy.MinTime`, with PermitWithoutStream): a
   * client PING sooner than this after the previous one is a strike; a third strike is answered
   * GOAWAY ENHANCE_YOUR_CALM `too_many_pings`. Strikes are forgiven when we send headers or data.
   */
  keepaliveMinTimeMs: number;
  /** We PING a peer that sent nothing for this long (0 = never) ... */
  keepaliveIntervalMs: number;
  /** ... and close the connection when the ack does not come within this (ms). */
  keepaliveTimeoutMs: number;
  /** After this age (± 10 % jitter) a connection gets a graceful GOAWAY (0 = no limit). */
  maxConnectionAgeMs: number;
  /** Calls still open this long after the max-age GOAWAY end with UNAVAILABLE (ms). */
  maxConnectionAgeGraceMs: number;
  /** The largest request message, after gzip decompression too (RESOURCE_EXHAUSTED beyond). */
  maxReceiveMessageBytes: number;
}

/** The defaults of {@link H2Limits} (documented in docs/ads.md "Transport"). */
export const DEFAULT_LIMITS: Readonly<H2Limits> = Object.freeze({
  maxConcurrentStreams: 100,
  maxOutboundControlFrames: 1000,
  maxConsecutiveEmptyFrames: 1,
  maxWindowUpdatesPerDataFrameSent: 10,
  maxPriorityFramesPerStream: 100,
  prematureResetMinStreams: 100,
  maxHeaderBlockFrames: 32,
  maxBufferedRequestBytes: 16 * 1024 * 1024,
  maxOutboundBytes: 16 * 1024 * 1024,
  sendTimeoutMs: 30_000,
  prefaceTimeoutMs: 10_000,
  keepaliveMinTimeMs: 15_000,
  keepaliveIntervalMs: 30_000,
  keepaliveTimeoutMs: 10_000,
  maxConnectionAgeMs: 0,
  maxConnectionAgeGraceMs: 10_000,
  maxReceiveMessageBytes: 4 * 1024 * 1024,
});

/** gRPC status codes used by the transport. */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

/** A connection error (RFC 7540 §5.4.1): the connection ends with GOAWAY `code`. */
export class ConnectionError extends Error {
  /** `debug`: GOAWAY debug data when it is not the message (`too_many_pings`). */
  constructor(readonly code: number, message: string, readonly debug = message) {
    super(message);
  }
}

/** The ENHANCE_YOUR_CALM connection error of an exceeded budget. */
export function calm(message: string): ConnectionError {
  return new ConnectionError(H2Error.ENHANCE_YOUR_CALM, message);
}

/** A request message would take the connection over its buffered-request budget. */
export class BufferBudgetError extends Error {}
