/**
 * The `listchecker` adapter: whitelist or blacklist of strings, case-insensitive strings, IP
 * addresses (and CIDR ranges) or regular expressions; entries from `overrides` and, refreshed
 * every `refresh_interval`, from `provider_url` (one entry per line; `#` comments). Until the
 * first fetch of the list ends, Checks wait for it (each as long as its call lasts: a deadline
 * or a cancellation stops the wait); a fetch is bounded by `refresh_interval` (1 s to 30 s) and
 * aborted when the handler closes.
 * @module
 */

import { parseIp } from "../../../lib/expr/mod.ts";
import { abortable } from "../abort.ts";
import { Params } from "./params.ts";
import { type Adapter, type CheckResult, Code, type Handler, type Instance } from "./types.ts";

const ENTRY_TYPES = ["STRINGS", "CASE_INSENSITIVE_STRINGS", "IP_ADDRESSES", "REGEX"] as const;
type EntryType = typeof ENTRY_TYPES[number];

type Matcher = (value: string | Uint8Array) => boolean;

function cidr(entry: string): ((ip: Uint8Array) => boolean) | undefined {
  const [addr, bitsText] = entry.split("/");
  const base = parseIp(addr);
  if (!base) return undefined;
  const bits = bitsText === undefined ? base.length * 8 : Number(bitsText);
  if (!Number.isInteger(bits) || bits < 0 || bits > base.length * 8) return undefined;
  return (ip) => {
    if (ip.length !== base.length) return false;
    for (let i = 0; i < bits; i++) {
      const mask = 0x80 >> (i % 8);
      if ((ip[i >> 3] & mask) !== (base[i >> 3] & mask)) return false;
    }
    return true;
  };
}

/** Compiles list entries; returns the matcher or the first bad entry. */
export function compileList(type: EntryType, entries: readonly string[]): Matcher | string {
  switch (type) {
    case "STRINGS": {
      const set = new Set(entries);
      return (v) => typeof v === "string" && set.has(v);
    }
    case "CASE_INSENSITIVE_STRINGS": {
      const set = new Set(entries.map((e) => e.toLowerCase()));
      return (v) => typeof v === "string" && set.has(v.toLowerCase());
    }
    case "IP_ADDRESSES": {
      const nets: ((ip: Uint8Array) => boolean)[] = [];
      for (const e of entries) {
        const m = cidr(e);
        if (!m) return e;
        nets.push(m);
      }
      return (v) => {
        const ip = typeof v === "string" ? parseIp(v) : v;
        return ip !== undefined && nets.some((n) => n(ip));
      };
    }
    case "REGEX": {
      const res: RegExp[] = [];
      for (const e of entries) {
        try {
          res.push(new RegExp(e));
        } catch {
          return e;
        }
      }
      return (v) => typeof v === "string" && res.some((r) => r.test(v));
    }
  }
}

/**
 * listchecker: listentry (its `value`) and apikey (its `api_key`: a whitelist of keys, or a
 * blacklist of revoked ones).
 */
export const listchecker: Adapter = {
  kind: "listchecker",
  templates: ["listentry", "apikey"],
  build(spec, env, object) {
    const p = new Params(spec, object).only([
      "provider_url",
      "refresh_interval",
      "ttl",
      "caching_interval",
      "caching_use_count",
      "overrides",
      "entry_type",
      "blacklist",
    ]);
    const type = p.enumOf("entry_type", ENTRY_TYPES, "STRINGS");
    const overrides = p.strings("overrides");
    const providerUrl = p.string("provider_url", "");
    if (providerUrl && !URL.canParse(providerUrl)) {
      p.fail("provider_url", `invalid URL "${providerUrl}"`);
    }
    const refreshMs = p.durationMs("refresh_interval", 60_000);
    const ttlMs = p.durationMs("ttl", 300_000);
    const cachingMs = p.durationMs("caching_interval", 300_000);
    const cachingUses = p.number("caching_use_count", 10_000, 0);
    const blacklist = p.bool("blacklist", false);
    const compiled = compileList(type, overrides);
    if (typeof compiled === "string") {
      return p.fail("overrides", `invalid ${type} entry "${compiled}"`);
    }
    const initial: Matcher = compiled;
    let provided: { match: Matcher; at: number } | undefined;
    let timer: number | undefined;
    /** The fetch in flight (one at a time), aborted by close(). */
    let inFlight: AbortController | undefined;
    let closed = false;
    const fetchTimeoutMs = Math.min(Math.max(refreshMs, 1000), 30_000);
    const refresh = async () => {
      if (inFlight || closed) return;
      const ctl = inFlight = new AbortController();
      const limit = setTimeout(
        () => ctl.abort(new Error(`no answer within ${fetchTimeoutMs} ms`)),
        fetchTimeoutMs,
      );
      try {
        const res = await env.fetch(providerUrl, { signal: ctl.signal });
        if (!res.ok) {
          await res.body?.cancel();
          throw new Error(`HTTP ${res.status}`);
        }
        const entries = (await res.text()).split("\n").map((l) => l.replace(/#.*/, "").trim())
          .filter((l) => l !== "");
        const m = compileList(type, entries);
        if (typeof m === "string") throw new Error(`invalid ${type} entry "${m}"`);
        provided = { match: m, at: env.now() };
      } catch (e) {
        const why = ctl.signal.aborted
          ? (ctl.signal.reason as Error).message
          : (e as Error).message;
        if (!closed) env.log.warn(`${object}: cannot refresh the list from ${providerUrl}: ${why}`);
      } finally {
        clearTimeout(limit);
        inFlight = undefined;
      }
    };
    /** The first fetch while it runs: Checks wait for it rather than answer without the list. */
    let first: Promise<void> | undefined;
    if (providerUrl) {
      first = refresh().finally(() => first = undefined);
      timer = setInterval(refresh, Math.max(refreshMs, 100));
    }
    const result = (code: number, message = ""): CheckResult => ({
      status: { code, message },
      validDurationMs: cachingMs,
      validUseCount: cachingUses,
    });
    const decide = (inst: Instance): CheckResult => {
      const field = inst.kind === "apikey" ? "api_key" : "value";
      const v = inst.value[field];
      if (typeof v !== "string" && !(v instanceof Uint8Array)) {
        return result(Code.INVALID_ARGUMENT, `${inst.name}: ${field} is missing or not a string`);
      }
      const text = typeof v === "string" ? v : [...v].join(".");
      if (type === "IP_ADDRESSES" && typeof v === "string" && !parseIp(v)) {
        return result(Code.INVALID_ARGUMENT, `"${v}" is not an IP address`);
      }
      const fresh = provided && env.now() - provided.at <= ttlMs ? provided : undefined;
      const found = initial(v) || (fresh?.match(v) ?? false);
      if (blacklist) {
        return found ? result(Code.PERMISSION_DENIED, `${text} is blacklisted`) : result(Code.OK);
      }
      return found ? result(Code.OK) : result(Code.NOT_FOUND, `${text} is not whitelisted`);
    };
    const handler: Handler = {
      check(inst, signal) {
        if (!first) return decide(inst);
        return abortable(first, signal).then(() => decide(inst));
      },
      close() {
        closed = true;
        if (timer !== undefined) clearInterval(timer);
        inFlight?.abort(new Error("the handler was closed"));
      },
    };
    return handler;
  },
};
