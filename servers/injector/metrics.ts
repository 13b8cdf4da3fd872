/**
 * Prometheus metrics of sidecar-injector (prom-client, loaded lazily): requests, injections,
 * skips and failures, and the latency of `POST /inject`.
 * @module
 */

import { promRegistry } from "../../lib/monitoring/mod.ts";
import type { Outcome } from "./webhook.ts";

/** What the server records, plus the exposition. */
export interface InjectorMetrics {
  /** One answered review: its outcome and how long it took (seconds). */
  observe(outcome: Outcome, seconds: number): void;
  /** Prometheus text exposition. */
  text(): Promise<string>;
  /** The exposition content type. */
  readonly contentType: string;
  /** Stops the process metrics' event-loop lag sampler. */
  close(): void;
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
  const { register, counter, histogram, close } = await promRegistry();
  const requests = counter(
    "sidecar_injection_requests_total",
    "AdmissionReviews received on /inject.",
  );
  const success = counter(
    "sidecar_injection_success_total",
    "Pods injected (a patch was returned).",
  );
  const skip = counter("sidecar_injection_skip_total", "Pods the injection policy left alone.");
  const failure = counter(
    "sidecar_injection_failure_total",
    "Reviews answered with an error (bad request, bad pod, template failure).",
  );
  const duration = histogram(
    "sidecar_injection_duration_seconds",
    "Time to answer POST /inject, in seconds.",
    BUCKETS,
  );
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
    close,
  };
}
