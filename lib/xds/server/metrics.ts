/**
 * A plain-counter implementation of the {@link XdsMetrics} hooks, for tests and debug pages.
 * @module
 */

import type { XdsMetrics } from "./types.ts";

/** Short names of the main type URLs, as used by Istio's metric labels (`cds`, `eds`, `lds`, `rds`). */
export function typeShortName(typeUrl: string): string {
  const name = typeUrl.slice(typeUrl.lastIndexOf(".") + 1);
  switch (name) {
    case "Cluster":
      return "cds";
    case "ClusterLoadAssignment":
      return "eds";
    case "Listener":
      return "lds";
    case "RouteConfiguration":
      return "rds";
    case "Secret":
      return "sds";
    default:
      return name;
  }
}

/** Counters keyed by short type name (`cds`...). Observations keep count, sum and max. */
export class XdsCounters implements XdsMetrics {
  /** Connected streams now. */
  connected = 0;
  /** Responses sent, by type (`cds`, `eds`, `lds`, `rds`). */
  readonly pushes: Record<string, number> = {};
  /** Failed or timed-out sends, by `<type>_senderr` / `<type>_timeout`. */
  readonly pushErrors: Record<string, number> = {};
  /** Generator failures, by `<type>_builderr`. */
  readonly buildErrors: Record<string, number> = {};
  /** NACKs received, by type. */
  readonly nacks: Record<string, number> = {};
  /** Push durations (s). */
  readonly pushDurations = { count: 0, sum: 0, max: 0 };
  /** Convergence times (s). */
  readonly convergenceTimes = { count: 0, sum: 0, max: 0 };

  connections(count: number): void {
    this.connected = count;
  }
  pushed(typeUrl: string): void {
    inc(this.pushes, typeShortName(typeUrl));
  }
  sendError(typeUrl: string, reason: "error" | "timeout"): void {
    inc(this.pushErrors, `${typeShortName(typeUrl)}_${reason === "error" ? "senderr" : "timeout"}`);
  }
  buildError(typeUrl: string): void {
    inc(this.buildErrors, `${typeShortName(typeUrl)}_builderr`);
  }
  nack(typeUrl: string): void {
    inc(this.nacks, typeShortName(typeUrl));
  }
  pushDuration(seconds: number): void {
    observe(this.pushDurations, seconds);
  }
  convergence(seconds: number): void {
    observe(this.convergenceTimes, seconds);
  }
}

function inc(r: Record<string, number>, k: string): void {
  r[k] = (r[k] ?? 0) + 1;
}

function observe(o: { count: number; sum: number; max: number }, v: number): void {
  o.count++;
  o.sum += v;
  if (v > o.max) o.max = v;
}
