/**
 * A fast YAML emitter for plain JSON data (maps, lists, strings, numbers, booleans, null), in
 * block style. kube-inject writes every injected document through it: the general emitter of the
 * yaml library costs ~1 ms per document, this one a few µs. Strings are plain when that is
 * unambiguous, else JSON-quoted (a JSON string is a YAML double-quoted scalar).
 * @module
 */

const PLAIN = /^(?:[A-Za-z0-9_./=@+]|-[A-Za-z0-9_-])[A-Za-z0-9 _./:=@+,-]*$/;
const SPECIAL = /^(?:true|false|yes|no|on|off|y|n|null|~)$/i;
/** What YAML 1.1 or 1.2 would read as a number, a date or a sexagesimal. */
const NUMBERISH =
  /^[-+]?(?:[\d_]+(?:\.[\d_]*)?(?:[eE][-+]?\d+)?|\.\d+|0x[\da-fA-F_]+|0o[0-7_]+|0b[01_]+|\.inf|\.nan)$|^\d{4}-\d\d?-\d\d?|^[-+]?\d+(?::[0-5]?\d)+/i;

function hasControl(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) < 0x20 || s.charCodeAt(i) === 0x7f) return true;
  }
  return false;
}

function scalarText(s: string): string {
  if (
    PLAIN.test(s) && !SPECIAL.test(s) && !NUMBERISH.test(s) && !s.endsWith(" ") &&
    !s.endsWith(":") && !s.includes(": ") && !s.includes(" #")
  ) {
    return s;
  }
  // single quotes keep JSON text (the status annotation) readable
  if (s.includes('"') && !s.includes("'") && !hasControl(s)) return `'${s}'`;
  return JSON.stringify(s);
}

function scalar(v: unknown): string | undefined {
  if (v === null) return "null";
  if (typeof v === "string") return scalarText(v);
  if (typeof v === "boolean") return String(v);
  if (typeof v === "number") return Number.isFinite(v) ? String(v) : JSON.stringify(String(v));
  if (Array.isArray(v) && v.length === 0) return "[]";
  if (typeof v === "object" && Object.keys(v).length === 0) return "{}";
  return undefined;
}

function entries(v: object): [string, unknown][] {
  return Object.entries(v).filter(([, x]) => x !== undefined);
}

function emit(v: unknown, pad: string, out: string[]): void {
  if (Array.isArray(v)) {
    for (const item of v) {
      const s = scalar(item ?? null);
      if (s !== undefined) out.push(`${pad}- ${s}\n`);
      else if (Array.isArray(item)) {
        out.push(`${pad}-\n`);
        emit(item, pad + "  ", out);
      } else {
        // a map in a list: its first key on the dash's line
        const inner: string[] = [];
        emit(item, pad + "  ", inner);
        inner[0] = `${pad}- ${inner[0].slice(pad.length + 2)}`;
        out.push(...inner);
      }
    }
    return;
  }
  for (const [k, x] of entries(v as object)) {
    const key = scalarText(k);
    const s = scalar(x);
    if (s !== undefined) out.push(`${pad}${key}: ${s}\n`);
    else {
      out.push(`${pad}${key}:\n`);
      emit(x, pad + "  ", out);
    }
  }
}

/** `value` (plain JSON data) as a YAML document ending with a newline. */
export function toYaml(value: unknown): string {
  const s = scalar(value ?? null);
  if (s !== undefined) return s + "\n";
  const out: string[] = [];
  emit(value, "", out);
  return out.join("");
}
