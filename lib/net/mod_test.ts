import assert from "node:assert/strict";
import { ephemeralLow, freePort, freeServerPort } from "./mod.ts";

Deno.test("freeServerPort() returns distinct bindable ports below the ephemeral range", () => {
  const low = ephemeralLow();
  const ports = Array.from({ length: 20 }, () => freeServerPort());
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

Deno.test("ephemeralLow() reads the range's first port, else 32768", () => {
  assert.equal(ephemeralLow(() => "32768\t60999\n"), 32768);
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
  const p = freePort("127.0.0.1");
  assert.equal(freePort("127.0.0.1", p), p, "a free preferred port is returned");
});
