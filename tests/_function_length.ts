/**
 * Function lengths of TypeScript sources, for the size rule of STYLE.md ("a function that needs
 * a scroll to read is several functions"): every function declaration, method, constructor,
 * accessor and arrow function with a block body, from its parameter list to its closing brace
 * (a nested function counts inside its parent too).
 *
 * A lexical scan, not a parser: comments, strings, template literals and regular expressions
 * are blanked first, then each `{` that follows a parameter list (and its return type) or `=>`
 * opens a function body. Good enough for this code base's formatting (`deno fmt`).
 *
 * Run `deno run -A tests/_function_length.ts [N]` for the N longest production functions and
 * files.
 * @module
 */

import { join, relative } from "node:path";

/** One function found by {@link functionLengths}. */
export interface FunctionLength {
  /** Best-effort name (`createFileStore`, `DirectoryStore.#scanOnce`, `<arrow>`). */
  name: string;
  /** 1-based line of the parameter list. */
  line: number;
  /** Lines from the parameter list to the closing brace, both included. */
  lines: number;
  /** The `// long: <reason>` comment above it, if any (without the marker). */
  reason?: string;
}

const NOT_FUNCTIONS = new Set(["if", "for", "while", "switch", "catch", "with"]);

/**
 * `text` with comments, string, template and regex contents replaced by spaces (newlines kept),
 * so that braces and parentheses left are code.
 */
export function blank(text: string): string {
  const out = text.split("");
  const n = text.length;
  let i = 0;
  /** Depth stack of template literals: the brace depth at which each `${` was opened. */
  const templates: number[] = [];
  let depth = 0;
  const wipe = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (out[k] !== "\n") out[k] = " ";
  };
  const prevSignificant = (at: number): string => {
    let k = at - 1;
    while (k >= 0 && /\s/.test(out[k])) k--;
    if (k < 0) return "";
    if (/[A-Za-z0-9_$]/.test(out[k])) {
      let s = k;
      while (s > 0 && /[A-Za-z0-9_$]/.test(out[s - 1])) s--;
      return out.slice(s, k + 1).join("");
    }
    return out[k];
  };
  /** Skips a template literal body from `i` (after the backtick or `}`), to `${` or the end. */
  const templateBody = () => {
    const start = i;
    while (i < n) {
      if (text[i] === "\\") {
        i += 2;
        continue;
      }
      if (text[i] === "`") {
        wipe(start, i);
        i++;
        return;
      }
      if (text[i] === "$" && text[i + 1] === "{") {
        wipe(start, i);
        i += 2;
        templates.push(depth);
        depth++;
        return;
      }
      i++;
    }
    wipe(start, i);
  };
  while (i < n) {
    const c = text[i];
    const d = text[i + 1];
    if (c === "/" && d === "/") {
      const end = text.indexOf("\n", i);
      const to = end < 0 ? n : end;
      wipe(i, to);
      i = to;
    } else if (c === "/" && d === "*") {
      const end = text.indexOf("*/", i + 2);
      const to = end < 0 ? n : end + 2;
      wipe(i, to);
      i = to;
    } else if (c === '"' || c === "'") {
      let k = i + 1;
      while (k < n && text[k] !== c && text[k] !== "\n") k += text[k] === "\\" ? 2 : 1;
      wipe(i + 1, k);
      i = k + 1;
    } else if (c === "`") {
      i++;
      templateBody();
    } else if (c === "{") {
      depth++;
      i++;
    } else if (c === "}") {
      depth--;
      i++;
      if (templates.length && templates[templates.length - 1] === depth) {
        templates.pop();
        templateBody();
      }
    } else if (c === "/" && isRegexStart(prevSignificant(i))) {
      let k = i + 1;
      let inClass = false;
      while (k < n && text[k] !== "\n") {
        if (text[k] === "\\") {
          k += 2;
          continue;
        }
        if (text[k] === "[") inClass = true;
        else if (text[k] === "]") inClass = false;
        else if (text[k] === "/" && !inClass) break;
        k++;
      }
      wipe(i + 1, k);
      i = k + 1;
    } else i++;
  }
  return out.join("");
}

