/**
 * The proxy process supervisor (Istio's `pilot/pkg/proxy/agent.go`): one proxy process per hot
 * restart epoch. A new desired configuration starts a new epoch (highest live epoch + 1, first
 * 0) with its own `envoy-rev<n>.json`, and the proxy's hot restart drains the older ones. When a
 * proxy exits with an error, every epoch is stopped and the proxy restarted after
 * `retryBaseMs × 2^(attempt)`, within a budget of `retryBudget` restarts (reset by every new
 * desired configuration); when the budget is spent the supervisor fails with a clear message.
 * @module
 */

import type { Logger } from "../../lib/log/mod.ts";

/** What the proxy should run: the bootstrap text (or a file used verbatim) and its identity. */
export interface Desired {
  /** Changes whenever a new epoch is needed (bootstrap text + certificate digest). */
  readonly hash: string;
  /** The bootstrap to write to `envoy-rev<n>.json`; absent with {@link file}. */
  readonly bootstrap?: string;
  /** A configuration file used as is (`--customConfigFile`). */
  readonly file?: string;
}

/** Options of the {@link Supervisor}. */
export interface SupervisorOptions {
  readonly binaryPath: string;
  /** Directory of the `envoy-rev<n>.json` files. */
  readonly configPath: string;
  /** The proxy's arguments for an epoch and its configuration file. */
  args(epoch: number, file: string): string[];
  /** Restarts allowed after failures (default 10). */
  readonly retryBudget?: number;
  /** First restart delay (default 200 ms); doubles per failure. */
  readonly retryBaseMs?: number;
  /** Admin port, for the graceful drain at shutdown (`POST /drain_listeners?graceful`). */
  readonly adminPort?: number;
  readonly drainMs: number;
  readonly parentShutdownMs: number;
  readonly log: Logger;
  /** Called once when the budget is spent (or the binary cannot start). */
  onFatal(err: Error): void;
  /** Called when an epoch starts (tests and the bench measure from it). */
  onEpoch?(epoch: number): void;
  /** Extra environment of the proxy. */
  readonly env?: Record<string, string>;
}

interface Epoch {
  readonly n: number;
  readonly file: string;
  readonly ownsFile: boolean;
  readonly child: Deno.ChildProcess;
  aborted: boolean;
  readonly exited: Promise<Deno.CommandStatus>;
}

/** `envoy-rev<n>.json` of an epoch. */
export function revFile(configPath: string, epoch: number): string {
  return `${configPath}/envoy-rev${epoch}.json`;
}

/** Removes every `envoy-rev<n>.json` in `dir` (left by an earlier run); returns their names. */
export async function removeStaleRevFiles(dir: string): Promise<string[]> {
  const removed: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      if (e.isFile && /^envoy-rev\d+\.json(\.tmp)?$/.test(e.name)) {
        await Deno.remove(`${dir}/${e.name}`).catch(() => {});
        removed.push(e.name);
      }
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return removed.sort();
}

/** Writes `text` to `path` through a temp file and a rename. */
export async function writeAtomic(path: string, text: string, mode = 0o644): Promise<void> {
  const tmp = `${path}.tmp`;
  await Deno.writeTextFile(tmp, text, { mode });
  await Deno.chmod(tmp, mode);
  await Deno.rename(tmp, path);
}

/** Runs proxy epochs; see the module documentation. */
export class Supervisor {
  readonly #o: SupervisorOptions;
  readonly #epochs = new Map<number, Epoch>();
  readonly #maxBudget: number;
  #budget: number;
  #desired?: Desired;
  #running?: string;
  #timer?: number;
  #stopping = false;
  #failed = false;
  #queue: Promise<void> = Promise.resolve();

  /** Creates a supervisor; nothing runs until {@link update}. */
  constructor(o: SupervisorOptions) {
    this.#o = o;
    this.#maxBudget = o.retryBudget ?? 10;
    this.#budget = this.#maxBudget;
  }

