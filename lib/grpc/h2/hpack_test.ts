import assert from "node:assert/strict";
import { concat } from "../testing.ts";
import {
  encodeHeaders,
  encodeHeadersInto,
  HeaderList,
  HeaderListTooLargeError,
  HpackDecoder,
  HpackError,
  HUFFMAN_CODES,
  huffmanDecode,
  huffmanEncode,
  STATIC_TABLE,
} from "./hpack.ts";

/** Hex (spaces allowed, as the RFC prints it) to bytes. */
function hex(s: string): Uint8Array {
  const clean = s.replace(/\s+/g, "");
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(clean.slice(i * 2, i * 2 + 2), 16);
  return out;
}

function toHex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

const ascii = (s: string) => new TextEncoder().encode(s);

function assertHpackError(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof HpackError, `expected HpackError, got ${err}`);
    assert.match(err.message, message);
    return true;
  });
}

// ---------------------------------------------------------------------------------------------
// Huffman code

Deno.test("HUFFMAN_CODES matches RFC 7541 Appendix B for sample symbols", () => {
  // [symbol, code, length] copied from Appendix B.
  const samples: Array<[number, number, number]> = [
    [0, 0x1ff8, 13],
    [10, 0x3ffffffc, 30],
    [32, 0x14, 6], // ' '
    [48, 0x0, 5], // '0'
    [97, 0x3, 5], // 'a'
    [101, 0x5, 5], // 'e'
    [126, 0x1ffd, 13], // '~'
    [127, 0xffffffc, 28],
    [192, 0x3ffffe0, 26],
    [255, 0x3ffffee, 26],
    [256, 0x3fffffff, 30], // EOS
  ];
  for (const [sym, code] of samples) {
    assert.equal(HUFFMAN_CODES[sym], code, `symbol ${sym}`);
  }
  // Single-symbol encodings expose the lengths: 'a' (5 bits) pads to one octet, 0 (13) to two.
  assert.equal(toHex(huffmanEncode(Uint8Array.of(97))), "1f");
  assert.equal(toHex(huffmanEncode(Uint8Array.of(0))), "ffc7");
  assert.equal(toHex(huffmanEncode(Uint8Array.of(255))), "fffffbbf");
});

Deno.test("huffmanEncode() and huffmanDecode() match the RFC 7541 C.4 and C.6 strings", () => {
  const vectors: Array<[string, string]> = [
    ["www.example.com", "f1e3c2e5f23a6ba0ab90f4ff"],
    ["no-cache", "a8eb10649cbf"],
    ["custom-key", "25a849e95ba97d7f"],
    ["custom-value", "25a849e95bb8e8b4bf"],
    ["302", "6402"],
    ["307", "640eff"],
    ["private", "aec3771a4b"],
    ["Mon, 21 Oct 2013 20:13:21 GMT", "d07abe941054d444a8200595040b8166e082a62d1bff"],
    ["Mon, 21 Oct 2013 20:13:22 GMT", "d07abe941054d444a8200595040b8166e084a62d1bff"],
    ["https://www.example.com", "9d29ad171863c78f0b97c8e9ae82ae43d3"],
    ["gzip", "9bd9ab"],
    [
      "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
      "94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
    ],
    ["", ""],
  ];
  for (const [text, code] of vectors) {
    assert.equal(toHex(huffmanEncode(ascii(text))), code, text);
    assert.equal(new TextDecoder().decode(huffmanDecode(hex(code))), text, code);
  }
});

Deno.test("huffmanDecode() round-trips every byte value when given random input", () => {
  let seed = 12345;
  const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 8;
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  assert.deepEqual(huffmanDecode(huffmanEncode(all)), all);
  for (let round = 0; round < 300; round++) {
    const bytes = Uint8Array.from({ length: rand() % 100 }, () => rand() & 0xff);
    assert.deepEqual(huffmanDecode(huffmanEncode(bytes)), bytes);
  }
});

Deno.test("huffmanDecode() rejects EOS, over-long padding and padding that is not all ones", () => {
  assertHpackError(() => huffmanDecode(hex("ffffffff")), /EOS/); // 30 ones = EOS, then 2 more
  assertHpackError(() => huffmanDecode(hex("1fffffffff")), /EOS/); // 'a' then EOS
  assertHpackError(() => huffmanDecode(hex("18")), /padding/); // 'a' then 000
  assertHpackError(() => huffmanDecode(hex("1fff")), /padding/); // 'a' then 11 ones
  assertHpackError(() => huffmanDecode(hex("00")), /padding/); // '0' then 000
  assertHpackError(() => huffmanDecode(hex("ff")), /padding/); // 8 ones: not a complete symbol
  assertHpackError(() => huffmanDecode(hex("fe")), /padding/); // 7 ones then a zero
  assert.equal(new TextDecoder().decode(huffmanDecode(hex("1f"))), "a"); // 3 ones: valid
  assert.equal(new TextDecoder().decode(huffmanDecode(hex("07"))), "0"); // '0' + 111
});

// ---------------------------------------------------------------------------------------------
// RFC 7541 Appendix C

