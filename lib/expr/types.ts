/**
 * Value types of attributes and expressions (reference §4.4) and their runtime representation.
 * @module
 */

import { VALUE_TYPES } from "../model/specs.ts";

/** The value types of the attribute vocabulary (those of attribute manifests, lib/model). */
export { VALUE_TYPES };

/** One value type. */
export type ValueType = typeof VALUE_TYPES[number];

/**
 * A runtime value. STRING, EMAIL_ADDRESS, URI and DNS_NAME are strings; INT64 and DOUBLE numbers;
 * TIMESTAMP a Date; DURATION a number of milliseconds; IP_ADDRESS 4 or 16 bytes; STRING_MAP a
 * plain object of strings.
 */
export type Value =
  | string
  | number
  | boolean
  | Date
  | Uint8Array
  | Readonly<Record<string, string>>;

/** Attribute name → value type: what expressions may refer to. */
export type AttributeManifest = Readonly<Record<string, ValueType>>;

/** Read access to the attributes of one request. */
export interface AttributeBag {
  /** The value of an attribute, or undefined when the request does not carry it. */
  get(name: string): Value | undefined;
  /**
   * Optional: the value at `key` of the STRING_MAP attribute `name` (`m["key"]` on an
   * attribute), so a bag can record that only that key was read. `map` is undefined when the
   * attribute is absent. Without it, evaluation uses {@link get} and indexes the map itself.
   */
  getKey?(name: string, key: string): { map: boolean; value: string | undefined };
}

/** A bag over a plain object (tests, tools). */
export function bagOf(values: Readonly<Record<string, Value>>): AttributeBag {
  return { get: (name) => Object.hasOwn(values, name) ? values[name] : undefined };
}

/** True when `t` names a value type. */
export function isValueType(t: unknown): t is ValueType {
  return typeof t === "string" && (VALUE_TYPES as readonly string[]).includes(t);
}

/** Structural equality of two runtime values of the same type. */
export function valuesEqual(a: Value, b: Value): boolean {
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  if (a instanceof Uint8Array && b instanceof Uint8Array) {
    return a.length === b.length && a.every((x, i) => x === b[i]);
  }
  if (typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a as object), kb = Object.keys(b as object);
    const ra = a as Record<string, string>, rb = b as Record<string, string>;
    return ka.length === kb.length && ka.every((k) => Object.hasOwn(rb, k) && ra[k] === rb[k]);
  }
  return a === b;
}

/** Parses a textual IPv4 or IPv6 address into bytes, or undefined when it is not one. */
export function parseIp(s: string): Uint8Array | undefined {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (v4) {
    const b = v4.slice(1).map(Number);
    return b.every((x) => x <= 255) ? Uint8Array.from(b) : undefined;
  }
  if (!s.includes(":") || !/^[0-9a-fA-F:.]+$/.test(s)) return undefined;
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const groups = (h: string) => (h === "" ? [] : h.split(":"));
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  const words: number[] = [];
  const push = (parts: string[]): boolean => {
    for (const [i, p] of parts.entries()) {
      if (p.includes(".") && i === parts.length - 1) {
        const v = parseIp(p);
        if (!v || v.length !== 4) return false;
        words.push((v[0] << 8) | v[1], (v[2] << 8) | v[3]);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(p)) words.push(parseInt(p, 16));
      else return false;
    }
    return true;
  };
  if (!push(head)) return undefined;
  const headLen = words.length;
  if (!push(tail)) return undefined;
  const missing = 8 - words.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  words.splice(headLen, 0, ...new Array(halves.length === 2 ? missing : 0).fill(0));
  const out = new Uint8Array(16);
  words.forEach((w, i) => {
    out[2 * i] = w >> 8;
    out[2 * i + 1] = w & 0xff;
  });
  return out;
}
