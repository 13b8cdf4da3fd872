/**
 * The policy API (`mesh.mixer.v1.Mixer`: Check, Report) as call handlers for our gRPC
 * transport (`lib/grpc`). Each call runs in the API worker pool and each adapter call in the
 * adapter worker pool: beyond their sizes, callers wait. A call's deadline (`grpc-timeout`)
 * is honoured: when it passes first, the call ends with DEADLINE_EXCEEDED and its answer, if it
 * comes later, is dropped. The call's AbortSignal (aborted by the deadline or the client's
 * cancellation) reaches the pools, where a waiting caller leaves the queue, and the adapters,
 * which stop their I/O or waits so that their worker is freed.
 * @module
 */

import {
  type CallHandler,
  type GrpcCall,
  type GrpcListenOptions,
  grpcTimeoutMs,
} from "../../lib/grpc/mod.ts";
import type { Logger } from "../../lib/log/mod.ts";
import {
  AttributeError,
  type CheckResponse,
  decodeCheck,
  decompress,
  MIXER_SERVICE,
  type MixerCodec,
  type ProtoTime,
  TrackingBag,
} from "../../lib/mixer/mod.ts";
import type { Value } from "../../lib/expr/mod.ts";
import { CallError } from "./abort.ts";
import { Code } from "./adapters/mod.ts";
import type { Pool } from "./pool.ts";
import type { Snapshot } from "./runtime.ts";

/** Hooks for the server's own metrics. */
export interface ApiMetrics {
  /** A Check answered with its precondition status code, or failed with a gRPC status. */
  check(code: number, seconds: number): void;
  /** A Report with `bags` attribute bags ended with gRPC status `code`. */
  report(code: number, bags: number, seconds: number): void;
}

/** Options of {@link mixerHandlers}. */
export interface MixerApiOptions {
  codec: MixerCodec;
  api: Pool;
  adapters: Pool;
  snapshot: () => Snapshot;
  metrics: ApiMetrics;
  log: Logger;
  /** The largest request message (bytes). */
  maxMessageSize: number;
  /** Called around each call (tracing): returns the function that ends its span. */
  span?: (name: string, call: GrpcCall) => (status: number, message?: string) => void;
  /**
   * A worker isolate's way to the control isolate (`--workers`): Reports, and Checks that ask
   * for quotas, are answered there (its adapters' state — metrics, quota counters — is one per
   * process); the answer's bytes, or a {@link CallError}.
   */
  forward?: (
    method: "Check" | "Report",
    body: Uint8Array,
    signal: AbortSignal,
  ) => Promise<Uint8Array>;
}

const duration = (ms: number): ProtoTime => {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1e6) };
};

function unary(
  name: string,
  o: MixerApiOptions,
  work: (req: Uint8Array, signal: AbortSignal) => Promise<Uint8Array>,
): CallHandler {
  return (call) => {
    let req: Uint8Array | undefined;
    let count = 0, tooBig = false, gone = false;
    let timer: number | undefined;
    const abort = new AbortController();
    const endSpan = o.span?.(name, call);
    const finish = (status: number, message?: string) => {
      clearTimeout(timer);
      endSpan?.(status, message);
      call.end(status, message);
    };
    let timeoutMs: number | undefined;
    try {
      timeoutMs = grpcTimeoutMs(call.headers);
    } catch (e) {
      gone = true;
      call.onMessage = () => {};
      call.onEnd = () => {};
      call.onCancel = () => {};
      finish(Code.INVALID_ARGUMENT, (e as Error).message);
      return;
    }
    // Beyond setTimeout's range (~24.8 days) a deadline is as good as none.
    if (timeoutMs !== undefined && timeoutMs <= 0x7fffffff) {
      // The deadline runs from the arrival of the request headers, as gRPC servers count it.
      timer = setTimeout(() => {
        gone = true;
        const message = `deadline of ${timeoutMs} ms exceeded`;
        finish(Code.DEADLINE_EXCEEDED, message);
        abort.abort(new CallError(Code.DEADLINE_EXCEEDED, message));
      }, Math.max(0, Math.ceil(timeoutMs)));
    }
    call.onMessage = (m) => {
      count++;
      if (m.length > o.maxMessageSize) tooBig = true;
      else req = new Uint8Array(m);
    };
    call.onCancel = (why) => {
      gone = true;
      clearTimeout(timer);
      abort.abort(new CallError(Code.CANCELLED, `call cancelled: ${why}`));
    };
    call.onEnd = () => {
      if (tooBig) {
        return finish(
          Code.RESOURCE_EXHAUSTED,
          `request larger than --maxMessageSize (${o.maxMessageSize} bytes)`,
        );
      }
      if (count !== 1 || !req) {
        return finish(Code.INVALID_ARGUMENT, `want exactly one request message, got ${count}`);
      }
      const body = req;
      // The pool bounds the work, not the write: a client that does not read its answer
      // holds no worker (the transport's backpressure and send timeout deal with it).
      const signal = abort.signal;
      o.api.run(() => gone ? undefined : work(body, signal), signal).then((res) => {
        if (gone || !res) return;
        // The trailers follow the message without waiting for its write: both leave in one
        // write to the socket (when the flow-control windows allow), not one each.
        call.send([res]).catch(() => {}); // rejects only when the call ended first (reset, closed)
        finish(Code.OK);
      }, (e) => {
        if (gone) return;
        const err = e instanceof CallError
          ? e
          : new CallError(Code.INTERNAL, `internal error: ${(e as Error).message}`);
        if (err.code === Code.INTERNAL) o.log.error(`${name}: ${err.message}`);
        finish(err.code, err.message);
      });
    };
  };
}