Deno.test("HpackDecoder.decode() adds a literal with incremental indexing (RFC 7541 C.2.1)", () => {
  const d = new HpackDecoder();
  const block = hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
  assert.deepEqual(d.decode(block), [["custom-key", "custom-header"]]);
  assert.deepEqual(d.dynamicTable(), [["custom-key", "custom-header"]]);
  assert.equal(d.tableSize, 55);
});

Deno.test("HpackDecoder.decode() leaves the table alone for a literal without indexing (C.2.2)", () => {
  const d = new HpackDecoder();
  assert.deepEqual(d.decode(hex("040c 2f73 616d 706c 652f 7061 7468")), [[
    ":path",
    "/sample/path",
  ]]);
  assert.equal(d.tableLength, 0);
  assert.equal(d.tableSize, 0);
});

Deno.test("HpackDecoder.decode() leaves the table alone for a never-indexed literal (C.2.3)", () => {
  const d = new HpackDecoder();
  assert.deepEqual(d.decode(hex("1008 7061 7373 776f 7264 0673 6563 7265 74")), [[
    "password",
    "secret",
  ]]);
  assert.equal(d.tableLength, 0);
});

Deno.test("HpackDecoder.decode() reads an indexed static field (C.2.4)", () => {
  const d = new HpackDecoder();
  assert.deepEqual(d.decode(hex("82")), [[":method", "GET"]]);
  assert.equal(d.tableLength, 0);
});

const REQ1: HeaderList = [
  [":method", "GET"],
  [":scheme", "http"],
  [":path", "/"],
  [":authority", "www.example.com"],
];
const REQ2: HeaderList = [...REQ1, ["cache-control", "no-cache"]];
const REQ3: HeaderList = [
  [":method", "GET"],
  [":scheme", "https"],
  [":path", "/index.html"],
  [":authority", "www.example.com"],
  ["custom-key", "custom-value"],
];

function checkRequests(blocks: string[]): void {
  const d = new HpackDecoder();
  assert.deepEqual(d.decode(hex(blocks[0])), REQ1);
  assert.deepEqual(d.dynamicTable(), [[":authority", "www.example.com"]]);
  assert.equal(d.tableSize, 57);
  // Request 2 refers to dynamic entry 62 (0xbe) for :authority.
  assert.deepEqual(d.decode(hex(blocks[1])), REQ2);
  assert.deepEqual(d.dynamicTable(), [
    ["cache-control", "no-cache"],
    [":authority", "www.example.com"],
  ]);
  assert.equal(d.tableSize, 110);
  // Request 3 refers to dynamic entry 63 (0xbf), which :authority became.
  assert.deepEqual(d.decode(hex(blocks[2])), REQ3);
  assert.deepEqual(d.dynamicTable(), [
    ["custom-key", "custom-value"],
    ["cache-control", "no-cache"],
    [":authority", "www.example.com"],
  ]);
  assert.equal(d.tableSize, 164);
}

Deno.test("HpackDecoder.decode() keeps the dynamic table across requests (RFC 7541 C.3)", () => {
  checkRequests([
    "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
    "8286 84be 5808 6e6f 2d63 6163 6865",
    "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
  ]);
});

Deno.test("HpackDecoder.decode() decodes Huffman-coded requests (RFC 7541 C.4)", () => {
  checkRequests([
    "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
    "8286 84be 5886 a8eb 1064 9cbf",
    "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
  ]);
});

const RESP1: HeaderList = [
  [":status", "302"],
  ["cache-control", "private"],
  ["date", "Mon, 21 Oct 2013 20:13:21 GMT"],
  ["location", "https://www.example.com"],
];
const RESP2: HeaderList = [[":status", "307"], ...RESP1.slice(1)];
const RESP3: HeaderList = [
  [":status", "200"],
  ["cache-control", "private"],
  ["date", "Mon, 21 Oct 2013 20:13:22 GMT"],
  ["location", "https://www.example.com"],
  ["content-encoding", "gzip"],
  ["set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"],
];

function checkResponses(blocks: string[]): void {
  const d = new HpackDecoder({ maxTableSize: 256 });
  assert.deepEqual(d.decode(hex(blocks[0])), RESP1);
  assert.deepEqual(d.dynamicTable(), [
    ["location", "https://www.example.com"],
    ["date", "Mon, 21 Oct 2013 20:13:21 GMT"],
    ["cache-control", "private"],
    [":status", "302"],
  ]);
  assert.equal(d.tableSize, 222);
  // ":status: 307" evicts ":status: 302"; 0xc1 0xc0 0xbf are then 65, 64, 63.
  assert.deepEqual(d.decode(hex(blocks[1])), RESP2);
  assert.deepEqual(d.dynamicTable(), [
    [":status", "307"],
    ["location", "https://www.example.com"],
    ["date", "Mon, 21 Oct 2013 20:13:21 GMT"],
    ["cache-control", "private"],
  ]);
  assert.equal(d.tableSize, 222);
  assert.deepEqual(d.decode(hex(blocks[2])), RESP3);
  assert.deepEqual(d.dynamicTable(), [
    ["set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"],
    ["content-encoding", "gzip"],
    ["date", "Mon, 21 Oct 2013 20:13:22 GMT"],
  ]);
  assert.equal(d.tableSize, 215);
}

