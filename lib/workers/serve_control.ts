/**
 * {@link serveControl}: a worker isolate's side of a `WorkerPool` (pool.ts): its `init`, its
 * requests and notes, and loggers whose lines go to the control isolate. Apart from the pool so
 * that a worker loads only this and the channel (types only from the logging).
 * @module
 */

import { adoptAcceptedDescriptors } from "../grpc/descriptors.ts";
import type { Level, Logger } from "../log/mod.ts";
import { Channel, type ChannelHandler } from "./channel.ts";

/** The argument every worker's `init` gets besides the pool's own. */
export interface WorkerInit<T = unknown> {
  /** This worker's number, from 0. */
  index: number;
  /** How many workers the pool runs. */
  count: number;
  /** Output level of each log scope in the control isolate. */
  levels: Record<string, Level>;
  /** The pool's `init(index)`. */
  arg: T;
  /**
   * The control isolate's count of descriptors its process's gRPC listeners accepted
   * (`lib/grpc/descriptors.ts`), made this worker's before `start` runs.
   */
  acceptedDescriptors?: Int32Array;
}

/** The worker's side: its channel to the control isolate, and loggers that log there. */
export interface ControlLink {
  /** Requests and notes to the control isolate. */
  readonly channel: Channel;
  /** A logger whose lines go to the control isolate's logging (below its level: dropped). */
  logger(scope?: string): Logger;
}

const ORDER = { debug: 0, info: 1, warn: 2, error: 3, none: 4 } as const;

/**
 * Serves the control isolate from inside a worker: `start(init)` answers the `init` request
 * (what it returns, or throws, is the reply), and `handlers` answer later requests; `close` is
 * expected among them.
 */
export function serveControl<T>(
  start: (init: WorkerInit<T>, link: ControlLink) => unknown,
  handlers: Record<string, ChannelHandler> = {},
): void {
  // deno-lint-ignore no-explicit-any
  const scope = globalThis as any;
  const channel = new Channel(scope);
  let levels: Record<string, Level> = {};
  const loggers = new Map<string, Logger>();
  const link: ControlLink = {
    channel,
    logger(name = "default") {
      let l = loggers.get(name);
      if (l) return l;
      const at =
        (level: "debug" | "info" | "warn" | "error") =>
        (msg: string, props?: Record<string, unknown>) => {
          const min = levels[name] ?? levels.default ?? "info";
          if (ORDER[level] >= ORDER[min]) channel.notify("log", { scope: name, level, msg, props });
        };
      l = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
      loggers.set(name, l);
      return l;
    },
  };
  channel.on("init", (arg) => {
    const init = arg as WorkerInit<T>;
    levels = init.levels;
    if (init.acceptedDescriptors) adoptAcceptedDescriptors(init.acceptedDescriptors);
    return start(init, link);
  });
  channel.on("levels", (arg) => void (levels = arg as Record<string, Level>));
  for (const [method, fn] of Object.entries(handlers)) channel.on(method, fn);
  scope.onmessage = (e: MessageEvent) => void channel.receive(e.data);
}