  /** Epoch numbers of the live proxies, ascending. */
  get liveEpochs(): number[] {
    return [...this.#epochs.keys()].sort((a, b) => a - b);
  }

  /** Asks for `d` to run: a new epoch when it differs from what runs (restart budget reset). */
  update(d: Desired): Promise<void> {
    return this.#serial(async () => {
      if (this.#stopping || this.#failed) return;
      this.#desired = d;
      if (d.hash === this.#running && this.#epochs.size) return;
      this.#budget = this.#maxBudget;
      clearTimeout(this.#timer);
      this.#timer = undefined;
      await this.#startEpoch();
    });
  }

  #serial(f: () => Promise<void>): Promise<void> {
    const next = this.#queue.then(f);
    this.#queue = next.catch(() => {});
    return next;
  }

  async #startEpoch(): Promise<void> {
    const d = this.#desired!;
    const live = this.liveEpochs;
    const n = live.length ? live[live.length - 1] + 1 : 0;
    const file = d.file ?? revFile(this.#o.configPath, n);
    if (d.bootstrap !== undefined) await writeAtomic(file, d.bootstrap);
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(this.#o.binaryPath, {
        args: this.#o.args(n, file),
        stdin: "null",
        stdout: "inherit",
        stderr: "inherit",
        env: this.#o.env,
      }).spawn();
    } catch (e) {
      if (d.bootstrap !== undefined) await Deno.remove(file).catch(() => {});
      this.#fail(
        new Error(`Cannot start the proxy ${this.#o.binaryPath}: ${(e as Error).message}`),
      );
      return;
    }
    const epoch: Epoch = {
      n,
      file,
      ownsFile: d.bootstrap !== undefined,
      child,
      aborted: false,
      exited: child.status,
    };
    this.#epochs.set(n, epoch);
    this.#running = d.hash;
    this.#o.log.info("proxy epoch started", { epoch: n, pid: child.pid, config: file });
    this.#o.onEpoch?.(n);
    epoch.exited.then((s) => this.#serial(() => this.#onExit(epoch, s)));
  }

  async #onExit(e: Epoch, s: Deno.CommandStatus): Promise<void> {
    this.#epochs.delete(e.n);
    if (e.ownsFile) await Deno.remove(e.file).catch(() => {});
    const how = s.signal ? `signal ${s.signal}` : `code ${s.code}`;
    if (e.aborted || this.#stopping || this.#failed) {
      this.#o.log.debug("proxy epoch stopped", { epoch: e.n, status: how });
      return;
    }
    if (s.success) {
      this.#o.log.info("proxy epoch exited", { epoch: e.n });
      return;
    }
    this.#o.log.error("proxy epoch failed; stopping every epoch", { epoch: e.n, status: how });
    await this.#abortAll();
    this.#running = undefined;
    if (this.#budget <= 0) {
      this.#fail(
        new Error(
          `the proxy keeps failing (last: epoch ${e.n} exited with ${how}): ` +
            `retry budget of ${this.#maxBudget} restarts spent, giving up`,
        ),
      );
      return;
    }
    const delay = (this.#o.retryBaseMs ?? 200) * 2 ** (this.#maxBudget - this.#budget);
    this.#budget--;
    this.#o.log.warn("restarting the proxy", { in_ms: delay, retries_left: this.#budget });
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#serial(async () => {
        if (!this.#stopping && !this.#failed && !this.#epochs.size) await this.#startEpoch();
      });
    }, delay);
  }

  async #abortAll(): Promise<void> {
    const all = [...this.#epochs.values()];
    for (const e of all) {
      e.aborted = true;
      try {
        e.child.kill("SIGKILL");
      } catch { /* already gone */ }
    }
    await Promise.all(all.map((e) => e.exited));
    for (const e of all) {
      this.#epochs.delete(e.n);
      if (e.ownsFile) await Deno.remove(e.file).catch(() => {});
    }
  }

  #fail(err: Error): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#o.onFatal(err);
  }

  /**
   * Stops: asks the proxy to drain (`POST /drain_listeners?graceful` on the admin port), waits
   * the drain duration, sends SIGTERM to every epoch and SIGKILL to those still running after
   * the parent-shutdown duration; removes the `envoy-rev<n>.json` files.
   */
  async shutdown(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#timer);
    await this.#queue;
    const all = [...this.#epochs.values()];
    if (!all.length) return;
    let drained = false;
    if (this.#o.adminPort) {
      try {
        const r = await fetch(
          `http://127.0.0.1:${this.#o.adminPort}/drain_listeners?graceful`,
          { method: "POST", signal: AbortSignal.timeout(1000) },
        );
        await r.body?.cancel();
        drained = r.ok;
      } catch { /* the proxy does not answer: stop it at once */ }
    }
    if (drained) {
      this.#o.log.info("draining the proxy", { ms: this.#o.drainMs });
      await Promise.race([
        Promise.all(all.map((e) => e.exited)),
        new Promise((r) => setTimeout(r, this.#o.drainMs)),
      ]);
    }
    for (const e of all) {
      try {
        e.child.kill("SIGTERM");
      } catch { /* gone */ }
    }
    let timer: number | undefined;
    await Promise.race([
      Promise.all(all.map((e) => e.exited)),
      new Promise((r) => timer = setTimeout(r, this.#o.parentShutdownMs)),
    ]);
    clearTimeout(timer);
    for (const e of all) {
      try {
        e.child.kill("SIGKILL");
      } catch { /* gone */ }
    }
    await Promise.all(all.map((e) => e.exited));
    await this.#queue;
    for (const e of all) if (e.ownsFile) await Deno.remove(e.file).catch(() => {});
  }
}
