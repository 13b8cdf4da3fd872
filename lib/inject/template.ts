/**
 * A small, safe text template language for sidecar templates: a subset of Go's text/template
 * with the `[[` `]]` delimiters Istio's injector templates use, so those templates render here
 * unchanged when they stay within the subset. No user code runs: only field access, a fixed set
 * of functions, conditionals and loops, with limits on output size and work done.
 *
 * Language (see docs/sidecar-injector.md for the full reference):
 * - `[[ pipeline ]]` prints a value; `[[- ` / ` -]]` trim the whitespace before / after.
 * - Operands: `.` (the current value), `.A.B` (field access; `Name` also finds `name`), `$`
 *   (the root), `$.A`, `$x` (a variable), `"string"`, `` `raw string` ``, numbers, `true`,
 *   `false`, `nil`, `( pipeline )`.
 * - Pipelines: `cmd | cmd`, where the value of the left is passed as the last argument of the
 *   right: `[[ .ObjectMeta.Name | toJson ]]`. A command is an operand or a function and its
 *   arguments: `[[ annotation .ObjectMeta "key" "default" ]]`.
 * - `[[ $x := pipeline ]]` declares a variable (scoped to the enclosing block).
 * - `[[ if p ]] ... [[ else if p ]] ... [[ else ]] ... [[ end ]]`, `[[ with p ]] ... [[ end ]]`,
 *   `[[ range p ]] ... [[ else ]] ... [[ end ]]` and `[[ range $i, $v := p ]]`.
 * - `[[/* comment *\/]]`.
 * Missing fields are empty (printed as nothing), never an error.
 *
 * @example
 * ```ts
 * import { parseTemplate } from "./template.ts";
 * const t = parseTemplate("name: [[ .ObjectMeta.Name ]]");
 * console.log(t.render({ ObjectMeta: { name: "web" } })); // name: web
 * ```
 * @module
 */

import { stringify as toYamlText } from "../deps/yaml.ts";
import { formatDuration, parseDurationMs } from "../model/values.ts";

/** A template that failed to parse or to render; the message names the line. */
export class TemplateError extends Error {
  /** Creates the error. */
  constructor(message: string) {
    super(message);
    this.name = "TemplateError";
  }
}

/** Limits of one render. */
export interface RenderLimits {
  /** Maximum output length in characters (default 1 MiB). */
  maxOutput?: number;
  /** Maximum evaluation steps (default 1,000,000). */
  maxSteps?: number;
}

/** A parsed template, ready to render many times. */
export interface Template {
  /** Renders the template with `data` as `.` and `$`. Throws {@link TemplateError}. */
  render(data: unknown, limits?: RenderLimits): string;
}

// ---- lexing and parsing ----------------------------------------------------------------------

type Operand =
  | { t: "field"; base: "dot" | "root" | "var"; name?: string; path: string[] }
  | { t: "lit"; value: unknown }
  | { t: "ident"; name: string }
  | { t: "sub"; pipe: Pipeline };

interface Pipeline {
  decl: string[];
  cmds: Operand[][];
  line: number;
}

type Node =
  | { k: "text"; text: string }
  | { k: "out"; pipe: Pipeline }
  | { k: "if"; pipe: Pipeline; then: Node[]; else: Node[]; with: boolean }
  | { k: "range"; pipe: Pipeline; body: Node[]; else: Node[] };

interface Action {
  body: string;
  line: number;
}

type Piece = { text: string } | Action;

/** Splits the source into text and actions, applying the trim markers. */
function lex(src: string): Piece[] {
  const out: Piece[] = [];
  let i = 0;
  let line = 1;
  let trimNext = false;
  while (i < src.length) {
    const open = src.indexOf("[[", i);
    let text = src.slice(i, open < 0 ? src.length : open);
    if (trimNext) text = text.replace(/^\s+/, "");
    trimNext = false;
    if (open < 0) {
      out.push({ text });
      break;
    }
    let j = open + 2;
    if (src[j] === "-" && /\s/.test(src[j + 1] ?? "")) {
      text = text.replace(/\s+$/, "");
      j += 1;
    }
    out.push({ text });
    line += countLines(src.slice(i, open));
    const close = findClose(src, j, line);
    let body = src.slice(j, close);
    if (/\s-$/.test(body)) {
      body = body.slice(0, -1);
      trimNext = true;
    }
    out.push({ body, line });
    line += countLines(src.slice(open, close + 2));
    i = close + 2;
  }
  return out;
}

