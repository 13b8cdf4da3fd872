/**
 * HPACK (RFC 7541) header compression for the HTTP/2 server: a stateful {@link HpackDecoder} (one
 * per connection) and a stateless {@link encodeHeaders} that never uses a dynamic table.
 *
 * Decoded strings are turned into JavaScript strings as UTF-8 (non-fatal: invalid sequences become
 * U+FFFD); ASCII, which is all that HTTP/2 and gRPC send in practice, takes a fast path. The encoder
 * writes UTF-8, so any string survives an encode/decode round trip.
 * @module
 */

/** A header field list, in order, names lower-case as on the wire. */
export type HeaderList = Array<[name: string, value: string]>;

/** Thrown on a malformed header block (the connection must then fail with COMPRESSION_ERROR). */
export class HpackError extends Error {
  override name = "HpackError";
}

/**
 * Thrown by {@link HpackDecoder.decode} when the decoded list exceeds `maxHeaderListSize`. It is an
 * {@link HpackError}, but the whole block was still decoded, so the dynamic table stays in step with
 * the peer's: the caller may answer with a stream error (e.g. RST_STREAM, or a 431 / gRPC status)
 * instead of failing the connection.
 */
export class HeaderListTooLargeError extends HpackError {
  override name = "HeaderListTooLargeError";
  constructor(readonly limit: number) {
    super(`Header list size exceeds the limit of ${limit} octets (maxHeaderListSize)`);
  }
}

/** The static table (RFC 7541 Appendix A); index 1 is `STATIC_TABLE[0]`. */
export const STATIC_TABLE: ReadonlyArray<readonly [name: string, value: string]> = [
  [":authority", ""],
  [":method", "GET"],
  [":method", "POST"],
  [":path", "/"],
  [":path", "/index.html"],
  [":scheme", "http"],
  [":scheme", "https"],
  [":status", "200"],
  [":status", "204"],
  [":status", "206"],
  [":status", "304"],
  [":status", "400"],
  [":status", "404"],
  [":status", "500"],
  ["accept-charset", ""],
  ["accept-encoding", "gzip, deflate"],
  ["accept-language", ""],
  ["accept-ranges", ""],
  ["accept", ""],
  ["access-control-allow-origin", ""],
  ["age", ""],
  ["allow", ""],
  ["authorization", ""],
  ["cache-control", ""],
  ["content-disposition", ""],
  ["content-encoding", ""],
  ["content-language", ""],
  ["content-length", ""],
  ["content-location", ""],
  ["content-range", ""],
  ["content-type", ""],
  ["cookie", ""],
  ["date", ""],
  ["etag", ""],
  ["expect", ""],
  ["expires", ""],
  ["from", ""],
  ["host", ""],
  ["if-match", ""],
  ["if-modified-since", ""],
  ["if-none-match", ""],
  ["if-range", ""],
  ["if-unmodified-since", ""],
  ["last-modified", ""],
  ["link", ""],
  ["location", ""],
  ["max-forwards", ""],
  ["proxy-authenticate", ""],
  ["proxy-authorization", ""],
  ["range", ""],
  ["referer", ""],
  ["refresh", ""],
  ["retry-after", ""],
  ["server", ""],
  ["set-cookie", ""],
  ["strict-transport-security", ""],
  ["transfer-encoding", ""],
  ["user-agent", ""],
  ["vary", ""],
  ["via", ""],
  ["www-authenticate", ""],
];
const STATIC_COUNT = STATIC_TABLE.length; // 61
const ENTRY_OVERHEAD = 32; // RFC 7541 4.1
const MAX_INT = 0x7fffffff; // largest integer accepted in a header block

// ---------------------------------------------------------------------------------------------
// Huffman code (RFC 7541 Appendix B)

/**
 * Code length in bits of each symbol 0..255 and EOS (256), from RFC 7541 Appendix B. The code is
 * canonical, so the codes themselves are derived from the lengths (assigned in order of
 * (length, symbol)); the tests check the derived codes against the RFC.
 */