Deno.test("HpackDecoder.decode() evicts entries in a 256-octet table (RFC 7541 C.5)", () => {
  checkResponses([
    "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a" +
    "3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
    "4803 3330 37c1 c0bf",
    "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04" +
    "677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49" +
    "553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
  ]);
});

Deno.test("HpackDecoder.decode() evicts entries with Huffman-coded responses (RFC 7541 C.6)", () => {
  checkResponses([
    "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e" +
    "919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
    "4883 640e ffc1 c0bf",
    "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7" +
    "821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed" +
    "4ee5 b106 3d50 07",
  ]);
});

// ---------------------------------------------------------------------------------------------
// A gRPC request as grpc-js / nghttp2 sends it: Huffman strings, incremental indexing.

Deno.test("HpackDecoder.decode() decodes a Huffman-coded gRPC request and its follow-up", () => {
  const path = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources";
  const h = (s: string) => {
    const code = huffmanEncode(ascii(s));
    assert.ok(code.length < 127);
    return concat(Uint8Array.of(0x80 | code.length), code);
  };
  const first = concat(
    hex("83 86"), // :method POST, :scheme http
    hex("44"), // :path (static 4), with incremental indexing
    h(path),
    hex("41"), // :authority (static 1), with incremental indexing
    h("127.0.0.1:15010"),
    hex("5f"), // content-type (static 31), with incremental indexing
    h("application/grpc"),
    hex("40"),
    h("te"),
    h("trailers"),
    hex("40"),
    h("user-agent"), // new name, not the static one: still valid
    h("grpc-node-js/1.14.7"),
    hex("00"), // literal without indexing, new name
    h("grpc-timeout"),
    h("20S"),
  );
  const d = new HpackDecoder();
  const want: HeaderList = [
    [":method", "POST"],
    [":scheme", "http"],
    [":path", path],
    [":authority", "127.0.0.1:15010"],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
    ["user-agent", "grpc-node-js/1.14.7"],
    ["grpc-timeout", "20S"],
  ];
  assert.deepEqual(d.decode(first), want);
  assert.equal(d.tableLength, 5);
  // The second stream on the connection repeats everything from the dynamic table:
  // 62 user-agent, 63 te, 64 content-type, 65 :authority, 66 :path.
  const second = hex("83 86 c2 c1 c0 bf be");
  assert.deepEqual(d.decode(second), want.slice(0, 7));
});

// ---------------------------------------------------------------------------------------------
// Dynamic table behaviour

Deno.test("HpackDecoder.decode() counts table sizes in UTF-8 octets", () => {
  const d = new HpackDecoder();
  const value = ascii("é"); // 2 octets, 1 UTF-16 unit
  d.decode(concat(hex("40 01"), ascii("x"), Uint8Array.of(value.length), value));
  assert.deepEqual(d.dynamicTable(), [["x", "é"]]);
  assert.equal(d.tableSize, 1 + 2 + 32);
});

Deno.test("HpackDecoder.decode() replaces invalid UTF-8 with U+FFFD", () => {
  const d = new HpackDecoder();
  assert.deepEqual(d.decode(hex("04 02 2fff")), [[":path", "/\ufffd"]]);
});

Deno.test("HpackDecoder.decode() empties the table when an entry is larger than it", () => {
  const d = new HpackDecoder({ maxTableSize: 64 });
  d.decode(concat(hex("40 01"), ascii("a"), hex("01"), ascii("b"))); // 34 octets
  assert.equal(d.tableLength, 1);
  const big = "v".repeat(40); // 1 + 40 + 32 = 73 > 64
  assert.deepEqual(d.decode(concat(hex("40 01"), ascii("c"), hex("28"), ascii(big))), [["c", big]]);
  assert.equal(d.tableLength, 0);
  assert.equal(d.tableSize, 0);
});

Deno.test("HpackDecoder.decode() applies size updates at the start of a block", () => {
  const d = new HpackDecoder({ maxTableSize: 256 });
  d.decode(concat(hex("40 01"), ascii("a"), hex("01"), ascii("b")));
  // Two updates in a row (0 then 100) are allowed; 0 evicts everything.
  assert.deepEqual(d.decode(hex("20 3f 45 82")), [[":method", "GET"]]);
  assert.equal(d.tableLength, 0);
  // Capacity is now 100: three 34-octet entries do not fit, the oldest is evicted.
  for (const name of ["a", "b", "c"]) {
    d.decode(concat(hex("40 01"), ascii(name), hex("01"), ascii("v")));
  }
  assert.deepEqual(d.dynamicTable(), [["c", "v"], ["b", "v"]]);
  assert.equal(d.tableSize, 68);
});

Deno.test("HpackDecoder keeps working over many evictions", () => {
  const d = new HpackDecoder({ maxTableSize: 4096 });
  for (let i = 0; i < 5000; i++) {
    const name = `n${i}`;
    const block = concat(hex("40"), Uint8Array.of(name.length), ascii(name), hex("01"), ascii("v"));
    assert.deepEqual(d.decode(block), [[name, "v"]]);
    // Index 62 is always the newest entry.
    assert.deepEqual(d.decode(hex("be")), [[name, "v"]]);
  }
  const size = 32 + 1 + "n4999".length;
  assert.equal(d.tableLength, Math.floor(4096 / size));
  assert.equal(d.dynamicTable()[0][0], "n4999");
  assert.equal(d.tableSize, d.tableLength * size);
});

