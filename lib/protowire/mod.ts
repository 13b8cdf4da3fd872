/**
 * Protobuf's wire format by hand (https://protobuf.dev/programming-guides/encoding/), the one
 * home of the primitives every hand-written codec of mesh builds on: the xDS responses and
 * requests (`lib/xds/server/wire.ts`), the policy server's Check (`lib/mixer/wire.ts`), the CA
 * messages (`lib/pki/ca_messages.ts`), the benchmarks' clients and the test harness's Kubernetes
 * and OpenAPI codecs.
 *
 * - {@link Reader}: reads fields from a byte range; every read checks the bounds and a malformed
 *   encoding throws a {@link WireError} that says where.
 * - {@link Writer}: writes fields into a buffer whose size was computed first
 *   ({@link varintSize}, {@link fieldSize}), so a message is one allocation and no copy.
 * - {@link MessageBuilder}: collects a message's fields, then sizes and writes them with a
 *   {@link Writer}: for small messages where convenience beats the last allocation.
 *
 * @example
 * ```ts
 * import { MessageBuilder, Reader } from "./mod.ts";
 * const bytes = new MessageBuilder().string(1, "csr").uint(3, 3600).finish();
 * const r = new Reader(bytes);
 * r.tag(); // (1 << 3) | 2
 * r.string(); // "csr"
 * ```
 * @module
 */

/** Wire type of int32, int64, uint32, uint64, sint32, sint64, bool and enum fields. */
export const VARINT = 0;
/** Wire type of fixed64, sfixed64 and double fields. */
export const I64 = 1;
/** Wire type of length-delimited fields: string, bytes, messages, packed repeated fields. */
export const LEN = 2;
/** Wire type of fixed32, sfixed32 and float fields. */
export const I32 = 5;

const TWO32 = 4294967296;
const td = new TextDecoder();
const tdFatal = new TextDecoder("utf-8", { fatal: true });
const te = new TextEncoder();

/** Bytes that are not a well-formed encoding of the message being read. */
export class WireError extends Error {
  /** `WireError`. */
  override name = "WireError";
}

/**
 * UTF-8 `b[s, e)` as a string; invalid sequences become U+FFFD (as protobufjs reads them).
 * Short ASCII strings (names, versions, nonces) are built without a TextDecoder call.
 */
export function utf8(b: Uint8Array, s: number, e: number): string {
  if (e - s > 32) return td.decode(b.subarray(s, e));
  for (let i = s; i < e; i++) if (b[i] >= 0x80) return td.decode(b.subarray(s, e));
  return String.fromCharCode.apply(null, b.subarray(s, e) as unknown as number[]);
}

