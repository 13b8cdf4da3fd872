/**
 * Test helpers shared by the store tests: one valid object per kind, event recording, polling.
 * @module
 */
import { parseAllDocuments } from "../deps/yaml.ts";
import { allSchemas } from "../model/mod.ts";
import type { ConfigObject, TypeSchema } from "../model/types.ts";
import type { ConfigStore, StoreEvent } from "./types.ts";

const FIXTURES = new URL("./testdata/objects.yaml", import.meta.url);

/** One valid object per schema of `schemas` (default every schema), in namespace `ns`. */
export async function fixtures(
  schemas: readonly TypeSchema[] = allSchemas,
  ns = "default",
): Promise<ConfigObject[]> {
  const docs = parseAllDocuments(await Deno.readTextFile(FIXTURES));
  const byKind = new Map<string, ConfigObject>();
  for (const d of Array.isArray(docs) ? docs : []) {
    const o = d.toJS() as ConfigObject;
    byKind.set(o.kind, o);
  }
  return schemas.map((s) => {
    const f = byKind.get(s.kind);
    const base: ConfigObject = f ? structuredClone(f) : {
      apiVersion: `${s.group}/${s.version}`,
      kind: s.kind,
      metadata: { name: `sample-${s.type}` },
      spec: {},
    };
    base.metadata.namespace = ns;
    return base;
  });
}

/** Records the events of a store's watch. */
export function recordEvents(store: ConfigStore): { events: StoreEvent[]; close(): void } {
  const events: StoreEvent[] = [];
  const h = store.watch((e) => events.push(e));
  return { events, close: () => h.close() };
}

/** Polls `cond` every 5 ms until it holds or `ms` pass; returns the elapsed milliseconds. */
export async function until(
  cond: () => boolean | Promise<boolean>,
  ms = 3000,
  what = "condition",
): Promise<number> {
  const start = performance.now();
  while (!(await cond())) {
    if (performance.now() - start > ms) {
      throw new Error(`Timed out after ${ms} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  return performance.now() - start;
}

/** `TYPE Kind/ns/name` lines of events, for compact assertions. */
export function eventLines(events: readonly StoreEvent[]): string[] {
  return events.map((e) =>
    `${e.type} ${e.object.kind}/${e.object.metadata.namespace}/${e.object.metadata.name}`
  );
}

/** A shallow "changed" copy of an object: adds a label. */
export function withLabel(o: ConfigObject, key: string, value: string): ConfigObject {
  const c = structuredClone(o);
  c.metadata.labels = { ...c.metadata.labels, [key]: value };
  return c;
}

/** The fixture object of one kind (`VirtualService`), in namespace `ns`. */
export async function fixture(kind: string, ns = "default"): Promise<ConfigObject> {
  const all = await fixtures(allSchemas, ns);
  const f = all.find((o) => o.kind === kind);
  if (!f) throw new Error(`No fixture of kind ${kind}`);
  return f;
}

/** A logger recording `level message` lines, for assertions on what a store logs. */
export function recordingLogger(): {
  lines: string[];
  log: {
    debug(m: string): void;
    info(m: string): void;
    warn(m: string): void;
    error(m: string): void;
  };
} {
  const lines: string[] = [];
  return {
    lines,
    log: {
      debug: (m: string) => void lines.push(`debug ${m}`),
      info: (m: string) => void lines.push(`info ${m}`),
      warn: (m: string) => void lines.push(`warn ${m}`),
      error: (m: string) => void lines.push(`error ${m}`),
    },
  };
}
