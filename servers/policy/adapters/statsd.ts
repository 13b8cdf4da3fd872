/**
 * The `statsd` adapter: metric instances as StatsD lines over UDP (`<prefix><name>:<v>|c|g|ms`),
 * named by a `name_template` (`{{.dimension}}` placeholders), batched up to `flush_bytes`.
 * @module
 */

import { Params } from "./params.ts";
import type { Adapter } from "./types.ts";

const TYPES = { COUNTER: "c", GAUGE: "g", DISTRIBUTION: "ms" } as const;

/** Expands `{{.name}}` placeholders from `dims`; unknown names become empty. */
export function expandTemplate(template: string, dims: Record<string, unknown>): string {
  return template.replace(
    /\{\{\s*\.([A-Za-z0-9_]+)\s*\}\}/g,
    (_, k) => (dims[k] === undefined ? "" : String(dims[k])),
  );
}

/** statsd: metric. */
export const statsd: Adapter = {
  kind: "statsd",
  templates: ["metric"],
  build(spec, env, object) {
    const p = new Params(spec, object).only([
      "address",
      "prefix",
      "flush_duration",
      "flush_bytes",
      "sampling_rate",
      "metrics",
    ]);
    const address = p.string("address", "localhost:8125");
    const m = /^(.*):(\d{1,5})$/.exec(address);
    if (!m || Number(m[2]) > 65535) return p.fail("address", `want host:port, got "${address}"`);
    const host = m[1].replace(/^\[(.*)\]$/, "$1") || "localhost", port = Number(m[2]);
    const prefix = p.string("prefix", "");
    const flushBytes = p.number("flush_bytes", 512, 1);
    const rate = p.number("sampling_rate", 1, 0);
    if (rate > 1) p.fail("sampling_rate", "must be in [0, 1]");
    const metricsP = p.sub("metrics");
    const metrics = new Map<string, { type: string; template: string }>();
    for (const [name] of Object.entries(metricsP?.spec ?? {})) {
      const mp = metricsP!.sub(name)!.only(["type", "name_template"]);
      const type = mp.enumOf("type", ["COUNTER", "GAUGE", "DISTRIBUTION"] as const, "COUNTER");
      metrics.set(name, { type: TYPES[type], template: mp.string("name_template", "") });
    }
    let socket: import("node:dgram").Socket | undefined;
    const send = async (payload: string) => {
      if (!socket) {
        const dgram = await import("node:dgram");
        socket = dgram.createSocket(host.includes(":") ? "udp6" : "udp4");
        socket.on("error", (e) => env.log.warn(`${object}: statsd socket: ${e.message}`));
        socket.unref();
      }
      socket.send(payload, port, host);
    };
    return {
      async report(instances, signal) {
        const lines: string[] = [];
        for (const i of instances) {
          const cfg = metrics.get(i.name) ?? metrics.get(i.name.split(".")[0]);
          if (!cfg) continue;
          if (rate < 1 && Math.random() >= rate) continue;
          let v = i.value.value;
          if (typeof v === "boolean") v = v ? 1 : 0;
          if (typeof v !== "number") continue;
          const dims = (i.value.dimensions ?? {}) as Record<string, unknown>;
          const name = cfg.template ? expandTemplate(cfg.template, dims) : i.name.split(".")[0];
          lines.push(`${prefix}${name}:${v}|${cfg.type}${rate < 1 ? `|@${rate}` : ""}`);
        }
        // A call past its deadline (or cancelled) sends no more datagrams.
        let batch = "";
        for (const l of lines) {
          if (batch && batch.length + 1 + l.length > flushBytes) {
            signal?.throwIfAborted();
            await send(batch);
            batch = "";
          }
          batch = batch ? `${batch}\n${l}` : l;
        }
        signal?.throwIfAborted();
        if (batch) await send(batch);
      },
      close() {
        socket?.close();
      },
    };
  },
};
