/**
 * Flag value types shared by every program: each parses the text a user typed (throwing an
 * `Error` with a sentence-case message that quotes the value) and formats a value back the way
 * the spec writes it.
 * @module
 */

import { formatDuration, parseDuration } from "./duration.ts";

/** A flag value type: how text becomes a value and how a value is printed back. */
export interface FlagType<T> {
  /** Type name shown in help and the README (`string`, `duration`, `uint16`, `strings`...). */
  readonly name: string;
  /** True for boolean flags: given bare (`--f`) they mean true; a value needs `=` (`--f=false`). */
  readonly isBool?: boolean;
  /**
   * Parses one occurrence of the flag. `previous` is the value from earlier occurrences on the
   * same command line (undefined for the first one); list types append to it.
   */
  parse(text: string, previous: T | undefined): T;
  /** Prints a value as the spec writes it (`2160h0m0s`, `[stdout]`, `false`, `0.5`). */
  format(value: T): string;
}

const quote = (s: string) => JSON.stringify(s);

/** Boolean: `true/false`, `1/0`, `t/f`, `TRUE/FALSE`, `True/False` (as Go's strconv.ParseBool). */
export const bool: FlagType<boolean> = {
  name: "bool",
  isBool: true,
  parse(text) {
    if (["1", "t", "T", "true", "TRUE", "True"].includes(text)) return true;
    if (["0", "f", "F", "false", "FALSE", "False"].includes(text)) return false;
    throw new Error(`Cannot parse bool ${quote(text)}: expected true or false`);
  },
  format: (v) => String(v),
};

function parseInteger(kind: string, text: string, min: number, max: number): number {
  if (!/^[+-]?[0-9]+$/.test(text)) {
    throw new Error(`Cannot parse ${kind} ${quote(text)}: not a whole number`);
  }
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new Error(`Cannot parse ${kind} ${quote(text)}: out of range ${min}..${max}`);
  }
  return n === 0 ? 0 : n; // no -0
}

/** Signed integer (decimal, within JavaScript's safe integer range). */
export const int: FlagType<number> = {
  name: "int",
  parse: (text) => parseInteger("int", text, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
  format: (v) => String(v),
};

/** Unsigned integer (decimal, 0 up to JavaScript's safe integer range). */
export const uint: FlagType<number> = {
  name: "uint",
  parse: (text) => {
    if (text.startsWith("-") && /^-[0-9]+$/.test(text)) {
      throw new Error(`Cannot parse uint ${quote(text)}: must not be negative`);
    }
    return parseInteger("uint", text, 0, Number.MAX_SAFE_INTEGER);
  },
  format: (v) => String(v),
};

/** Unsigned 16-bit integer, 0..65535 (ports). */
export const uint16: FlagType<number> = {
  name: "uint16",
  parse: (text) => parseInteger("uint16", text, 0, 65535),
  format: (v) => String(v),
};

const FLOAT32_MAX = 3.4028234663852886e38;

/** Shortest decimal digits that read back as the same float32, printed like Go's `%g` (-1, 32). */
function formatFloat32(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v === 0) return Object.is(v, -0) ? "-0" : "0";
  let digits = "";
  for (let p = 1; p <= 9; p++) {
    const s = v.toPrecision(p);
    if (Math.fround(Number(s)) === v) {
      digits = s;
      break;
    }
  }
  const [mant, expText] = Number(digits).toExponential().split("e");
  const exp = Number(expText);
  if (exp < -4 || exp >= 6) {
    const e = Math.abs(exp) < 10 ? `0${Math.abs(exp)}` : String(Math.abs(exp));
    return `${mant}e${exp < 0 ? "-" : "+"}${e}`;
  }
  return String(Number(digits));
}

/** 32-bit float: decimal or exponent notation, rounded to float32, printed shortest (`0.5`). */
export const float32: FlagType<number> = {
  name: "float32",
  parse(text) {
    if (!/^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$/.test(text)) {
      throw new Error(`Cannot parse float32 ${quote(text)}: not a number`);
    }
    const n = Number(text);
    if (Math.abs(n) > FLOAT32_MAX) {
      throw new Error(`Cannot parse float32 ${quote(text)}: out of range`);
    }
    return Math.fround(n);
  },
  format: formatFloat32,
};

/** Go duration, as milliseconds (`300ms` → 300, `1m0s` → 60000); printed like Go. */
export const duration: FlagType<number> = {
  name: "duration",
  parse: (text) => parseDuration(text),
  format: formatDuration,
};

/** Plain string; printed as is. */
export const string: FlagType<string> = {
  name: "string",
  parse: (text) => text,
  format: (v) => v,
};

/** Splits one comma-separated value like Go's CSV reader (double quotes protect commas). */
function splitCsv(text: string): string[] {
  if (text === "") return [];
  const out: string[] = [];
  let i = 0;
  while (i <= text.length) {
    let field = "";
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (i >= text.length) {
          throw new Error(`Cannot parse list ${quote(text)}: unterminated quote`);
        }
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += text[i++];
      }
      if (i < text.length && text[i] !== ",") {
        throw new Error(`Cannot parse list ${quote(text)}: unexpected text after a quoted item`);
      }
    } else {
      const end = text.indexOf(",", i);
      field = text.slice(i, end === -1 ? text.length : end);
      i = end === -1 ? text.length : end;
    }
    out.push(field);
    i++; // skip the comma (or step past the end)
  }
  return out;
}

/** String slice: `a,b` splits on commas; repeated flags accumulate; printed `[a,b]`, empty `[]`. */
export const stringSlice: FlagType<string[]> = {
  name: "strings",
  parse: (text, previous) => [...(previous ?? []), ...splitCsv(text)],
  format: (v) => `[${v.join(",")}]`,
};

/** String array: repeated flags accumulate, no comma splitting; printed `[stdout]`. */
export const stringArray: FlagType<string[]> = {
  name: "stringArray",
  parse: (text, previous) => [...(previous ?? []), text],
  format: (v) => `[${v.join(",")}]`,
};

/**
 * Wraps a type with an extra check run after parsing (for example log levels or an enum).
 * `check` throws an `Error` with the reason.
 */
export function refine<T>(base: FlagType<T>, check: (value: T, text: string) => void): FlagType<T> {
  return {
    ...base,
    parse(text, previous) {
      const value = base.parse(text, previous);
      check(value, text);
      return value;
    },
  };
}