function isRegexStart(prev: string): boolean {
  return prev === "" || /^[(,=:[!&|?{};+\-*%<>~^]$/.test(prev) ||
    ["return", "typeof", "case", "do", "else", "in", "of", "void", "yield", "await"]
      .includes(prev);
}

/** Index of the bracket matching the one at `at` (forward for openers, backward for closers). */
function matching(code: string, at: number): number {
  const pairs: Record<string, [string, string, 1 | -1]> = {
    "(": ["(", ")", 1],
    "{": ["{", "}", 1],
    "[": ["[", "]", 1],
    ")": [")", "(", -1],
    "}": ["}", "{", -1],
    "]": ["]", "[", -1],
  };
  const [open, close, dir] = pairs[code[at]];
  let depth = 0;
  for (let k = at; k >= 0 && k < code.length; k += dir) {
    if (code[k] === open) depth++;
    else if (code[k] === close && --depth === 0) return k;
  }
  return -1;
}

/**
 * After the `)` at `close`: skips an optional return type annotation and returns the index of
 * the `{` that opens a body, or -1 when none follows.
 */
function bodyAfterParams(code: string, close: number): number {
  let k = close + 1;
  const skipWs = () => {
    while (k < code.length && /\s/.test(code[k])) k++;
  };
  skipWs();
  if (code[k] === "{") return k;
  if (code[k] !== ":") return -1;
  k++;
  // a type: `{` right after `:`, `|`, `&`, `<` or `,` opens a type literal; after a complete
  // type (identifier, `>`, `]`, `}`, `)`) it opens the body
  let expectType = true;
  let angle = 0;
  while (k < code.length) {
    skipWs();
    const c = code[k];
    if (c === "{") {
      if (!expectType && angle === 0) return k;
      k = matching(code, k) + 1;
      if (k === 0) return -1;
      expectType = false;
    } else if (c === "(" || c === "[") {
      k = matching(code, k) + 1;
      if (k === 0) return -1;
      expectType = false;
    } else if (c === "<") {
      angle++;
      k++;
      expectType = true;
    } else if (c === ">") {
      if (code[k - 1] === "=") return -1; // `=>`: an arrow, handled elsewhere
      angle--;
      k++;
      expectType = false;
    } else if (c === "|" || c === "&" || c === "," || c === "?" || c === ":") {
      k++;
      expectType = true;
    } else if (c === "=" || c === ";") {
      return -1;
    } else if (/[A-Za-z0-9_$."'`]/.test(c)) {
      while (k < code.length && /[A-Za-z0-9_$.]/.test(code[k])) k++;
      if (!/[A-Za-z0-9_$.]/.test(c)) k++;
      expectType = false;
    } else return -1;
  }
  return -1;
}

const lineAt = (starts: number[], index: number): number => {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= index) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
};

/** The word (identifier) ending just before `at`, skipping spaces and a `<...>` generic list. */
function wordBefore(code: string, at: number): string {
  let k = at - 1;
  while (k >= 0 && /\s/.test(code[k])) k--;
  if (code[k] === ">") {
    let depth = 0;
    for (; k >= 0; k--) {
      if (code[k] === ">") depth++;
      else if (code[k] === "<" && --depth === 0) break;
    }
    k--;
    while (k >= 0 && /\s/.test(code[k])) k--;
  }
  const end = k + 1;
  while (k >= 0 && /[A-Za-z0-9_$#]/.test(code[k])) k--;
  return code.slice(k + 1, end);
}

/** The `// long: <reason>` comment in the comment block right above line `line` (1-based). */
function reasonAbove(lines: string[], line: number): string | undefined {
  for (let k = line - 2; k >= 0; k--) {
    const t = lines[k].trim();
    const m = /^\/\/\s*long:\s*(\S.*)$/.exec(t);
    if (m) return m[1];
    if (!(t.startsWith("//") || t.startsWith("*") || t.startsWith("/*") || t.startsWith("@"))) {
      return undefined;
    }
  }
  return undefined;
}

/** Every function with a block body in `text`, with its length in lines. */
export function functionLengths(text: string): FunctionLength[] {
  const code = blank(text);
  const lines = text.split("\n");
  const starts = [0];
  for (let k = 0; k < code.length; k++) if (code[k] === "\n") starts.push(k + 1);
  const found = new Map<number, FunctionLength>(); // body `{` index → function
  const add = (name: string, headAt: number, body: number) => {
    const end = matching(code, body);
    if (end < 0 || found.has(body)) return;
    const line = lineAt(starts, headAt);
    const fn: FunctionLength = { name, line, lines: lineAt(starts, end) - line + 1 };
    const reason = reasonAbove(lines, line);
    if (reason) fn.reason = reason;
    found.set(body, fn);
  };
  for (let k = 0; k < code.length; k++) {
    if (code[k] === "=" && code[k + 1] === ">") {
      let b = k + 2;
      while (b < code.length && /\s/.test(code[b])) b++;
      if (code[b] !== "{") continue;
      // the head: the parameter list `(...)` (with a return type) or a single parameter
      let h = k - 1;
      while (h >= 0 && /\s/.test(code[h])) h--;
      let head = h;
      const paren = code.lastIndexOf(")", h);
      if (code[h] !== ")" && paren >= 0) {
        // `(...): T =>`: the `)` before the return type, on the same statement
        const between = code.slice(paren + 1, h + 1);
        if (/^\s*:[^;{}=]*$/.test(between)) head = paren;
      }
      if (code[head] === ")") head = matching(code, head);
      if (head < 0) continue;
      add(arrowName(code, head), head, b);
    } else if (code[k] === ")") {
      const body = bodyAfterParams(code, k);
      if (body < 0) continue;
      const open = matching(code, k);
      if (open < 0) continue;
      const word = wordBefore(code, open);
      if (NOT_FUNCTIONS.has(word)) continue;
      add(word || "<function>", open, body);
    }
  }
  return [...found.values()].sort((a, b) => a.line - b.line);
}

/** `name` of `const name = (...) => {` / `name: (...) => {` / `name = ...`, else `<arrow>`. */
function arrowName(code: string, head: number): string {
  const lineStart = code.lastIndexOf("\n", head) + 1;
  const before = code.slice(lineStart, head);
  const m = /([A-Za-z0-9_$#]+)\s*(?::[^=]*)?[=:]\s*(?:async\s*)?$/.exec(before);
  return m ? m[1] : "<arrow>";
}

/** Production sources: every `.ts` under `dirs` except tests, testdata and generated files. */
export async function productionFiles(root: string, dirs: string[]): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      if (e.name.startsWith(".") || e.name === "node_modules" || e.name === "testdata") continue;
      const p = join(dir, e.name);
      if (e.isDirectory) await walk(p);
      else if (e.name.endsWith(".ts") && !e.name.endsWith("_test.ts")) out.push(p);
    }
  };
  for (const d of dirs) await walk(join(root, d));
  return out.sort().map((p) => relative(root, p));
}

if (import.meta.main) {
  const root = new URL("..", import.meta.url).pathname;
  const n = Number(Deno.args[0] ?? 15);
  const all: (FunctionLength & { file: string })[] = [];
  const files: { file: string; lines: number }[] = [];
  for (const file of await productionFiles(root, ["lib", "servers", "cli"])) {
    const text = await Deno.readTextFile(join(root, file));
    files.push({ file, lines: text.split("\n").length - (text.endsWith("\n") ? 1 : 0) });
    for (const f of functionLengths(text)) all.push({ ...f, file });
  }
  all.sort((a, b) => b.lines - a.lines);
  files.sort((a, b) => b.lines - a.lines);
  console.log(`Longest functions (lib, servers, cli):`);
  for (const f of all.slice(0, n)) {
    console.log(
      `${String(f.lines).padStart(5)}  ${f.file}:${f.line} ${f.name}${
        f.reason ? `  (long: ${f.reason})` : ""
      }`,
    );
  }
  console.log(`Longest files:`);
  for (const f of files.slice(0, n)) console.log(`${String(f.lines).padStart(5)}  ${f.file}`);
}
