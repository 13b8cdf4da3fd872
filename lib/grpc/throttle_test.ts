import assert from "node:assert/strict";
import { FailureThrottle } from "./throttle.ts";

/** A throttle of `perSecond` on a clock the test moves. */
function throttle(perSecond: number) {
  const clock = { t: 1000 };
  return { clock, th: new FailureThrottle(perSecond, 2000, () => clock.t) };
}

Deno.test("FailureThrottle: within the budget every connection is served at once", () => {
  const { th } = throttle(3);
  for (let i = 0; i < 3; i++) th.failed("10.0.0.1");
  assert.equal(th.admit("10.0.0.1"), 0);
  assert.equal(th.admit("10.0.0.2"), 0);
});

Deno.test("FailureThrottle: past the budget new connections are paced, then refused", () => {
  const { th } = throttle(4);
  for (let i = 0; i < 5; i++) th.failed("10.0.0.1");
  // 4 a second: one each 250 ms, the first a turn after the failure over budget.
  assert.deepEqual([1, 2, 3].map(() => th.admit("10.0.0.1")), [250, 500, 750]);
  assert.equal(th.admit("10.0.0.2"), 0, "another address is not affected");
  for (let i = 0; i < 5; i++) th.admit("10.0.0.1"); // up to 2 s of waiting
  assert.equal(th.admit("10.0.0.1"), -1, "a connection that would wait over 2 s is refused");
});

Deno.test("FailureThrottle: the failures drain and the address is forgotten", () => {
  const { clock, th } = throttle(10);
  for (let i = 0; i < 15; i++) th.failed("10.0.0.1");
  assert.ok(th.admit("10.0.0.1") > 0);
  clock.t += 600; // 6 of 15 drained: 9 left, within the budget of 10
  assert.equal(th.admit("10.0.0.1"), 0);
  assert.equal(th.size, 1);
  clock.t += 1000; // all drained
  assert.equal(th.admit("10.0.0.1"), 0);
  assert.equal(th.size, 0);
});

Deno.test("FailureThrottle: a budget that is not positive is rejected", () => {
  assert.throws(() => new FailureThrottle(0), /perSecond must be > 0, got 0/);
});
