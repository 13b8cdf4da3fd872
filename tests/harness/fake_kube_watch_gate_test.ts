import assert from "node:assert/strict";
import { createWatchGate } from "./fake_kube_watch_gate.ts";

const obj = (name: string) => ({ metadata: { name } });

Deno.test("watch gate: passes events, holds them in order until release, drops matching ones", () => {
  const gate = createWatchGate();
  const seen: string[] = [];
  const pass = (type: string, name: string) =>
    gate.pass(type, obj(name), () => seen.push(`${type} ${name}`));
  pass("ADDED", "a");
  assert.deepEqual(seen, ["ADDED a"]);
  gate.hold();
  pass("MODIFIED", "a");
  pass("ADDED", "b");
  assert.equal(gate.held, 2);
  assert.deepEqual(seen, ["ADDED a"]);
  gate.release();
  assert.equal(gate.held, 0);
  assert.deepEqual(seen, ["ADDED a", "MODIFIED a", "ADDED b"]);
  // drop: only matching events, only `count` of them
  gate.drop({ type: "DELETED", name: "b" }, 2);
  pass("DELETED", "a");
  pass("MODIFIED", "b");
  pass("DELETED", "b");
  pass("DELETED", "b");
  pass("DELETED", "b");
  assert.equal(gate.dropped, 2);
  assert.deepEqual(seen.slice(3), ["DELETED a", "MODIFIED b", "DELETED b"]);
  // hold by name: the others go through
  gate.hold({ name: "a" });
  pass("MODIFIED", "a");
  pass("MODIFIED", "c");
  assert.deepEqual(seen.slice(6), ["MODIFIED c"]);
  gate.release();
  assert.deepEqual(seen.slice(6), ["MODIFIED c", "MODIFIED a"]);
  assert.throws(() => gate.drop({}, 0), /"count" must be a positive integer, got 0/);
});