function countLines(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) === 10) n++;
  return n;
}

/** The index of the `]]` closing an action, skipping quoted strings. */
function findClose(src: string, from: number, line: number): number {
  let i = from;
  while (i < src.length) {
    const c = src[i];
    if (c === '"') {
      i++;
      while (i < src.length && src[i] !== '"') i += src[i] === "\\" ? 2 : 1;
    } else if (c === "`") {
      i = src.indexOf("`", i + 1);
      if (i < 0) break;
    } else if (c === "]" && src[i + 1] === "]") return i;
    i++;
  }
  throw new TemplateError(`template: line ${line}: unclosed action (missing "]]")`);
}

type Token =
  | { t: "field"; base: "dot" | "root" | "var"; name?: string; path: string[] }
  | { t: "lit"; value: unknown }
  | { t: "ident"; name: string }
  | { t: "(" | ")" | "|" | ":=" | "," };

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*/;
const FIELD_CHAIN = /^(?:\.[A-Za-z_][A-Za-z0-9_]*)+/;
const NUMBER = /^-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/;

function tokenize(body: string, line: number): Token[] {
  const err = (m: string) => new TemplateError(`template: line ${line}: ${m}`);
  const out: Token[] = [];
  let s = body;
  while (true) {
    s = s.replace(/^\s+/, "");
    if (s === "") return out;
    const c = s[0];
    let m: RegExpMatchArray | null;
    if (c === "(" || c === ")" || c === "|" || c === ",") {
      out.push({ t: c });
      s = s.slice(1);
    } else if (s.startsWith(":=")) {
      out.push({ t: ":=" });
      s = s.slice(2);
    } else if (c === '"') {
      let j = 1;
      while (j < s.length && s[j] !== '"') j += s[j] === "\\" ? 2 : 1;
      if (j >= s.length) throw err("unterminated string");
      try {
        out.push({ t: "lit", value: JSON.parse(s.slice(0, j + 1)) });
      } catch {
        throw err(`bad string ${s.slice(0, j + 1)}`);
      }
      s = s.slice(j + 1);
    } else if (c === "`") {
      const j = s.indexOf("`", 1);
      if (j < 0) throw err("unterminated raw string");
      out.push({ t: "lit", value: s.slice(1, j) });
      s = s.slice(j + 1);
    } else if (c === "$") {
      m = s.slice(1).match(IDENT);
      const name = m ? m[0] : "";
      s = s.slice(1 + name.length);
      const chain = s.match(FIELD_CHAIN);
      const path = chain ? chain[0].slice(1).split(".") : [];
      if (chain) s = s.slice(chain[0].length);
      out.push(
        name === "" ? { t: "field", base: "root", path } : {
          t: "field",
          base: "var",
          name,
          path,
        },
      );
    } else if (c === ".") {
      m = s.match(FIELD_CHAIN);
      if (m) {
        out.push({ t: "field", base: "dot", path: m[0].slice(1).split(".") });
        s = s.slice(m[0].length);
      } else {
        out.push({ t: "field", base: "dot", path: [] });
        s = s.slice(1);
      }
    } else if ((m = s.match(NUMBER))) {
      out.push({ t: "lit", value: Number(m[0]) });
      s = s.slice(m[0].length);
    } else if ((m = s.match(IDENT))) {
      const w = m[0];
      if (w === "true" || w === "false") out.push({ t: "lit", value: w === "true" });
      else if (w === "nil") out.push({ t: "lit", value: null });
      else out.push({ t: "ident", name: w });
      s = s.slice(w.length);
      // a field access on a function result is not supported: `fn.X`
      if (s.startsWith(".") && /^\.[A-Za-z_]/.test(s)) throw err(`unexpected "." after ${w}`);
    } else {
      throw err(`unexpected character ${JSON.stringify(c)}`);
    }
  }
}

