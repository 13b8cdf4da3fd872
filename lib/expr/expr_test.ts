import assert from "node:assert/strict";
import {
  attributesOf,
  bagOf,
  compile,
  DEFAULT_MANIFEST,
  EvalError,
  ExprError,
  globMatch,
  parse,
  parseIp,
  type Value,
} from "./mod.ts";

const bag = bagOf({
  "source.name": "reviews-v1",
  "destination.service": "ratings.default.svc.cluster.local",
  "request.headers": { "x-user": "jason", ":path": "/api/v1" },
  "request.path": "/api/v1/items",
  "response.code": 503,
  "connection.mtls": true,
  "source.ip": parseIp("10.1.2.3")!,
  "request.time": new Date("2018-06-01T10:00:00Z"),
});

function run(src: string): Value {
  return compile(src, DEFAULT_MANIFEST).evaluate(bag);
}

function parseError(src: string): ExprError {
  try {
    compile(src, DEFAULT_MANIFEST);
  } catch (e) {
    assert.ok(e instanceof ExprError, String(e));
    return e;
  }
  assert.fail(`"${src}" compiled`);
}

Deno.test("parse() yields literals of each kind", () => {
  assert.deepEqual(parse('"a"'), { kind: "string", value: "a", pos: 0 });
  assert.deepEqual(parse("'b'"), { kind: "string", value: "b", pos: 0 });
  assert.deepEqual(parse("42"), { kind: "int", value: 42, pos: 0 });
  assert.deepEqual(parse("4.5"), { kind: "double", value: 4.5, pos: 0 });
  assert.deepEqual(parse("true"), { kind: "bool", value: true, pos: 0 });
  assert.deepEqual(parse('"a\\"b"'), { kind: "string", value: 'a"b', pos: 0 });
  assert.deepEqual(parse("1m30s"), { kind: "duration", value: 90_000, pos: 0 });
  assert.deepEqual(parse("2.5ms"), { kind: "duration", value: 2.5, pos: 0 });
});

Deno.test("parse() gives && precedence over || and || over |", () => {
  const e = parse("a || b && c");
  assert.equal(e.kind === "binary" && e.op, "||");
  const f = parse("a | b || c");
  assert.equal(f.kind === "binary" && f.op, "|");
  const g = parse("(a || b) && c");
  assert.equal(g.kind === "binary" && g.op, "&&");
});

Deno.test("parse() reports syntax errors with their positions", () => {
  const cases: [string, number, RegExp][] = [
    ["", 0, /Empty expression/],
    ['a == "x', 5, /Unterminated string/],
    ["a == ", 5, /Unexpected end of expression/],
    ["a $ b", 2, /Unexpected character "\$"/],
    ["(a == b", 7, /Expected "\)"/],
    ['m["k"', 5, /Expected "\]"/],
    ["a b", 2, /Unexpected "b"/],
    ['match("a" "b")', 10, /Expected "," or "\)"/],
    ["12abc", 2, /after number/],
    ['"x".1()', 4, /Expected a method name/],
  ];
  for (const [src, pos, re] of cases) {
    assert.throws(() => parse(src), (e: unknown) => {
      assert.ok(e instanceof ExprError);
      assert.equal(e.pos, pos, src);
      assert.match(e.message, re);
      assert.match(e.message, new RegExp(`at position ${pos}`));
      return true;
    }, src);
  }
});

Deno.test("compile() type-checks attributes, operators and functions", () => {
  assert.equal(compile('source.name == "x"', DEFAULT_MANIFEST).type, "BOOL");
  assert.equal(compile('request.headers["a"]', DEFAULT_MANIFEST).type, "STRING");
  assert.equal(compile("response.code | 200", DEFAULT_MANIFEST).type, "INT64");
  assert.equal(compile('ip("1.2.3.4")', DEFAULT_MANIFEST).type, "IP_ADDRESS");
  assert.equal(compile('timestamp("2018-01-01T00:00:00Z")', DEFAULT_MANIFEST).type, "TIMESTAMP");
  assert.equal(compile('dnsName("a.b")', DEFAULT_MANIFEST).type, "DNS_NAME");
  assert.equal(compile('email("a@b")', DEFAULT_MANIFEST).type, "EMAIL_ADDRESS");
  assert.equal(compile('uri("http://a/")', DEFAULT_MANIFEST).type, "URI");
  assert.equal(compile("emptyStringMap()", DEFAULT_MANIFEST).type, "STRING_MAP");
  assert.equal(compile("request.headers | emptyStringMap()", DEFAULT_MANIFEST).type, "STRING_MAP");
});

