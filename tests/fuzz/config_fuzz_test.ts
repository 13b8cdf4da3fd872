/**
 * Fuzz test of config validation (in process): generated documents and mutated YAML text through
 * parseDocuments + normalizeObject, as the file store and meshctl read them. Asserts a clean
 * acceptance or one-line problems, no stack overflow, no hang, objects that round-trip through
 * write and read unchanged, and xDS of accepted networking objects that passes Envoy's PGV rules.
 * The seed is printed; `FUZZ_SEED=<n>` replays a run.
 */
import assert from "node:assert/strict";
import { stringify } from "../../lib/deps/yaml.ts";
import {
  formatIssue,
  meshctlSchemas,
  type ModelSchema,
  normalizeObject,
  parseDocuments,
  policySchemas,
} from "../../lib/model/mod.ts";
import type { ConfigObject } from "../../lib/model/types.ts";
import { contentVersion } from "../../lib/store/_common.ts";
import { pgvProblems } from "../../lib/xds/pgv.ts";
import { TYPE_URLS } from "../../lib/xds/protos.ts";
import { model } from "../../lib/xds/testdata/model.ts";
import { gatewayRouter, helloV1, snapshot } from "../../lib/xds/testdata/scenarios.ts";
import { documentFor, mutateText, rng, runSeed } from "./_gen.ts";

const SEED = runSeed();
console.log(`config fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED})`);

/** Bound on one case: a hang detector, far above the ~0.1 ms a document takes. */
const HANG_MS = 2000;

const NETWORKING = ["VirtualService", "DestinationRule", "Gateway", "ServiceEntry"];
const networking = meshctlSchemas.filter((s) => NETWORKING.includes(s.kind));
const others: ModelSchema[] = [
  ...meshctlSchemas.filter((s) => !NETWORKING.includes(s.kind)),
  ...policySchemas,
];

/** One problem line per issue; each must be one bounded line. */
function checkLines(lines: string[], where: string): void {
  for (const l of lines) {
    assert.ok(!/[\n\r]/.test(l), `${where}: a message spans lines: ${JSON.stringify(l)}`);
    assert.ok(l.length < 2000, `${where}: a ${l.length}-character message`);
  }
}

/** Normalizes, timing the call; throws on a hang or a crash (with the seed and case). */
function normalize(raw: unknown, where: string) {
  const t0 = performance.now();
  let res;
  try {
    res = normalizeObject(raw, where, { defaultNamespace: "default" });
  } catch (err) {
    throw new Error(`${where}: normalizeObject threw: ${(err as Error).stack}`);
  }
  const ms = performance.now() - t0;
  assert.ok(ms < HANG_MS, `${where}: validation took ${ms.toFixed(0)} ms`);
  checkLines(res.issues.map(formatIssue), where);
  return res;
}

const TYPES = {
  listeners: TYPE_URLS.listener,
  routes: TYPE_URLS.route,
  clusters: TYPE_URLS.cluster,
  endpoints: TYPE_URLS.endpoint,
} as const;

/** PGV problems of everything a sidecar and a gateway get from a model holding `objs`. */
function xdsProblems(objs: ConfigObject[]): string[] {
  const of = (k: string) => objs.filter((o) => o.kind === k);
  const ctx = model({
    configs: {
      virtualServices: of("VirtualService"),
      destinationRules: of("DestinationRule"),
      gateways: of("Gateway"),
    },
    serviceEntries: of("ServiceEntry"),
  });
  const out: string[] = [];
  for (const proxy of [helloV1(), gatewayRouter()]) {
    let snap;
    try {
      snap = snapshot(ctx, proxy);
    } catch (err) {
      return [`generation threw: ${(err as Error).stack}`];
    }
    for (const [kind, url] of Object.entries(TYPES)) {
      for (const r of snap[kind as keyof typeof TYPES]) {
        const type = url.slice(url.lastIndexOf("/") + 1);
        out.push(...pgvProblems(type, r, `${proxy.type} ${r.name ?? r.cluster_name}`));
      }
    }
  }
  return out;
}

Deno.test(`fuzz: 10,000 generated documents validate cleanly, round-trip, and give valid xDS (seed ${SEED})`, () => {
  const r = rng(SEED);
  const accepted: ConfigObject[] = [];
  let count = 0;
  for (let i = 0; i < 10_000; i++) {
    const s = r.chance(0.6) ? r.pick(networking) : r.pick(others);
    const doc = documentFor(r, s, r.chance(0.6));
    const where = `case ${i} (seed ${SEED})`;
    const res = normalize(doc, where);
    if (!res.object) continue;
    count++;
    const o = res.object;
    // written as the file store writes it, read back as it reads: the same object
    const text = stringify(JSON.parse(JSON.stringify(o)));
    const docs = parseDocuments(text);
    assert.equal(docs.length, 1, `${where}: ${text}`);
    const back = normalize(docs[0].value, where);
    assert.deepEqual(back.object, o, `${where}: changed through write and read:\n${text}`);
    assert.equal(contentVersion(back.object!), contentVersion(o));
    if (NETWORKING.includes(o.kind)) accepted.push(o);
  }
  assert.ok(count > 1000, `only ${count} documents were accepted: the generator is too wild`);
  assert.ok(accepted.length > 300, `only ${accepted.length} networking objects accepted`);
  // xDS of accepted objects, 20 per model; a failing batch is narrowed to its objects
  const failures: string[] = [];
  for (let i = 0; i < accepted.length; i += 20) {
    const batch = accepted.slice(i, i + 20);
    if (xdsProblems(batch).length === 0) continue;
    for (const o of batch) {
      const p = xdsProblems([o]);
      if (p.length) failures.push(`${p.slice(0, 3).join("; ")}\n${stringify(o)}`);
    }
    if (failures.length === 0) failures.push(`batch ${i}: ${xdsProblems(batch).slice(0, 3)}`);
    if (failures.length >= 5) break;
  }
  assert.deepEqual(failures, [], `accepted config gives xDS Envoy rejects (seed ${SEED})`);
});

Deno.test(`fuzz: 3,000 mutated YAML texts parse and validate cleanly (seed ${SEED})`, () => {
  const r = rng(SEED ^ 0x5bd1e995);
  const all = [...networking, ...others];
  for (let i = 0; i < 3000; i++) {
    const where = `text case ${i} (seed ${SEED})`;
    const text = mutateText(r, stringify(documentFor(r, r.pick(all))));
    const t0 = performance.now();
    const docs = parseDocuments(text);
    assert.ok(performance.now() - t0 < HANG_MS, `${where}: parsing took too long`);
    for (const d of docs) {
      if (d.error !== undefined) {
        checkLines([d.error], where);
        continue;
      }
      if (d.value === null || typeof d.value !== "object") continue;
      const res = normalize(d.value, where);
      if (res.object) contentVersion(res.object);
    }
  }
});
