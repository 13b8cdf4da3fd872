/**
 * Seeded generators of configuration documents for the fuzz tests: schema-driven values (mostly
 * plausible, sometimes wrong), and YAML text mutations (aliases, anchors, broken flow, nesting).
 * @module
 */
import type { Schema } from "../../lib/model/dsl.ts";
import type { ModelSchema } from "../../lib/model/mod.ts";

/** A small seeded PRNG (mulberry32): the same seed gives the same cases. */
export function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    chance: (p: number) => next() < p,
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)],
  };
}
export type Rng = ReturnType<typeof rng>;

/** The seed of this run: `FUZZ_SEED` to replay one, else a fresh one (printed by the tests). */
export function runSeed(): number {
  const given = Deno.env.get("FUZZ_SEED");
  return given ? Number(given) : Math.floor(Math.random() * 2 ** 31);
}

const HOSTS = [
  "hello",
  "world",
  "hello.default.svc.cluster.local",
  "api.example.com",
  "*.example.com",
  "*",
  "10.0.0.1",
  "a.b",
  "",
  "x y",
  "bad\nhost",
  "-x.com",
  "UPPER.com",
];
const DURATIONS = ["1s", "0s", "100ms", "1h", "1.5s", "0.001s", "-1s", "1x", "", "10s"];
const REGEXES = [".*", "/a/.*", "[", "(a|b)", "^x$", ""];
const STRINGS = [
  "a",
  "v1",
  "x-y",
  "/path",
  "http",
  "HTTP",
  "TCP",
  "HTTPS",
  "GRPC",
  "MUTUAL",
  "SIMPLE",
  "",
  " ",
  "a\nError: forged",
  "x".repeat(300),
  "é",
  "80",
  "spiffe://cluster.local/ns/default/sa/x",
  "/etc/certs/x.pem",
];
const KEYS = ["app", "version", "a/b", "x y", "", "x-b", "ok.io/k", ":path", "__proto__", "1"];
/** Scalars YAML may read differently when written back unquoted (the writer must quote them). */
const TRICKY = ["yes", "null", "~", "1e3", "0x10", "2001-12-14", "'", "- a", "#x", "a: b", "@x"];
const INTS = [0, 1, 2, 80, 443, 8080, 9000, 65535, 65536, -1, 2 ** 31, 2 ** 53, 1.5];
const NUMBERS = [0, 0.5, 1, 50, 100, 101, -1, 1e308];

/** Whether the document being generated is "wild" (any value) or "tame" (plausible values). */
let wild = true;

function stringFor(r: Rng, field: string): string {
  const f = field.toLowerCase();
  if (!wild && r.chance(0.02)) return "";
  if (!wild && /^address/.test(f)) return r.pick(["10.0.0.1", "10.1.0.0/16", "192.168.1.1"]);
  if (/host|authority|domain|address|sni|subject/.test(f)) {
    return r.pick(wild ? HOSTS : HOSTS.slice(0, 8));
  }
  if (/timeout|interval|ttl|time|duration|delay|idle/.test(f)) {
    return r.pick(wild ? DURATIONS : DURATIONS.slice(0, 6));
  }
  if (/regex/.test(f)) return r.pick(wild ? REGEXES : [".*", "/a/.*"]);
  if (!wild && f === "name") return r.pick(["a", "http", "v1", "x-y"]);
  if (!wild && f === "uri") return r.pick(["/", "/a"]);
  return r.pick(!wild ? STRINGS.slice(0, 3) : r.chance(0.7) ? STRINGS.slice(0, 11) : STRINGS);
}

/** A random JSON-like value of free form (for `any` fields), sometimes deep. */
export function anyValue(r: Rng, depth = 0): unknown {
  const k = r.int(depth > 4 ? 4 : 7);
  switch (k) {
    case 0:
      return r.pick(r.chance(0.5) ? STRINGS : TRICKY);
    case 1:
      return r.pick([...INTS, -0, 2 ** 64, Infinity, NaN, 0.1 + 0.2]);
    case 2:
      return r.chance(0.5);
    case 3:
      return null;
    case 4:
    case 5:
      return Array.from({ length: r.int(3) }, () => anyValue(r, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = r.int(3); i > 0; i--) o[r.pick(KEYS) || "k"] = anyValue(r, depth + 1);
      return o;
    }
  }
}