// deno-fmt-ignore
const HUFFMAN_LENGTHS: readonly number[] = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0
  28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 16
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, // 32
  5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, // 48
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, // 64
  7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, // 80
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, // 96
  6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, // 112
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 128
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 144
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 160
  21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 176
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 192
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 208
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 224
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 240
  30, // 256
];
const EOS = 256;

/** Canonical Huffman codes (right-aligned in `HUFFMAN_LENGTHS[sym]` bits), derived at load. */
export const HUFFMAN_CODES: Uint32Array = (() => {
  const codes = new Uint32Array(257);
  const order = Array.from({ length: 257 }, (_, i) => i).sort((a, b) =>
    HUFFMAN_LENGTHS[a] - HUFFMAN_LENGTHS[b] || a - b
  );
  let code = 0;
  let prevLen = HUFFMAN_LENGTHS[order[0]];
  for (let k = 0; k < order.length; k++) {
    const len = HUFFMAN_LENGTHS[order[k]];
    if (k > 0) code = (code + 1) * 2 ** (len - prevLen);
    prevLen = len;
    codes[order[k]] = code;
  }
  return codes;
})();

// Decoding state machine, consuming 4 bits at a time. A state is an internal node of the code
// tree (257 leaves -> 256 internal nodes, the root is state 0). HUFF_DECODE[state * 16 + nibble]
// packs: next state (bits 0-7), FLAG_SYM (a symbol completed within the nibble; at most one can,
// since no code is shorter than 5 bits), FLAG_FAIL (EOS was decoded), symbol (bits 10+).
// HUFF_ACCEPT[state] is 1 where a string may end: at the root, or after at most 7 one-bits
// (a prefix of EOS) since the last symbol.
const FLAG_SYM = 0x100;
const FLAG_FAIL = 0x200;
const { HUFF_DECODE, HUFF_ACCEPT } = (() => {
  // children[node * 2 + bit]: >= 0 internal node id, < 0 leaf holding symbol -(child + 1).
  const children = new Int32Array(512).fill(0x7fffffff);
  const depth = new Uint8Array(256);
  const allOnes = new Uint8Array(256);
  allOnes[0] = 1;
  let nodes = 1;
  for (let sym = 0; sym <= EOS; sym++) {
    const len = HUFFMAN_LENGTHS[sym];
    const code = HUFFMAN_CODES[sym];
    let node = 0;
    for (let i = len - 1; i >= 0; i--) {
      const bit = Math.floor(code / 2 ** i) & 1;
      const slot = node * 2 + bit;
      if (i === 0) {
        if (children[slot] !== 0x7fffffff) throw new Error("Huffman table is not prefix-free");
        children[slot] = -(sym + 1);
      } else {
        if (children[slot] === 0x7fffffff) {
          const id = nodes++;
          children[slot] = id;
          depth[id] = depth[node] + 1;
          allOnes[id] = allOnes[node] & bit;
        } else if (children[slot] < 0) {
          throw new Error("Huffman table is not prefix-free");
        }
        node = children[slot];
      }
    }
  }
  if (nodes !== 256) throw new Error(`Huffman table has ${nodes} internal nodes, want 256`);
  const decode = new Uint32Array(256 * 16);
  const accept = new Uint8Array(256);
  for (let state = 0; state < 256; state++) {
    accept[state] = state === 0 || (allOnes[state] && depth[state] <= 7) ? 1 : 0;
    for (let nibble = 0; nibble < 16; nibble++) {
      let node = state;
      let entry = 0;
      for (let i = 3; i >= 0; i--) {
        const child = children[node * 2 + ((nibble >> i) & 1)];
        if (child < 0) {
          const sym = -child - 1;
          if (sym === EOS) entry |= FLAG_FAIL;
          else entry |= FLAG_SYM | (sym << 10);
          node = 0;
        } else {
          node = child;
        }
      }
      decode[state * 16 + nibble] = entry | node;
    }
  }
  return { HUFF_DECODE: decode, HUFF_ACCEPT: accept };
})();

