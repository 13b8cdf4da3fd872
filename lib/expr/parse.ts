/**
 * Parser of the policy expression language (reference §4.4): attribute names, literals,
 * `==`, `!=`, `&&`, `||`, `!`, `|` (fallback), map indexing `m["k"]`, function calls `f(a, b)`
 * and method calls `target.f(a)`.
 * @module
 */

import { parseDuration } from "../flags/duration.ts";

/** An error in an expression, with the 0-based character position it concerns. */
export class ExprError extends Error {
  /** 0-based character offset in the expression text. */
  readonly pos: number;
  /** Creates an error at `pos` with a message that already names the position. */
  constructor(message: string, pos: number) {
    super(`${message} (at position ${pos})`);
    this.name = "ExprError";
    this.pos = pos;
  }
}

/** A node of the expression syntax tree; `pos` is where it starts in the text. */
export type Expr =
  | { kind: "string"; value: string; pos: number }
  | { kind: "int"; value: number; pos: number }
  | { kind: "double"; value: number; pos: number }
  | { kind: "bool"; value: boolean; pos: number }
  | { kind: "duration"; value: number; pos: number }
  | { kind: "attr"; name: string; pos: number }
  | { kind: "index"; target: Expr; key: Expr; pos: number }
  | { kind: "call"; fn: string; target?: Expr; args: Expr[]; pos: number }
  | { kind: "unary"; op: "!"; operand: Expr; pos: number }
  | { kind: "binary"; op: BinaryOp; left: Expr; right: Expr; pos: number };

/** Binary operators, from lowest to highest precedence: `|`, `||`, `&&`, `==`/`!=`. */
export type BinaryOp = "|" | "||" | "&&" | "==" | "!=";

type Token =
  | { t: "ident"; v: string; pos: number }
  | { t: "string"; v: string; pos: number }
  | { t: "number"; v: string; pos: number }
  | { t: "duration"; v: string; pos: number }
  | { t: "op"; v: string; pos: number }
  | { t: "eof"; v: ""; pos: number };

const OPS = ["==", "!=", "&&", "||", "|", "!", "(", ")", "[", "]", ",", "."];

function lex(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '"' || c === "'") {
      const start = i++;
      let v = "";
      while (i < src.length && src[i] !== c) {
        if (src[i] === "\\") {
          const n = src[++i];
          if (n === undefined) break;
          v += n === "n" ? "\n" : n === "t" ? "\t" : n;
          i++;
        } else v += src[i++];
      }
      if (i >= src.length) throw new ExprError("Unterminated string literal", start);
      i++;
      out.push({ t: "string", v, pos: start });
    } else if (/[0-9]/.test(c)) {
      // Go-style duration literals: `10ms`, `1m30s`, `0.5s`.
      const d = /^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+(?![A-Za-z0-9_])/.exec(src.slice(i));
      const m = d ?? /^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(src.slice(i))!;
      out.push({ t: d ? "duration" : "number", v: m[0], pos: i });
      i += m[0].length;
      if (i < src.length && /[A-Za-z_]/.test(src[i])) {
        throw new ExprError(`Unexpected character "${src[i]}" after number`, i);
      }
    } else if (/[A-Za-z_@]/.test(c)) {
      // Attribute names contain dots and dashes (`request.headers`, `source.labels`).
      const m = /^[A-Za-z_@][A-Za-z0-9_@-]*(\.[A-Za-z_@][A-Za-z0-9_@-]*)*/.exec(src.slice(i))!;
      out.push({ t: "ident", v: m[0], pos: i });
      i += m[0].length;
    } else {
      const op = OPS.find((o) => src.startsWith(o, i));
      if (!op) throw new ExprError(`Unexpected character "${c}"`, i);
      out.push({ t: "op", v: op, pos: i });
      i += op.length;
    }
  }
  out.push({ t: "eof", v: "", pos: src.length });
  return out;
}

const PRECEDENCE: Record<string, number> = { "|": 1, "||": 2, "&&": 3, "==": 4, "!=": 4 };