class PipeParser {
  i = 0;
  constructor(readonly toks: Token[], readonly line: number) {}
  err(m: string) {
    return new TemplateError(`template: line ${this.line}: ${m}`);
  }
  pipeline(): Pipeline {
    const decl: string[] = [];
    // $x := ... or $i, $v := ...
    const save = this.i;
    const names: string[] = [];
    while (true) {
      const tk = this.toks[this.i];
      if (tk?.t === "field" && tk.base === "var" && tk.path.length === 0) {
        names.push(tk.name!);
        this.i++;
        if (this.toks[this.i]?.t === ",") {
          this.i++;
          continue;
        }
        if (this.toks[this.i]?.t === ":=") {
          this.i++;
          decl.push(...names);
        } else this.i = save;
      }
      break;
    }
    const cmds: Operand[][] = [];
    let cmd: Operand[] = [];
    while (this.i < this.toks.length) {
      const tk = this.toks[this.i];
      if (tk.t === ")") break;
      this.i++;
      if (tk.t === "|") {
        if (cmd.length === 0) throw this.err("missing command before |");
        cmds.push(cmd);
        cmd = [];
      } else if (tk.t === "(") {
        const sub = this.pipeline();
        if (this.toks[this.i]?.t !== ")") throw this.err('missing ")"');
        this.i++;
        cmd.push({ t: "sub", pipe: sub });
      } else if (tk.t === ":=" || tk.t === ",") {
        throw this.err(`unexpected ${JSON.stringify(tk.t)}`);
      } else {
        cmd.push(tk as Operand);
      }
    }
    if (cmd.length === 0) throw this.err("missing value");
    cmds.push(cmd);
    return { decl, cmds, line: this.line };
  }
}

function parsePipeline(body: string, line: number, closing = true): Pipeline {
  const p = new PipeParser(tokenize(body, line), line);
  const pipe = p.pipeline();
  if (closing && p.i !== p.toks.length) throw p.err('unexpected ")"');
  return pipe;
}

type Keyword = "if" | "with" | "range" | "else" | "end" | "elseif" | "comment" | null;

function keywordOf(body: string): { kw: Keyword; rest: string } {
  const b = body.trim();
  if (b.startsWith("/*")) {
    if (!b.endsWith("*/")) return { kw: null, rest: b };
    return { kw: "comment", rest: "" };
  }
  const m = b.match(/^(if|with|range|else|end)\b\s*/);
  if (!m) return { kw: null, rest: b };
  const rest = b.slice(m[0].length);
  if (m[1] === "else" && /^if\b/.test(rest)) return { kw: "elseif", rest: rest.slice(2) };
  return { kw: m[1] as Keyword, rest };
}

class TreeParser {
  i = 0;
  constructor(readonly pieces: Piece[]) {}

  /** Parses nodes until an `else`/`end` (returned) or the end of input. */
  list(): { nodes: Node[]; stop?: { kw: "else" | "end" | "elseif"; rest: string; line: number } } {
    const nodes: Node[] = [];
    while (this.i < this.pieces.length) {
      const p = this.pieces[this.i++];
      if ("text" in p) {
        if (p.text) nodes.push({ k: "text", text: p.text });
        continue;
      }
      const { kw, rest } = keywordOf(p.body);
      const err = (m: string) => new TemplateError(`template: line ${p.line}: ${m}`);
      switch (kw) {
        case "comment":
          break;
        case "else":
        case "elseif":
        case "end":
          if (kw === "end" && rest !== "") {
            throw err(`unexpected ${JSON.stringify(rest)} after end`);
          }
          return { nodes, stop: { kw, rest, line: p.line } };
        case "if":
        case "with":
        case "range": {
          if (rest === "") throw err(`missing value for ${kw}`);
          nodes.push(this.block(kw, parsePipeline(rest, p.line), p.line));
          break;
        }
        default:
          if (p.body.trim() === "") throw err("empty action");
          nodes.push({ k: "out", pipe: parsePipeline(p.body, p.line) });
      }
    }
    return { nodes };
  }

  block(kw: "if" | "with" | "range", pipe: Pipeline, line: number): Node {
    const err = (m: string) => new TemplateError(`template: line ${line}: ${m}`);
    const body = this.list();
    if (!body.stop) throw err(`unexpected end of template: ${kw} without end`);
    let elseNodes: Node[] = [];
    if (body.stop.kw === "elseif") {
      if (kw === "range") throw err("else if inside range");
      // `else if X` is `else` + a nested `if X ... end` that shares this block's end
      elseNodes = [this.block("if", parsePipeline(body.stop.rest, body.stop.line), line)];
    } else if (body.stop.kw === "else") {
      if (body.stop.rest !== "") throw err(`unexpected ${JSON.stringify(body.stop.rest)}`);
      const e = this.list();
      if (!e.stop || e.stop.kw !== "end") throw err(`${kw} without end`);
      elseNodes = e.nodes;
    }
    if (kw === "range") return { k: "range", pipe, body: body.nodes, else: elseNodes };
    return { k: "if", pipe, then: body.nodes, else: elseNodes, with: kw === "with" };
  }
}

