import assert from "node:assert/strict";
import { concat } from "./testing.ts";
import { GrpcMessageReader, type MessageReaderOptions } from "./messages.ts";

/** A length-prefixed message with compressed flag `flag`. */
function prefixed(body: Uint8Array, flag = 0): Uint8Array {
  const b = new Uint8Array(5 + body.length);
  b[0] = flag;
  new DataView(b.buffer).setUint32(1, body.length);
  b.set(body, 5);
  return b;
}

const body = (n: number, seed: number) =>
  Uint8Array.from({ length: n }, (_, i) => (i * 7 + seed) & 0xff);

/** A reader whose buffers are tracked: taken, given back, and their sizes. */
function reader(opts: Partial<MessageReaderOptions<Uint8Array>> = {}) {
  const taken: number[] = [];
  const out = new Set<Uint8Array>();
  const r = new GrpcMessageReader<Uint8Array>({
    maxLength: 1000,
    take: (n) => {
      taken.push(n);
      const b = new Uint8Array(n + 16); // larger than asked, like a pool's buffers
      out.add(b);
      return b;
    },
    give: (b) => {
      assert.ok(out.delete(b), "given back once, and only buffers taken");
    },
    ...opts,
  });
  return { r, taken, out };
}

Deno.test("GrpcMessageReader: messages cut at every byte boundary arrive whole, in order", () => {
  const msgs = [body(0, 1), body(1, 2), body(300, 3), body(7, 4)];
  const stream = concat(...msgs.map((m) => prefixed(m)));
  for (let cut = 0; cut <= stream.length; cut++) {
    const { r, out } = reader();
    const got: number[][] = [];
    const on = (m: Uint8Array, c: boolean) => {
      assert.equal(c, false);
      got.push([...m]);
    };
    assert.equal(r.push(stream.subarray(0, cut), on), undefined);
    assert.equal(r.push(stream.subarray(cut), on), undefined);
    assert.deepEqual(got, msgs.map((m) => [...m]), `cut at ${cut}`);
    assert.equal(out.size, 0, `cut at ${cut}: every buffer given back`);
  }
});

Deno.test("GrpcMessageReader: byte by byte, a message over several payloads is assembled in one buffer of its size", () => {
  const m = body(40, 9);
  const stream = concat(prefixed(m), prefixed(body(2, 1)));
  const { r, taken } = reader();
  const got: number[][] = [];
  for (let i = 0; i < stream.length; i++) {
    assert.equal(r.push(stream.subarray(i, i + 1), (x) => got.push([...x])), undefined);
  }
  assert.deepEqual(got, [[...m], [...body(2, 1)]]);
  assert.deepEqual(taken, [40, 2], "one buffer per message spread over payloads");
});

Deno.test("GrpcMessageReader: a message inside one payload is a view of it (no copy)", () => {
  const p = concat(prefixed(body(10, 1)), prefixed(body(3, 2)));
  const { r, taken } = reader();
  const views: Uint8Array[] = [];
  r.push(p, (m) => views.push(m));
  assert.deepEqual(taken, []);
  assert.equal(views[0].buffer, p.buffer);
  assert.equal(views[0].byteOffset, 5);
  assert.equal(views[1].byteOffset, 20);
});

Deno.test("GrpcMessageReader: the length limit is inclusive; a longer message is refused as too large", () => {
  const { r } = reader({ maxLength: 8 });
  const got: number[] = [];
  assert.equal(r.push(prefixed(body(8, 1)), (m) => got.push(m.length)), undefined);
  assert.deepEqual(got, [8]);
  assert.deepEqual(r.push(prefixed(body(9, 1)), () => got.push(-1)), {
    tooLarge: true,
    message: "Received message larger than max (9 vs. 8)",
  });
  // A length above 2^31 (high bit of the first length byte) is not read as negative.
  const huge = new Uint8Array([0, 0x80, 0, 0, 1]);
  const { r: r2 } = reader();
  assert.deepEqual(r2.push(huge, () => {}), {
    tooLarge: true,
    message: "Received message larger than max (2147483649 vs. 1000)",
  });
  // Every length byte counts, in order: 0x01020304.
  assert.deepEqual(reader().r.push(new Uint8Array([0, 1, 2, 3, 4]), () => {}), {
    tooLarge: true,
    message: "Received message larger than max (16909060 vs. 1000)",
  });
  assert.deepEqual(got, [8]);
});

Deno.test("GrpcMessageReader: the compressed flag needs an encoding; flags above 1 are refused", () => {
  const { r } = reader();
  assert.deepEqual(r.push(prefixed(body(3, 1), 1), () => assert.fail("delivered")), {
    tooLarge: false,
    message: "Compressed message without a grpc-encoding",
  });
  assert.deepEqual(reader().r.push(prefixed(body(3, 1), 2), () => assert.fail("delivered")), {
    tooLarge: false,
    message: "Bad message flag 2",
  });
  const { r: rc } = reader({ compressed: true });
  const got: [number, boolean][] = [];
  const p = concat(prefixed(body(3, 1), 1), prefixed(body(2, 1), 0), prefixed(body(20, 1), 1));
  assert.equal(rc.push(p.subarray(0, 20), (m, c) => got.push([m.length, c])), undefined);
  assert.equal(rc.push(p.subarray(20), (m, c) => got.push([m.length, c])), undefined);
  assert.deepEqual(got, [[3, true], [2, false], [20, true]]);
  assert.deepEqual(reader({ compressed: true }).r.push(prefixed(body(1, 1), 2), () => {}), {
    tooLarge: false,
    message: "Bad message flag 2",
  });
});

Deno.test("GrpcMessageReader: go() is asked before each message; the rest of the payload is not read", () => {
  const { r } = reader();
  const got: number[] = [];
  const p = concat(prefixed(body(1, 1)), prefixed(body(2, 1)), prefixed(body(3, 1)));
  r.push(p, (m) => got.push(m.length), () => got.length < 2);
  assert.deepEqual(got, [1, 2]);
  assert.equal(r.push(p, (m) => got.push(m.length), () => false), undefined);
  assert.deepEqual(got, [1, 2]);
});

Deno.test("GrpcMessageReader: reset() gives back a partly received message and forgets a partial prefix", () => {
  const { r, out } = reader();
  const got: number[][] = [];
  const on = (m: Uint8Array) => got.push([...m]);
  r.push(prefixed(body(50, 1)).subarray(0, 20), on);
  assert.equal(out.size, 1);
  r.reset();
  assert.equal(out.size, 0, "the buffer was given back");
  r.reset(); // nothing held: nothing given twice
  r.push(new Uint8Array([0, 0]), on); // a partial prefix, then reset
  r.reset();
  r.push(prefixed(body(4, 2)), on);
  assert.deepEqual(got, [[...body(4, 2)]]);
});

Deno.test("GrpcMessageReader: a handler that throws still gets its buffer given back", () => {
  const { r, out } = reader();
  const p = prefixed(body(30, 1));
  r.push(p.subarray(0, 10), () => {});
  assert.throws(() =>
    r.push(p.subarray(10), () => {
      throw new Error("handler broke");
    }), /handler broke/);
  assert.equal(out.size, 0);
});
