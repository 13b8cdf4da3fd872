/**
 * The aggregate registry discovery reads: the registries of `--registries` in order, then the
 * always-on ServiceEntry registry. A hostname known to several registries is taken from the
 * first; instances of that hostname come from the same registry.
 * @module
 */
import type { Service, ServiceInstance, ServiceRegistry } from "../model/types.ts";

/** Registry names accepted by `--registries`, exactly as spelled. */
export const REGISTRY_NAMES = ["Orchestrator", "RegistryA", "RegistryB", "PlatformC", "Mock"] as const;

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

/** Combines registries (first wins per hostname). */
export function aggregateRegistries(registries: readonly ServiceRegistry[]): ServiceRegistry & {
  readonly members: readonly ServiceRegistry[];
} {
  const handlers: ((kind: "services" | "endpoints") => void)[] = [];
  for (const r of registries) r.onChange((kind) => handlers.forEach((h) => h(kind)));
  const owners = () => {
    const owner = new Map<string, number>();
    registries.forEach((r, i) => {
      for (const s of r.services()) if (!owner.has(s.hostname)) owner.set(s.hostname, i);
    });
    return owner;
  };
  return {
    name: "Aggregate",
    members: registries,
    services(): Service[] {
      const owner = owners();
      return registries.flatMap((r, i) => r.services().filter((s) => owner.get(s.hostname) === i));
    },
    instances(): ServiceInstance[] {
      const owner = owners();
      return registries.flatMap((r, i) =>
        r.instances().filter((inst) => owner.get(inst.hostname) === i)
      );
    },
    onChange: (h) => void handlers.push(h),
    async start() {
      await Promise.all(registries.map((r) => r.start()));
    },
    async stop() {
      await Promise.all(registries.map((r) => r.stop()));
    },
  };
}
