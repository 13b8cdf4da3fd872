/**
 * Why a router or ingress proxy gets no listeners: no Gateway selects its labels. The reason
 * names the proxy's labels and every Gateway's selector (the Ingress-derived one included), so a
 * gateway deployed with the wrong label (`mesh: ingress` instead of `mesh: ingressgateway`) is
 * found from one log line.
 * @module
 */

import type { Proxy, PushContext } from "../types.ts";
import { proxyLabels } from "../node.ts";
import { indexOf } from "./context.ts";
import { selectedGateways } from "./gateway.ts";

function showLabels(labels: Record<string, unknown>): string {
  const e = Object.entries(labels);
  return e.length ? `{${e.map(([k, v]) => `${k}: ${v}`).join(", ")}}` : "{}";
}

/**
 * For a router or ingress proxy no Gateway selects, the reason in one sentence; `undefined` for
 * sidecars and for gateways that some Gateway selects.
 */
export function unselectedGatewayReason(ctx: PushContext, proxy: Proxy): string | undefined {
  if (proxy.type === "sidecar") return undefined;
  if (selectedGateways(ctx, proxy).length > 0) return undefined;
  const gws = indexOf(ctx).gateways;
  const labels = showLabels(proxyLabels(proxy));
  if (gws.length === 0) {
    return `${proxy.type} node ${proxy.id} (labels ${labels}) gets no listeners: there is no ` +
      "Gateway (create one, or an Ingress of the mesh ingress class)";
  }
  const selectors = gws.map((g) =>
    `${g.config.metadata.namespace ?? ""}/${g.config.metadata.name} selects ${
      showLabels(g.spec?.selector && typeof g.spec.selector === "object" ? g.spec.selector : {})
    }`
  );
  return `${proxy.type} node ${proxy.id} (labels ${labels}) gets no listeners: no Gateway ` +
    `selects its labels (${selectors.join("; ")})`;
}
