/**
 * One engine for Go's text/template language as mesh uses it twice: the injector's sidecar
 * templates (`[[ ]]` delimiters, missing fields empty, as Istio's injector) and the deployment
 * chart of `meshctl gen-deploy` (`{{ }}` delimiters, a value that is not set is an error when
 * printed, as Helm with `missingkey=error` for output). The dialect is chosen by
 * {@link TemplateOptions}, as Go's `Delims` and `Option("missingkey=...")` choose it. No user code
 * runs: only field access, the functions given, conditionals and loops, with limits on output
 * size and work done.
 *
 * Language (see docs/sidecar-injector.md for the full reference; `{{ }}` stands for the delimiters):
 * - `{{ pipeline }}` prints a value; `{{- ` / ` -}}` trim the whitespace before / after.
 * - Operands: `.` (the current value), `.A.B` (field access), `$` (the root), `$.A`, `$x` (a
 *   variable), `"string"`, `` `raw string` ``, numbers, `true`, `false`, `nil`, `( pipeline )`.
 * - Pipelines: `cmd | cmd`, where the value of the left is passed as the last argument of the
 *   right: `{{ .ObjectMeta.Name | toJson }}`. A command is an operand or a function and its
 *   arguments: `{{ annotation .ObjectMeta "key" "default" }}`.
 * - `{{ $x := pipeline }}` declares a variable (scoped to the enclosing block).
 * - `{{ if p }} ... {{ else if p }} ... {{ else }} ... {{ end }}`, `{{ with p }} ... {{ end }}`,
 *   `{{ range p }} ... {{ else }} ... {{ end }}` and `{{ range $i, $v := p }}`.
 * - `{{/* comment *\/}}`.
 *
 * @example
 * ```ts
 * import { parseTemplate } from "./template.ts";
 * const t = parseTemplate("name: [[ .ObjectMeta.name ]]", { delims: ["[[", "]]"] });
 * console.log(t.render({ ObjectMeta: { name: "web" } })); // name: web
 * ```
 * @module
 */

import { stringify as toYamlText } from "../deps/yaml.ts";
import { FUNCTIONS, isEmpty, isRecord, print, type TemplateFunction } from "./functions.ts";

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

/** The dialect of a template (Go's `Delims` and `missingkey` options, and the function table). */
export interface TemplateOptions {
  /** Left and right action delimiters (default `["{{", "}}"]`; the injector's are `[[` `]]`). */
  delims?: readonly [string, string];
  /**
   * `"zero"` (default): a missing field is empty and prints as nothing. `"error"`: printing a
   * missing field is an error (`.Values.x is not set`); conditions and functions see it as empty.
   */
  missingKey?: "zero" | "error";
  /** The functions templates may call (default {@link FUNCTIONS}). */
  functions?: Readonly<Record<string, TemplateFunction>>;
  /**
   * Template name: errors read `<name>:<line>: ...`; without it `template: line <line>: ...`.
   */
  name?: string;
  /**
   * `.Name` also finds a field `name` when there is no `Name` (Go structs' exported fields over
   * JSON data, as Istio's templates read `.ObjectMeta.Name`). Default false: names match exactly.
   */
  goFieldNames?: boolean;
  /** How a printed map or list reads: compact JSON (default) or block YAML. */
  printObjects?: "json" | "yaml";
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
  | { k: "out"; pipe: Pipeline; src: string }
  | { k: "if"; pipe: Pipeline; then: Node[]; else: Node[]; with: boolean }
  | { k: "range"; pipe: Pipeline; body: Node[]; else: Node[] };

interface Action {
  body: string;
  line: number;
}

type Piece = { text: string } | Action;

/** Makes the errors of one template: `<name>:<line>: msg` or `template: line <line>: msg`. */
type ErrorAt = (line: number, message: string) => TemplateError;

function errorAt(name: string | undefined): ErrorAt {
  return name === undefined
    ? (line, m) => new TemplateError(`template: line ${line}: ${m}`)
    : (line, m) => new TemplateError(`${name}:${line}: ${m}`);
}

/** Splits the source into text and actions, applying the trim markers. */
function lex(src: string, [left, right]: readonly [string, string], err: ErrorAt): Piece[] {
  const out: Piece[] = [];
  let i = 0;
  let line = 1;
  let trimNext = false;
  while (i < src.length) {
    const open = src.indexOf(left, i);
    let text = src.slice(i, open < 0 ? src.length : open);
    if (trimNext) text = text.replace(/^\s+/, "");
    trimNext = false;
    if (open < 0) {
      out.push({ text });
      break;
    }
    let j = open + left.length;
    if (src[j] === "-" && /\s/.test(src[j + 1] ?? "")) {
      text = text.replace(/\s+$/, "");
      j += 1;
    }
    out.push({ text });
    line += countLines(src.slice(i, open));
    const close = findClose(src, j, right);
    if (close < 0) throw err(line, `unclosed action (missing ${JSON.stringify(right)})`);
    let body = src.slice(j, close);
    if (/\s-$/.test(body)) {
      body = body.slice(0, -1);
      trimNext = true;
    }
    out.push({ body, line });
    line += countLines(src.slice(open, close + right.length));
    i = close + right.length;
  }
  return out;
}

function countLines(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) === 10) n++;
  return n;
}

