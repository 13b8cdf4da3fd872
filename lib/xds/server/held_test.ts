import assert from "node:assert/strict";
import { Held } from "./held.ts";
import type { ResourceEntry } from "./types.ts";

const entry = (version: string): ResourceEntry => ({ version, bytes: new Uint8Array() });

Deno.test("Held.retain() drops names outside the set, whether in the shared view or not", () => {
  const view = new Map([["a", entry("1")], ["b", entry("1")]]);
  const keep = new Set(["a", "b", "c"]);
  const h = new Held();
  h.replace(view);
  h.set("c", "2");
  h.set("d", "2");
  h.retain(keep); // the view is within `keep`: only own names are checked
  assert.deepEqual([...h.entries()].sort(), [["a", "1"], ["b", "1"], ["c", "2"]]);
  h.retain(new Set(["b", "c"])); // the view is not
  assert.deepEqual([...h.entries()].sort(), [["b", "1"], ["c", "2"]]);
  assert.equal(view.size, 2, "the shared view is not changed");
});
