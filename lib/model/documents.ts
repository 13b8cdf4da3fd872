/**
 * Parsing of multi-document YAML/JSON text into documents, with bounds: one shared reader for
 * every place that takes configuration files (the file store, meshctl), so that each reports
 * the same clear error for a hostile document and the work per document stays bounded.
 * @module
 */
import { Composer, type Document, parseAllDocuments, Parser, withPlainEnv } from "../deps/yaml.ts";
import { firstErrorLine } from "./errors.ts";
import { MAX_ALIASES, MAX_DEPTH } from "./limits.ts";
import { escapeControl, QUOTE_MAX } from "./values.ts";

/** One document of a stream: its decoded value, or why it cannot be read. */
export interface ParsedDocument {
  /** 1-based index of the document in the text. */
  index: number;
  /** The decoded value (`null` for an empty document); absent when `error` is set. */
  value?: unknown;
  /** One line: `cannot parse YAML: ...` (no code frame, bounded length). */
  error?: string;
  /** Character offset where the document starts in the text. */
  start: number;
}

/**
 * Parses every document of `text`. Never throws: a document that cannot be read carries an
 * `error` (the first parser error, without the code frame; nesting too deep for the parser;
 * more than {@link MAX_ALIASES} aliases). Shape bounds (self-reference, depth, size) are checked
 * by `normalizeObject`.
 */
export function parseDocuments(text: string): ParsedDocument[] {
  let list;
  try {
    // prettyErrors off: a code frame per error costs ~50 µs each, and a broken flow sequence
    // can hold hundreds of thousands of errors
    const parsed = parseAllDocuments(text, { prettyErrors: false, logLevel: "error" });
    list = Array.isArray(parsed) ? parsed : [];
  } catch (err) {
    return [{ index: 1, start: 0, error: `cannot parse YAML: ${parserMessage(err)}` }];
  }
  return list.map((doc, i) => parsedDocument(text, doc, i + 1));
}

/**
 * The documents of `text` one at a time, each as {@link parseDocuments} gives it, parsed only as
 * far as the caller reads: a reader can pause between documents (the file store yields to the
 * servers it runs beside). A parser failure ends the stream with one `error` document.
 */
export function* documentsOf(text: string): Generator<ParsedDocument> {
  const composer = new Composer({ prettyErrors: false, logLevel: "error" });
  let index = 0;
  let docs: Iterator<Document.Parsed>;
  try {
    docs = composer.compose(new Parser().parse(text));
    // each step parses: with a plain process.env (lib/deps/yaml.ts)
    const steps = docs;
    docs = { next: () => withPlainEnv(() => steps.next()) };
  } catch (err) {
    yield { index: 1, start: 0, error: `cannot parse YAML: ${parserMessage(err)}` };
    return;
  }
  for (;;) {
    let next: IteratorResult<Document.Parsed>;
    try {
      next = docs.next();
    } catch (err) {
      yield { index: index + 1, start: 0, error: `cannot parse YAML: ${parserMessage(err)}` };
      return;
    }
    if (next.done) return;
    yield parsedDocument(text, next.value, ++index);
  }
}

/** One composed document as a {@link ParsedDocument}. */
function parsedDocument(text: string, doc: Document.Parsed, index: number): ParsedDocument {
  const start = doc.range?.[0] ?? 0;
  if (doc.errors.length > 0) {
    const e = doc.errors[0];
    if (e.code === "DUPLICATE_KEY") return { index, start, error: duplicateKey(text, e.pos) };
    return { index, start, error: `cannot parse YAML: ${parserMessage(e)}${where(text, e.pos)}` };
  }
  try {
    return { index, start, value: doc.toJS({ maxAliasCount: MAX_ALIASES }) };
  } catch (err) {
    return { index, start, error: `cannot parse YAML: ${parserMessage(err)}` };
  }
}

/**
 * A key given twice in one map: refused (the reference system's Go loaders kept the last value,
 * silently), naming the key and where it is given again.
 */
function duplicateKey(text: string, pos: unknown): string {
  const range = Array.isArray(pos) && typeof pos[0] === "number" ? pos as number[] : [];
  let key = "";
  if (range.length) {
    const rest = text.slice(range[0], range[0] + 4 * QUOTE_MAX);
    key = /^\s*("[^"]*"|'[^']*'|[^:\n,{}]*?)\s*:/.exec(rest)?.[1] ??
      text.slice(range[0], range[1] ?? range[0]);
  }
  key = key.trim().replace(/^(["'])(.*)\1$/, "$2");
  const shown = escapeControl(key.length > QUOTE_MAX ? key.slice(0, QUOTE_MAX) + "..." : key);
  return `cannot parse YAML: key "${shown}" is given twice in one map${where(text, pos)} ` +
    "(each key may appear once; remove one of them)";
}

/** ` at line L, column C` of a parser error's offset (computed for the first error only). */
function where(text: string, pos: unknown): string {
  const at = Array.isArray(pos) && typeof pos[0] === "number" ? pos[0] : -1;
  if (at < 0 || at > text.length) return "";
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < at; i = text.indexOf("\n", i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return ` at line ${line}, column ${at - lineStart + 1}`;
}

/** A parser error as one bounded line, with the resource-exhaustion cases in plain words. */
function parserMessage(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof RangeError || /Maximum call stack size exceeded/.test(message)) {
    return `nested deeper than the parser can read (keep documents under ${MAX_DEPTH} levels)`;
  }
  if (/Excessive alias count/.test(message)) {
    return `more than ${MAX_ALIASES} aliases (*name) are resolved in this document`;
  }
  const line = firstErrorLine(message);
  const max = QUOTE_MAX * 3;
  return escapeControl(line.length > max ? line.slice(0, max) + "..." : line);
}