/**
 * Huffman-decodes `src[start..end)` into `out` (which must hold at least `(end - start) * 8 / 5`
 * bytes) and returns the number of bytes written. Throws {@link HpackError} on EOS in the string
 * or on padding that is longer than 7 bits or not all ones (RFC 7541 5.2).
 */
function huffmanDecodeInto(src: Uint8Array, start: number, end: number, out: Uint8Array): number {
  let state = 0;
  let n = 0;
  for (let i = start; i < end; i++) {
    const b = src[i];
    let e = HUFF_DECODE[(state << 4) | (b >> 4)];
    if (e & FLAG_SYM) out[n++] = e >> 10;
    else if (e & FLAG_FAIL) throw new HpackError("Invalid Huffman string: contains EOS");
    state = e & 0xff;
    e = HUFF_DECODE[(state << 4) | (b & 15)];
    if (e & FLAG_SYM) out[n++] = e >> 10;
    else if (e & FLAG_FAIL) throw new HpackError("Invalid Huffman string: contains EOS");
    state = e & 0xff;
  }
  if (!HUFF_ACCEPT[state]) {
    throw new HpackError("Invalid Huffman string: padding is longer than 7 bits or not all ones");
  }
  return n;
}

/** Huffman-decodes a whole string literal payload (RFC 7541 5.2). Throws {@link HpackError}. */
export function huffmanDecode(src: Uint8Array): Uint8Array {
  const out = new Uint8Array(Math.ceil((src.length * 8) / 5));
  return out.slice(0, huffmanDecodeInto(src, 0, src.length, out));
}