class Parser {
  #toks: Token[];
  #i = 0;
  constructor(toks: Token[]) {
    this.#toks = toks;
  }
  peek(): Token {
    return this.#toks[this.#i];
  }
  next(): Token {
    return this.#toks[this.#i++];
  }
  expectOp(v: string): Token {
    const t = this.next();
    if (t.t !== "op" || t.v !== v) {
      throw new ExprError(`Expected "${v}" but found ${describe(t)}`, t.pos);
    }
    return t;
  }
  parseExpr(minPrec = 1): Expr {
    let left = this.parseUnary();
    for (;;) {
      const t = this.peek();
      const prec = t.t === "op" ? PRECEDENCE[t.v] : undefined;
      if (prec === undefined || prec < minPrec) return left;
      this.next();
      const right = this.parseExpr(prec + 1);
      left = { kind: "binary", op: t.v as BinaryOp, left, right, pos: t.pos };
    }
  }
  parseUnary(): Expr {
    const t = this.peek();
    if (t.t === "op" && t.v === "!") {
      this.next();
      return { kind: "unary", op: "!", operand: this.parseUnary(), pos: t.pos };
    }
    return this.parsePostfix(this.parsePrimary());
  }
  parsePostfix(e: Expr): Expr {
    for (;;) {
      const t = this.peek();
      if (t.t === "op" && t.v === "[") {
        this.next();
        const key = this.parseExpr();
        this.expectOp("]");
        e = { kind: "index", target: e, key, pos: t.pos };
      } else if (t.t === "op" && t.v === ".") {
        this.next();
        const name = this.next();
        if (name.t !== "ident" || name.v.includes(".")) {
          throw new ExprError(`Expected a method name but found ${describe(name)}`, name.pos);
        }
        e = { kind: "call", fn: name.v, target: e, args: this.parseArgs(), pos: name.pos };
      } else return e;
    }
  }
  parseArgs(): Expr[] {
    this.expectOp("(");
    const args: Expr[] = [];
    if (this.peek().t === "op" && this.peek().v === ")") {
      this.next();
      return args;
    }
    for (;;) {
      args.push(this.parseExpr());
      const t = this.next();
      if (t.t === "op" && t.v === ")") return args;
      if (t.t !== "op" || t.v !== ",") {
        throw new ExprError(`Expected "," or ")" but found ${describe(t)}`, t.pos);
      }
    }
  }
  parsePrimary(): Expr {
    const t = this.next();
    switch (t.t) {
      case "string":
        return { kind: "string", value: t.v, pos: t.pos };
      case "duration":
        return { kind: "duration", value: durationMs(t.v, t.pos), pos: t.pos };
      case "number":
        return /[.eE]/.test(t.v)
          ? { kind: "double", value: Number(t.v), pos: t.pos }
          : { kind: "int", value: Number(t.v), pos: t.pos };
      case "ident":
        return this.identifier(t);
      case "op":
        if (t.v === "(") {
          const e = this.parseExpr();
          this.expectOp(")");
          return e;
        }
    }
    throw new ExprError(`Unexpected ${describe(t)}`, t.pos);
  }
  identifier(t: Token & { t: "ident" }): Expr {
    if (t.v === "true" || t.v === "false") {
      return { kind: "bool", value: t.v === "true", pos: t.pos };
    }
    const isCall = this.peek().t === "op" && this.peek().v === "(";
    if (!isCall) return { kind: "attr", name: t.v, pos: t.pos };
    const dot = t.v.lastIndexOf(".");
    if (dot < 0) return { kind: "call", fn: t.v, args: this.parseArgs(), pos: t.pos };
    // `source.name.startsWith("x")`: the last segment is the method, the rest the attribute.
    const target: Expr = { kind: "attr", name: t.v.slice(0, dot), pos: t.pos };
    return {
      kind: "call",
      fn: t.v.slice(dot + 1),
      target,
      args: this.parseArgs(),
      pos: t.pos + dot + 1,
    };
  }
}

/** A duration literal (already matched by the tokenizer) in milliseconds, as Go reads it. */
function durationMs(text: string, pos: number): number {
  try {
    return parseDuration(text);
  } catch (e) {
    throw new ExprError((e as Error).message, pos); // beyond Go's 290 years
  }
}

function describe(t: Token): string {
  if (t.t === "eof") return "end of expression";
  if (t.t === "string") return `string "${t.v}"`;
  return `"${t.v}"`;
}

/**
 * Parses an expression into a syntax tree.
 *
 * @example
 * ```ts
 * const e = parse('request.headers["x-user"] | "anonymous"');
 * ```
 * @throws {ExprError} with the position of the first syntax error.
 */
export function parse(src: string): Expr {
  if (src.trim() === "") throw new ExprError("Empty expression", 0);
  const p = new Parser(lex(src));
  const e = p.parseExpr();
  const t = p.peek();
  if (t.t !== "eof") throw new ExprError(`Unexpected ${describe(t)}`, t.pos);
  return e;
}
