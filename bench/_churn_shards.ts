/**
 * The simulated sidecars of the sustained churn spread over worker isolates
 * (`bench/xds.ts --client-workers K`, `_churn_worker.ts`): each opens its share on sessions of its
 * own and tracks the churn; the bench posts every change to all of them and merges their figures.
 * @module
 */

import type { ClientKind } from "./_ads_sim.ts";
import type { ChurnPart } from "./_churn.ts";
import type { OpenMessage } from "./_churn_worker.ts";

/** What each worker reported at the end. */
export interface ShardResult {
  part: ChurnPart;
  /** Its event-loop lag, p99 and max, seconds. */
  lagP99: number;
  lagMax: number;
}

/** K workers holding the churn's sidecars. */
export class ChurnShards {
  readonly #workers: Worker[];
  readonly #delivered: number[];
  readonly #live: number[];

  private constructor(workers: Worker[]) {
    this.#workers = workers;
    this.#delivered = workers.map(() => 0);
    this.#live = workers.map(() => 0);
  }

  /**
   * Starts `k` workers and has them open `sotw` + `delta` sidecars between them (node ids from 0,
   * as the bench numbers its own); resolves once every one is synced.
   */
  static async open(
    k: number,
    o: { port: number; sotw: number; delta: number; perSession: number; client: ClientKind },
  ): Promise<ChurnShards> {
    const workers = Array.from(
      { length: k },
      () => new Worker(new URL("./_churn_worker.ts", import.meta.url), { type: "module" }),
    );
    const shards = new ChurnShards(workers);
    const share = (n: number, i: number) => Math.floor(n / k) + (i < n % k ? 1 : 0);
    // delta sidecars are numbered from 100,000, as the bench numbers its own
    let firstSotw = 0, firstDelta = 100_000;
    const opened = Promise.all(workers.map((w, i) => {
      const sotw = share(o.sotw, i), delta = share(o.delta, i);
      const msg: OpenMessage = {
        port: o.port,
        firstSotw,
        firstDelta,
        sotw,
        delta,
        perSession: o.perSession,
        client: o.client,
      };
      firstSotw += sotw;
      firstDelta += delta;
      return new Promise<void>((resolve, reject) => {
        w.onmessage = (e: MessageEvent) => {
          const m = e.data;
          if (m.error) reject(new Error(`client worker ${i}: ${m.error}`));
          else if (m.ready !== undefined) {
            shards.#live[i] = m.ready;
            resolve();
          } else if (m.delivered !== undefined) {
            shards.#delivered[i] = m.delivered;
            shards.#live[i] = m.live;
          }
        };
        w.onerror = (e) => reject(new Error(`client worker ${i}: ${e.message}`));
        w.postMessage({ open: msg });
      });
    }));
    try {
      await opened;
    } catch (e) {
      for (const w of workers) w.terminate(); // else they keep the bench alive
      throw e;
    }
    return shards;
  }

  /** The next churn change, of service `svc`, posted at `epochMs`. */
  post(svc: number, epochMs: number): void {
    for (const w of this.#workers) w.postMessage({ post: [svc, epochMs] });
  }

  /** (change, proxy) deliveries so far, as last reported (every 100 ms). */
  get delivered(): number {
    return this.#delivered.reduce((a, b) => a + b, 0);
  }

  /** Sidecars whose stream is open, as last reported. */
  get live(): number {
    return this.#live.reduce((a, b) => a + b, 0);
  }

  /** Ends the churn: each worker's figures; the workers close their proxies and stop. */
  async end(): Promise<ShardResult[]> {
    try {
      const results = await Promise.all(
        this.#workers.map((w, i) =>
          new Promise<ShardResult>((resolve, reject) => {
            w.onmessage = (e: MessageEvent) => {
              if (e.data.result) resolve(e.data.result);
            };
            w.onerror = (e) => reject(new Error(`client worker ${i}: ${e.message}`));
            w.postMessage({ end: true });
          })
        ),
      );
      // the proxies' close frames are written before the isolates go
      await new Promise((r) => setTimeout(r, 500));
      return results;
    } finally {
      for (const w of this.#workers) w.terminate();
    }
  }
}
