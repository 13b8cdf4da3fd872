import assert from "node:assert/strict";
import { ephemeralLow, freePort, freeServerPort } from "./mod.ts";

/**
 * Ports freeServerPort() handed out in this file: it never hands one out twice in a process, so
 * a later test must not count on getting one of them (one of 20 random ports falling in a later
 * test's pair made that test fail once in a few hundred runs).
 */
const handed = new Set<number>();

Deno.test("freeServerPort() returns distinct bindable ports below the ephemeral range", () => {
  const low = ephemeralLow();
  const ports = Array.from({ length: 20 }, () => freeServerPort());
  for (const p of ports) handed.add(p);
  assert.equal(new Set(ports).size, 20, "never the same port twice");
  for (const p of ports) {
    assert.ok(p >= 10_000 && p < low, `${p} not in [10000, ${low})`);
    Deno.listen({ hostname: "0.0.0.0", port: p }).close(); // free to bind
  }
});

Deno.test("freeServerPort() fails naming the range when every port in it is taken", () => {
  // a range of one port (10000), held by us or by someone else: every try fails
  let held: Deno.Listener | undefined;
  try {
    held = Deno.listen({ hostname: "0.0.0.0", port: 10_000 });
  } catch { /* already taken by another program: as good */ }
  try {
    assert.throws(() => freeServerPort(10_001), /no free port found between 10000 and 10001/);
  } finally {
    held?.close();
  }
});

Deno.test("freeServerPort() never hands out a port twice, even in a range of two", () => {
  // two adjacent free ports, found first
  let from = 0;
  for (let p = 20_000 + Math.floor(Math.random() * 9000); p < 29_990 && !from; p += 2) {
    if (handed.has(p) || handed.has(p + 1)) continue;
    try {
      Deno.listen({ hostname: "0.0.0.0", port: p }).close();
      Deno.listen({ hostname: "0.0.0.0", port: p + 1 }).close();
      from = p;
    } catch { /* taken: the next pair */ }
  }
  assert.ok(from, "no two adjacent free ports");
  const a = freeServerPort(from + 2, from);
  const b = freeServerPort(from + 2, from);
  assert.deepEqual([a, b].sort(), [from, from + 1]);
  assert.throws(() => freeServerPort(from + 2, from), /no free port found between/);
});

Deno.test("ephemeralLow() reads the range's first port, else 32768", () => {
  const [first] = Deno.readTextFileSync("/proc/sys/net/ipv4/ip_local_port_range").split(/\s+/);
  assert.equal(ephemeralLow(), Number(first) > 10_000 ? Number(first) : 32768, "this machine's");
  assert.equal(ephemeralLow(() => "32768\t60999\n"), 32768);
  assert.equal(ephemeralLow(() => "65535 65535"), 65535);
  assert.equal(ephemeralLow(() => "10000 60999"), 32768, "not above 10000");
  assert.equal(ephemeralLow(() => "70000 80000"), 32768, "not a port");
  assert.equal(ephemeralLow(() => "40000 60999"), 40000);
  assert.equal(ephemeralLow(() => "1024 60999"), 32768, "a range reaching low ports is ignored");
  assert.equal(ephemeralLow(() => "junk"), 32768);
  assert.equal(
    ephemeralLow(() => {
      throw new Error("no /proc");
    }),
    32768,
  );
});

Deno.test("freePort() gives the preferred port when free, another when it is taken", () => {
  const held = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const taken = (held.addr as Deno.NetAddr).port;
    const other = freePort("127.0.0.1", taken);
    assert.notEqual(other, taken);
    assert.ok(other > 0);
  } finally {
    held.close();
  }
  const p = freePort();
  assert.equal(freePort("127.0.0.1", p), p, "a free preferred port is returned");
});
