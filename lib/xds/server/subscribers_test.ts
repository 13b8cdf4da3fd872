import assert from "node:assert/strict";
import { Connection, newTypeState, Subscriptions } from "./state.ts";
import { SubscriberIndex } from "./subscribers.ts";
import { XDS_TYPES } from "./types.ts";

const EDS = XDS_TYPES.endpoint;

function conn(id: string): Connection<unknown> {
  const transport = { peer: id, send: () => Promise.resolve(), end() {} };
  return new Connection(id, { id }, {}, "sotw", transport, "");
}

/** Subscriptions found for `names`: conn ids per subscription (null = wildcard), sorted. */
function found(ix: SubscriberIndex<unknown>, names: string[]): string[] {
  const out: string[] = [];
  ix.forEachSubscriber(EDS, names, (sub, conns) => {
    out.push(`${sub ? sub.list.join("+") : "*"}: ${[...conns].map((c) => c.conId).sort()}`);
  });
  return out.sort();
}

Deno.test("SubscriberIndex finds each subscription holding a name once, with its streams, and follows changes", () => {
  const subs = new Subscriptions();
  const ix = new SubscriberIndex<unknown>();
  const track = (c: Connection<unknown>, names: string[] | "*") => {
    let st = c.types.get(EDS);
    if (!st) c.types.set(EDS, st = newTypeState(EDS));
    st.wildcard = names === "*";
    st.sub = names === "*" ? st.sub : subs.intern(new Set(names));
    ix.update(c, st);
  };
  const [a, b, c, w] = ["a", "b", "c", "w"].map(conn);
  track(a, ["c1", "c2"]);
  track(b, ["c2", "c1"]); // the same interned subscription
  track(c, ["c2", "c3"]);
  assert.deepEqual(found(ix, ["c1"]), ["c1+c2: a,b"]);
  assert.deepEqual(found(ix, ["c2", "c3"]), ["c1+c2: a,b", "c2+c3: c"]);
  assert.deepEqual(found(ix, ["nope"]), []);
  track(w, "*");
  assert.deepEqual(found(ix, ["nope"]), ["*: w"]);
  // b moves to another subscription; a leaves.
  track(b, ["c3"]);
  assert.deepEqual(found(ix, ["c1"]), ["*: w", "c1+c2: a"]);
  assert.deepEqual(found(ix, ["c3"]), ["*: w", "c2+c3: c", "c3: b"]);
  ix.remove(a);
  assert.deepEqual(found(ix, ["c1"]), ["*: w"]);
  assert.deepEqual([...ix.subscribedNames(EDS)].sort(), ["c2", "c3"]);
  ix.remove(w);
  assert.deepEqual(found(ix, ["c1"]), []);
  assert.equal(ix.wildcardStreams(EDS).size, 0);
  // An update without a change is a no-op; an empty subscription indexes nothing.
  track(c, ["c2", "c3"]);
  track(b, []);
  assert.deepEqual([...ix.subscribedNames(EDS)].sort(), ["c2", "c3"]);
});