Deno.test("HpackDecoder.setMaxTableSize() requires a size update when the table shrinks", () => {
  const d = new HpackDecoder();
  d.decode(concat(hex("40 01"), ascii("a"), hex("01"), ascii("b")));
  d.setMaxTableSize(100);
  assertHpackError(() => d.decode(hex("82")), /must start with a dynamic table size update/);
  assertHpackError(() => d.decode(hex("3f 46")), /exceeds the limit of 100/); // 101
  assert.deepEqual(d.decode(hex("3f 45 82")), [[":method", "GET"]]); // 100
  assert.deepEqual(d.decode(hex("be")), [["a", "b"]]);
  assert.deepEqual(d.decode(hex("82")), [[":method", "GET"]]); // no update needed any more
});

// ---------------------------------------------------------------------------------------------
// Errors

Deno.test("HpackDecoder.decode() rejects index 0", () => {
  assertHpackError(() => new HpackDecoder().decode(hex("80")), /index 0/);
});

Deno.test("HpackDecoder.decode() rejects an index past the end of the table", () => {
  assertHpackError(() => new HpackDecoder().decode(hex("be")), /Header index 62 is past the end/);
  assertHpackError(() => new HpackDecoder().decode(hex("7f 00 00")), /index 63 is past/);
  const d = new HpackDecoder();
  d.decode(concat(hex("40 01"), ascii("a"), hex("01"), ascii("b")));
  assert.deepEqual(d.decode(hex("be")), [["a", "b"]]);
  assertHpackError(() => d.decode(hex("bf")), /index 63 is past/);
});

Deno.test("HpackDecoder.decode() rejects truncated integers and strings", () => {
  const cases: Array<[string, RegExp]> = [
    ["ff", /Truncated integer/],
    ["ff 80", /Truncated integer/],
    ["3f", /Truncated integer/],
    ["04", /missing string/], // name index, no value
    ["40", /missing string/], // new name, nothing after
    ["40 01 61", /missing string/], // name, no value
    ["04 05 6162", /string of 5 octets with 2 left/],
    ["04 7f", /Truncated integer/],
    ["04 85 ff", /string of 5 octets with 1 left/],
  ];
  for (const [block, message] of cases) {
    assertHpackError(() => new HpackDecoder().decode(hex(block)), message);
  }
});

Deno.test("HpackDecoder.decode() rejects integers above 2^31-1", () => {
  // 127 + 0x7f + 0x7f<<7 + 0x7f<<14 + 0x7f<<21 + 0x0f<<28 > 2^31
  assertHpackError(() => new HpackDecoder().decode(hex("ff ff ff ff ff 0f")), /exceeds 2\^31-1/);
  // An endless run of zero continuation octets is cut off too.
  assertHpackError(() => new HpackDecoder().decode(hex("ff 80 80 80 80 80 80 00")), /2\^31-1/);
  // A 2^31-1 string length is read correctly, then reported as truncated.
  // 2^31-1 - 127 = 0x7fffff80 -> 80 ff ff ff 07
  assertHpackError(
    () => new HpackDecoder().decode(hex("04 7f 80 ff ff ff 07")),
    /string of 2147483647 octets with 0 left/,
  );
});

Deno.test("HpackDecoder.decode() rejects bad Huffman strings in a block", () => {
  assertHpackError(() => new HpackDecoder().decode(hex("04 84 ffffffff")), /EOS/);
  assertHpackError(() => new HpackDecoder().decode(hex("04 81 18")), /padding/);
  assertHpackError(() => new HpackDecoder().decode(hex("04 82 1fff")), /padding/);
  assertHpackError(() => new HpackDecoder().decode(hex("00 81 18 01 61")), /padding/); // in a name
});

Deno.test("HpackDecoder.decode() rejects a table size update above the limit", () => {
  // 4096 = 31 + 0x61 + 0x1f * 128 -> 3f e1 1f
  assert.deepEqual(new HpackDecoder().decode(hex("3f e1 1f 82")), [[":method", "GET"]]);
  assertHpackError(
    () => new HpackDecoder().decode(hex("3f e2 1f 82")),
    /size update to 4097 exceeds the limit of 4096/,
  );
  assertHpackError(
    () => new HpackDecoder({ maxTableSize: 256 }).decode(hex("3f e2 01")),
    /size update to 257 exceeds the limit of 256/,
  );
});

Deno.test("HpackDecoder.decode() rejects a table size update after a header field", () => {
  assertHpackError(() => new HpackDecoder().decode(hex("82 20")), /after a header field/);
});

Deno.test("HpackDecoder.decode() throws HeaderListTooLargeError above maxHeaderListSize", () => {
  const d = new HpackDecoder({ maxHeaderListSize: 100 });
  // ":method GET" costs 7 + 3 + 32 = 42; two fit (84), three do not (126).
  assert.deepEqual(d.decode(hex("82 82")), [[":method", "GET"], [":method", "GET"]]);
  const block = concat(hex("82 82 40 01"), ascii("a"), hex("01"), ascii("b"));
  assert.throws(() => d.decode(block), (err: unknown) => {
    assert.ok(err instanceof HeaderListTooLargeError);
    assert.ok(err instanceof HpackError);
    assert.equal(err.limit, 100);
    assert.match(err.message, /Header list size exceeds the limit of 100 octets/);
    return true;
  });
  // The whole block was still decoded, so the table stays in step with the peer.
  assert.deepEqual(d.decode(hex("be")), [["a", "b"]]);
});

