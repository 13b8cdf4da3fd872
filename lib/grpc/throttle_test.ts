import assert from "node:assert/strict";
import { addressBucket, FailureThrottle } from "./throttle.ts";

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

Deno.test("FailureThrottle: at exactly the budget connections are served at once, every time", () => {
  const { th } = throttle(4);
  for (let i = 0; i < 4; i++) th.failed("10.0.0.1");
  assert.deepEqual([th.admit("10.0.0.1"), th.admit("10.0.0.1"), th.admit("10.0.0.1")], [0, 0, 0]);
});

Deno.test("FailureThrottle: a wait of exactly maxDelayMs is still served; each failure over budget starts a full turn", () => {
  const { th } = throttle(4);
  for (let i = 0; i < 5; i++) th.failed("10.0.0.1");
  const waits = Array.from({ length: 9 }, () => th.admit("10.0.0.1"));
  assert.deepEqual(waits, [250, 500, 750, 1000, 1250, 1500, 1750, 2000, -1]);
  const { clock: c2, th: t2 } = throttle(4);
  for (let i = 0; i < 5; i++) t2.failed("10.0.0.2");
  c2.t += 100;
  t2.failed("10.0.0.2"); // still over budget: the next turn is 250 ms after this failure
  assert.equal(t2.admit("10.0.0.2"), 250);
});

Deno.test("FailureThrottle: at 4096 addresses the drained ones are forgotten, the others kept", () => {
  const { clock, th } = throttle(10);
  for (let i = 0; i < 4094; i++) th.failed(`10.1.${i >> 8}.${i & 255}`);
  clock.t += 2000; // all drained
  for (let i = 0; i < 15; i++) th.failed("10.0.0.1"); // over budget
  th.failed("10.0.0.2");
  assert.equal(th.size, 4096, "no sweep below 4096 addresses");
  th.failed("10.0.0.3");
  assert.equal(th.size, 3, "the drained addresses are gone");
  assert.ok(th.admit("10.0.0.1") > 0, "an address over budget is still paced");
});

Deno.test("FailureThrottle: the default clock is the monotonic one", () => {
  const th = new FailureThrottle(1);
  for (let i = 0; i < 3; i++) th.failed("10.0.0.1");
  const wait = th.admit("10.0.0.1");
  assert.ok(wait > 0 && wait <= 1000, `waits one turn, not ${wait}`);
});

Deno.test("FailureThrottle: IPv6 addresses count per /64, so new addresses in one /64 share its budget", () => {
  const { th } = throttle(2);
  for (let i = 1; i <= 3; i++) th.failed(`2001:db8:0:1::${i.toString(16)}`);
  assert.ok(th.admit("2001:db8:0:1:ffff:1:2:3") > 0, "another address of the /64 is not paced");
  assert.equal(th.admit("2001:db8:0:2::1"), 0, "another /64 is not affected");
  assert.equal(th.size, 1);
});

Deno.test("addressBucket() is an IPv4 address itself and an IPv6 address's /64", () => {
  assert.equal(addressBucket("10.0.0.1"), "10.0.0.1");
  assert.equal(addressBucket("2001:db8::1"), "2001:db8:0:0::/64");
  assert.equal(addressBucket("2001:DB8:0:1:2:3:4:5"), "2001:db8:0:1::/64");
  assert.equal(addressBucket("fe80::1%eth0"), "fe80:0:0:0::/64");
  assert.equal(addressBucket("::1"), "0:0:0:0::/64");
  assert.equal(addressBucket("2001:db8:1:2:3::"), "2001:db8:1:2::/64");
  assert.equal(addressBucket(""), "");
});