// ---- evaluation --------------------------------------------------------------------------------

type Fn = (...args: unknown[]) => unknown;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Go's notion of an empty value (false in `if`). */
export function isEmpty(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === "") return true;
  if (Array.isArray(v)) return v.length === 0;
  if (isRecord(v)) return Object.keys(v).length === 0;
  return false;
}

function lowerFirst(s: string): string {
  return s.charAt(0).toLowerCase() + s.slice(1);
}

function field(v: unknown, name: string): unknown {
  if (!isRecord(v)) return undefined;
  if (Object.hasOwn(v, name)) return v[name];
  const l = lowerFirst(name);
  return Object.hasOwn(v, l) ? v[l] : undefined;
}

/** Text of a printed value: strings as is, empty for nil, JSON for lists and maps. */
function print(v: unknown): string {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return JSON.stringify(v);
}

function durationText(v: unknown): string {
  if (typeof v === "number") return formatDuration(v * 1000);
  if (typeof v === "string") {
    const ms = parseDurationMs(v);
    return ms === undefined ? "1s" : formatDuration(ms);
  }
  if (isRecord(v) && (v.seconds !== undefined || v.nanos !== undefined)) {
    return formatDuration(Number(v.seconds ?? 0) * 1000 + Number(v.nanos ?? 0) / 1e6);
  }
  return "1s";
}

function containerPorts(containers: unknown): string {
  const out: string[] = [];
  for (const c of Array.isArray(containers) ? containers : []) {
    const ports = isRecord(c) ? c.ports : undefined;
    for (const p of Array.isArray(ports) ? ports : []) {
      if (isRecord(p) && p.containerPort !== undefined) out.push(String(p.containerPort));
    }
  }
  return out.join(",");
}

function indentText(n: unknown, s: unknown): string {
  const pad = " ".repeat(Math.max(0, Math.min(Number(n) || 0, 1000)));
  return print(s).split("\n").map((l) => l === "" ? l : pad + l).join("\n");
}