Deno.test("HpackDecoder.decode() throws only HpackError when given random or mutated input", () => {
  let seed = 987654321;
  const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 8;
  const valid = hex(
    "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e" +
      "919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
  );
  let failures = 0;
  for (let round = 0; round < 3000; round++) {
    let block: Uint8Array;
    if (round % 2 === 0) {
      block = Uint8Array.from({ length: rand() % 64 }, () => rand() & 0xff);
    } else {
      block = valid.slice(0, rand() % (valid.length + 1));
      for (let k = 0; k < 3 && block.length > 0; k++) block[rand() % block.length] = rand() & 0xff;
    }
    const d = new HpackDecoder({ maxTableSize: 256, maxHeaderListSize: 4096 });
    try {
      d.decode(block);
      d.decode(block);
    } catch (err) {
      assert.ok(err instanceof HpackError, `round ${round}: ${err}`);
      failures++;
    }
  }
  assert.ok(failures > 1000, `only ${failures} of 3000 random blocks were rejected`);
});

Deno.test("HpackDecoder constructor rejects invalid limits", () => {
  assert.throws(() => new HpackDecoder({ maxTableSize: -1 }), /Invalid maxTableSize -1/);
  assert.throws(() => new HpackDecoder({ maxTableSize: 1.5 }), /Invalid maxTableSize 1.5/);
  assert.throws(() => new HpackDecoder({ maxHeaderListSize: NaN }), /Invalid maxHeaderListSize/);
});

// ---------------------------------------------------------------------------------------------
// Encoder

Deno.test("encodeHeaders() uses an indexed field for exact static matches", () => {
  assert.equal(toHex(encodeHeaders([[":status", "200"]])), "88");
  assert.equal(toHex(encodeHeaders([[":method", "POST"], [":path", "/"]])), "8384");
  assert.equal(toHex(encodeHeaders([["accept-encoding", "gzip, deflate"]])), "90");
  assert.equal(toHex(encodeHeaders([[":authority", ""]])), "81");
});

Deno.test("encodeHeaders() writes literals without indexing using static name indexes", () => {
  // :status (8) fits the 4-bit prefix; content-type (31) needs 0x0f + 16.
  assert.equal(toHex(encodeHeaders([[":status", "503"]])), "0803" + toHex(ascii("503")));
  assert.equal(
    toHex(encodeHeaders([["content-type", "application/grpc"]])),
    "0f10" + "10" + toHex(ascii("application/grpc")),
  );
  // Unknown name: 0x00, then the name and the value as raw strings.
  assert.equal(
    toHex(encodeHeaders([["grpc-status", "0"]])),
    "00" + "0b" + toHex(ascii("grpc-status")) + "01" + "30",
  );
  assert.equal(toHex(encodeHeaders([])), "");
});

Deno.test("encodeHeaders() output decodes to the same list without touching the table", () => {
  const lists: HeaderList[] = [
    [[":status", "200"], ["content-type", "application/grpc"]],
    [["grpc-status", "0"], ["grpc-message", ""]],
    [["grpc-message", "héllo wörld ✓ 🚀"], ["x-empty", ""], ["", "empty name"]],
    [["x-long", "v".repeat(5000)], ["content-length", "12345"], ["date", "Mon, 21 Oct 2013"]],
    [["www-authenticate", "Basic"], [":method", "GET"], [":path", "/a?b=c"]],
    STATIC_TABLE.map(([n, v]): [string, string] => [n, v]),
    STATIC_TABLE.map(([n, v]): [string, string] => [n, v + "x"]),
  ];
  const d = new HpackDecoder({ maxHeaderListSize: 1 << 20 });
  for (const list of lists) {
    const block = encodeHeaders(list);
    assert.deepEqual(d.decode(block), list);
    assert.equal(d.tableLength, 0);
  }
});

Deno.test("encodeHeaders() output is accepted by a decoder with a zero-size table", () => {
  const d = new HpackDecoder({ maxTableSize: 0 });
  const list: HeaderList = [[":status", "200"], ["grpc-status", "14"], ["x", "y"]];
  assert.deepEqual(d.decode(encodeHeaders(list)), list);
});

Deno.test("encodeHeadersInto() writes the same block at an offset and rejects a short buffer", () => {
  const list: HeaderList = [[":status", "200"], ["grpc-status", "0"], ["x-long", "y".repeat(100)]];
  const block = encodeHeaders(list);
  const dst = new Uint8Array(9 + block.length + 3).fill(0xee);
  assert.equal(encodeHeadersInto(list, dst, 9), 9 + block.length);
  assert.deepEqual(dst.subarray(9, 9 + block.length), block);
  assert.deepEqual(dst.subarray(0, 9), new Uint8Array(9).fill(0xee));
  assert.deepEqual(dst.subarray(9 + block.length), Uint8Array.of(0xee, 0xee, 0xee));
  const small = new Uint8Array(3);
  assert.equal(encodeHeadersInto([[":status", "200"]], small, 2), 3);
  assert.equal(small[2], 0x88);
  assert.throws(
    () => encodeHeadersInto(list, new Uint8Array(block.length + 8), 9),
    /Header block of \d+ octets does not fit at offset 9 of a \d+-octet buffer/,
  );
});