Deno.test("compile() rejects type errors naming the problem and position", () => {
  const cases: [string, number, RegExp][] = [
    ['nosuch.attr == "x"', 0, /Unknown attribute "nosuch.attr"/],
    ['response.code == "200"', 14, /"==" between different types INT64 and STRING/],
    ["source.name != 1", 12, /"!=" between different types/],
    ["source.name && true", 12, /"&&" needs BOOL operands, not STRING and BOOL/],
    ["connection.mtls || 1", 16, /"\|\|" needs BOOL operands/],
    ["source.name | 3", 12, /"\|" between different types STRING and INT64/],
    ['source.name["k"]', 11, /Cannot index a value of type STRING/],
    ["request.headers[1]", 16, /Map key must be STRING, not INT64/],
    ["!source.name", 0, /"!" needs a BOOL operand/],
    ["nosuch(1)", 0, /Unknown function "nosuch"/],
    ['match("a")', 0, /"match" takes 2 argument\(s\), got 1/],
    ["ip(1)", 3, /Argument of "ip" must be STRING, not INT64/],
    ['startsWith("a", "b")', 0, /"startsWith" is a method/],
    ['source.name.ip("b")', 12, /"ip" is a function, not a method/],
    ["source.name.startsWith(1)", 23, /must be STRING, not INT64/],
  ];
  for (const [src, pos, re] of cases) {
    const e = parseError(src);
    assert.match(e.message, re, src);
    assert.equal(e.pos, pos, src);
  }
});

Deno.test("evaluate() compares with == and != on every kind of value", () => {
  assert.equal(run('source.name == "reviews-v1"'), true);
  assert.equal(run('source.name != "reviews-v1"'), false);
  assert.equal(run("response.code == 503"), true);
  assert.equal(run("1.5 == 1.5"), true);
  assert.equal(run("connection.mtls == true"), true);
  assert.equal(run('source.ip == ip("10.1.2.3")'), true);
  assert.equal(run('source.ip == ip("10.1.2.4")'), false);
  assert.equal(run('request.time == timestamp("2018-06-01T10:00:00Z")'), true);
  assert.equal(run('request.time != timestamp("2018-06-01T10:00:01Z")'), true);
  assert.equal(run("emptyStringMap() == emptyStringMap()"), true);
});

Deno.test("evaluate() short-circuits && and || and negates with !", () => {
  assert.equal(run('connection.mtls && source.name == "reviews-v1"'), true);
  assert.equal(run("connection.mtls && false"), false);
  assert.equal(run("false || connection.mtls"), true);
  // The right side would fail (missing attribute) but is never evaluated.
  assert.equal(run('false && source.user == "x"'), false);
  assert.equal(run('true || source.user == "x"'), true);
  assert.equal(run("!connection.mtls"), false);
});

Deno.test("evaluate() falls back with | on missing attributes and map keys only", () => {
  assert.equal(run('source.user | "anon"'), "anon");
  assert.equal(run('source.name | "anon"'), "reviews-v1");
  assert.equal(run('request.headers["x-user"] | "anon"'), "jason");
  assert.equal(run('request.headers["absent"] | "anon"'), "anon");
  assert.equal(run('source.user | destination.uid | "last"'), "last");
  assert.equal(run("response.size | 0"), 0);
  assert.equal(run("response.duration | 0ms"), 0);
  assert.equal(compile("response.duration | 10s", DEFAULT_MANIFEST).type, "DURATION");
  assert.equal(run('response.headers["a"] | "none"'), "none");
  // A bad value is an error, not a missing attribute: no fallback.
  assert.throws(() => run('ip("bad") | ip("1.1.1.1")'), /Could not convert "bad" to IP_ADDRESS/);
});

Deno.test("evaluate() fails on missing attributes without fallback", () => {
  assert.throws(() => run('source.user == "x"'), (e: unknown) => {
    assert.ok(e instanceof EvalError && e.missing);
    assert.match(e.message, /Lookup failed: "source.user"/);
    return true;
  });
  assert.throws(() => run('request.headers["nope"]'), /key "nope" not in map/);
});

