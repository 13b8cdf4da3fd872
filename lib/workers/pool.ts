/**
 * {@link WorkerPool}: the control isolate's side of W worker isolates that each run the same
 * module. A worker is started with `init` (built from the control isolate's current state, so
 * that a worker restarted after a crash starts from what is in force), answers requests over a
 * {@link Channel}, and its log lines come back to the control isolate's logging.
 * @module
 */

import {
  getLogger,
  type Level,
  type Logger,
  onOutputLevelChange,
  scopeLevels,
} from "../log/mod.ts";
import { acceptedDescriptors } from "../grpc/descriptors.ts";
import { Channel } from "./channel.ts";
import type { WorkerInit } from "./serve_control.ts";

export { type ControlLink, serveControl, type WorkerInit } from "./serve_control.ts";

/** Options of {@link WorkerPool.start}. */
export interface WorkerPoolOptions {
  /** The worker module (it calls {@link serveControl}). */
  url: URL;
  /** How many workers. */
  count: number;
  /** For log lines: `signing API worker`. */
  name: string;
  /**
   * Called when worker `index` died, before its restart is scheduled: what the control isolate
   * holds for it can go at once (its channel is closed: nothing it sent later is handled).
   */
  onDied?: (index: number) => void;
  /** The `init` request's argument for worker `index` (called again when it is restarted). */
  init: (index: number) => unknown;
  /** Called with worker `index`'s answer to `init`, each time it starts. */
  onStarted?: (index: number, reply: unknown) => void;
  /** Requests and notes the workers send to the control isolate, by method. */
  handlers?: Record<string, (arg: unknown, index: number) => unknown>;
  /**
   * Time a worker has to answer `init` (default 120 s: it loads its modules first, and under
   * `deno test` type-checks them on first use).
   */
  startTimeoutMs?: number;
  /**
   * Delay before a worker that died is started again (default 1 s). It doubles with each death of
   * that worker that comes less than {@link stableAfterMs} after its start (a failed start
   * included), up to {@link MAX_RESTART_DELAY_MS} (at least this delay): a worker that keeps dying
   * is not started again every second.
   */
  restartDelayMs?: number;
  /** A worker that ran this long is stable: its next death restarts it after the first delay again (default 10 s). */
  stableAfterMs?: number;
  /** The pool's own lines, and the workers' lines of scope `default` (default: that scope). */
  log?: Logger;
}

/** The longest delay before a worker that keeps dying is started again (ms). */
export const MAX_RESTART_DELAY_MS = 30_000;

/** One worker and its channel. */
interface Slot {
  worker: Worker;
  channel: Channel;
  /** It died (or was killed): its successor is scheduled once. */
  dead?: boolean;
  /** It answered its `init`. */
  started?: boolean;
  /** When it answered its `init` (`performance.now()`). */
  startedAt?: number;
}

/** W workers running one module; see the module doc. */
export class WorkerPool {
  #slots: Slot[] = [];
  #closing = false;
  #restarts = 0;
  /** Deaths in a row of each worker that each came soon after its start (see restartDelayMs). */
  #quickDeaths: number[] = [];
  #timers = new Set<number>();
  readonly #log: Logger;
  /** Stops sending level changes to the workers. */
  readonly #unfollow: () => void;

