/** Flag parsing shared by the benches. @module */

/**
 * The value `v` of flag `--name` as a whole number of at least `min` (default 1); throws naming the
 * flag and quoting the value otherwise.
 */
export function wholeNumber(name: string, v: unknown, min = 1): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) {
    throw new Error(`Flag --${name} must be a whole number >= ${min}, got "${v}"`);
  }
  return n;
}