Deno.test("evaluate() implements match, matches, startsWith and endsWith", () => {
  assert.equal(run('match(destination.service, "ratings.*")'), true);
  assert.equal(run('match(destination.service, "*.cluster.local")'), true);
  assert.equal(run('match(destination.service, "ratings")'), false);
  assert.equal(run('match("abc", "abc")'), true);
  assert.equal(run('"^/api/v[0-9]+/".matches(request.path)'), true);
  assert.equal(run('"^/admin".matches(request.path)'), false);
  assert.equal(run('request.path.startsWith("/api")'), true);
  assert.equal(run('request.path.endsWith("/items")'), true);
  assert.equal(run('request.path.endsWith("/x")'), false);
  assert.equal(run('request.headers[":path"].startsWith("/api")'), true);
  assert.equal(run('("a" | "b").endsWith("a")'), true);
  assert.throws(() => run('"(".matches("x")'), /Invalid regular expression "\("/);
});

Deno.test("evaluate() converts strings with ip, timestamp, dnsName, email and uri", () => {
  assert.deepEqual(run('ip("::1")'), Uint8Array.from([...new Array(15).fill(0), 1]));
  assert.deepEqual(
    (run('timestamp("2018-06-01T10:00:00.5+02:00")') as Date).toISOString(),
    "2018-06-01T08:00:00.500Z",
  );
  assert.equal(run('dnsName("ratings.default.svc")'), "ratings.default.svc");
  assert.equal(run('email("a@example.com")'), "a@example.com");
  assert.equal(run('uri("https://example.com/x")'), "https://example.com/x");
  assert.throws(() => run('timestamp("yesterday")'), /to TIMESTAMP/);
  assert.throws(() => run('dnsName("bad name")'), /to DNS_NAME/);
  assert.throws(() => run('email("nobody")'), /to EMAIL_ADDRESS/);
  assert.throws(() => run('uri("::")'), /to URI/);
});

Deno.test("parseIp() parses IPv4 and IPv6 forms and rejects others", () => {
  assert.deepEqual(parseIp("127.0.0.1"), Uint8Array.from([127, 0, 0, 1]));
  assert.equal(parseIp("2001:db8::1")?.length, 16);
  assert.deepEqual(parseIp("::ffff:1.2.3.4")?.slice(10), Uint8Array.from([255, 255, 1, 2, 3, 4]));
  assert.deepEqual(parseIp("1:2:3:4:5:6:7:8")?.[15], 8);
  for (const bad of ["256.0.0.1", "1.2.3", "x", "1::2::3", "1:2:3:4:5:6:7:8:9", "12345::"]) {
    assert.equal(parseIp(bad), undefined, bad);
  }
});

Deno.test("globMatch() handles prefix, suffix and exact patterns", () => {
  assert.equal(globMatch("abc", "*"), true);
  assert.equal(globMatch("abc", "ab*"), true);
  assert.equal(globMatch("abc", "*bc"), true);
  assert.equal(globMatch("abc", "b*"), false);
});

Deno.test("attributesOf() lists the attributes an expression reads", () => {
  const e = parse('source.name == "a" && request.headers["x"].startsWith(destination.uid | "")');
  assert.deepEqual([...attributesOf(e)].sort(), [
    "destination.uid",
    "request.headers",
    "source.name",
  ]);
});

Deno.test("compile() types a quoted duration as DURATION beside a DURATION operand (Mixer 0.8)", () => {
  const c = compile('response.duration | "0ms"', DEFAULT_MANIFEST);
  assert.equal(c.type, "DURATION");
  assert.equal(c.evaluate(bagOf({})), 0);
  assert.equal(c.evaluate(bagOf({ "response.duration": 25 })), 25);
  assert.equal(
    compile('"1m30s" == response.duration', DEFAULT_MANIFEST).evaluate(
      bagOf({ "response.duration": 90_000 }),
    ),
    true,
  );
});

Deno.test("compile() keeps a quoted duration a STRING elsewhere, and refuses a non-duration beside a DURATION", () => {
  assert.equal(compile('source.name | "10s"', DEFAULT_MANIFEST).type, "STRING");
  assert.throws(
    () => compile('response.duration | "soon"', DEFAULT_MANIFEST),
    /between different types DURATION and STRING/,
  );
});
