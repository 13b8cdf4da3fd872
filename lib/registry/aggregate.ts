/**
 * The aggregate registry discovery reads: the registries of `--registries` in order, then the
 * always-on ServiceEntry registry. A hostname known to several registries is described by the
 * first of them; its instances are merged from all of them.
 * @module
 */
import type {
  RegistryChangeHandler,
  Service,
  ServiceInstance,
  ServiceRegistry,
} from "../model/types.ts";

/**
 * Registry names accepted by `--registries`, exactly as spelled. `Mock` is the demo's fixed
 * services (`hello`, `world`); `ServiceEntry` names no platform registry, for a mesh fed only by
 * ServiceEntries (`meshctl register`, `--configDir` files), which are always read.
 */
export const REGISTRY_NAMES = [
  "Orchestrator",
  "RegistryA",
  "RegistryB",
  "PlatformC",
  "Mock",
  "ServiceEntry",
] as const;

/** One of {@linkcode REGISTRY_NAMES}. */
export type RegistryName = typeof REGISTRY_NAMES[number];

/**
 * Validates a `--registries` list: an unknown name is an error (`Service registry X is not
 * supported.`); a duplicate is skipped with a warning.
 */
export function parseRegistries(values: readonly string[]): {
  names: RegistryName[];
  warnings: string[];
} {
  const names: RegistryName[] = [];
  const warnings: string[] = [];
  for (const v of values) {
    if (!(REGISTRY_NAMES as readonly string[]).includes(v)) {
      throw new Error(
        `Service registry ${v} is not supported. Supported: ${REGISTRY_NAMES.join(", ")}`,
      );
    }
    if (names.includes(v as RegistryName)) {
      warnings.push(`${v} registry specified multiple times; the duplicate is ignored`);
      continue;
    }
    names.push(v as RegistryName);
  }
  return { names, warnings };
}

/**
 * The concatenation of the lists `parts()` returns, made again only when one of them is another
 * list than the last time (registries hand out a new list when theirs changes, and callers never
 * change what they are given): a registry event at 100,000 instances no longer copies them all
 * for every reader.
 */
export function concatenation<T>(parts: () => T[][]): () => T[] {
  let last: T[][] = [];
  let out: T[] = [];
  return () => {
    const p = parts();
    if (p.length !== last.length || p.some((l, i) => l !== last[i])) {
      last = p;
      out = p.length === 1 ? p[0] : p.flat();
    }
    return out;
  };
}

/** The instances of `hosts` in `r`: its own lookup, else a pass over its instances. */
export function instancesOfHosts(
  r: Pick<ServiceRegistry, "instances" | "instancesOf">,
  hosts: ReadonlySet<string>,
): ServiceInstance[] {
  return r.instancesOf ? r.instancesOf(hosts) : r.instances().filter((i) => hosts.has(i.hostname));
}

/** Combines registries: services first-wins per hostname, instances from all registries. */
export function aggregateRegistries(registries: readonly ServiceRegistry[]): ServiceRegistry & {
  readonly members: readonly ServiceRegistry[];
} {
  const handlers: RegistryChangeHandler[] = [];
  for (const r of registries) r.onChange((kind, hosts) => handlers.forEach((h) => h(kind, hosts)));
  // Endpoints of one hostname are merged across registries (a service spread over several
  // clusters has endpoints in each), as the reference system's aggregate registry does.
  const instances = concatenation(() => registries.map((r) => r.instances()));
  return {
    name: "Aggregate",
    members: registries,
    services(): Service[] {
      const seen = new Set<string>();
      return registries.flatMap((r) =>
        r.services().filter((s) => !seen.has(s.hostname) && seen.add(s.hostname))
      );
    },
    instances,
    instancesOf: (hosts) => registries.flatMap((r) => instancesOfHosts(r, hosts)),
    onChange: (h) => void handlers.push(h),
    async start() {
      await Promise.all(registries.map((r) => r.start()));
    },
    async stop() {
      await Promise.all(registries.map((r) => r.stop()));
    },
  };
}
