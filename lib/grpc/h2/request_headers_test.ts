/**
 * checkRequestHeaders(): each rule of a well-formed request (RFC 9113 §8.1.1, §8.2, §8.3) with the
 * exact reason the server logs when it refuses the stream with RST_STREAM PROTOCOL_ERROR, and the
 * well-formed neighbour of each rule accepted.
 */

import assert from "node:assert/strict";
import type { HeaderList } from "./hpack.ts";
import { checkRequestHeaders } from "./request_headers.ts";

const BASE: HeaderList = [
  [":method", "POST"],
  [":scheme", "http"],
  [":path", "/t.S/M"],
  [":authority", "a:1"],
  ["content-type", "application/grpc"],
  ["te", "trailers"],
];

Deno.test("checkRequestHeaders() accepts a gRPC request and every token character in names", () => {
  assert.equal(checkRequestHeaders(BASE), undefined);
  // Without :authority (optional), with a content-length of digits, and with every token
  // character of RFC 9110 (lower-case) in a name.
  assert.equal(checkRequestHeaders(BASE.filter(([k]) => k !== ":authority")), undefined);
  assert.equal(checkRequestHeaders([...BASE, ["content-length", "0123456789"]]), undefined);
  assert.equal(checkRequestHeaders([...BASE, ["!#$%&'*+-.^_`|~09az", "v"]]), undefined);
  assert.equal(checkRequestHeaders([...BASE, ["x", "tab\tand space ok"]]), undefined);
  // te may be absent; the pseudo-headers in any order before the regular fields.
  assert.equal(checkRequestHeaders(BASE.filter(([k]) => k !== "te")), undefined);
  assert.equal(checkRequestHeaders([BASE[2], BASE[0], BASE[3], BASE[1]]), undefined);
});

Deno.test("checkRequestHeaders() names what makes a request malformed", () => {
  const cases: [HeaderList, string][] = [
    [[...BASE, [":method", "GET"]], "pseudo-header :method after a regular field"],
    [[[":status", "200"], ...BASE], "unknown pseudo-header :status"],
    [[[":protocol", "x"], ...BASE], "unknown pseudo-header :protocol"],
    [[BASE[0], BASE[0], ...BASE.slice(1)], "repeated pseudo-header :method"],
    [[BASE[0], BASE[1], BASE[2], BASE[2]], "repeated pseudo-header :path"],
    [[...BASE, ["X-Upper", "1"]], 'field name "X-Upper" is not a lower-case token'],
    [[...BASE, ["a b", "1"]], 'field name "a b" is not a lower-case token'],
    [[...BASE, ["", "1"]], 'field name "" is not a lower-case token'],
    [[...BASE, ["x:y", "1"]], 'field name "x:y" is not a lower-case token'],
    [[...BASE, ["connection", "close"]], "connection-specific field connection"],
    [[...BASE, ["proxy-connection", "x"]], "connection-specific field proxy-connection"],
    [[...BASE, ["keep-alive", "x"]], "connection-specific field keep-alive"],
    [[...BASE, ["transfer-encoding", "chunked"]], "connection-specific field transfer-encoding"],
    [[...BASE, ["upgrade", "h2c"]], "connection-specific field upgrade"],
    [[...BASE.slice(0, 5), ["te", "gzip"]], 'te "gzip" (only "trailers")'],
    [[...BASE, ["content-length", "12a"]], "content-length 12a"],
    [[...BASE, ["content-length", ""]], "content-length "],
    [[...BASE, ["content-length", "-1"]], "content-length -1"],
    [[...BASE, ["x", "a\0b"]], "field x has NUL, CR or LF in its value"],
    [[...BASE, ["x", "a\rb"]], "field x has NUL, CR or LF in its value"],
    [[...BASE, ["x", "a\nb"]], "field x has NUL, CR or LF in its value"],
    [[BASE[0], BASE[1], [":path", "/\n"]], "field :path has NUL, CR or LF in its value"],
    [BASE.filter(([k]) => k !== ":method"), "missing :method"],
    [BASE.filter(([k]) => k !== ":scheme"), "missing :scheme"],
    [BASE.filter(([k]) => k !== ":path"), "missing :path"],
    [[], "missing :method"],
    [BASE.map(([k, v]) => [k, k === ":path" ? "" : v]), "empty :path"],
  ];
  for (const [headers, why] of cases) {
    assert.equal(checkRequestHeaders(headers), why, JSON.stringify(headers));
  }
});
