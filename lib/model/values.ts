/**
 * Checks and conversions of scalar values used by the schemas: durations, hosts, DNS names,
 * labels, addresses. Pure functions; each checker returns a reason (a sentence fragment) or
 * `undefined` when the value is valid.
 * @module
 */

import { formatDuration, parseDuration } from "../flags/duration.ts";

/** Longest part of an input value echoed in a message (longer values are cut, with `...`). */
export const QUOTE_MAX = 80;

/**
 * A value taken from input, for a message: JSON-quoted (so newlines and control characters are
 * escaped and cannot forge lines) and cut to {@link QUOTE_MAX} characters.
 */
export function quote(v: unknown): string {
  if (typeof v === "string") {
    return JSON.stringify(v.length > QUOTE_MAX ? v.slice(0, QUOTE_MAX) + "..." : v);
  }
  const text = JSON.stringify(v) ?? String(v);
  return text.length > QUOTE_MAX ? text.slice(0, QUOTE_MAX) + "..." : text;
}

/**
 * A name taken from input, for a message: as is when it is short printable ASCII without spaces
 * (`VirtualService`, `my-app`), else {@link quote}d.
 */
export function printable(s: string): string {
  return /^[\x21-\x7e]{1,80}$/.test(s) && !s.includes('"') ? s : quote(s);
}

