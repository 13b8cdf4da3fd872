import assert from "node:assert/strict";
import { rng, runSeed } from "../../tests/fuzz/_gen.ts";
import {
  fieldSize,
  int64Size,
  LEN,
  MessageBuilder,
  Reader,
  utf8,
  VARINT,
  varintSize,
  WireError,
  writeInt64,
  Writer,
  writeVarint,
  zigzag32,
} from "./mod.ts";

const bytesOf = (write: (buf: Uint8Array) => number) => {
  const buf = new Uint8Array(16);
  return [...buf.subarray(0, write(buf))];
};

Deno.test("writeVarint() and writeInt64() write the encodings of the protobuf guide", () => {
  assert.deepEqual(bytesOf((b) => writeVarint(b, 0, 1)), [0x01]);
  assert.deepEqual(bytesOf((b) => writeVarint(b, 0, 150)), [0x96, 0x01]);
  assert.deepEqual(bytesOf((b) => writeVarint(b, 0, 2 ** 53 - 1)), [
    ...Array(7).fill(0xff),
    0x0f,
  ]);
  assert.deepEqual(bytesOf((b) => writeInt64(b, 0, -1)), [...Array(9).fill(0xff), 0x01]);
  assert.deepEqual(bytesOf((b) => writeInt64(b, 0, -2)), [0xfe, ...Array(8).fill(0xff), 0x01]);
  assert.deepEqual([zigzag32(0), zigzag32(-1), zigzag32(1), zigzag32(-2)], [0, 1, 2, 3]);
  assert.equal(zigzag32(-(2 ** 31)), 2 ** 32 - 1);
});

Deno.test("the sizes agree with what the writers write, for random values", () => {
  const seed = runSeed();
  console.log(`FUZZ_SEED=${seed}`);
  const r = rng(seed);
  const buf = new Uint8Array(16);
  for (let i = 0; i < 2000; i++) {
    const n = Math.floor(r.next() * 2 ** r.int(54)) * (r.chance(0.3) ? -1 : 1);
    if (n >= 0) assert.equal(writeVarint(buf, 0, n), varintSize(n), `${n}`);
    assert.equal(writeInt64(buf, 0, n), int64Size(n), `${n}`);
    const rd = new Reader(buf);
    assert.equal(rd.int64(), n === 0 ? 0 : n, `${n}`);
    assert.equal(rd.pos, int64Size(n));
  }
  assert.equal(fieldSize(0, 1), 2);
  assert.equal(fieldSize(200, 16), 2 + 2 + 200);
});

Deno.test("Writer writes size-first fields and MessageBuilder leaves proto3 defaults out", () => {
  const w = new Writer(new Uint8Array(fieldSize(2, 1) + 2 + fieldSize(1, 3)));
  w.bytes(1, Uint8Array.of(0x61, 0x62));
  w.int(2, 5);
  w.header(3, 1);
  w.raw(Uint8Array.of(0x7a));
  assert.equal(w.pos, w.buf.length);
  assert.deepEqual([...w.buf], [0x0a, 2, 0x61, 0x62, 0x10, 5, 0x1a, 1, 0x7a]);
  const m = new MessageBuilder().string(1, "").string(2, "", true).int(3, 0).bool(4, false)
    .sint(5, -1).int(6, -1).message(7, undefined).message(8, new Uint8Array()).bool(9, true);
  assert.deepEqual([...m.finish()], [
    0x12,
    0,
    0x28,
    1,
    0x30,
    ...Array(9).fill(0xff),
    0x01,
    0x42,
    0,
    0x48,
    1,
  ]);
  assert.equal(m.size, m.finish().length);
});

Deno.test("Reader reads back what MessageBuilder writes, nested messages included", () => {
  const inner = new MessageBuilder().string(1, "héllo").sint(2, -3).finish();
  const b = new MessageBuilder().message(1, inner).int(2, -(2 ** 40)).bool(3, true).finish();
  const r = new Reader(b);
  assert.equal(r.tag(), (1 << 3) | LEN);
  const outer = r.enter();
  assert.equal(r.tag(), (1 << 3) | LEN);
  assert.equal(r.string(), "héllo");
  assert.equal(r.tag(), (2 << 3) | VARINT);
  assert.equal(r.sint32(), -3);
  r.leave(outer);
  assert.equal(r.tag(), (2 << 3) | VARINT);
  assert.equal(r.int64(), -(2 ** 40));
  assert.equal(r.tag(), (3 << 3) | VARINT);
  assert.equal(r.bool(), true);
  assert.equal(r.pos, r.end);
});

Deno.test("Reader refuses malformed input with a WireError that says where", () => {
  const refused = (read: (r: Reader) => unknown, b: number[], why: RegExp) =>
    assert.throws(
      () => read(new Reader(Uint8Array.from(b))),
      (e) => e instanceof WireError && why.test(e.message),
    );
  refused((r) => r.string(), [5, 0x61], /^field of 5 bytes at byte 1 runs past the end$/);
  refused((r) => r.uint32(), [0x80], /^truncated varint at byte 1$/);
  refused((r) => r.int64(), Array(11).fill(0xff), /^varint longer than 10 bytes/);
  refused((r) => r.tag(), [0x02], /^field number 0 at byte 0$/);
  refused((r) => r.skip(3), [], /^unsupported wire type 3 at byte 0$/);
  refused((r) => r.double(), [0, 0, 0], /^field of 8 bytes at byte 0 runs past the end$/);
  refused((r) => r.strictString("name"), [1, 0xff], /^name: not UTF-8$/);
  refused((r) => r.enter(), [3, 0], /^field of 3 bytes at byte 1 runs past the end$/);
});

Deno.test("utf8() decodes short ASCII, long text and invalid bytes as TextDecoder does", () => {
  const te = new TextEncoder();
  for (const s of ["", "abc", "x".repeat(33), "é", "type.googleapis.com/" + "a".repeat(40)]) {
    const b = te.encode(s);
    assert.equal(utf8(b, 0, b.length), s);
  }
  assert.equal(utf8(Uint8Array.of(0x61, 0xff), 0, 2), "a\ufffd");
});