/** The functions templates may call (their names and argument order are part of the language). */
export const FUNCTIONS: Readonly<Record<string, Fn>> = Object.freeze({
  /** `annotation META KEY DEFAULT`: the annotation when present, else DEFAULT. */
  annotation: (meta: unknown, key: unknown, def: unknown) => {
    const a = field(meta, "annotations");
    return isRecord(a) && typeof key === "string" && Object.hasOwn(a, key) ? a[key] : def;
  },
  /** `valueOrDefault VALUE DEFAULT`: VALUE unless empty. */
  valueOrDefault: (v: unknown, def: unknown) => isEmpty(v) ? def : v,
  /** `default DEFAULT VALUE` (argument order of the sprig library): VALUE unless empty. */
  default: (def: unknown, v: unknown) => isEmpty(v) ? def : v,
  /** `toJson VALUE`: compact JSON. */
  toJson: (v: unknown) => JSON.stringify(v ?? null),
  /** `toYaml VALUE`: block YAML without the trailing newline. */
  toYaml: (v: unknown) => v === undefined ? "" : toYamlText(v).replace(/\n$/, ""),
  /** `indent N TEXT`: every non-empty line indented by N spaces. */
  indent: indentText,
  /** `nindent N TEXT`: a newline, then `indent N TEXT`. */
  nindent: (n: unknown, s: unknown) => "\n" + indentText(n, s),
  /** `quote VALUE`: a double-quoted string. */
  quote: (v: unknown) => JSON.stringify(print(v)),
  /** `isset MAP KEY`: whether KEY is in MAP. */
  isset: (m: unknown, k: unknown) => isRecord(m) && typeof k === "string" && Object.hasOwn(m, k),
  /** `index MAP-OR-LIST KEY...`: an element. */
  index: (v: unknown, ...keys: unknown[]) => {
    let cur = v;
    for (const k of keys) {
      if (Array.isArray(cur) && typeof k === "number") cur = cur[k];
      else if (isRecord(cur) && (typeof k === "string" || typeof k === "number")) {
        cur = Object.hasOwn(cur, String(k)) ? cur[String(k)] : undefined;
      } else cur = undefined;
    }
    return cur;
  },
  /** `formatDuration D`: a Go duration string (`1s`, `1m0s`); `1s` when D is not a duration. */
  formatDuration: durationText,
  /** `includeInboundPorts CONTAINERS`: comma-separated container ports of every container. */
  includeInboundPorts: containerPorts,
  /** `join SEP LIST`. */
  join: (sep: unknown, list: unknown) =>
    Array.isArray(list) ? list.map(print).join(print(sep)) : print(list),
  /** `len VALUE`: length of a string, list or map. */
  len: (v: unknown) =>
    typeof v === "string" || Array.isArray(v) ? v.length : isRecord(v) ? Object.keys(v).length : 0,
  /** `eq A B`, `ne A B`: equality of scalars. */
  eq: (a: unknown, b: unknown) => a === b || (isEmpty(a) && isEmpty(b) && typeof a === typeof b),
  ne: (a: unknown, b: unknown) => !(a === b || (isEmpty(a) && isEmpty(b) && typeof a === typeof b)),
  /** `not A`, `and A B...`, `or A B...`: Go's truth rules. */
  not: (a: unknown) => isEmpty(a),
  and: (...a: unknown[]) => a.find((x) => isEmpty(x)) ?? a[a.length - 1],
  or: (...a: unknown[]) => a.find((x) => !isEmpty(x)) ?? a[a.length - 1],
  /** `printf FORMAT ARGS...`: `%s`, `%d` and `%v` replaced by the arguments in order, `%%` by `%`. */
  printf: (format: unknown, ...args: unknown[]) => {
    let i = 0;
    return print(format).replace(/%[sdv%]/g, (m) => m === "%%" ? "%" : print(args[i++]));
  },
  /** `lower S`, `upper S`. */
  lower: (s: unknown) => print(s).toLowerCase(),
  upper: (s: unknown) => print(s).toUpperCase(),
});

class Renderer {
  out: string[] = [];
  size = 0;
  steps = 0;
  readonly maxOutput: number;
  readonly maxSteps: number;
  constructor(readonly root: unknown, limits: RenderLimits) {
    this.maxOutput = limits.maxOutput ?? 1 << 20;
    this.maxSteps = limits.maxSteps ?? 1_000_000;
  }

  step(line: number) {
    if (++this.steps > this.maxSteps) {
      throw new TemplateError(
        `template: line ${line}: too much work (over ${this.maxSteps} steps)`,
      );
    }
  }

  emit(s: string, line: number) {
    this.size += s.length;
    if (this.size > this.maxOutput) {
      throw new TemplateError(
        `template: line ${line}: output larger than ${this.maxOutput} characters`,
      );
    }
    this.out.push(s);
  }

  nodes(list: Node[], dot: unknown, vars: Map<string, unknown>, line = 0) {
    for (const n of list) this.node(n, dot, vars, line);
  }

  node(n: Node, dot: unknown, vars: Map<string, unknown>, line: number) {
    switch (n.k) {
      case "text":
        this.emit(n.text, line);
        return;
      case "out": {
        const v = this.pipe(n.pipe, dot, vars);
        if (n.pipe.decl.length === 0) this.emit(print(v), n.pipe.line);
        return;
      }
      case "if": {
        const scope = new Map(vars);
        const v = this.pipe(n.pipe, dot, scope);
        if (!isEmpty(v)) this.nodes(n.then, n.with ? v : dot, scope, n.pipe.line);
        else this.nodes(n.else, dot, new Map(vars), n.pipe.line);
        return;
      }
      case "range": {
        const scope = new Map(vars);
        const v = this.pipe({ ...n.pipe, decl: [] }, dot, scope);
        const entries: [unknown, unknown][] = Array.isArray(v)
          ? v.map((x, i) => [i, x])
          : isRecord(v)
          ? Object.keys(v).sort().map((k) => [k, v[k]])
          : typeof v === "number" && Number.isInteger(v) && v > 0
          ? Array.from({ length: Math.min(v, this.maxSteps) }, (_, i) => [i, i])
          : [];
        if (v !== undefined && v !== null && !Array.isArray(v) && !isRecord(v) && !entries.length) {
          if (typeof v !== "number") {
            throw new TemplateError(
              `template: line ${n.pipe.line}: range can't iterate over ${print(v)}`,
            );
          }
        }
        if (entries.length === 0) {
          this.nodes(n.else, dot, new Map(vars), n.pipe.line);
          return;
        }
        const d = n.pipe.decl;
        for (const [k, x] of entries) {
          this.step(n.pipe.line);
          const s = new Map(scope);
          if (d.length === 1) s.set(d[0], x);
          if (d.length >= 2) {
            s.set(d[0], k);
            s.set(d[1], x);
          }
          this.nodes(n.body, x, s, n.pipe.line);
        }
        return;
      }
    }
  }

