/**
 * Proto field spellings as jsonpb reads them: a field may be written under its proto name
 * (`max_amount`) or its lowerCamelCase JSON name (`maxAmount`). One home for the rule, used by
 * the spec schemas (`canonicalize`) and by the policy server's handler and instance params, so
 * `meshctl` and `mesh-policy` accept the same spellings.
 * @module
 */

/** The snake_case spelling of a lowerCamelCase proto JSON name (`apiSpecs` → `api_specs`). */
export function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase());
}

/** The lowerCamelCase JSON name of a snake_case proto name (`max_amount` → `maxAmount`). */
export function camelCase(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** The spellings jsonpb accepts for a field, proto name first (`max_amount`, `maxAmount`). */
export function spellings(name: string): string[] {
  const snake = snakeCase(name), camel = camelCase(name);
  return snake === camel ? [snake] : [snake, camel];
}

/**
 * Reads field `name` (either spelling) of `object`: the value and the key it was written under,
 * or `conflict` naming both keys when the object spells the field both ways. A null value
 * counts as not set.
 *
 * @example
 * ```ts
 * import { protoField } from "./proto_names.ts";
 * protoField({ maxAmount: 5 }, "max_amount"); // { key: "maxAmount", value: 5 }
 * ```
 */
export function protoField(
  object: Record<string, unknown>,
  name: string,
): { key: string; value: unknown; conflict?: undefined } | { conflict: [string, string] } {
  const given = spellings(name).filter((k) =>
    Object.hasOwn(object, k) && object[k] !== undefined && object[k] !== null
  );
  if (given.length > 1) return { conflict: [given[0], given[1]] };
  const key = given[0] ?? snakeCase(name);
  return { key, value: given.length ? object[key] : undefined };
}

/** Whether `key` spells one of `known` (proto names) in either spelling; returns that name. */
export function knownField(key: string, known: readonly string[]): string | undefined {
  if (known.includes(key)) return key;
  const snake = snakeCase(key);
  if (known.includes(snake)) return snake;
  const camel = camelCase(key);
  return known.includes(camel) ? camel : undefined;
}
