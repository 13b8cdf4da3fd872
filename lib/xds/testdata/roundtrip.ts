/**
 * Test helper: encodes a resource through protos.ts, decodes it back and checks that every field
 * of the input survived (protobufjs silently drops unknown fields, so a plain encode is not enough).
 * @module
 */

import { decodeAny, encodeAny } from "../protos.ts";

function isDefault(v: unknown): boolean {
  return v === false || v === 0 || v === "" || (Array.isArray(v) && v.length === 0);
}

function same(input: unknown, decoded: unknown, path: string, problems: string[]): void {
  if (input === undefined || input === null) return;
  if (decoded === undefined) {
    if (!isDefault(input)) problems.push(`${path}: dropped (unknown field or wrong type)`);
    return;
  }
  if (Array.isArray(input)) {
    if (!Array.isArray(decoded) || decoded.length !== input.length) {
      problems.push(`${path}: array length ${JSON.stringify(decoded)?.slice(0, 80)}`);
      return;
    }
    input.forEach((v, i) => same(v, decoded[i], `${path}[${i}]`, problems));
    return;
  }
  if (typeof input === "object") {
    if (typeof decoded !== "object") {
      problems.push(`${path}: expected an object, got ${JSON.stringify(decoded)}`);
      return;
    }
    for (const [k, v] of Object.entries(input as Record<string, unknown>)) {
      same(v, (decoded as Record<string, unknown>)[k], `${path}.${k}`, problems);
    }
    return;
  }
  if (String(input) !== String(decoded)) {
    problems.push(`${path}: ${JSON.stringify(input)} became ${JSON.stringify(decoded)}`);
  }
}

/** Encodes `obj` as `typeUrl` and returns the fields lost in the round trip (empty = fine). */
export function roundTripProblems(typeUrl: string, obj: unknown): string[] {
  const decoded = decodeAny(encodeAny(typeUrl, obj));
  const problems: string[] = [];
  same(obj, decoded, typeUrl.slice(typeUrl.lastIndexOf(".") + 1), problems);
  return problems;
}
