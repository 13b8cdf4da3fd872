/**
 * Reading adapter params with errors that name the object and field.
 * @module
 */

import { parseDuration } from "../../../lib/flags/duration.ts";
import { knownField, protoField, spellings } from "../../../lib/model/proto_names.ts";
import { ConfigIssue } from "../templates.ts";

/**
 * Typed accessors over one params object; every error names `object` and `path`. Fields are
 * named by their proto names (`max_amount`) and read in either jsonpb spelling (`max_amount`
 * or `maxAmount`), as Mixer decoded them; both spellings in one object is an error.
 */
export class Params {
  /** Wraps `spec` of `object` at `path` (`spec` by default). */
  constructor(
    readonly spec: Record<string, unknown>,
    readonly object: string,
    readonly path = "spec",
  ) {
    if (typeof spec !== "object" || spec === null || Array.isArray(spec)) {
      throw new ConfigIssue(object, path, "must be an object");
    }
  }
  /** Throws a ConfigIssue for `field`. */
  fail(field: string, reason: string): never {
    throw new ConfigIssue(this.object, `${this.path}.${this.#key(field)}`, reason);
  }
  /** Rejects fields outside `known` (in either spelling) and fields spelled both ways. */
  only(known: readonly string[]): this {
    const seen = new Map<string, string>();
    for (const k of Object.keys(this.spec)) {
      const name = knownField(k, known);
      if (!name) this.fail(k, `unknown field (want ${known.join(", ")})`);
      const first = seen.get(name);
      if (first !== undefined) {
        this.fail(k, `given twice, as "${first}" and "${k}": use one spelling`);
      }
      seen.set(name, k);
    }
    return this;
  }
  /** The value of `field` in either spelling (undefined when unset or null). */
  get(field: string): unknown {
    const f = protoField(this.spec, field);
    if (f.conflict) {
      this.fail(f.conflict[1], `given twice, as "${f.conflict[0]}" and "${f.conflict[1]}"`);
    }
    return f.value;
  }
  /** The key `field` is written under (for error paths), its proto name when unset. */
  #key(field: string): string {
    return spellings(field).find((k) => this.spec[k] !== undefined) ?? field;
  }
  has(field: string): boolean {
    return this.get(field) !== undefined;
  }
  string(field: string, def: string): string {
    const v = this.get(field);
    if (v === undefined || v === null) return def;
    if (typeof v !== "string") this.fail(field, `must be a string, got ${JSON.stringify(v)}`);
    return v;
  }
  bool(field: string, def: boolean): boolean {
    const v = this.get(field);
    if (v === undefined || v === null) return def;
    if (typeof v !== "boolean") this.fail(field, `must be true or false, got ${JSON.stringify(v)}`);
    return v;
  }
  number(field: string, def: number, min = -Infinity): number {
    const v = this.get(field);
    if (v === undefined || v === null) return def;
    const n = typeof v === "string" && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
    if (typeof n !== "number" || !Number.isFinite(n) || n < min) {
      this.fail(
        field,
        `must be a number${min > -Infinity ? ` >= ${min}` : ""}, got ${JSON.stringify(v)}`,
      );
    }
    return n;
  }
  /** A Go-style duration string (`5s`) or a number of seconds; milliseconds. */
  durationMs(field: string, defMs: number): number {
    const v = this.get(field);
    if (v === undefined || v === null) return defMs;
    if (typeof v === "number" && v >= 0) return v * 1000;
    if (typeof v === "string") {
      try {
        return parseDuration(v);
      } catch (e) {
        this.fail(field, (e as Error).message);
      }
    }
    this.fail(field, `must be a duration such as "5s", got ${JSON.stringify(v)}`);
  }
  enumOf<T extends string>(field: string, values: readonly T[], def: T): T {
    const v = this.get(field) ?? def;
    if (typeof v !== "string" || !values.includes(v as T)) {
      this.fail(field, `must be one of ${values.join(", ")}, got ${JSON.stringify(v)}`);
    }
    return v as T;
  }
  strings(field: string): string[] {
    const v = this.get(field);
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v) || v.some((x) => typeof x !== "string")) {
      this.fail(field, "must be a list of strings");
    }
    return v as string[];
  }
  stringMap(field: string): Record<string, string> {
    const v = this.get(field);
    if (v === undefined || v === null) return {};
    if (
      typeof v !== "object" || Array.isArray(v) ||
      Object.values(v).some((x) => typeof x !== "string")
    ) {
      this.fail(field, "must be a map of strings");
    }
    return v as Record<string, string>;
  }
  /** A list of objects, each wrapped as Params at `field[i]`. */
  list(field: string): Params[] {
    const v = this.get(field);
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) this.fail(field, "must be a list");
    return v.map((x, i) =>
      new Params(x as Record<string, unknown>, this.object, `${this.path}.${field}[${i}]`)
    );
  }
  /** A nested object wrapped as Params. */
  sub(field: string): Params | undefined {
    const v = this.get(field);
    if (v === undefined || v === null) return undefined;
    return new Params(v as Record<string, unknown>, this.object, `${this.path}.${field}`);
  }
}