/** Reads protobuf fields from `b[start, end)`; every read checks the bounds. */
export class Reader {
  /** The position of the next read. */
  pos: number;
  /** Where the message being read ends: set by {@link enter} and {@link leave} around a nested one. */
  end: number;
  /** The low 32 bits of the last varint read by {@link varint64}, unsigned. */
  lo = 0;
  /** The high 32 bits of the last varint read by {@link varint64}, unsigned. */
  hi = 0;
  /** For `getFloat64`, created on the first double read. */
  #view?: DataView;
  /** A reader of `b[start, end)`. */
  constructor(readonly b: Uint8Array, start = 0, end: number = b.length) {
    this.pos = start;
    this.end = end;
  }
  /** Reads a varint of up to 64 bits into {@link lo} and {@link hi}. */
  varint64(): void {
    let lo = 0, hi = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new WireError(`truncated varint at byte ${this.pos}`);
      const c = this.b[this.pos++];
      if (i < 4) lo |= (c & 0x7f) << (7 * i);
      else if (i === 4) {
        lo |= (c & 0x0f) << 28;
        hi |= (c & 0x7f) >> 4;
      } else hi |= (c & 0x7f) << (7 * i - 32);
      if (c < 0x80) {
        this.lo = lo >>> 0;
        this.hi = hi >>> 0;
        return;
      }
    }
    throw new WireError(`varint longer than 10 bytes at byte ${this.pos}`);
  }
  /** A varint as an unsigned 32-bit number (its low 32 bits, as protobuf's uint32 reads it). */
  uint32(): number {
    const b = this.b;
    if (this.pos < this.end && b[this.pos] < 0x80) return b[this.pos++]; // one byte: most tags
    this.varint64();
    return this.lo;
  }
  /** A field's tag (field number << 3 | wire type); field number 0 is refused, as by protobuf. */
  tag(): number {
    const at = this.pos;
    const t = this.uint32();
    if (t >>> 3 === 0) throw new WireError(`field number 0 at byte ${at}`);
    return t;
  }
  /** int32: the low 32 bits, signed. */
  int32(): number {
    return this.uint32() | 0;
  }
  /** sint32: zigzag-decoded. */
  sint32(): number {
    const n = this.uint32();
    return (n >>> 1) ^ -(n & 1);
  }
  /** int64 as a number (as protobufjs's Long.toNumber: exact up to 2^53). */
  int64(): number {
    this.varint64();
    return (this.hi | 0) * TWO32 + this.lo;
  }
  /** bool: any non-zero varint is true. */
  bool(): boolean {
    this.varint64();
    return this.lo !== 0 || this.hi !== 0;
  }
  /** double (wire type {@link I64}), little-endian. */
  double(): number {
    const at = this.#advance(8);
    this.#view ??= new DataView(this.b.buffer, this.b.byteOffset, this.b.byteLength);
    return this.#view.getFloat64(at, true);
  }
  /**
   * Moves past the length-delimited payload at the current position (checking its length) and
   * returns where it starts: it ends at the new {@link pos}.
   */
  payload(): number {
    return this.#advance(this.uint32());
  }
  /** The bounds of a length-delimited payload, after its tag. */
  span(): [number, number] {
    const start = this.payload();
    return [start, this.pos];
  }
  /**
   * Enters the length-delimited payload at the current position: reads stop at its end until
   * {@link leave}, which is given the value returned here and moves past the payload.
   */
  enter(): number {
    const len = this.uint32();
    if (len > this.end - this.pos) {
      throw new WireError(`field of ${len} bytes at byte ${this.pos} runs past the end`);
    }
    const outer = this.end;
    this.end = this.pos + len;
    return outer;
  }
  /** Leaves the payload entered by {@link enter}, which returned `outer`. */
  leave(outer: number): void {
    this.pos = this.end;
    this.end = outer;
  }
  /** A string; invalid UTF-8 becomes U+FFFD, as protobufjs reads it. */
  string(): string {
    const start = this.payload();
    return utf8(this.b, start, this.pos);
  }
  /**
   * A string that must be valid UTF-8 (as Go's protobuf requires of proto3 strings).
   * @throws {WireError} `<what>: not UTF-8`.
   */
  strictString(what: string): string {
    const start = this.payload();
    try {
      return tdFatal.decode(this.b.subarray(start, this.pos));
    } catch {
      throw new WireError(`${what}: not UTF-8`);
    }
  }
  /** A copy, always a plain Uint8Array (a Node Buffer's `slice` would share the memory). */
  bytes(): Uint8Array {
    const start = this.payload();
    return new Uint8Array(this.b.subarray(start, this.pos));
  }
  /** Skips a field of wire type `wire` (groups are refused, as proto3 has none). */
  skip(wire: number): void {
    if (wire === VARINT) this.varint64();
    else if (wire === I64) this.#advance(8);
    else if (wire === LEN) this.payload();
    else if (wire === I32) this.#advance(4);
    else throw new WireError(`unsupported wire type ${wire} at byte ${this.pos}`);
  }
  /** A reader of the payload of the length-delimited field at the current position. */
  sub(): Reader {
    const [s, e] = this.span();
    return new Reader(this.b, s, e);
  }
  #advance(n: number): number {
    const at = this.pos;
    if (n > this.end - at) {
      throw new WireError(`field of ${n} bytes at byte ${at} runs past the end`);
    }
    this.pos += n;
    return at;
  }
}

/** Checks that field `no` of `message` came with wire type `want`. */
export function expectWire(no: number, wire: number, want: number, message: string): void {
  if (wire !== want) {
    throw new WireError(`${message} field ${no} has wire type ${wire}, want ${want}`);
  }
}

// ---- writing ----------------------------------------------------------------------------------

/** Bytes of the varint of a non-negative integer below 2^53. */
export function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/** Bytes of an int32/int64 value: negative numbers take ten (64-bit two's complement). */
export function int64Size(n: number): number {
  return n < 0 ? 10 : varintSize(n);
}

/** Bytes of a length-delimited field: tag + length + payload. */
export function fieldSize(payloadLen: number, field: number): number {
  return varintSize((field << 3) | LEN) + varintSize(payloadLen) + payloadLen;
}