  private constructor(readonly opts: WorkerPoolOptions) {
    this.#log = opts.log ?? getLogger("default");
    // a level changed at run time (ctrlz) reaches the workers' loggers, which filter before sending
    this.#unfollow = onOutputLevelChange(() => {
      const levels = currentLevels();
      for (const s of this.#slots) s?.channel.notify("levels", levels);
    });
  }

  /**
   * Starts every worker and waits until each answered its `init`.
   * @throws Error naming the worker that failed (every worker is then stopped).
   */
  static async start(opts: WorkerPoolOptions): Promise<WorkerPool> {
    const pool = new WorkerPool(opts);
    try {
      await Promise.all(Array.from({ length: opts.count }, (_, i) => pool.#spawn(i)));
    } catch (e) {
      await pool.close(0);
      throw e;
    }
    return pool;
  }

  /** How many workers run. */
  get size(): number {
    return this.#slots.length;
  }

  /** Workers that answered their `init` and have not died since (a restart not yet answered: not). */
  get running(): number {
    return this.#slots.filter((s) => s?.started && !s.dead).length;
  }

  /** Workers that died (or failed to start again) and were to be started again, since the start. */
  get restarts(): number {
    return this.#restarts;
  }

  /** The pool's name ({@link WorkerPoolOptions.name}). */
  get name(): string {
    return this.opts.name;
  }

  async #spawn(index: number): Promise<void> {
    const { opts } = this;
    const worker = new Worker(opts.url, { type: "module", name: `${opts.name} ${index}` });
    const channel = new Channel(worker);
    const slot: Slot = { worker, channel };
    this.#slots[index] = slot;
    channel.on("log", (a) => {
      const { scope, level, msg, props } = a as {
        scope: string;
        level: "debug" | "info" | "warn" | "error";
        msg: string;
        props?: Record<string, unknown>;
      };
      // The pool's logger stands for the default scope (tests inject one); others by name.
      (scope === "default" && opts.log ? opts.log : getLogger(scope))[level](msg, props);
    });
    for (const [method, fn] of Object.entries(opts.handlers ?? {})) {
      channel.on(method, (arg) => fn(arg, index));
    }
    const died = Promise.withResolvers<never>();
    died.promise.catch(() => {});
    worker.onmessage = (e) => void channel.receive(e.data);
    worker.onerror = (e) => {
      e.preventDefault();
      const why = `${opts.name} ${index} failed: ${e.message}`;
      died.reject(new Error(why));
      this.#died(index, slot, why);
    };
    const init: WorkerInit = {
      index,
      count: opts.count,
      levels: currentLevels(),
      arg: opts.init(index),
      acceptedDescriptors: acceptedDescriptors(),
    };
    const ms = opts.startTimeoutMs ?? 120_000;
    let timer: number | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${opts.name} ${index} did not start within ${ms / 1000} s`)),
        ms,
      );
    });
    try {
      const reply = await Promise.race([channel.request("init", init), died.promise, timeout]);
      slot.started = true;
      slot.startedAt = performance.now();
      opts.onStarted?.(index, reply);
    } catch (e) {
      throw new Error(`${opts.name} ${index}: ${(e as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Ends worker `index` as if it had died (logged, {@link WorkerPoolOptions.onDied}, started again
   * after the delay): for tests, and for the process itself. No message of a worker or of a peer
   * can ask for it.
   */
  kill(index: number, why = "killed"): void {
    const slot = this.#slots[index];
    if (slot) this.#died(index, slot, `${this.opts.name} ${index} ${why}`);
  }

  /**
   * A worker died, or failed to start again: logged, and started again (from the current state)
   * after the delay (doubled while it keeps dying soon after its start).
   */
  #died(index: number, slot: Slot, why: string): void {
    slot.channel.close(why);
    slot.worker.terminate();
    if (slot.dead || this.#closing || this.#slots[index] !== slot) return;
    slot.dead = true;
    this.#restarts++;
    this.opts.onDied?.(index);
    const base = this.opts.restartDelayMs ?? 1000;
    const ran = slot.startedAt === undefined ? 0 : performance.now() - slot.startedAt;
    const n = this.#quickDeaths[index] = ran < (this.opts.stableAfterMs ?? 10_000)
      ? (this.#quickDeaths[index] ?? 0) + 1
      : 1;
    const delay = Math.min(base * 2 ** Math.min(n - 1, 20), Math.max(base, MAX_RESTART_DELAY_MS));
    this.#log.error(`${why}; starting it again in ${+(delay / 1000).toFixed(3)} s`);
    const t = setTimeout(() => {
      this.#timers.delete(t);
      if (this.#closing) return;
      // a start that fails (its init threw or timed out) is a death too: tried again after the
      // delay, rather than left as a worker that serves nothing
      this.#spawn(index).catch((e) => {
        const now = this.#slots[index];
        if (now) this.#died(index, now, (e as Error).message);
      });
    }, delay);
    this.#timers.add(t);
  }

  /**
   * Sends one request to every worker; resolves with their replies in worker order (a worker
   * that fails to answer gives `undefined` and is logged).
   */
  async broadcast<T = unknown>(method: string, arg?: unknown): Promise<(T | undefined)[]> {
    return await Promise.all(
      this.#slots.map((s, i) =>
        s.channel.request<T>(method, arg).catch((e) => {
          if (!this.#closing) {
            this.#log.warn(`${this.opts.name} ${i}: ${method} failed: ${(e as Error).message}`);
          }
          return undefined;
        })
      ),
    );
  }

  /** Sends one note to every worker (dropped by a worker that is dead or restarting). */
  notify(method: string, arg?: unknown): void {
    for (const s of this.#slots) s?.channel.notify(method, arg);
  }

  /**
   * Asks every worker to `close` (it stops accepting and ends its calls within `graceMs`), then
   * terminates them.
   */
  async close(graceMs = 2000): Promise<void> {
    this.#closing = true;
    this.#unfollow();
    for (const t of this.#timers) clearTimeout(t);
    const slots = this.#slots.filter(Boolean);
    await Promise.all(slots.map(async (s) => {
      let timer: number | undefined;
      await Promise.race([
        s.channel.request("close", graceMs).catch(() => {}),
        new Promise((r) => timer = setTimeout(r, graceMs + 1000)),
      ]);
      clearTimeout(timer);
      s.channel.close("the worker pool is closed");
      s.worker.terminate();
    }));
  }
}

/** The output level of every known scope now. */
function currentLevels(): Record<string, Level> {
  return Object.fromEntries(scopeLevels().map((s) => [s.name, s.outputLevel]));
}