// ---------------------------------------------------------------------------------------------
// A realistic block

Deno.test("HpackDecoder.decode() decodes a 200-octet all-Huffman gRPC request block, repeatedly", () => {
  const list: HeaderList = [
    [":method", "POST"],
    [":scheme", "http"],
    [":path", "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"],
    [":authority", "istio-pilot.istio-system.svc.cluster.local:15010"],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
    ["user-agent", "grpc-node-js/1.14.7"],
    ["grpc-accept-encoding", "identity,deflate,gzip"],
  ];
  const parts: Uint8Array[] = [];
  for (const [name, value] of list) {
    const n = huffmanEncode(ascii(name));
    const v = huffmanEncode(ascii(value));
    parts.push(hex("00"), Uint8Array.of(0x80 | n.length), n, Uint8Array.of(0x80 | v.length), v);
  }
  const block = concat(...parts);
  assert.ok(block.length >= 180 && block.length <= 260, `block is ${block.length} octets`);
  const d = new HpackDecoder();
  assert.deepEqual(d.decode(block), list);
  // Literal fields without indexing leave the dynamic table alone: the same block decodes alike.
  for (let i = 0; i < 100; i++) assert.deepEqual(d.decode(block), list);
  assert.equal(d.tableLength, 0);
});

/** RFC 7541 Appendix A: the static table, index 1 to 61. */
const RFC_STATIC: [string, string][] = [
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

Deno.test("HpackDecoder.decode() reads every static table index as RFC 7541 Appendix A lists it", () => {
  const d = new HpackDecoder();
  const block = Uint8Array.from(RFC_STATIC.map((_, i) => 0x80 | (i + 1)));
  assert.deepEqual(d.decode(block), RFC_STATIC);
  // And a literal with an indexed name takes the static name (index 62 would be dynamic).
  assert.deepEqual(d.decode(Uint8Array.from([0x0f, 0x2e, 1, 0x61])), [["www-authenticate", "a"]]);
});

// ---------------------------------------------------------------------------------------------
// Exact bounds and the less common paths (found untested by mutation testing, issue 15)

Deno.test("HpackError and HeaderListTooLargeError name themselves in messages and logs", () => {
  assert.equal(String(new HpackError("bad block")), "HpackError: bad block");
  assert.equal(
    String(new HeaderListTooLargeError(7)),
    "HeaderListTooLargeError: Header list size exceeds the limit of 7 octets (maxHeaderListSize)",
  );
});

Deno.test("HpackDecoder.decode() decodes UTF-8 whose non-ASCII octets are all in the first 8", () => {
  // "é1234567": octets c3 a9 31..37 (9), the tail after the first 8 is ASCII.
  const d = new HpackDecoder();
  const value = ascii("é1234567");
  assert.deepEqual(d.decode(concat(hex("04"), Uint8Array.of(value.length), value)), [
    [":path", "é1234567"],
  ]);
  // Exactly 16 octets (no tail at all), raw and Huffman-coded.
  const sixteen = ascii("ééééé123456"); // 5 * 2 + 6 = 16 octets
  assert.equal(sixteen.length, 16);
  assert.deepEqual(d.decode(concat(hex("04"), Uint8Array.of(16), sixteen)), [
    [":path", "ééééé123456"],
  ]);
  const h = huffmanEncode(sixteen);
  assert.deepEqual(d.decode(concat(hex("04"), Uint8Array.of(0x80 | h.length), h)), [
    [":path", "ééééé123456"],
  ]);
});

Deno.test("HpackDecoder.decode() decodes Huffman strings far longer than its first scratch buffer", () => {
  // 256 decoded octets fit the initial scratch; these need it grown once (one doubling is not
  // enough for the second) and must come back whole.
  const d = new HpackDecoder({ maxHeaderListSize: 1 << 20 });
  for (const n of [300, 2000, 5000]) {
    const value = Array.from({ length: n }, (_, i) => "abcdefghij"[i % 10]).join("");
    const h = huffmanEncode(ascii(value));
    // 7-bit prefix length: 127 then the rest in 7-bit groups.
    const len: number[] = [0x80 | 0x7f];
    let rest = h.length - 127;
    while (rest >= 128) {
      len.push((rest & 0x7f) | 0x80);
      rest = Math.floor(rest / 128);
    }
    len.push(rest);
    const block = concat(hex("0f 2b"), Uint8Array.from(len), h); // user-agent (58): 15 + 43
    const got = d.decode(block);
    assert.equal(got.length, 1);
    assert.equal(got[0][0], "user-agent");
    assert.equal(got[0][1].length, n);
    assert.equal(got[0][1], value);
  }
});

Deno.test("HpackDecoder.decode() counts every field kind at exactly maxHeaderListSize", () => {
  // Indexed static ":method: POST": 7 + 4 + 32 = 43 octets.
  assert.deepEqual(new HpackDecoder({ maxHeaderListSize: 43 }).decode(hex("83")), [
    [":method", "POST"],
  ]);
  assert.throws(
    () => new HpackDecoder({ maxHeaderListSize: 42 }).decode(hex("83")),
    HeaderListTooLargeError,
  );
  // Literal without indexing "x-a: bcd": 3 + 3 + 32 = 38 octets, the last field of the block.
  const literal = concat(hex("82 00 03"), ascii("x-a"), hex("03"), ascii("bcd"));
  assert.deepEqual(new HpackDecoder({ maxHeaderListSize: 42 + 38 }).decode(literal), [
    [":method", "GET"],
    ["x-a", "bcd"],
  ]);
  assert.throws(
    () => new HpackDecoder({ maxHeaderListSize: 42 + 37 }).decode(literal),
    HeaderListTooLargeError,
  );
  // Literal with incremental indexing "ab: c": 2 + 1 + 32 = 35.
  const indexed = concat(hex("40 02"), ascii("ab"), hex("01"), ascii("c"));
  assert.deepEqual(new HpackDecoder({ maxHeaderListSize: 35 }).decode(indexed), [["ab", "c"]]);
  assert.throws(
    () => new HpackDecoder({ maxHeaderListSize: 34 }).decode(indexed),
    HeaderListTooLargeError,
  );
  // A zero limit is allowed (only an empty block passes).
  assert.deepEqual(new HpackDecoder({ maxHeaderListSize: 0 }).decode(new Uint8Array(0)), []);
  assert.throws(() => new HpackDecoder({ maxHeaderListSize: 0 }).decode(hex("82")), /limit of 0/);
});

Deno.test("HpackDecoder constructor and setMaxTableSize() accept exactly 0..2^31-1", () => {
  const max = 0x7fffffff;
  assert.equal(new HpackDecoder({ maxTableSize: max }).tableSize, 0);
  assert.equal(new HpackDecoder({ maxTableSize: 0 }).tableSize, 0);
  assert.throws(
    () => new HpackDecoder({ maxTableSize: max + 1 }),
    /Invalid maxTableSize 2147483648/,
  );
  assert.throws(() => new HpackDecoder({ maxHeaderListSize: -1 }), /Invalid maxHeaderListSize -1/);
  assert.throws(() => new HpackDecoder({ maxHeaderListSize: 0.5 }), /Invalid maxHeaderListSize/);
  const d = new HpackDecoder();
  for (const bad of [-1, 1.5, max + 1, NaN]) {
    assert.throws(
      () => d.setMaxTableSize(bad),
      (err: unknown) =>
        err instanceof RangeError && err.message.startsWith(`Invalid maxTableSize ${bad}:`),
    );
  }
  // A refused value changes nothing: no size update is required afterwards.
  assert.deepEqual(d.decode(hex("82")), [[":method", "GET"]]);
  d.setMaxTableSize(max);
  // A size update up to the new limit is now accepted: 2^31-1 = 31 + 0x7fffffe0.
  assert.deepEqual(d.decode(hex("3f e0 ff ff ff 07 82")), [[":method", "GET"]]);
  d.setMaxTableSize(0);
  assertHpackError(() => d.decode(hex("82")), /must start with a dynamic table size update/);
  assert.deepEqual(d.decode(hex("20 82")), [[":method", "GET"]]);
});

Deno.test("HpackDecoder.setMaxTableSize() at or above the capacity needs no size update", () => {
  const d = new HpackDecoder(); // capacity 4096
  d.decode(concat(hex("40 01"), ascii("a"), hex("01"), ascii("b")));
  d.setMaxTableSize(4096); // the same
  assert.deepEqual(d.decode(hex("82 be")), [[":method", "GET"], ["a", "b"]]);
  d.setMaxTableSize(8192); // larger: the capacity stays 4096 until the peer changes it
  assert.deepEqual(d.decode(hex("82 be")), [[":method", "GET"], ["a", "b"]]);
  // The peer may now grow the table up to 8192 (= 31 + 0xe1 + 0x3f * 128 -> 3f e1 3f).
  assert.deepEqual(d.decode(hex("3f e1 3f be")), [["a", "b"]]);
});

Deno.test("HpackDecoder's dynamic table holds entries that fill it exactly", () => {
  // Capacity 70: two 35-octet entries fit exactly, an entry of exactly 70 fits alone.
  const d = new HpackDecoder({ maxTableSize: 70 });
  d.decode(concat(hex("40 02"), ascii("ab"), hex("01"), ascii("c")));
  d.decode(concat(hex("40 02"), ascii("de"), hex("01"), ascii("f")));
  assert.deepEqual(d.dynamicTable(), [["de", "f"], ["ab", "c"]]);
  assert.equal(d.tableSize, 70);
  const v = "v".repeat(70 - 32 - 1);
  d.decode(concat(hex("40 01"), ascii("x"), Uint8Array.of(v.length), ascii(v)));
  assert.deepEqual(d.dynamicTable(), [["x", v]]);
  assert.equal(d.tableSize, 70);
});

Deno.test("HpackDecoder.decode() rejects an index past the end after evictions", () => {
  // Capacity 70 holds two 35-octet entries: after a third, the oldest is gone and index 64
  // (the third dynamic entry) is past the end.
  const d = new HpackDecoder({ maxTableSize: 70 });
  for (const name of ["aa", "bb", "cc"]) {
    d.decode(concat(hex("40 02"), ascii(name), hex("01"), ascii("v")));
  }
  assert.deepEqual(d.decode(hex("be bf")), [["cc", "v"], ["bb", "v"]]);
  assertHpackError(
    () => d.decode(hex("c0")),
    /Header index 64 is past the end of the table \(61 static \+ 2 dynamic entries\)/,
  );
});

Deno.test("encodeHeaders() writes a length of exactly 127 + 128 with a continuation octet", () => {
  // 255 = 127 (prefix) + 128: 7f 80 01 (RFC 7541 5.1), not 7f 80 (which would be truncated).
  const value = "v".repeat(255);
  const block = encodeHeaders([[":path", value]]);
  assert.equal(toHex(block.subarray(0, 4)), "04" + "7f8001");
  assert.equal(block.length, 4 + 255);
  assert.deepEqual(new HpackDecoder().decode(block), [[":path", value]]);
  // A name index of exactly 15 + 128 is not reachable (static names stop at 61), but a string
  // length of 127 is: 7f 00.
  assert.equal(toHex(encodeHeaders([[":path", "v".repeat(127)]]).subarray(0, 3)), "047f00");
});

Deno.test("encodeHeaders() writes U+0080 and other non-ASCII strings as UTF-8", () => {
  assert.equal(toHex(encodeHeaders([["x", "\u0080"]])), "00" + "0178" + "02c280");
  assert.equal(toHex(encodeHeaders([["x", "é"]])), "00" + "0178" + "02c3a9");
  assert.equal(toHex(encodeHeaders([["x", "a\u00ff"]])), "00" + "0178" + "0361c3bf");
});

Deno.test("encodeHeadersInto() writes short blocks in place, touching nothing around them", () => {
  const list: HeaderList = [[":status", "200"], ["grpc-status", "0"]]; // 16 octets
  const block = encodeHeaders(list);
  assert.ok(block.length <= 64);
  for (const offset of [0, 5]) {
    const dst = new Uint8Array(offset + block.length + 4).fill(0xee);
    assert.equal(encodeHeadersInto(list, dst, offset), offset + block.length);
    assert.deepEqual(dst.subarray(offset, offset + block.length), block);
    assert.deepEqual(dst.subarray(0, offset), new Uint8Array(offset).fill(0xee));
    assert.deepEqual(dst.subarray(offset + block.length), Uint8Array.of(0xee, 0xee, 0xee, 0xee));
  }
  // Exactly 64 octets, and exactly filling the buffer.
  const list64: HeaderList = [["x", "v".repeat(64 - 4)]]; // 00 01 78 3c + 60
  assert.equal(encodeHeaders(list64).length, 64);
  const dst = new Uint8Array(64 + 2).fill(0xee);
  assert.equal(encodeHeadersInto(list64, dst, 2), 66);
  assert.deepEqual(dst.subarray(2), encodeHeaders(list64));
  assert.deepEqual(dst.subarray(0, 2), Uint8Array.of(0xee, 0xee));
  assert.throws(
    () => encodeHeadersInto(list, new Uint8Array(100), -1),
    /Header block of 16 octets does not fit at offset -1 of a 100-octet buffer/,
  );
});

Deno.test("encodeHeaders() grows its buffer for large lists, then keeps encoding small ones", () => {
  const d = new HpackDecoder({ maxHeaderListSize: 1 << 22 });
  for (const n of [10_000, 100_000, 1_000_000]) {
    const list: HeaderList = [[":status", "200"], ["x-big", "b".repeat(n)], ["x-after", "a"]];
    assert.deepEqual(d.decode(encodeHeaders(list)), list);
  }
  // Many small lists afterwards: the buffer is reused, not grown on every call.
  for (let i = 0; i < 200; i++) {
    assert.equal(toHex(encodeHeaders([[":status", "200"]])), "88");
  }
});

Deno.test("HpackDecoder's table array stays bounded over many evictions of a never-empty table", () => {
  // Large entries (4 live of ~1000 octets) and small ones (~100 live): evicted slots are
  // compacted away, so the array never holds more than 64 + 2 x the live entries.
  for (const valueLen of [950, 5]) {
    const d = new HpackDecoder({ maxTableSize: 4096 });
    const value = "v".repeat(valueLen);
    for (let i = 0; i < 3000; i++) {
      const name = `n${i}`;
      const v = ascii(value);
      const len = v.length < 127 ? Uint8Array.of(v.length) : Uint8Array.of(0x7f, ...[
        ((v.length - 127) & 0x7f) | 0x80,
        (v.length - 127) >> 7,
      ]);
      d.decode(concat(hex("40"), Uint8Array.of(name.length), ascii(name), len, v));
      assert.ok(d.tableLength > 0);
      assert.ok(
        d.tableSlots <= 64 + 2 * d.tableLength,
        `${d.tableSlots} slots for ${d.tableLength} entries after ${i + 1} insertions`,
      );
    }
    assert.deepEqual(d.decode(hex("be")), [["n2999", value]]);
  }
});
