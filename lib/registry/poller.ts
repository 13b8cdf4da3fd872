/**
 * A polling registry: fetches a snapshot every interval, compares it with the last one, and
 * tells listeners when it changed. Shared by RegistryA, RegistryB and PlatformC.
 * @module
 */
import type {
  RegistryChangeHandler,
  Service,
  ServiceInstance,
  ServiceRegistry,
} from "../model/types.ts";
import { getLogger } from "../log/mod.ts";

/** A snapshot of a registry. */
export interface Snapshot {
  services: Service[];
  instances: ServiceInstance[];
}

/** Options of {@linkcode createPollingRegistry}. */
export interface PollingOptions {
  name: string;
  intervalMs: number;
  /** Fetches a full snapshot; throws on failure (the last good snapshot stays in force). */
  fetchSnapshot(signal: AbortSignal): Promise<Snapshot>;
}

/**
 * Polls `fetchSnapshot` every `intervalMs`. `start()` resolves after the first poll, whether it
 * succeeded or not (a failure is logged once and polling goes on).
 */
export function createPollingRegistry(opts: PollingOptions): ServiceRegistry & {
  /** Polls once now (tests, debug). */
  pollNow(): Promise<void>;
} {
  const log = getLogger("default");
  let snap: Snapshot = { services: [], instances: [] };
  let lastServices = "[]";
  let lastInstances = "[]";
  let lastError = "";
  const handlers: RegistryChangeHandler[] = [];
  let timer: number | undefined;
  const abort = new AbortController();
  let running: Promise<void> | undefined;

  async function poll(): Promise<void> {
    try {
      const next = await opts.fetchSnapshot(abort.signal);
      const s = JSON.stringify(next.services);
      const i = JSON.stringify(next.instances);
      if (lastError) log.info(`${opts.name} registry reachable again`);
      lastError = "";
      const servicesChanged = s !== lastServices;
      const instancesChanged = i !== lastInstances;
      snap = next;
      lastServices = s;
      lastInstances = i;
      if (servicesChanged) { for (const h of handlers) h("services"); }
      else if (instancesChanged) { for (const h of handlers) h("endpoints"); }
    } catch (err) {
      if (abort.signal.aborted) return;
      const msg = err instanceof Error ? err.message : String(err);
      // Log once per distinct error, not on every tick.
      if (msg !== lastError) log.warn(`${opts.name} registry poll failed: ${msg}`);
      lastError = msg;
      throw err;
    }
  }

  const pollNow = () => running ??= poll().finally(() => running = undefined);

  return {
    name: opts.name,
    services: () => snap.services,
    instances: () => snap.instances,
    onChange: (h) => void handlers.push(h),
    pollNow,
    async start() {
      try {
        await pollNow();
      } catch {
        // Already logged; the registry keeps polling and serves nothing until it answers.
      } finally {
        timer = setInterval(() => pollNow().catch(() => {}), opts.intervalMs);
      }
    },
    async stop() {
      clearInterval(timer);
      abort.abort();
      await running?.catch(() => {});
    },
  };
}

/** GETs JSON from a registry URL with a timeout; non-2xx → Error naming the status. */
export async function getJson(
  url: string,
  signal: AbortSignal,
  init: RequestInit & { client?: Deno.HttpClient } = {},
): Promise<unknown> {
  const timeout = AbortSignal.timeout(10_000);
  const res = await fetch(url, {
    ...init,
    headers: { accept: "application/json", ...(init.headers ?? {}) },
    signal: AbortSignal.any([signal, timeout]),
  });
  if (!res.ok) {
    const body = (await res.text()).slice(0, 200);
    throw new Error(`GET ${url}: HTTP ${res.status}${body ? `: ${body}` : ""}`);
  }
  return await res.json();
}
