/**
 * Cancellation of the work of a call: the call's AbortSignal (aborted when its deadline passes or
 * its client cancels) reaches the worker pools and the adapters, which stop waiting with
 * `signal.reason` (a {@link CallError} with DEADLINE_EXCEEDED or CANCELLED).
 * @module
 */

/** A failed call with its gRPC status. */
export class CallError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

/**
 * Settles as `p` does, or rejects with `signal.reason` as soon as `signal` aborts (at once when it
 * already has). `p` itself goes on: this stops the wait, not the work behind `p`.
 */
export function abortable<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