function decodeError(e: unknown): never {
  if (e instanceof AttributeError) throw new CallError(Code.INVALID_ARGUMENT, e.message);
  throw new CallError(Code.INVALID_ARGUMENT, `cannot decode the request: ${(e as Error).message}`);
}

/** The Check and Report handlers by path. */
export function mixerHandlers(o: MixerApiOptions): Map<string, CallHandler> {
  const { check, report } = mixerWork(o);
  return new Map([
    [`/${MIXER_SERVICE}/Check`, unary("Check", o, check)],
    [`/${MIXER_SERVICE}/Report`, unary("Report", o, report)],
  ]);
}

/** The work of a call: its request message in, its response message out (or a CallError). */
export type MixerWork = (body: Uint8Array, signal: AbortSignal) => Promise<Uint8Array>;

/** The work of Check and Report, without the transport (run in the API pool by the caller). */
export function mixerWork(o: MixerApiOptions): { check: MixerWork; report: MixerWork } {
  const run = <T>(f: () => T | Promise<T>, signal?: AbortSignal) => o.adapters.run(f, signal);
  /** An adapter failure as the call's error: the abort reason when the call was aborted. */
  const failed = (
    signal: AbortSignal,
    e: unknown,
    what: string,
    metric: (code: number) => void,
  ) => {
    if (signal.aborted) {
      const code = (signal.reason as CallError).code;
      metric(code);
      return signal.reason as CallError;
    }
    metric(Code.INTERNAL);
    return new CallError(Code.INTERNAL, `${what}: ${(e as Error).message}`);
  };
  const check = async (body: Uint8Array, signal: AbortSignal): Promise<Uint8Array> => {
    const started = performance.now();
    let req;
    try {
      req = decodeCheck(body);
    } catch (e) {
      o.metrics.check(Code.INVALID_ARGUMENT, 0);
      decodeError(e);
    }
    if (o.forward && Object.keys(req.quotas ?? {}).length) return o.forward("Check", body, signal);
    const tracked = new TrackingBag(req.values);
    const snap = o.snapshot();
    let pre, bag;
    try {
      bag = await snap.preprocess(tracked, run, signal);
      pre = await snap.check(bag, run, signal);
    } catch (e) {
      throw failed(signal, e, "check dispatch failed", (code) => o.metrics.check(code, 0));
    }
    const res: CheckResponse = {
      precondition: {
        status: { code: pre.status.code, message: pre.status.message ?? "" },
        valid_duration: duration(pre.validDurationMs),
        valid_use_count: pre.validUseCount,
        referenced_attributes: tracked.referenced(),
      },
      quotas: {},
    };
    if (pre.status.code === Code.OK) {
      for (const [name, q] of Object.entries(req.quotas ?? {})) {
        const amount = Number(q.amount ?? 0);
        try {
          const r = await snap.quota(
            bag,
            name,
            {
              amount,
              bestEffort: Boolean(q.best_effort),
              dedupId: (req.deduplication_id ?? "") + name,
            },
            run,
            signal,
          );
          res.quotas![name] = {
            valid_duration: duration(r.validDurationMs),
            granted_amount: r.granted,
          };
        } catch (e) {
          throw failed(signal, e, `quota "${name}" failed`, (code) => o.metrics.check(code, 0));
        }
      }
    }
    o.metrics.check(pre.status.code, (performance.now() - started) / 1000);
    return o.codec.encodeCheckResponse(res);
  };
  const report = async (body: Uint8Array, signal: AbortSignal): Promise<Uint8Array> => {
    if (o.forward) return o.forward("Report", body, signal);
    const started = performance.now();
    let req;
    try {
      req = o.codec.decodeReportRequest(body);
    } catch (e) {
      o.metrics.report(Code.INVALID_ARGUMENT, 0, 0);
      decodeError(e);
    }
    const snap = o.snapshot();
    const bag = new Map<string, Value>();
    const list = req.attributes ?? [];
    let first: string | undefined;
    for (const [i, ca] of list.entries()) {
      try {
        decompress(ca, req.global_word_count ?? 0, bag, req.default_words ?? []);
      } catch (e) {
        o.metrics.report(Code.INVALID_ARGUMENT, i, 0);
        throw new CallError(Code.INVALID_ARGUMENT, `attributes[${i}]: ${(e as Error).message}`);
      }
      try {
        const pre = await snap.preprocess({ get: (n) => bag.get(n) }, run, signal);
        await snap.report(pre, run, signal);
      } catch (e) {
        if (signal.aborted) {
          o.metrics.report((signal.reason as CallError).code, i, 0);
          throw signal.reason;
        }
        first ??= `attributes[${i}]: ${(e as Error).message}`;
      }
    }
    const code = first ? Code.INVALID_ARGUMENT : Code.OK;
    o.metrics.report(code, list.length, (performance.now() - started) / 1000);
    if (first) throw new CallError(code, first);
    return o.codec.encodeReportResponse();
  };
  return { check, report };
}

/**
 * How the API's listeners log: what clients did wrong at debug level (a client can make as many
 * lines as it likes), a listener that cannot accept connections, and its recovery, as warnings.
 */
export function listenerLogging(
  log: Logger,
): Pick<GrpcListenOptions, "onError" | "onAcceptingChange"> {
  return {
    onError: (m) => log.debug(m),
    onAcceptingChange: (ok, reason) =>
      log.warn(
        ok
          ? "Policy API accepts connections again"
          : `Policy API cannot accept connections: ${reason}`,
      ),
  };
}
