/**
 * Test helpers shared by the store tests: one valid object per kind, event recording, polling.
 * @module
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "../deps/yaml.ts";
import type { Logger } from "../log/mod.ts";
import { recordingLogger as recording } from "../log/testing.ts";
import { allSchemas } from "../model/mod.ts";
import type { ConfigObject, TypeSchema } from "../model/types.ts";
import { createFileStore } from "./file.ts";
import { type ConfigStore, NotFoundError, type StoreEvent } from "./types.ts";

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

/**
 * What every store does with `current` (a stored version of the VirtualService fixture `vs`): an
 * update without resourceVersion wins (last writer), and updating or deleting an object that is
 * not there throws NotFoundError.
 */
export async function checkUnversionedAndMissing(
  store: ConfigStore,
  vs: ConfigObject,
  current: ConfigObject,
): Promise<void> {
  const noRv = withLabel(current, "a", "d");
  delete noRv.metadata.resourceVersion;
  assert.equal((await store.update(noRv)).metadata.labels?.a, "d");
  const missing = structuredClone(vs);
  missing.metadata.name = "nope";
  await assert.rejects(store.update(missing), NotFoundError);
  await assert.rejects(store.delete("virtualservice", "nope", "default"), NotFoundError);
}

/** The fixture object of one kind (`VirtualService`), in namespace `ns`. */
export async function fixture(kind: string, ns = "default"): Promise<ConfigObject> {
  const all = await fixtures(allSchemas, ns);
  const f = all.find((o) => o.kind === kind);
  if (!f) throw new Error(`No fixture of kind ${kind}`);
  return f;
}

/** A logger recording `level message` lines, for assertions on what a store logs. */
export function recordingLogger(): { lines: string[]; log: Logger } {
  const log = recording();
  return { lines: log.lines, log };
}

/** A VirtualService document (YAML) `name` whose one route goes to `host`. */
export const vsYaml = (name: string, host = name): string =>
  `apiVersion: networking.mesh.io/v1alpha3
kind: VirtualService
metadata: { name: ${name} }
spec:
  hosts: [${host}]
  http:
  - route:
    - destination: { host: ${host} }
`;

/**
 * Runs `fn` with a new temporary directory (`prefix`) holding `files` (paths relative to it,
 * subdirectories made), removed afterwards. With `settled`, each file's times are set an hour
 * back: not "possibly still being written" for the file store.
 */
export async function withFilesDir(
  prefix: string,
  files: Record<string, string>,
  fn: (dir: string) => Promise<void>,
  { settled = false } = {},
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix });
  try {
    const old = new Date(Date.now() - 3600_000);
    for (const [rel, text] of Object.entries(files)) {
      const slash = rel.lastIndexOf("/");
      if (slash > 0) await Deno.mkdir(`${dir}/${rel.slice(0, slash)}`, { recursive: true });
      await Deno.writeTextFile(`${dir}/${rel}`, text);
      if (settled) await Deno.utime(`${dir}/${rel}`, old, old);
    }
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * Runs `fn` with a file store (no watcher, no polling) over a temp directory whose `a.yaml` held
 * the VirtualServices a and b and was rewritten in place a moment ago without b, and synced: b is
 * held for the quiet period (2 s). Closes the store and removes the directory afterwards.
 */
export async function withJustRewritten(
  prefix: string,
  fn: (store: Awaited<ReturnType<typeof createFileStore>>, dir: string) => Promise<void>,
): Promise<void> {
  await withFilesDir(prefix, { "a.yaml": `${vsYaml("a")}---\n${vsYaml("b")}` }, async (dir) => {
    const store = await createFileStore({ dir, log: false, watchFs: false, pollMs: 600_000 });
    try {
      await Deno.writeTextFile(`${dir}/a.yaml`, vsYaml("a"));
      await store.sync();
      await fn(store, dir);
    } finally {
      await store.close();
    }
  });
}
