/**
 * Golden files: compare generated text with a file under `testdata/`, or, with `UPDATE_GOLDEN=1`,
 * rewrite the file and print a unified diff of what changed, so a regeneration is reviewed like
 * any other change.
 * @module
 */

import assert from "node:assert/strict";

/** Whether this run regenerates golden files (`UPDATE_GOLDEN=1`). */
export const UPDATE_GOLDEN = Deno.env.get("UPDATE_GOLDEN") === "1";

/**
 * Checks `text` against the golden file `file`. `equal(got, want)` asserts equality (default: the
 * same text). With `UPDATE_GOLDEN=1` the file is rewritten and the diff printed (`print` receives
 * it; the default writes to stdout, which `deno test` shows with the test).
 */
export async function checkGolden(
  file: string,
  text: string,
  opts: { equal?: (got: string, want: string) => void; print?: (s: string) => void } = {},
): Promise<void> {
  if (UPDATE_GOLDEN) {
    let old: string | undefined;
    try {
      old = await Deno.readTextFile(file);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    const print = opts.print ?? ((s: string) => console.log(s));
    if (old === text) {
      print(`UPDATE_GOLDEN: ${file} unchanged`);
      return;
    }
    await Deno.writeTextFile(file, text);
    print(
      old === undefined
        ? `UPDATE_GOLDEN: ${file} created (${text.split("\n").length - 1} lines)`
        : `UPDATE_GOLDEN: ${file} changed:\n${unifiedDiff(old, text, file)}`,
    );
    return;
  }
  const want = await Deno.readTextFile(file);
  if (opts.equal) opts.equal(text, want);
  else assert.equal(text, want, `${file} differs (regenerate with UPDATE_GOLDEN=1)`);
}

/**
 * A unified diff (`diff -u` style, 3 lines of context) from `a` to `b`; empty when they are
 * equal. Lines are compared exactly; the longest common subsequence is computed on what lies
 * between the common head and tail, which is small for the usual regeneration.
 */
export function unifiedDiff(a: string, b: string, name = "golden", context = 3): string {
  if (a === b) return "";
  const x = a.split("\n"), y = b.split("\n");
  // A final newline ends the last line; it is not a line of its own.
  if (x.at(-1) === "" && y.at(-1) === "") {
    x.pop();
    y.pop();
  }
  let head = 0;
  while (head < x.length && head < y.length && x[head] === y[head]) head++;
  let tail = 0;
  while (
    tail < x.length - head && tail < y.length - head &&
    x[x.length - 1 - tail] === y[y.length - 1 - tail]
  ) tail++;
  const xm = x.slice(head, x.length - tail), ym = y.slice(head, y.length - tail);
  // LCS lengths from the end: lcs[i][j] for xm[i..], ym[j..].
  const w = ym.length + 1;
  const lcs = new Uint32Array((xm.length + 1) * w);
  for (let i = xm.length - 1; i >= 0; i--) {
    for (let j = ym.length - 1; j >= 0; j--) {
      lcs[i * w + j] = xm[i] === ym[j]
        ? lcs[(i + 1) * w + j + 1] + 1
        : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
    }
  }
  // The edit script over the whole text: [op, line] with op ' ', '-' or '+'.
  const ops: [string, string][] = x.slice(0, head).map((l) => [" ", l]);
  let i = 0, j = 0;
  while (i < xm.length || j < ym.length) {
    if (i < xm.length && j < ym.length && xm[i] === ym[j]) {
      ops.push([" ", xm[i++]]);
      j++;
    } else if (i < xm.length && (j === ym.length || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])) {
      ops.push(["-", xm[i++]]); // deletions first, like diff -u
    } else ops.push(["+", ym[j++]]);
  }
  for (const l of x.slice(x.length - tail)) ops.push([" ", l]);
  // Hunks: changed lines with `context` lines around them, merged when they touch.
  const out = [`--- ${name}`, `+++ ${name} (new)`];
  let k = 0;
  while (k < ops.length) {
    while (k < ops.length && ops[k][0] === " ") k++;
    if (k === ops.length) break;
    const start = Math.max(0, k - context);
    let end = k;
    for (;;) {
      while (end < ops.length && ops[end][0] !== " ") end++;
      let next = end;
      while (next < ops.length && ops[next][0] === " " && next - end < 2 * context) next++;
      if (next < ops.length && ops[next][0] !== " ") end = next;
      else break;
    }
    const stop = Math.min(ops.length, end + context);
    let aLine = 1, bLine = 1;
    for (let q = 0; q < start; q++) {
      if (ops[q][0] !== "+") aLine++;
      if (ops[q][0] !== "-") bLine++;
    }
    const hunk = ops.slice(start, stop);
    const aCount = hunk.filter((o) => o[0] !== "+").length;
    const bCount = hunk.filter((o) => o[0] !== "-").length;
    out.push(`@@ -${aLine},${aCount} +${bLine},${bCount} @@`);
    for (const [op, l] of hunk) out.push(op + l);
    k = stop;
  }
  return out.join("\n");
}
