/**
 * A small subset of Go's text/template (as Helm charts use it), enough for the deployment chart
 * of `meshctl gen-deploy` and for user charts given with `--chart-dir`:
 *
 * - actions `{{ ... }}`, with `{{-` / `-}}` trimming the whitespace before / after;
 * - values by path: `.Values.global.hub`, `.Release.Namespace` (a missing value prints as an
 *   error, and is false in a condition);
 * - literals: `"text"`, numbers, `true`, `false`;
 * - pipelines: `.Values.x | quote`, `.Values.y | default "z"`, `toYaml .Values.r | indent 8`;
 * - `if` / `else if` / `else` / `end`, and `/* comments *\/`;
 * - functions: `quote`, `indent N`, `nindent N`, `default V`, `toYaml`, `not`, `and`, `or`,
 *   `eq`, `ne`, plus the caller's own (`meshCrds`, `sidecarTemplate`).
 *
 * Errors name the template and line: `templates/x.yaml:12: .Values.foo is not set`.
 *
 * @example
 * ```ts
 * import { renderTemplate } from "./template.ts";
 * const out = renderTemplate("x.yaml", "image: {{ .Values.hub }}/app", { Values: { hub: "h" } });
 * // out === "image: h/app"
 * ```
 * @module
 */
import { stringify } from "../deps/yaml.ts";

/** A template function: receives evaluated arguments (the piped value last). */
export type TemplateFunction = (...args: unknown[]) => unknown;

/** A template problem, naming the template and line. */
export class TemplateError extends Error {
  override name = "TemplateError";
}

type Node =
  | { kind: "text"; text: string }
  | { kind: "action"; expr: string; line: number }
  | { kind: "if"; branches: { cond: string; line: number; body: Node[] }[]; otherwise?: Node[] };

interface Token {
  kind: "text" | "action";
  text: string;
  line: number;
}

function tokenize(name: string, src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  let line = 1;
  let trimNext = false;
  while (i < src.length) {
    const open = src.indexOf("{{", i);
    let text = open < 0 ? src.slice(i) : src.slice(i, open);
    if (trimNext) text = text.replace(/^\s+/, "");
    if (open < 0) {
      if (text) out.push({ kind: "text", text, line });
      break;
    }
    const close = src.indexOf("}}", open + 2);
    const startLine = line + countLines(src.slice(i, open));
    if (close < 0) throw new TemplateError(`${name}:${startLine}: unclosed action`);
    let inner = src.slice(open + 2, close);
    if (inner.startsWith("-") && /^-\s/.test(inner)) {
      text = text.replace(/\s+$/, "");
      inner = inner.slice(1);
    }
    trimNext = false;
    if (/\s-$/.test(inner)) {
      trimNext = true;
      inner = inner.slice(0, -1);
    }
    if (text) out.push({ kind: "text", text, line });
    out.push({ kind: "action", text: inner.trim(), line: startLine });
    line = startLine + countLines(src.slice(open, close + 2));
    i = close + 2;
  }
  return out;
}

function countLines(s: string): number {
  let n = 0;
  for (const c of s) if (c === "\n") n++;
  return n;
}

function parse(name: string, tokens: Token[]): Node[] {
  let pos = 0;
  const block = (top: boolean): { nodes: Node[]; end: Token | undefined } => {
    const nodes: Node[] = [];
    while (pos < tokens.length) {
      const t = tokens[pos++];
      if (t.kind === "text") {
        nodes.push({ kind: "text", text: t.text });
        continue;
      }
      if (t.text.startsWith("/*")) continue;
      const word = t.text.split(/\s+/)[0];
      if (word === "end" || word === "else") {
        if (top) throw new TemplateError(`${name}:${t.line}: unexpected {{ ${t.text} }}`);
        return { nodes, end: t };
      }
      if (word === "if") {
        const node: Extract<Node, { kind: "if" }> = { kind: "if", branches: [] };
        let cond = t.text.slice(2).trim();
        let line = t.line;
        for (;;) {
          if (!cond) throw new TemplateError(`${name}:${line}: if needs a condition`);
          const { nodes: body, end } = block(false);
          node.branches.push({ cond, line, body });
          if (!end) throw new TemplateError(`${name}:${t.line}: if without end`);
          if (end.text === "end") break;
          const rest = end.text.slice(4).trim();
          if (rest.startsWith("if ")) {
            cond = rest.slice(3).trim();
            line = end.line;
            continue;
          }
          const { nodes: otherwise, end: end2 } = block(false);
          if (!end2 || end2.text !== "end") {
            throw new TemplateError(`${name}:${end.line}: else without end`);
          }
          node.otherwise = otherwise;
          break;
        }
        nodes.push(node);
        continue;
      }
      if (["range", "with", "define", "template", "block", "include"].includes(word)) {
        throw new TemplateError(`${name}:${t.line}: {{ ${word} }} is not supported`);
      }
      nodes.push({ kind: "action", expr: t.text, line: t.line });
    }
    return { nodes, end: undefined };
  };
  return block(true).nodes;
}

// ---- expressions -----------------------------------------------------------------------------

type Term = { kind: "path"; path: string[] } | { kind: "lit"; value: unknown } | {
  kind: "word";
  word: string;
} | { kind: "group"; cmds: Term[][] };

function lexExpr(expr: string, where: string): string[] {
  const out: string[] = [];
  const re = /\s*("(?:[^"\\]|\\.)*"|`[^`]*`|\||\(|\)|[^\s|()]+)/gy;
  let m: RegExpExecArray | null;
  let last = 0;
  while ((m = re.exec(expr)) !== null) {
    out.push(m[1]);
    last = re.lastIndex;
  }
  if (expr.slice(last).trim()) throw new TemplateError(`${where}: cannot parse ${expr}`);
  return out;
}

