/**
 * Snapshot.build() with bad objects: each is rejected alone with the rules that need it, and an
 * object that was in force keeps its previous version.
 */
import assert from "node:assert/strict";
import { bagOf } from "../../lib/expr/mod.ts";
import { getLogger } from "../../lib/log/mod.ts";
import type { AdapterEnv } from "./adapters/mod.ts";
import { obj } from "./_testutil.ts";
import { type AdapterRunner, Snapshot } from "./runtime.ts";

const env: AdapterEnv = {
  log: getLogger("adapters"),
  now: () => 0,
  rbac: () => ({ roles: [], bindings: [] }),
  write: () => {},
  fetch: () => Promise.reject(new Error("no fetch in tests")),
};
const run: AdapterRunner = (work) => Promise.resolve(work());
const NS = "mesh-system";

const denyRule = (name: string, handler: string, source: string) =>
  obj("rule", name, {
    match: `source.name == "${source}"`,
    actions: [{ handler, instances: ["nothing.checknothing"] }],
  });

async function code(s: Snapshot, source: string): Promise<number> {
  return (await s.check(bagOf({ "source.name": source }), run)).status.code ?? 0;
}

Deno.test("Snapshot.build() rejects a bad handler and the rule that needs it, keeping the rest", async () => {
  const { snapshot, issues } = Snapshot.build(
    [
      obj("checknothing", "nothing", {}),
      obj("denier", "good", { status: { code: 7 } }),
      obj("denier", "bad", { valid_use_count: "many" }),
      denyRule("uses-good", "good.denier", "a"),
      denyRule("uses-bad", "bad.denier", "b"),
    ],
    NS,
    env,
  );
  assert.deepEqual(issues.map((i) => [i.object, i.previousInForce]), [
    ["denier/mesh-system/bad", false],
    ["rule/mesh-system/uses-bad", false],
  ]);
  assert.match(
    issues[1].message,
    /spec\.actions\[0\]\.handler: handler "bad\.denier" was rejected$/,
  );
  assert.equal(await code(snapshot, "a"), 7);
  assert.equal(await code(snapshot, "b"), 0);
});

Deno.test("Snapshot.build() keeps the previous version of an object that turned bad, and what depends on it", async () => {
  const first = Snapshot.build(
    [
      obj("checknothing", "nothing", {}),
      obj("denier", "d", { status: { code: 7 } }),
      denyRule("r", "d.denier", "a"),
    ],
    NS,
    env,
  );
  assert.deepEqual(first.issues, []);
  const second = Snapshot.build(
    [
      obj("checknothing", "nothing", {}),
      obj("denier", "d", { status: { code: "seven" } }),
      denyRule("r", "d.denier", "a"),
      denyRule("r2", "d.denier", "b"),
    ],
    NS,
    env,
    first.snapshot,
  );
  assert.deepEqual(second.issues.map((i) => [i.object, i.previousInForce]), [
    ["denier/mesh-system/d", true],
  ]);
  assert.equal(await code(second.snapshot, "a"), 7, "the previous denier answers");
  assert.equal(await code(second.snapshot, "b"), 7, "a new rule binds to it too");
  assert.equal(
    second.snapshot.handlers.get("denier/mesh-system/d")?.handler,
    first.snapshot.handlers.get("denier/mesh-system/d")?.handler,
    "the handler in force is reused, not rebuilt",
  );
  // a rule that turns bad keeps its previous version as well
  const third = Snapshot.build(
    [
      obj("checknothing", "nothing", {}),
      obj("denier", "d", { status: { code: 7 } }),
      obj("rule", "r", { match: "source.name ==", actions: [] }),
    ],
    NS,
    env,
    second.snapshot,
  );
  assert.deepEqual(third.issues.map((i) => [i.object, i.previousInForce]), [
    ["rule/mesh-system/r", true],
  ]);
  assert.equal(await code(third.snapshot, "a"), 7);
});