/** Huffman-encodes bytes with the RFC 7541 code, padding the last octet with ones. */
export function huffmanEncode(src: Uint8Array): Uint8Array {
  let bits = 0;
  for (let i = 0; i < src.length; i++) bits += HUFFMAN_LENGTHS[src[i]];
  const out = new Uint8Array(Math.ceil(bits / 8));
  let acc = 0; // pending bits, right-aligned; fewer than 8 of them between symbols
  let accBits = 0;
  let pos = 0;
  for (let i = 0; i < src.length; i++) {
    const len = HUFFMAN_LENGTHS[src[i]];
    const code = HUFFMAN_CODES[src[i]];
    // acc has < 8 bits and a code has <= 30, so acc * 2^len stays below 2^38: exact in a double.
    acc = acc * 2 ** len + code;
    accBits += len;
    while (accBits >= 8) {
      accBits -= 8;
      out[pos++] = Math.floor(acc / 2 ** accBits) & 0xff;
    }
    acc = acc % 2 ** accBits;
  }
  if (accBits > 0) out[pos] = ((acc << (8 - accBits)) | (0xff >> accBits)) & 0xff;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Decoder

const utf8 = new TextDecoder("utf-8"); // non-fatal: invalid sequences decode to U+FFFD

const fromCharCode = String.fromCharCode;

/**
 * Bytes to string as UTF-8 (non-fatal). ASCII, the usual case, is built 8 characters at a time
 * without a TextDecoder call, which costs more than the whole conversion for short strings.
 */
function bytesToString(buf: Uint8Array, start: number, end: number): string {
  let s = "";
  let i = start;
  for (; i + 8 <= end; i += 8) {
    const c0 = buf[i], c1 = buf[i + 1], c2 = buf[i + 2], c3 = buf[i + 3];
    const c4 = buf[i + 4], c5 = buf[i + 5], c6 = buf[i + 6], c7 = buf[i + 7];
    if ((c0 | c1 | c2 | c3 | c4 | c5 | c6 | c7) & 0x80) {
      return utf8.decode(buf.subarray(start, end));
    }
    s += fromCharCode(c0, c1, c2, c3, c4, c5, c6, c7);
  }
  for (; i < end; i++) {
    const c = buf[i];
    if (c & 0x80) return utf8.decode(buf.subarray(start, end));
    s += fromCharCode(c);
  }
  return s;
}

interface Entry {
  name: string;
  value: string;
  /** octets of the name as received */
  nameLen: number;
  /** name octets + value octets + 32 (RFC 7541 4.1) */
  size: number;
}

const STATIC_ENTRIES: readonly Entry[] = STATIC_TABLE.map(([name, value]) => ({
  name,
  value,
  nameLen: name.length,
  size: name.length + value.length + ENTRY_OVERHEAD,
}));

/**
 * Stateful HPACK decoder: one per HTTP/2 connection, since the dynamic table persists across
 * header blocks. Header strings are decoded as UTF-8 (non-fatal); sizes are counted in octets as
 * received. Any {@link HpackError} except {@link HeaderListTooLargeError} leaves the dynamic table
 * out of step with the peer's, so the connection must then fail with COMPRESSION_ERROR.
 */
export class HpackDecoder {
  #maxTableSize: number;
  readonly #maxHeaderListSize: number;
  /** Current dynamic table capacity, set by size updates; <= #maxTableSize. */
  #capacity: number;
  /** Dynamic table: oldest first, live entries at [#start, #entries.length). */
  #entries: Entry[] = [];
  #start = 0;
  #size = 0;
  /** A size update is required at the start of the next block (after setMaxTableSize shrank). */
  #updateRequired = false;
  #scratch = new Uint8Array(256);
  // Decoding position (fields rather than locals so the helpers can share them).
  #buf: Uint8Array = new Uint8Array(0);
  #pos = 0;
  #lastLen = 0;

  /**
   * @param opts.maxTableSize our SETTINGS_HEADER_TABLE_SIZE (default 4096): the largest dynamic
   *   table size the peer's encoder may choose.
   * @param opts.maxHeaderListSize limit on the decoded list in RFC 7540 6.5.2 terms (sum over
   *   fields of name octets + value octets + 32), default 65536.
   */
  constructor(opts: { maxTableSize?: number; maxHeaderListSize?: number } = {}) {
    const maxTableSize = opts.maxTableSize ?? 4096;
    const maxHeaderListSize = opts.maxHeaderListSize ?? 65536;
    if (!Number.isInteger(maxTableSize) || maxTableSize < 0 || maxTableSize > MAX_INT) {
      throw new RangeError(
        `Invalid maxTableSize ${maxTableSize}: must be an integer 0..${MAX_INT}`,
      );
    }
    if (!Number.isInteger(maxHeaderListSize) || maxHeaderListSize < 0) {
      throw new RangeError(
        `Invalid maxHeaderListSize ${maxHeaderListSize}: must be a non-negative integer`,
      );
    }
    this.#maxTableSize = maxTableSize;
    this.#capacity = maxTableSize;
    this.#maxHeaderListSize = maxHeaderListSize;
  }

  /** Current dynamic table size in octets (sum of entry sizes). */
  get tableSize(): number {
    return this.#size;
  }

  /** Number of entries in the dynamic table. */
  get tableLength(): number {
    return this.#entries.length - this.#start;
  }

  /**
   * Slots held by the dynamic table's array: live entries plus evicted ones not yet compacted away
   * (fewer than 64, or fewer than the live ones). Bounds the decoder's memory; for tests.
   */
  get tableSlots(): number {
    return this.#entries.length;
  }

  /** The dynamic table's entries, newest first (index 62 first), for tests and debugging. */
  dynamicTable(): HeaderList {
    const out: HeaderList = [];
    for (let i = this.#entries.length - 1; i >= this.#start; i--) {
      out.push([this.#entries[i].name, this.#entries[i].value]);
    }
    return out;
  }

  /**
   * Changes the limit once a new SETTINGS_HEADER_TABLE_SIZE has been acknowledged by the peer.
   * If the current table capacity exceeds the new limit, the next header block must start with a
   * dynamic table size update (RFC 7541 4.2), else decode() throws.
   */
  setMaxTableSize(maxTableSize: number): void {
    if (!Number.isInteger(maxTableSize) || maxTableSize < 0 || maxTableSize > MAX_INT) {
      throw new RangeError(
        `Invalid maxTableSize ${maxTableSize}: must be an integer 0..${MAX_INT}`,
      );
    }
    this.#maxTableSize = maxTableSize;
    if (this.#capacity > maxTableSize) this.#updateRequired = true;
  }

  /**
   * Decodes one complete header block (HEADERS + CONTINUATION payloads joined).
   * @throws HpackError on a malformed block; HeaderListTooLargeError (after decoding the whole
   *   block) when the list exceeds maxHeaderListSize.
   */
  decode(block: Uint8Array): HeaderList {
    this.#buf = block;
    this.#pos = 0;
    const end = block.length;
    const out: HeaderList = [];
    let listSize = 0;
    const limit = this.#maxHeaderListSize;
    let sawField = false;
    if (this.#updateRequired && (end === 0 || (block[0] & 0xe0) !== 0x20)) {
      throw new HpackError(
        "Header block must start with a dynamic table size update after SETTINGS_HEADER_TABLE_SIZE was lowered",
      );
    }
    try {
      while (this.#pos < end) {
        const b = block[this.#pos];
        let name: string;
        let value: string;
        let nameLen: number;
        let valueLen: number;
        if (b & 0x80) {
          // 6.1 Indexed header field
          const e = this.#entry(this.#readInt(7));
          name = e.name;
          value = e.value;
          listSize += e.size;
        } else if (b & 0x40) {
          // 6.2.1 Literal with incremental indexing
          ({ name, nameLen, value, valueLen } = this.#literal(6));
          const size = nameLen + valueLen + ENTRY_OVERHEAD;
          this.#insert({ name, value, nameLen, size });
          listSize += size;
        } else if (b & 0x20) {
          // 6.3 Dynamic table size update
          if (sawField) {
            throw new HpackError("Dynamic table size update after a header field in the block");
          }
          const n = this.#readInt(5);
          if (n > this.#maxTableSize) {
            throw new HpackError(
              `Dynamic table size update to ${n} exceeds the limit of ${this.#maxTableSize}`,
            );
          }
          this.#capacity = n;
          this.#updateRequired = false;
          this.#evict(0);
          continue;
        } else {
          // 6.2.2 Literal without indexing (0000), 6.2.3 never indexed (0001)
          ({ name, nameLen, value, valueLen } = this.#literal(4));
          listSize += nameLen + valueLen + ENTRY_OVERHEAD;
        }
        sawField = true;
        if (listSize <= limit) out.push([name, value]);
      }
    } finally {
      this.#buf = EMPTY;
    }
    if (listSize > limit) throw new HeaderListTooLargeError(limit);
    return out;
  }

  #entry(idx: number): Entry {
    if (idx === 0) throw new HpackError("Invalid header index 0");
    if (idx <= STATIC_COUNT) return STATIC_ENTRIES[idx - 1];
    const k = idx - STATIC_COUNT;
    const count = this.#entries.length - this.#start;
    if (k > count) {
      throw new HpackError(
        `Header index ${idx} is past the end of the table (${STATIC_COUNT} static + ${count} dynamic entries)`,
      );
    }
    return this.#entries[this.#entries.length - k];
  }

  #insert(e: Entry): void {
    if (e.size > this.#capacity) {
      // RFC 7541 4.4: an entry larger than the table empties it and is not added.
      this.#entries = [];
      this.#start = 0;
      this.#size = 0;
      return;
    }
    this.#evict(e.size);
    this.#entries.push(e);
    this.#size += e.size;
  }

  /** Evicts oldest entries until `room` more octets fit in the capacity. */
  #evict(room: number): void {
    const entries = this.#entries;
    while (this.#size + room > this.#capacity && this.#start < entries.length) {
      this.#size -= entries[this.#start].size;
      entries[this.#start] = EVICTED;
      this.#start++;
    }
    if (this.#start === entries.length) {
      this.#entries = [];
      this.#start = 0;
    } else if (this.#start >= 64 && this.#start * 2 >= entries.length) {
      this.#entries = entries.slice(this.#start);
      this.#start = 0;
    }
  }

  /** Reads an integer with an N-bit prefix (RFC 7541 5.1) at #pos; advances #pos. */
  #readInt(prefixBits: number): number {
    const buf = this.#buf;
    const max = (1 << prefixBits) - 1;
    let n = buf[this.#pos++] & max;
    if (n < max) return n;
    let scale = 1;
    for (;;) {
      if (this.#pos >= buf.length) throw new HpackError("Truncated integer in header block");
      const b = buf[this.#pos++];
      n += (b & 0x7f) * scale;
      if (n > MAX_INT) throw new HpackError("Integer in header block exceeds 2^31-1");
      if ((b & 0x80) === 0) return n;
      scale *= 128;
      // A continuation past 2^28 with a zero value still overflows on the next byte; stop
      // runs of redundant zero bytes too.
      if (scale > 2 ** 28) throw new HpackError("Integer in header block exceeds 2^31-1");
    }
  }

  /** Reads a string literal (RFC 7541 5.2) at #pos; sets #lastLen to its decoded octet count. */
  /** A literal field's name (indexed with an n-bit prefix, or a literal string) and value. */
  #literal(prefixBits: number): { name: string; nameLen: number; value: string; valueLen: number } {
    const idx = this.#readInt(prefixBits);
    let name: string, nameLen: number;
    if (idx === 0) {
      name = this.#readString();
      nameLen = this.#lastLen;
    } else {
      const e = this.#entry(idx);
      name = e.name;
      nameLen = e.nameLen;
    }
    const value = this.#readString();
    return { name, nameLen, value, valueLen: this.#lastLen };
  }

  #readString(): string {
    const buf = this.#buf;
    if (this.#pos >= buf.length) throw new HpackError("Truncated header block: missing string");
    const huffman = (buf[this.#pos] & 0x80) !== 0;
    const len = this.#readInt(7);
    const start = this.#pos;
    const end = start + len;
    if (end > buf.length) {
      throw new HpackError(
        `Truncated header block: string of ${len} octets with ${buf.length - start} left`,
      );
    }
    this.#pos = end;
    if (!huffman) {
      this.#lastLen = len;
      return bytesToString(buf, start, end);
    }
    const need = Math.ceil((len * 8) / 5);
    if (this.#scratch.length < need) {
      this.#scratch = new Uint8Array(Math.max(need, this.#scratch.length * 2));
    }
    const n = huffmanDecodeInto(buf, start, end, this.#scratch);
    this.#lastLen = n;
    return bytesToString(this.#scratch, 0, n);
  }
}

const EMPTY = new Uint8Array(0);
const EVICTED: Entry = { name: "", value: "", nameLen: 0, size: 0 };

// ---------------------------------------------------------------------------------------------
// Encoder

/** name -> first static index, and the exact (name, value) static indexes. */
const STATIC_NAMES = new Map<string, { index: number; values: Map<string, number> }>();
STATIC_TABLE.forEach(([name, value], i) => {
  let e = STATIC_NAMES.get(name);
  if (!e) STATIC_NAMES.set(name, e = { index: i + 1, values: new Map() });
  if (!e.values.has(value)) e.values.set(value, i + 1);
});

const te = new TextEncoder();
/** Reused output buffer: encoding is synchronous, and results are copied out of it. */
let encodeScratch = new Uint8Array(4096);

/**
 * Encodes a header list statelessly: each field as an indexed field (RFC 7541 6.1) when name and
 * value match a static entry exactly (":status: 200" -> 0x88), else as a literal header field
 * without indexing (6.2.2) using the static table's name index when the name is there. Strings
 * are written as UTF-8 without Huffman coding. Never touches a dynamic table, so the output is
 * valid for any peer state (no dynamic table size update is ever needed, since the encoder's table
 * stays empty whatever size the peer allows). Names are written as given: lower-case them first.
 */
export function encodeHeaders(headers: HeaderList): Uint8Array {
  const len = encodeToScratch(headers); // may replace encodeScratch: read it afterwards
  return encodeScratch.slice(0, len);
}

/**
 * Like {@link encodeHeaders}, but writes the block into `dst` at `offset` (e.g. straight after a
 * 9-octet frame header) and returns the offset just past it, saving an allocation.
 * @throws RangeError when the block does not fit in `dst` (nothing is written then).
 */
export function encodeHeadersInto(headers: HeaderList, dst: Uint8Array, offset: number): number {
  const len = encodeToScratch(headers);
  if (offset < 0 || offset + len > dst.length) {
    throw new RangeError(
      `Header block of ${len} octets does not fit at offset ${offset} of a ${dst.length}-octet buffer`,
    );
  }
  if (len <= 64) {
    for (let i = 0; i < len; i++) dst[offset + i] = encodeScratch[i];
  } else {
    dst.set(encodeScratch.subarray(0, len), offset);
  }
  return offset + len;
}

/** Encodes into encodeScratch (grown as needed) and returns the block's length. */
function encodeToScratch(headers: HeaderList): number {
  let bound = 0;
  for (let i = 0; i < headers.length; i++) {
    bound += 12 + 3 * (headers[i][0].length + headers[i][1].length);
  }
  if (encodeScratch.length < bound) {
    encodeScratch = new Uint8Array(Math.max(bound, 2 * encodeScratch.length));
  }
  const out = encodeScratch;
  let pos = 0;
  for (let i = 0; i < headers.length; i++) {
    const name = headers[i][0];
    const value = headers[i][1];
    const st = STATIC_NAMES.get(name);
    if (st) {
      const exact = st.values.get(value);
      if (exact !== undefined) {
        out[pos++] = 0x80 | exact; // all static indexes < 127 fit the 7-bit prefix
        continue;
      }
      pos = writeInt(out, pos, 4, 0x00, st.index);
    } else {
      out[pos++] = 0x00;
      pos = writeString(out, pos, name);
    }
    pos = writeString(out, pos, value);
  }
  return pos;
}

/** Writes an integer with an N-bit prefix (RFC 7541 5.1) after `flags` in the first octet. */
function writeInt(out: Uint8Array, pos: number, prefixBits: number, flags: number, n: number) {
  const max = (1 << prefixBits) - 1;
  if (n < max) {
    out[pos++] = flags | n;
    return pos;
  }
  out[pos++] = flags | max;
  n -= max;
  while (n >= 0x80) {
    out[pos++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  out[pos++] = n;
  return pos;
}

/** Writes a raw (non-Huffman) string literal as UTF-8. */
function writeString(out: Uint8Array, pos: number, s: string): number {
  const n = s.length;
  let ascii = true;
  for (let i = 0; i < n; i++) {
    if (s.charCodeAt(i) >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii) {
    pos = writeInt(out, pos, 7, 0x00, n);
    for (let i = 0; i < n; i++) out[pos++] = s.charCodeAt(i);
    return pos;
  }
  const bytes = te.encode(s);
  pos = writeInt(out, pos, 7, 0x00, bytes.length);
  out.set(bytes, pos);
  return pos + bytes.length;
}
