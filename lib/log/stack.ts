/**
 * Call-site and stack capture for `--log_caller` and `--log_stacktrace_level`.
 * @module
 */

/** Modules whose frames are lib/log's own and are skipped when looking for the call site. */
const INTERNAL = new Set([
  new URL("./mod.ts", import.meta.url).href,
  new URL("./stack.ts", import.meta.url).href,
]);

/** The checkout (or served tree) root: call sites under it are shown relative to it. */
const ROOT = new URL("../../", import.meta.url).href;

const LOCATION = /((?:file|https?|ext|node|npm|jsr|data):[^()\s]*|\/[^()\s]*):(\d+):(\d+)\)?$/;

interface Frame {
  text: string;
  url?: string;
  line?: number;
}

function frames(stack: string | undefined): Frame[] {
  if (!stack) return [];
  const out: Frame[] = [];
  for (const raw of stack.split("\n")) {
    const text = raw.trim();
    if (!text.startsWith("at ")) continue;
    const m = LOCATION.exec(text);
    out.push(m ? { text, url: m[1], line: Number(m[2]) } : { text });
  }
  return out;
}

/** Frames outside lib/log, most recent first. */
function external(stack: string | undefined): Frame[] {
  const all = frames(stack);
  let i = 0;
  while (i < all.length && (all[i].url === undefined || INTERNAL.has(all[i].url!))) i++;
  return all.slice(i);
}

/** Shows a module URL relative to the checkout root when it lies inside it. */
export function displayPath(url: string): string {
  if (url.startsWith(ROOT)) return decodeURIComponent(url.slice(ROOT.length));
  if (url.startsWith("file://")) {
    try {
      return decodeURIComponent(new URL(url).pathname);
    } catch {
      return url;
    }
  }
  return url;
}

/**
 * Returns `file:line` of the first frame outside lib/log in `stack` (an `Error().stack`
 * captured inside lib/log), or undefined when there is none.
 */
export function callerOf(stack: string | undefined): string | undefined {
  const f = external(stack)[0];
  return f?.url ? `${displayPath(f.url)}:${f.line}` : undefined;
}

/** Returns the frames outside lib/log, one `at ...` per line. */
export function stackOf(stack: string | undefined): string {
  return external(stack).map((f) => f.text).join("\n");
}