/** `text` with control characters (newlines...) written as JSON escapes: one line, no forgery. */
export function escapeControl(text: string): string {
  return text.replace(
    // deno-lint-ignore no-control-regex
    /[\u0000-\u001f\u007f\u2028\u2029]/g,
    (c) =>
      c === "\n"
        ? "\\n"
        : c === "\r"
        ? "\\r"
        : c === "\t"
        ? "\\t"
        : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

const DURATION_RE = /^(?:(?:\d+(?:\.\d+)?|\.\d+)(?:ms|h|m|s))+$/;

/** Pattern of an accepted duration, for OpenAPI (`5s`, `0.5s`, `300ms`, `1m30s`, `2h0m0s`). */
export const DURATION_PATTERN = "^(([0-9]+(\\.[0-9]+)?|\\.[0-9]+)(ms|h|m|s))+$|^0$";

/**
 * Parses a Go-style or proto-JSON duration (`300ms`, `5s`, `0.5s`, `1m30s`, `2160h0m0s`, `0`)
 * into milliseconds, rounded to the microsecond, with {@link parseDuration}. Units: `h`, `m`,
 * `s`, `ms`. Returns `undefined` when the text is not a duration (negative values, other units,
 * bare numbers other than `0` and values beyond Go's 290 years are rejected).
 *
 * @example
 * ```ts
 * parseDurationMs("1m30s"); // 90000
 * ```
 */
export function parseDurationMs(text: string): number | undefined {
  if (text === "0") return 0;
  if (!DURATION_RE.test(text)) return undefined;
  try {
    return Math.round(parseDuration(text) * 1000) / 1000;
  } catch {
    return undefined;
  }
}

/** Reason why `text` is not a duration, or undefined. */
export function checkDuration(text: string): string | undefined {
  if (parseDurationMs(text) !== undefined) return undefined;
  if (text.startsWith("-")) return `invalid duration ${quote(text)}: must not be negative`;
  return `invalid duration ${
    quote(text)
  }: expected a number with unit h, m, s or ms, such as "300ms", "5s", "1m30s"`;
}

/**
 * Formats milliseconds the way Go prints a time.Duration: `0s`, `300ms`, `1.5s`, `1m0s`,
 * `2160h0m0s` (lib/flags's printer).
 */
export { formatDuration };

const DNS1123_LABEL_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** True when `s` is a DNS-1123 label (lowercase alphanumerics and `-`, at most 63 characters). */
export function isDns1123Label(s: string): boolean {
  return s.length <= 63 && DNS1123_LABEL_RE.test(s);
}

/** True when `s` is a DNS-1123 subdomain (dot-separated labels, at most 253 characters). */
export function isDns1123Subdomain(s: string): boolean {
  return s.length > 0 && s.length <= 253 && s.split(".").every(isDns1123Label);
}

/** Reason why `s` is not a valid object name (DNS-1123 subdomain), or undefined. */
export function checkObjectName(s: string): string | undefined {
  if (isDns1123Subdomain(s)) return undefined;
  return `invalid name ${
    quote(s)
  }: must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)`;
}

/** Reason why `s` is not a valid namespace (DNS-1123 label), or undefined. */
export function checkNamespace(s: string): string | undefined {
  if (isDns1123Label(s)) return undefined;
  return `invalid namespace ${
    quote(s)
  }: must be a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)`;
}

/**
 * Reason why `host` is not a valid service host, or undefined. Accepts FQDNs, short names
 * (`reviews`), IP addresses, and with `wildcard` a leading `*` label (`*.example.com`) or `*`.
 */
export function checkHost(host: string, wildcard = true): string | undefined {
  const q = quote(host);
  if (host === "") return "host must not be empty";
  if (host === "*") return wildcard ? undefined : `invalid host ${q}: wildcards are not allowed`;
  if (host.length > 255) return `invalid host ${q}: must be at most 255 characters`;
  let rest = host;
  if (host.startsWith("*.")) {
    if (!wildcard) return `invalid host ${q}: wildcards are not allowed`;
    rest = host.slice(2);
  }
  for (const label of rest.split(".")) {
    if (!isDns1123Label(label)) {
      if (label.includes("*")) {
        return `invalid host ${q}: "*" is allowed only as the whole first label ("*.example.com")`;
      }
      return `invalid host ${q}: label ${
        quote(label)
      } must consist of lowercase letters, digits and '-', start and end with a letter or digit, and be at most 63 characters`;
    }
  }
  return undefined;
}

const IPV4_RE = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** True when `s` is an IPv4 or IPv6 address literal. */
export function isIp(s: string): boolean {
  if (IPV4_RE.test(s)) return true;
  if (!s.includes(":") || !/^[0-9a-fA-F:.]+$/.test(s)) return false;
  const parts = s.split("::");
  if (parts.length > 2) return false;
  const groups = parts.flatMap((p) => (p === "" ? [] : p.split(":")));
  const last = groups.at(-1) ?? "";
  const v4Tail = IPV4_RE.test(last);
  const hexGroups = v4Tail ? groups.slice(0, -1) : groups;
  if (!hexGroups.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return false;
  const count = hexGroups.length + (v4Tail ? 2 : 0);
  return parts.length === 2 ? count < 8 : count === 8;
}

/** Reason why `s` is neither an IP address nor a CIDR block, or undefined. */
export function checkIpOrCidr(s: string): string | undefined {
  const [ip, bits, extra] = s.split("/");
  const reason = `invalid address ${quote(s)}: must be an IP address or CIDR block`;
  if (extra !== undefined || !isIp(ip)) return reason;
  if (bits === undefined) return undefined;
  const max = ip.includes(":") ? 128 : 32;
  if (!/^\d+$/.test(bits) || Number(bits) > max) return reason;
  return undefined;
}

/** Reason why `s` is not `<host>:<port>` with a port in 1..65535, or undefined. */
export function checkHostPort(s: string): string | undefined {
  const i = s.lastIndexOf(":");
  const q = quote(s);
  if (i < 0) return `invalid address ${q}: must be <host>:<port>`;
  let host = s.slice(0, i);
  const port = s.slice(i + 1);
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  if (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    return `invalid address ${q}: port ${quote(port)} must be a number between 1 and 65535`;
  }
  if (host !== "" && !isIp(host) && !isDns1123Subdomain(host.toLowerCase())) {
    return `invalid address ${q}: host ${quote(host)} is not a valid host name or IP`;
  }
  return undefined;
}

const LABEL_NAME_RE = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** Reason why `key` is not a valid label key (`[prefix/]name`), or undefined. */
export function checkLabelKey(key: string): string | undefined {
  const q = quote(key);
  const parts = key.split("/");
  if (parts.length > 2) return `invalid label key ${q}: at most one '/' is allowed`;
  const name = parts.at(-1)!;
  if (parts.length === 2 && !isDns1123Subdomain(parts[0])) {
    return `invalid label key ${q}: prefix must be a DNS-1123 subdomain`;
  }
  if (name.length === 0 || name.length > 63 || !LABEL_NAME_RE.test(name)) {
    return `invalid label key ${q}: name must be 1-63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric`;
  }
  return undefined;
}

/** Reason why `value` is not a valid label value, or undefined. */
export function checkLabelValue(value: string): string | undefined {
  if (value === "" || (value.length <= 63 && LABEL_NAME_RE.test(value))) return undefined;
  return `invalid label value ${
    quote(value)
  }: must be at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric`;
}

/**
 * Lowercase English plural used for CRD names: `+es` after s, x, z, ch and sh (`cloudwatch` →
 * `cloudwatches`, `prometheus` → `prometheuses`), consonant+`y` → `ies`, else `+s` (`gateway` →
 * `gateways`, `listentry` → `listentries`).
 */
export function pluralize(singular: string): string {
  if (/([sxz]|[cs]h)$/.test(singular)) return singular + "es";
  if (/[^aeiou]y$/.test(singular)) return singular.slice(0, -1) + "ies";
  return singular + "s";
}
