/**
 * {@link registerListenerMetrics}: a gRPC listener's state (`lib/grpc`) as four gauges, so that a
 * listener out of file descriptors, or clients refused, throttled or shed by its protections, show
 * in `/metrics` rather than only in the logs.
 * @module
 */

import type { ListenerState } from "../grpc/listener_state.ts";

type Prom = typeof import("../deps/prom.ts");
type Registry = InstanceType<Prom["Registry"]>;

/** Options of {@link registerListenerMetrics}. */
export interface ListenerMetricsOptions {
  /** The metrics' names start with this (`mesh_xds`: `mesh_xds_accepting`...). */
  prefix: string;
  /** What listens, in the help texts (`ADS`, `signing API`). */
  what: string;
  /** Why a connection is refused, in the help of `<prefix>_refused_connections`. */
  refusedBecause: string;
  /** The failed-connection budget a second (a flag's name, or the number), in a help text. */
  budget: string;
  /** What else happens while the listeners cannot accept (`/ready answers 503 then`). */
  notAccepting?: string;
  /** The state, read at every scrape (listeners summed: see `sumListenerStates`). */
  read: () => ListenerState;
}

/**
 * Registers on `register` the gauges `<prefix>_accepting` (1 while the listeners accept
 * connections), `<prefix>_refused_connections`, `<prefix>_throttled_connections` and
 * `<prefix>_shed_connections` (counts since start), read from `read()` at every scrape. Summed
 * over isolates by `aggregateMetrics`, except `<prefix>_accepting`, which is the least of them: 0
 * when any isolate's listener cannot accept.
 */
export function registerListenerMetrics(
  prom: Prom,
  register: Registry,
  o: ListenerMetricsOptions,
): void {
  const registers = [register];
  const gauge = (
    name: string,
    help: string,
    value: (s: ListenerState) => number,
    aggregator: "sum" | "min" = "sum",
  ) =>
    new prom.Gauge({
      name: `${o.prefix}_${name}`,
      help,
      registers,
      aggregator,
      collect() {
        this.set(value(o.read()));
      },
    });
  gauge(
    "accepting",
    `1 while the ${o.what} listeners accept connections, 0 while one cannot (e.g. out of file ` +
      `descriptors${o.notAccepting ? `; ${o.notAccepting}` : ""}).`,
    (s) => s.accepting ? 1 : 0,
    "min",
  );
  gauge(
    "refused_connections",
    `${o.what} connections closed at once since start because ${o.refusedBecause}.`,
    (s) => s.refused,
  );
  gauge(
    "throttled_connections",
    `${o.what} connections held or refused since start because more than ${o.budget} ` +
      "connections a second from their address ended in an HTTP/2 connection error.",
    (s) => s.throttled,
  );
  gauge(
    "shed_connections",
    `${o.what} connections closed since start to keep file descriptors free (the oldest that ` +
      "had not sent their HTTP/2 preface, else the newcomer).",
    (s) => s.shed,
  );
}
