/**
 * Bounds on the shape of one configuration document, checked before any other work so that a
 * hostile document (self-referencing YAML aliases, deep nesting, alias expansion) costs a
 * bounded amount of work and fails with a clear message instead of a stack overflow.
 * @module
 */

/** Deepest nesting of lists and maps in one document (the deepest real spec is ~12 levels). */
export const MAX_DEPTH = 64;

/** Most values (scalars, lists and maps, counted after alias expansion) in one document. */
export const MAX_VALUES = 200_000;

/** Most aliases (`*name`) resolved in one YAML document (the yaml parser's own guard). */
export const MAX_ALIASES = 100;

/** Most problems reported for one document; the rest are counted (`... and 12 more`). */
export const MAX_ISSUES = 20;

/** A shape problem: where (`spec.a[0].b`) and why. */
export interface ShapeProblem {
  path: string;
  reason: string;
}

/**
 * The first shape problem of a decoded document, or `undefined`: a value that contains itself
 * (a YAML alias inside its own anchor), nesting deeper than {@link MAX_DEPTH}, more than
 * {@link MAX_VALUES} values, a number JSON cannot hold (`.inf`, `.nan`). Runs in bounded time and stack whatever the input.
 *
 * @example
 * ```ts
 * const a: unknown[] = [];
 * a.push(a);
 * shapeProblem({ spec: { custom: a } });
 * // { path: "spec.custom[0]", reason: "contains itself (a YAML alias inside its own anchor)" }
 * ```
 */
export function shapeProblem(value: unknown, path = ""): ShapeProblem | undefined {
  const ancestors = new Set<object>();
  let count = 0;
  const visit = (v: unknown, depth: number, at: () => string): ShapeProblem | undefined => {
    if (++count > MAX_VALUES) {
      return { path: at(), reason: `has more than ${MAX_VALUES} values in one document` };
    }
    if (typeof v === "number" && !Number.isFinite(v)) {
      // YAML .inf/.nan: JSON (files written back, the orchestrator's API) cannot hold them
      return { path: at(), reason: `must be a finite number, got ${v}` };
    }
    if (v === null || typeof v !== "object") return undefined;
    if (ancestors.has(v)) {
      return { path: at(), reason: "contains itself (a YAML alias inside its own anchor)" };
    }
    if (depth >= MAX_DEPTH) return { path: at(), reason: `is nested deeper than ${MAX_DEPTH}` };
    ancestors.add(v);
    try {
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          const bad = visit(v[i], depth + 1, () => `${at()}[${i}]`);
          if (bad) return bad;
        }
      } else {
        for (const k of Object.keys(v)) {
          const bad = visit(
            (v as Record<string, unknown>)[k],
            depth + 1,
            () => joinKey(at(), k),
          );
          if (bad) return bad;
        }
      }
    } finally {
      ancestors.delete(v);
    }
    return undefined;
  };
  return visit(value, 0, () => path);
}

function joinKey(path: string, key: string): string {
  const simple = /^[A-Za-z_$][\w$-]*$/.test(key);
  const k = key.length > 40 ? key.slice(0, 40) + "..." : key;
  if (path === "") return simple ? key : `[${JSON.stringify(k)}]`;
  return simple ? `${path}.${key}` : `${path}[${JSON.stringify(k)}]`;
}

/** `issues` cut to {@link MAX_ISSUES}, the last one counting those left out. */
export function capIssues<T extends { path: string; reason: string }>(issues: T[]): T[] {
  if (issues.length <= MAX_ISSUES) return issues;
  const kept = issues.slice(0, MAX_ISSUES - 1);
  const last = issues[MAX_ISSUES - 1];
  return [
    ...kept,
    { ...last, reason: `${last.reason} (and ${issues.length - MAX_ISSUES} more problems)` },
  ];
}