function parsePipeline(tokens: string[], where: string): Term[][] {
  let pos = 0;
  const pipeline = (): Term[][] => {
    const cmds: Term[][] = [[]];
    while (pos < tokens.length) {
      const t = tokens[pos];
      if (t === ")") break;
      pos++;
      if (t === "|") {
        cmds.push([]);
        continue;
      }
      if (t === "(") {
        const inner = pipeline();
        if (tokens[pos++] !== ")") throw new TemplateError(`${where}: missing )`);
        cmds[cmds.length - 1].push({ kind: "group", cmds: inner });
        continue;
      }
      cmds[cmds.length - 1].push(term(t));
    }
    if (cmds.some((c) => c.length === 0)) throw new TemplateError(`${where}: empty command`);
    return cmds;
  };
  const term = (t: string): Term => {
    if (t.startsWith('"')) return { kind: "lit", value: JSON.parse(t) };
    if (t.startsWith("`")) return { kind: "lit", value: t.slice(1, -1) };
    if (/^-?\d+(\.\d+)?$/.test(t)) return { kind: "lit", value: Number(t) };
    if (t === "true" || t === "false") return { kind: "lit", value: t === "true" };
    if (t === "nil") return { kind: "lit", value: undefined };
    if (t.startsWith(".")) return { kind: "path", path: t === "." ? [] : t.slice(1).split(".") };
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(t)) return { kind: "word", word: t };
    throw new TemplateError(`${where}: unexpected ${JSON.stringify(t)}`);
  };
  const out = pipeline();
  if (pos !== tokens.length) throw new TemplateError(`${where}: unexpected )`);
  return out;
}

const MISSING = Symbol("missing");

function truthy(v: unknown): boolean {
  if (v === MISSING || v === undefined || v === null || v === false || v === 0 || v === "") {
    return false;
  }
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === "object") return Object.keys(v as object).length > 0;
  return true;
}

function indent(n: unknown, text: unknown): string {
  const pad = " ".repeat(Number(n));
  return String(text).split("\n").map((l) => (l ? pad + l : l)).join("\n");
}

function toYaml(v: unknown): string {
  if (v === undefined || v === MISSING) return "";
  return stringify(v, { lineWidth: 0 }).replace(/\n$/, "");
}

/** The built-in functions. */
const BUILTINS: Record<string, TemplateFunction> = {
  quote: (...a) =>
    a.map((v) => JSON.stringify(v === MISSING || v == null ? "" : String(v))).join(" "),
  indent: (n, text) => indent(n, text),
  nindent: (n, text) => "\n" + indent(n, text),
  default: (d, v) => (truthy(v) ? v : d),
  toYaml,
  not: (v) => !truthy(v),
  and: (...a) => a.every(truthy),
  or: (...a) => a.some(truthy),
  eq: (a, b) => a === b,
  ne: (a, b) => a !== b,
};

/**
 * Renders one template. `data` is the dot (`{Values, Release}`); `functions` add to (or replace)
 * the built-in functions. Throws {@link TemplateError} naming `name` and the line.
 */
export function renderTemplate(
  name: string,
  src: string,
  data: Record<string, unknown>,
  functions: Record<string, TemplateFunction> = {},
): string {
  const fns = { ...BUILTINS, ...functions };
  const lookup = (path: string[]): unknown => {
    let v: unknown = data;
    for (const p of path) {
      if (typeof v !== "object" || v === null || !(p in (v as object))) return MISSING;
      v = (v as Record<string, unknown>)[p];
    }
    return v;
  };
  const evalTerm = (t: Term, where: string): unknown => {
    if (t.kind === "lit") return t.value;
    if (t.kind === "path") return lookup(t.path);
    if (t.kind === "group") return evalPipeline(t.cmds, where);
    const fn = fns[t.word];
    if (!fn) throw new TemplateError(`${where}: function ${JSON.stringify(t.word)} not defined`);
    return fn();
  };
  const evalPipeline = (cmds: Term[][], where: string): unknown => {
    let piped: unknown = MISSING;
    let first = true;
    for (const cmd of cmds) {
      const [head, ...rest] = cmd;
      if (head.kind === "word") {
        const fn = fns[head.word];
        if (!fn) {
          throw new TemplateError(`${where}: function ${JSON.stringify(head.word)} not defined`);
        }
        const args = rest.map((a) => evalTerm(a, where));
        if (!first) args.push(piped);
        piped = fn(...args);
      } else {
        if (rest.length > 0 || !first) {
          throw new TemplateError(`${where}: cannot call a value with arguments`);
        }
        piped = evalTerm(head, where);
      }
      first = false;
    }
    return piped;
  };
  const evaluate = (expr: string, line: number): unknown => {
    const where = `${name}:${line}`;
    return evalPipeline(parsePipeline(lexExpr(expr, where), where), where);
  };
  const out: string[] = [];
  const run = (nodes: Node[]) => {
    for (const n of nodes) {
      if (n.kind === "text") out.push(n.text);
      else if (n.kind === "action") {
        const v = evaluate(n.expr, n.line);
        if (v === MISSING) throw new TemplateError(`${name}:${n.line}: ${n.expr} is not set`);
        if (v === undefined || v === null) continue;
        out.push(typeof v === "object" ? toYaml(v) : String(v));
      } else {
        const b = n.branches.find((b) => truthy(evaluate(b.cond, b.line)));
        if (b) run(b.body);
        else if (n.otherwise) run(n.otherwise);
      }
    }
  };
  run(parse(name, tokenize(name, src)));
  return out.join("");
}