/** A random value for `schema` (field name `field` guides the string pools). */
export function valueFor(r: Rng, schema: Schema, field = "", depth = 0): unknown {
  if (wild && r.chance(0.02)) return r.pick([null, "wrong", 7, [], {}, true]); // a wrong type
  switch (schema.type) {
    case "string":
      if (schema.enum && (!wild || r.chance(0.9))) return r.pick(schema.enum);
      return stringFor(r, field);
    case "integer":
      if (!wild) return r.pick([1, 80, 443, 8080, 9000, 50, 100]);
      return r.chance(0.1) ? String(r.pick(INTS)) : r.pick(INTS);
    case "number":
      return r.pick(NUMBERS);
    case "boolean":
      return r.chance(0.95) ? r.chance(0.5) : "yes";
    case "any":
      return schema.object ? { a: anyValue(r, depth + 1) } : anyValue(r, depth + 1);
    case "array": {
      const n = depth > 6 ? 0 : r.pick(wild ? [0, 1, 1, 1, 2, 3] : [1, 1, 1, 2]);
      return Array.from({ length: n }, () => valueFor(r, schema.items, field, depth + 1));
    }
    case "map": {
      const o: Record<string, unknown> = {};
      for (let i = r.int(3); i > 0; i--) {
        o[r.pick(wild ? KEYS : KEYS.slice(0, 2))] = valueFor(r, schema.values, field, depth + 1);
      }
      return o;
    }
    case "object": {
      const o: Record<string, unknown> = {};
      const oneofMembers = new Set((schema.oneofs ?? []).flatMap((g) => g.fields));
      for (const g of schema.oneofs ?? []) {
        if (r.chance(0.85)) {
          const f = r.pick(g.fields);
          o[f] = valueFor(r, schema.fields[f], f, depth + 1);
        }
      }
      const p = depth > 6 ? 0.1 : depth === 0 ? 0.8 : wild ? 0.5 : 0.3;
      for (const [k, fs] of Object.entries(schema.fields)) {
        if (oneofMembers.has(k)) continue;
        if ((schema.required ?? []).includes(k) ? r.chance(0.95) : r.chance(p)) {
          o[k] = valueFor(r, fs, k, depth + 1);
        }
      }
      if (wild && r.chance(0.01)) o.unknownField = 1;
      return o;
    }
  }
}

/**
 * A random document of type `s`: plausible metadata (sometimes odd), a generated spec. `tame`
 * keeps to plausible values (many are accepted); wild ones are mostly refused.
 */
export function documentFor(r: Rng, s: ModelSchema, tame = false): Record<string, unknown> {
  wild = !tame;
  const apiVersion = s.apiVersions
    ? r.pick(s.apiVersions)
    : r.chance(0.5)
    ? `${s.group}/${s.version}`
    : `${s.referenceGroup}/${s.version}`;
  const name = tame || r.chance(0.95)
    ? r.pick(["a", "b", "hello", "x-1", "gw.v1"])
    : r.pick(["Bad_Name", "x\ny", "", "a".repeat(300)]);
  const metadata: Record<string, unknown> = { name };
  if (r.chance(0.8)) {
    metadata.namespace = r.pick(tame ? ["default", "other"] : ["default", "other", "Bad NS"]);
  }
  if (r.chance(0.2)) metadata.labels = { app: r.pick(tame ? ["a", "b"] : ["a", "b", "x y"]) };
  return { apiVersion, kind: s.kind, metadata, spec: valueFor(r, s.specSchema) };
}

const INSERTS = [
  "&a ",
  "*a",
  "[",
  "]",
  "{",
  "}",
  "\n",
  ": ",
  "- ",
  "\n---\n",
  "'",
  '"',
  "!!binary ",
  "<<: *a\n",
  "&a [*a]",
  "? ",
  "\t",
  "#",
  "%YAML 1.2\n",
];

/** `text` with a few random YAML-significant insertions, deletions or hostile suffixes. */
export function mutateText(r: Rng, text: string): string {
  let t = text;
  for (let i = 1 + r.int(3); i > 0; i--) {
    const at = r.int(t.length + 1);
    switch (r.int(6)) {
      case 0:
        t = t.slice(0, at) + t.slice(at + 1 + r.int(5));
        break;
      case 1:
        t += `\n---\nkind: x\nextra: ${"[".repeat(100 + r.int(400))}${"]".repeat(50)}\n`;
        break;
      case 2:
        t += `\n---\na: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n` +
          `c: [*b, *b, *b, *b, *b, *b, *b, *b]\n`;
        break;
      default:
        t = t.slice(0, at) + r.pick(INSERTS) + t.slice(at);
    }
  }
  return t;
}
