import assert from "node:assert/strict";
import { children, ecdsaDerToP1363, ecdsaP1363ToDer, hex, oid, readTlv, time, tlv } from "./der.ts";

Deno.test("time() writes UTCTime before 2050 and GeneralizedTime from 2050 (RFC 5280)", () => {
  assert.equal(
    hex(time(new Date("2026-11-24T17:16:26.512Z"))),
    "170d" + hex(new TextEncoder().encode("261124171626Z")),
  );
  assert.equal(
    hex(time(new Date("2051-01-02T03:04:05Z"))),
    "180f" + hex(new TextEncoder().encode("20510102030405Z")),
  );
});

Deno.test("ECDSA signatures convert between P1363 and DER both ways, with and without leading zeros", () => {
  for (const first of [0x00, 0x7f, 0x80, 0xff]) {
    const p1363 = new Uint8Array(64).map((_, i) => (i * 7 + 3) & 0xff);
    p1363[0] = first;
    p1363[32] = 0x80;
    const der = ecdsaP1363ToDer(p1363);
    assert.deepEqual(ecdsaDerToP1363(der, 32), p1363);
  }
});

Deno.test("readTlv() and children() read long lengths; oid() decodes dotted form; truncation throws", () => {
  const big = tlv(0x04, new Uint8Array(300));
  assert.equal(readTlv(big).value.length, 300);
  assert.equal(children(readTlv(tlv(0x30, tlv(0x02, Uint8Array.of(1)), big)).value).length, 2);
  assert.equal(
    oid(Uint8Array.of(0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07)),
    "1.2.840.10045.3.1.7",
  );
  assert.throws(() => readTlv(big.subarray(0, 100)), /truncated content/);
});

Deno.test("tlv() writes short and long DER lengths at every boundary", () => {
  const cases: [number, string][] = [
    [0, "0400"],
    [127, "047f"],
    [128, "048180"],
    [255, "0481ff"],
    [256, "04820100"],
    [65535, "0482ffff"],
    [65536, "0483010000"],
  ];
  for (const [n, head] of cases) {
    const t = tlv(0x04, new Uint8Array(n).fill(7));
    assert.equal(hex(t.subarray(0, head.length / 2)), head, `length ${n}`);
    assert.equal(t.length, head.length / 2 + n);
    assert.equal(readTlv(t).value.length, n);
  }
  assert.equal(hex(tlv(0x30, Uint8Array.of(1), Uint8Array.of(2, 3))), "3003010203");
});
