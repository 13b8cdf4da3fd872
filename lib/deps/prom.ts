/** Prometheus metrics. */
export * from "npm:prom-client@15.1.3";
