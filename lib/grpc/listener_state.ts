/**
 * {@link ListenerState}: what a gRPC listener tells of itself (`/ready`, `/metrics`),
 * {@link sumListenerStates}, and the default failed-connection budget their help texts name. Apart from `listener.ts` so that metrics code reads it without
 * loading the transport.
 * @module
 */

/** Default of `GrpcListenOptions.maxFailedConnectionsPerSecond` (`listener.ts`). */
export const DEFAULT_MAX_FAILED_CONNECTIONS_PER_SECOND = 20;

/** What a gRPC listener tells of its state ({@link GrpcListener} has these fields). */
export interface ListenerState {
  /** Accepting connections (false while out of file descriptors). */
  readonly accepting: boolean;
  /** Connections refused by the connection caps. */
  readonly refused: number;
  /** New connections held or refused by the failed-connection throttle. */
  readonly throttled: number;
  /** Connections closed to keep file descriptors free. */
  readonly shed: number;
}

/** Several listeners' states as one: accepting while every one is, the counts added. */
export function sumListenerStates(all: readonly ListenerState[]): ListenerState {
  let accepting = true, refused = 0, throttled = 0, shed = 0;
  for (const l of all) {
    accepting &&= l.accepting;
    refused += l.refused;
    throttled += l.throttled;
    shed += l.shed;
  }
  return { accepting, refused, throttled, shed };
}