/** The index of the delimiter closing an action, skipping quoted strings; -1 when none. */
function findClose(src: string, from: number, right: string): number {
  let i = from;
  while (i < src.length) {
    const c = src[i];
    if (c === '"') {
      i++;
      while (i < src.length && src[i] !== '"') i += src[i] === "\\" ? 2 : 1;
    } else if (c === "`") {
      i = src.indexOf("`", i + 1);
      if (i < 0) break;
    } else if (src.startsWith(right, i)) return i;
    i++;
  }
  return -1;
}

type Token =
  | { t: "field"; base: "dot" | "root" | "var"; name?: string; path: string[] }
  | { t: "lit"; value: unknown }
  | { t: "ident"; name: string }
  | { t: "(" | ")" | "|" | ":=" | "," };

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*/;
const FIELD_CHAIN = /^(?:\.[A-Za-z_][A-Za-z0-9_]*)+/;
const NUMBER = /^-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/;

function tokenize(body: string, line: number, errAt: ErrorAt): Token[] {
  const err = (m: string) => errAt(line, m);
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
  constructor(readonly toks: Token[], readonly line: number, readonly errAt: ErrorAt) {}
  err(m: string) {
    return this.errAt(this.line, m);
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

function parsePipeline(body: string, line: number, err: ErrorAt, closing = true): Pipeline {
  const p = new PipeParser(tokenize(body, line, err), line, err);
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
  constructor(readonly pieces: Piece[], readonly errAt: ErrorAt) {}

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
      const err = (m: string) => this.errAt(p.line, m);
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
          nodes.push(this.block(kw, parsePipeline(rest, p.line, this.errAt), p.line));
          break;
        }
        default:
          if (p.body.trim() === "") throw err("empty action");
          nodes.push({
            k: "out",
            pipe: parsePipeline(p.body, p.line, this.errAt),
            src: p.body.trim(),
          });
      }
    }
    return { nodes };
  }

  block(kw: "if" | "with" | "range", pipe: Pipeline, line: number): Node {
    const err = (m: string) => this.errAt(line, m);
    const body = this.list();
    if (!body.stop) throw err(`${kw} without end`);
    let elseNodes: Node[] = [];
    if (body.stop.kw === "elseif") {
      if (kw === "range") throw err("else if inside range");
      // `else if X` is `else` + a nested `if X ... end` that shares this block's end
      const cond = parsePipeline(body.stop.rest, body.stop.line, this.errAt);
      elseNodes = [this.block("if", cond, line)];
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

/** The value of a missing field when {@link TemplateOptions.missingKey} is `"error"`. */
const MISSING: unique symbol = Symbol("missing");

function lowerFirst(s: string): string {
  return s.charAt(0).toLowerCase() + s.slice(1);
}

/** Field `name` of `v`: undefined (`missingKey` "zero") or MISSING ("error") when absent. */
function fieldOf(v: unknown, name: string, o: Dialect): unknown {
  const absent = o.missingKey === "error" ? MISSING : undefined;
  if (!isRecord(v)) return absent;
  if (Object.hasOwn(v, name)) return v[name];
  if (!o.goFieldNames) return absent;
  const l = lowerFirst(name);
  return Object.hasOwn(v, l) ? v[l] : absent;
}

/** A value as functions and conditions see it (a missing field is undefined). */
function present(v: unknown): unknown {
  return v === MISSING ? undefined : v;
}

/** {@link TemplateOptions} with the defaults filled in. */
type Dialect = Required<Omit<TemplateOptions, "name">> & { err: ErrorAt };

function dialectOf(o: TemplateOptions): Dialect {
  return {
    delims: o.delims ?? ["{{", "}}"],
    missingKey: o.missingKey ?? "zero",
    functions: o.functions ?? FUNCTIONS,
    goFieldNames: o.goFieldNames ?? false,
    printObjects: o.printObjects ?? "json",
    err: errorAt(o.name),
  };
}

class Renderer {
  out: string[] = [];
  size = 0;
  steps = 0;
  readonly maxOutput: number;
  readonly maxSteps: number;
  constructor(readonly root: unknown, limits: RenderLimits, readonly o: Dialect) {
    this.maxOutput = limits.maxOutput ?? 1 << 20;
    this.maxSteps = limits.maxSteps ?? 1_000_000;
  }

  step(line: number) {
    if (++this.steps > this.maxSteps) {
      throw this.o.err(line, `too much work (over ${this.maxSteps} steps)`);
    }
  }

  emit(s: string, line: number) {
    this.size += s.length;
    if (this.size > this.maxOutput) {
      throw this.o.err(line, `output larger than ${this.maxOutput} characters`);
    }
    this.out.push(s);
  }

  /** Text of a printed value: scalars as is, nothing for nil, lists and maps as JSON or YAML. */
  print(v: unknown): string {
    if (this.o.printObjects === "yaml" && typeof v === "object" && v !== null) {
      return toYamlText(v, { lineWidth: 0 }).replace(/\n$/, "");
    }
    return print(v);
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
        if (v === MISSING) throw this.o.err(n.pipe.line, `${n.src} is not set`);
        if (n.pipe.decl.length === 0) this.emit(this.print(v), n.pipe.line);
        return;
      }
      case "if": {
        const scope = new Map(vars);
        const v = present(this.pipe(n.pipe, dot, scope));
        if (!isEmpty(v)) this.nodes(n.then, n.with ? v : dot, scope, n.pipe.line);
        else this.nodes(n.else, dot, new Map(vars), n.pipe.line);
        return;
      }
      case "range":
        this.range(n, dot, vars);
        return;
    }
  }

  range(n: Extract<Node, { k: "range" }>, dot: unknown, vars: Map<string, unknown>) {
    const scope = new Map(vars);
    const v = present(this.pipe({ ...n.pipe, decl: [] }, dot, scope));
    const entries: [unknown, unknown][] = Array.isArray(v)
      ? v.map((x, i) => [i, x])
      : isRecord(v)
      ? Object.keys(v).sort().map((k) => [k, v[k]])
      : typeof v === "number" && Number.isInteger(v) && v > 0
      ? Array.from({ length: Math.min(v, this.maxSteps) }, (_, i) => [i, i])
      : [];
    if (v !== undefined && v !== null && !Array.isArray(v) && !isRecord(v) && !entries.length) {
      if (typeof v !== "number") {
        throw this.o.err(n.pipe.line, `range can't iterate over ${print(v)}`);
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
  }

  pipe(p: Pipeline, dot: unknown, vars: Map<string, unknown>): unknown {
    let prev: unknown;
    let first = true;
    for (const cmd of p.cmds) {
      this.step(p.line);
      prev = this.command(cmd, dot, vars, p.line, first ? [] : [present(prev)]);
      first = false;
    }
    if (p.decl.length > 0) vars.set(p.decl[p.decl.length - 1], prev);
    return prev;
  }

  fn(name: string, line: number): TemplateFunction {
    const fns = this.o.functions;
    if (!Object.hasOwn(fns, name)) throw this.o.err(line, `function "${name}" not defined`);
    return fns[name];
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
      const fn = this.fn(head.name, line);
      const args = cmd.slice(1).map((a) => present(this.operand(a, dot, vars, line)));
      return fn(...args, ...extra);
    }
    if (cmd.length > 1 || extra.length > 0) {
      throw this.o.err(line, "can't give arguments to a non-function");
    }
    return this.operand(head, dot, vars, line);
  }

  operand(o: Operand, dot: unknown, vars: Map<string, unknown>, line: number): unknown {
    switch (o.t) {
      case "lit":
        return o.value;
      case "sub":
        return this.pipe({ ...o.pipe, decl: [] }, dot, new Map(vars));
      case "ident":
        return this.fn(o.name, line)();
      case "field": {
        let v: unknown;
        if (o.base === "dot") v = dot;
        else if (o.base === "root") v = this.root;
        else {
          if (!vars.has(o.name!)) throw this.o.err(line, `undefined variable "$${o.name}"`);
          v = vars.get(o.name!);
        }
        for (const name of o.path) v = fieldOf(v, name, this.o);
        return v;
      }
    }
  }
}

/**
 * Parses a template in the dialect of `options`. Throws {@link TemplateError} naming the line of
 * the first problem (unclosed action, unknown keyword use, unbalanced `if`/`end`, bad string...).
 * Unknown functions are reported when parsing.
 */
export function parseTemplate(src: string, options: TemplateOptions = {}): Template {
  const o = dialectOf(options);
  const tp = new TreeParser(lex(src, o.delims, o.err), o.err);
  const { nodes, stop } = tp.list();
  if (stop) {
    throw o.err(stop.line, `unexpected ${stop.kw === "elseif" ? "else if" : stop.kw}`);
  }
  checkFunctions(nodes, o);
  return {
    render(data, limits = {}) {
      const r = new Renderer(data, limits, o);
      r.nodes(nodes, data, new Map([["", data]]));
      return r.out.join("");
    },
  };
}

function checkFunctions(nodes: Node[], o: Dialect) {
  const pipe = (p: Pipeline) => {
    for (const cmd of p.cmds) {
      for (const op of cmd) {
        if (op.t === "ident" && !Object.hasOwn(o.functions, op.name)) {
          throw o.err(p.line, `function "${op.name}" not defined`);
        }
        if (op.t === "sub") pipe(op.pipe);
      }
    }
  };
  for (const n of nodes) {
    if (n.k === "out") pipe(n.pipe);
    else if (n.k === "if") {
      pipe(n.pipe);
      checkFunctions(n.then, o);
      checkFunctions(n.else, o);
    } else if (n.k === "range") {
      pipe(n.pipe);
      checkFunctions(n.body, o);
      checkFunctions(n.else, o);
    }
  }
}
