/**
 * The health of an informer's API server: retry backoff, and outages logged once per server (the
 * first failure of an outage is one warning for the server, not one per watch and retry; its end
 * is one info line).
 * @module
 */
import type { Logger } from "../log/mod.ts";

/** Outages per API server: the informers currently failing against it. */
const outages = new Map<string, { names: Set<string>; since: number }>();

/** One informer's view of its API server. */
export class ServerHealth {
  readonly #server: string;
  readonly #name: string;
  readonly #log: Logger;
  readonly #onRetryDelay?: (ms: number) => void;
  /** Retry delay: doubles per failure up to 10 s, back to 100 ms once a list or watch works. */
  #backoff = 100;

  constructor(server: string, name: string, log: Logger, onRetryDelay?: (ms: number) => void) {
    this.#server = server;
    this.#name = name;
    this.#log = log;
    this.#onRetryDelay = onRetryDelay;
  }

  /** A failure reaching the API server: one warning per server and outage, else debug. */
  failure(message: string): void {
    let o = outages.get(this.#server);
    if (!o) outages.set(this.#server, o = { names: new Set(), since: Date.now() });
    if (o.names.size === 0) {
      this.#log.warn(
        `Orchestrator API server ${this.#server} failing: ${message} (watches retry with ` +
          `backoff; logged once until it recovers)`,
      );
    } else this.#log.debug(message);
    o.names.add(this.#name);
  }

  /** A list or watch worked: the retry delay resets; the outage ends ({@link reachable}). */
  working(): void {
    this.#backoff = 100;
    this.reachable();
  }

  /**
   * The API server answered (a watch was established): the outage ends with its last informer,
   * the retry delay stays (a watch that then fails at once is not yet working).
   */
  reachable(): void {
    const o = outages.get(this.#server);
    if (o?.names.delete(this.#name) && o.names.size === 0) {
      outages.delete(this.#server);
      this.#log.info(
        `Orchestrator API server ${this.#server} reachable again after ${
          ((Date.now() - o.since) / 1000).toFixed(1)
        } s`,
      );
    }
  }

  /** The delay before the next retry (and doubles the following one). */
  retryDelay(): number {
    const ms = this.#backoff;
    this.#backoff = Math.min(this.#backoff * 2, 10_000);
    this.#onRetryDelay?.(ms);
    return ms;
  }

  /** A stopped informer no longer counts toward an outage. */
  forget(): void {
    const o = outages.get(this.#server);
    if (o?.names.delete(this.#name) && o.names.size === 0) outages.delete(this.#server);
  }
}

/** Waits that `resync()` or `stop()` can cut short. */
export class Sleepers {
  readonly #all = new Set<{ timer?: number; resolve: () => void }>();

  /** Resolves after `ms`, or when woken. */
  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const s = {
        timer: setTimeout(() => {
          this.#all.delete(s);
          resolve();
        }, ms),
        resolve,
      };
      this.#all.add(s);
    });
  }

  /** Waits, without a timer, until woken. */
  idle(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#all.add({ resolve });
    });
  }

  /** Ends every wait now. */
  wake(): void {
    for (const s of this.#all) {
      clearTimeout(s.timer);
      s.resolve();
    }
    this.#all.clear();
  }
}