  pipe(p: Pipeline, dot: unknown, vars: Map<string, unknown>): unknown {
    let prev: unknown;
    let first = true;
    for (const cmd of p.cmds) {
      this.step(p.line);
      prev = this.command(cmd, dot, vars, p.line, first ? [] : [prev]);
      first = false;
    }
    if (p.decl.length > 0) vars.set(p.decl[p.decl.length - 1], prev);
    return prev;
  }

  command(
    cmd: Operand[],
    dot: unknown,
    vars: Map<string, unknown>,
    line: number,
    extra: unknown[],
  ) {
    const head = cmd[0];
    if (head.t === "ident") {
      const fn = Object.hasOwn(FUNCTIONS, head.name) ? FUNCTIONS[head.name] : undefined;
      if (!fn) {
        throw new TemplateError(`template: line ${line}: function "${head.name}" not defined`);
      }
      const args = cmd.slice(1).map((a) => this.operand(a, dot, vars, line));
      return fn(...args, ...extra);
    }
    if (cmd.length > 1 || extra.length > 0) {
      throw new TemplateError(`template: line ${line}: can't give arguments to a non-function`);
    }
    return this.operand(head, dot, vars, line);
  }

  operand(o: Operand, dot: unknown, vars: Map<string, unknown>, line: number): unknown {
    switch (o.t) {
      case "lit":
        return o.value;
      case "sub":
        return this.pipe({ ...o.pipe, decl: [] }, dot, new Map(vars));
      case "ident": {
        if (!Object.hasOwn(FUNCTIONS, o.name)) {
          throw new TemplateError(`template: line ${line}: function "${o.name}" not defined`);
        }
        return FUNCTIONS[o.name]();
      }
      case "field": {
        let v: unknown;
        if (o.base === "dot") v = dot;
        else if (o.base === "root") v = this.root;
        else {
          if (!vars.has(o.name!)) {
            throw new TemplateError(`template: line ${line}: undefined variable "$${o.name}"`);
          }
          v = vars.get(o.name!);
        }
        for (const name of o.path) v = field(v, name);
        return v;
      }
    }
  }
}

/**
 * Parses a template. Throws {@link TemplateError} naming the line of the first problem
 * (unclosed action, unknown keyword use, unbalanced `if`/`end`, bad string...). Unknown
 * functions are reported when parsing.
 */
export function parseTemplate(src: string): Template {
  const tp = new TreeParser(lex(src));
  const { nodes, stop } = tp.list();
  if (stop) {
    throw new TemplateError(
      `template: line ${stop.line}: unexpected ${stop.kw === "elseif" ? "else if" : stop.kw}`,
    );
  }
  checkFunctions(nodes);
  return {
    render(data, limits = {}) {
      const r = new Renderer(data, limits);
      r.nodes(nodes, data, new Map([["", data]]));
      return r.out.join("");
    },
  };
}

function checkFunctions(nodes: Node[]) {
  const pipe = (p: Pipeline) => {
    for (const cmd of p.cmds) {
      for (const o of cmd) {
        if (o.t === "ident" && !Object.hasOwn(FUNCTIONS, o.name)) {
          throw new TemplateError(`template: line ${p.line}: function "${o.name}" not defined`);
        }
        if (o.t === "sub") pipe(o.pipe);
      }
    }
  };
  for (const n of nodes) {
    if (n.k === "out") pipe(n.pipe);
    else if (n.k === "if") {
      pipe(n.pipe);
      checkFunctions(n.then);
      checkFunctions(n.else);
    } else if (n.k === "range") {
      pipe(n.pipe);
      checkFunctions(n.body);
      checkFunctions(n.else);
    }
  }
}
