import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { Subscriptions } from "./state.ts";

const raw = (s: string) => Buffer.from(s);

Deno.test("Subscriptions: one interned subscription per name set while a type state uses it, dropped with its last user", () => {
  const subs = new Subscriptions();
  assert.equal(subs.intern(new Set()).list.length, 0, "no names: the shared empty subscription");
  const a = subs.intern(new Set(["c2", "c1"]));
  assert.deepEqual(a.list, ["c1", "c2"]);
  const b = subs.intern(new Set(["c1", "c2"]));
  assert.equal(b, a, "the same names: the same object");
  subs.ref(a); // a third user (a request naming it by its bytes)
  subs.unref(a);
  subs.unref(a);
  assert.equal(subs.intern(new Set(["c1", "c2"])), a, "one user left: still interned");
  subs.unref(a);
  subs.unref(a);
  const c = subs.intern(new Set(["c1", "c2"]));
  assert.notEqual(c, a, "dropped with its last user, interned anew");
  subs.unref(a); // a stale subscription's unref does not touch the new one
  assert.equal(subs.intern(new Set(["c1", "c2"])), c);
  // names that could run together in a key stay apart
  assert.notEqual(subs.intern(new Set(["ab", "c"])), subs.intern(new Set(["a", "bc"])));
});

Deno.test("Subscriptions.byRaw() finds the most recent subscriptions by their encoded names, and not once dropped", () => {
  const subs = new Subscriptions();
  const all = Array.from({ length: 9 }, (_, i) => {
    const sub = subs.intern(new Set([`c${i}`]));
    subs.rememberRaw(sub, raw(`names-${i}`));
    return sub;
  });
  assert.equal(subs.byRaw(raw("names-8")), all[8]);
  assert.equal(subs.byRaw(raw("names-1")), all[1]);
  assert.equal(subs.byRaw(raw("names-0")), undefined, "only the 8 most recent are compared");
  assert.equal(subs.byRaw(raw("names-")), undefined);
  // the copy is kept: the transport reuses the received buffer
  const buf = raw("names-9");
  const s9 = subs.intern(new Set(["c9"]));
  subs.rememberRaw(s9, buf);
  buf[0] = 0x4e;
  assert.equal(subs.byRaw(raw("names-9")), s9);
  subs.unref(s9);
  assert.equal(subs.byRaw(raw("names-9")), undefined, "dropped with its last user");
  assert.equal(subs.byRaw(raw("names-8")), all[8], "the others stay");
});