/** Writes the varint of `n` (a non-negative integer below 2^53) at `pos`; returns the next position. */
export function writeVarint(buf: Uint8Array, pos: number, n: number): number {
  while (n >= 0x80) {
    buf[pos++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[pos++] = n;
  return pos;
}

/**
 * Writes an int32/int64 value at `pos` (a negative one as ten bytes of 64-bit two's complement,
 * as protobuf writes int32 too); returns the next position.
 */
export function writeInt64(buf: Uint8Array, pos: number, n: number): number {
  if (n >= 0) return writeVarint(buf, pos, n);
  const hi = Math.floor(n / TWO32), lo = n - hi * TWO32;
  let l = lo >>> 0, h = hi >>> 0;
  for (let i = 0; i < 9; i++) {
    buf[pos++] = (l & 0x7f) | 0x80;
    l = (l >>> 7) | ((h & 0x7f) << 25);
    h >>>= 7;
  }
  buf[pos++] = l & 0x01;
  return pos;
}

/** sint32 zigzag encoding: small magnitudes, either sign, give small varints. */
export function zigzag32(n: number): number {
  return ((n << 1) ^ (n >> 31)) >>> 0;
}

/**
 * Writes protobuf fields into `buf`, whose size the caller computed first (with
 * {@link varintSize}, {@link fieldSize}, {@link int64Size}): no bounds checks and no growth.
 */
export class Writer<B extends Uint8Array = Uint8Array> {
  /** The position of the next write. */
  pos = 0;
  /** A writer filling `buf` from its start. */
  constructor(readonly buf: B) {}
  /** A varint (a non-negative integer below 2^53), without a tag. */
  varint(n: number): void {
    this.pos = writeVarint(this.buf, this.pos, n);
  }
  /** A field's tag. */
  tag(field: number, wire: number): void {
    this.pos = writeVarint(this.buf, this.pos, (field << 3) | wire);
  }
  /** A length-delimited field holding `b` (written even when empty). */
  bytes(field: number, b: Uint8Array): void {
    this.varint((field << 3) | LEN);
    this.varint(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }
  /** Writes a field whose payload length is known and whose payload is written next by the caller. */
  header(field: number, len: number): void {
    this.varint((field << 3) | LEN);
    this.varint(len);
  }
  /** Bytes already encoded (fields with their tags), copied as they are. */
  raw(b: Uint8Array): void {
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }
  /** A varint field of an int32/int64 value (negative ones as ten bytes), written even when 0. */
  int(field: number, n: number): void {
    this.tag(field, VARINT);
    this.pos = writeInt64(this.buf, this.pos, n);
  }
}

type Op = { no: number; wire: typeof VARINT | typeof LEN; n: number; b?: Uint8Array };

/**
 * A message assembled field by field in the order of the calls, then written size-first into
 * one buffer by {@link finish}. Fields equal to their proto3 default (0, false, "") are left
 * out, as protobufjs and Go leave them out, except by {@link bytes} and {@link message}.
 */
export class MessageBuilder {
  #ops: Op[] = [];
  #size = 0;
  /** A length-delimited field holding `b`, written even when empty. */
  bytes(no: number, b: Uint8Array): this {
    this.#ops.push({ no, wire: LEN, n: b.length, b });
    this.#size += fieldSize(b.length, no);
    return this;
  }
  /** A string field, left out when empty unless `always` (repeated elements, map keys). */
  string(no: number, s: string | undefined, always = false): this {
    return s || always ? this.bytes(no, te.encode(s ?? "")) : this;
  }
  /** An embedded message (already encoded), left out when `undefined`. */
  message(no: number, b: Uint8Array | undefined): this {
    return b === undefined ? this : this.bytes(no, b);
  }
  /** An int32/int64/uint32/uint64/enum field (negative values as ten bytes), left out when 0. */
  int(no: number, n: number): this {
    if (!n) return this;
    this.#ops.push({ no, wire: VARINT, n });
    this.#size += varintSize(no << 3) + int64Size(n);
    return this;
  }
  /** A sint32 field (zigzag), left out when 0. */
  sint(no: number, n: number): this {
    return this.int(no, zigzag32(n));
  }
  /** A bool field, left out when false. */
  bool(no: number, v: boolean | undefined): this {
    return this.int(no, v ? 1 : 0);
  }
  /** The encoded size of the fields so far. */
  get size(): number {
    return this.#size;
  }
  /** The message's bytes. */
  finish(): Uint8Array<ArrayBuffer> {
    const w = new Writer(new Uint8Array(this.#size));
    for (const op of this.#ops) {
      if (op.b) w.bytes(op.no, op.b);
      else w.int(op.no, op.n);
    }
    return w.buf;
  }
}
