/**
 * Prometheus metrics of sidecar-injector (prom-client, loaded lazily): requests, injections,
 * skips and failures, and the latency of `POST /inject`.
 * @module
 */

import type { Outcome } from "./webhook.ts";

/** What the server records, plus the exposition. */
export interface InjectorMetrics {
  /** One answered review: its outcome and how long it took (seconds). */
  observe(outcome: Outcome, seconds: number): void;
  /** Prometheus text exposition. */
  text(): Promise<string>;
  /** The exposition content type. */
  readonly contentType: string;
}

const BUCKETS = [
  0.0005,
  0.001,
  0.002,
  0.003,
  0.005,
  0.0075,
  0.01,
  0.015,
  0.02,
  0.03,
  0.05,
  0.075,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
];

/** Creates the metrics on a private registry (with the process metrics). */
export async function createMetrics(): Promise<InjectorMetrics> {
  const prom = await import("../../lib/deps/prom.ts");
  const register = new prom.Registry();
  prom.collectDefaultMetrics({ register });
  const registers = [register];
  const requests = new prom.Counter({
    name: "sidecar_injection_requests_total",
    help: "AdmissionReviews received on /inject.",
    registers,
  });
  const success = new prom.Counter({
    name: "sidecar_injection_success_total",
    help: "Pods injected (a patch was returned).",
    registers,
  });
  const skip = new prom.Counter({
    name: "sidecar_injection_skip_total",
    help: "Pods the injection policy left alone.",
    registers,
  });
  const failure = new prom.Counter({
    name: "sidecar_injection_failure_total",
    help: "Reviews answered with an error (bad request, bad pod, template failure).",
    registers,
  });
  const duration = new prom.Histogram({
    name: "sidecar_injection_duration_seconds",
    help: "Time to answer POST /inject, in seconds.",
    buckets: BUCKETS,
    registers,
  });
  return {
    observe(outcome, seconds) {
      requests.inc();
      if (outcome === "injected") success.inc();
      else if (outcome === "skipped") skip.inc();
      else failure.inc();
      duration.observe(seconds);
    },
    text: () => register.metrics(),
    contentType: register.contentType,
  };
}
