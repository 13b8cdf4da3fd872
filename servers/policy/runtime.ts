/**
 * The policy runtime: a configuration snapshot (rules with compiled `match` expressions,
 * compiled instances, built handlers) and the dispatch of Check, quota and Report through it.
 * A snapshot is built from the whole configuration at once; a problem rejects the object it is
 * in (and the rules that depend on it), every issue naming the object and field; the rest is
 * kept.
 * @module
 */

import {
  type AttributeBag,
  type AttributeManifest,
  compile,
  type Compiled,
  DEFAULT_MANIFEST,
  ExprError,
  isValueType,
  type Value,
  type ValueType,
} from "../../lib/expr/mod.ts";
import type { ConfigObject } from "../../lib/model/types.ts";
import {
  type AdapterEnv,
  ADAPTERS,
  type CheckResult,
  Code,
  type Handler,
  type Instance,
} from "./adapters/mod.ts";
import { type CompiledInstance, compileInstance, ConfigIssue, TEMPLATES } from "./templates.ts";

/** Check defaults when no handler answers (reference §4.3). */
export const DEFAULT_VALID_DURATION_MS = 10_000;
/** See {@link DEFAULT_VALID_DURATION_MS}. */
export const DEFAULT_VALID_USE_COUNT = 200;

interface Action {
  handlerKey: string;
  handler: Handler;
  instances: CompiledInstance[];
}

interface Rule {
  key: string;
  namespace: string;
  match?: Compiled;
  actions: Action[];
}

/** A built handler and the spec it was built from (reused when unchanged). */
export interface BuiltHandler {
  spec: string;
  handler: Handler;
}

/**
 * Runs adapter work (the adapter worker pool); a caller still waiting for a worker when `signal`
 * aborts leaves the queue (rejecting with `signal.reason`).
 */
export type AdapterRunner = <T>(work: () => T | Promise<T>, signal?: AbortSignal) => Promise<T>;

/** Result of a Check's precondition. */
export interface PreconditionResult extends CheckResult {}

/** Result of one quota. */
export interface QuotaOutcome {
  granted: number;
  validDurationMs: number;
}

const key = (o: ConfigObject) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/** Parses `<name>.<kind>[.<namespace>]` relative to `namespace`. */
function resolveRef(
  ref: string,
  namespace: string,
): { name: string; kind: string; ns: string } | undefined {
  const parts = ref.split(".");
  if (parts.length < 2) return undefined;
  return {
    name: parts[0],
    kind: parts[1],
    ns: parts.length > 2 ? parts.slice(2).join(".") : namespace,
  };
}

/** The manifest: the built-in vocabulary plus the configuration's attribute manifests. */
export function buildManifest(
  objects: readonly ConfigObject[],
  issues: ConfigIssue[],
): AttributeManifest {
  const m: Record<string, ValueType> = { ...DEFAULT_MANIFEST };
  for (const o of objects) {
    if (o.kind !== "attributemanifest") continue;
    const attrs = (o.spec.attributes ?? {}) as Record<string, { valueType?: unknown }>;
    for (const [name, a] of Object.entries(attrs)) {
      const t = a?.valueType;
      if (!isValueType(t)) {
        issues.push(
          new ConfigIssue(
            key(o),
            `spec.attributes.${name}.valueType`,
            `unknown value type ${JSON.stringify(t)}`,
          ),
        );
      } else m[name] = t;
    }
  }
  return m;
}

/** A configuration snapshot. */
export class Snapshot {
  readonly rules: readonly Rule[];
  readonly handlers: ReadonlyMap<string, BuiltHandler>;
  readonly roles: readonly ConfigObject[];
  readonly bindings: readonly ConfigObject[];
  readonly defaultNamespace: string;
  readonly #namespaced: boolean;
  /** The rules with an attribute-generating action (preprocessing looks at these only). */
  readonly #generating: readonly Rule[];

  private constructor(
    rules: Rule[],
    handlers: Map<string, BuiltHandler>,
    roles: ConfigObject[],
    bindings: ConfigObject[],
    defaultNamespace: string,
  ) {
    this.rules = rules;
    this.handlers = handlers;
    this.roles = roles;
    this.bindings = bindings;
    this.defaultNamespace = defaultNamespace;
    this.#namespaced = rules.some((r) => r.namespace !== defaultNamespace);
    this.#generating = rules.filter((r) =>
      r.actions.some((a) => a.handler.generate && a.instances.some((i) => i.bind))
    );
  }

  /** An empty snapshot (no rules: Check answers the defaults). */
  static empty(defaultNamespace: string): Snapshot {
    return new Snapshot([], new Map(), [], [], defaultNamespace);
  }

  /**
   * Builds a snapshot from every configuration object. A bad object is rejected alone, with
   * what depends on it (a rule naming a rejected handler or instance): when `previous` held an
   * accepted version of it, that version stays in force, otherwise the object is not in force.
   * The rest is kept. Handlers whose spec did not change are taken from `previous` (adapter
   * state such as quota counters survives reloads).
   * @returns the snapshot and the issues of the objects it rejected (empty when all are in force).
   */
  static build(
    objects: readonly ConfigObject[],
    defaultNamespace: string,
    env: AdapterEnv,
    previous?: Snapshot,
  ): { snapshot: Snapshot; issues: ConfigIssue[] } {
    const reuse = new Map(previous?.handlers ?? []);
    const first = buildParts(objects, defaultNamespace, env, reuse);
    let parts = first;
    const own = new Set(
      first.issues.filter((i) => !(i instanceof DependencyIssue)).map((i) => i.object),
    );
    const fallback = [...own].filter((k) => previous?.accepted.has(k));
    if (fallback.length) {
      // the previous version of each rejected object stands in for it
      const swap = new Map(fallback.map((k) => [k, previous!.accepted.get(k)!]));
      for (const h of first.built) reuse.set(h.key, h);
      parts = buildParts(
        objects.map((o) => swap.get(key(o)) ?? o),
        defaultNamespace,
        env,
        reuse,
      );
      const kept = new Set([...parts.handlers.values()].map((h) => h.handler));
      for (const h of first.built) if (!kept.has(h.handler)) h.handler.close?.();
    }
    const issues = first.issues.filter((i) => own.has(i.object) || !parts.accepted.has(i.object))
      .map((i) =>
        new ConfigIssue(
          i.object,
          i.path,
          i.reason,
          own.has(i.object) && parts.accepted.has(i.object),
        )
      );
    // a rule rejected in the second pass only (its previous handler now missing) is reported too
    for (const i of parts.issues) {
      if (!issues.some((x) => x.object === i.object)) issues.push(i);
    }
    const snapshot = new Snapshot(
      parts.rules,
      parts.handlers,
      parts.roles,
      parts.bindings,
      defaultNamespace,
    );
    snapshot.accepted = parts.accepted;
    return { snapshot, issues };
  }

  /** The objects this snapshot holds, by `<kind>/<namespace>/<name>`. */
  accepted: ReadonlyMap<string, ConfigObject> = new Map();

  /** Closes the handlers of this snapshot that `next` does not reuse. */
  async retire(next: Snapshot | undefined): Promise<void> {
    const kept = new Set([...(next?.handlers.values() ?? [])].map((h) => h.handler));
    for (const h of this.handlers.values()) if (!kept.has(h.handler)) await h.handler.close?.();
  }

  /** The rules that apply to a request: mesh-wide ones, and those of its destination's namespace. */
  #applicable(bag: AttributeBag, rules: readonly Rule[] = this.rules): Rule[] {
    let ns: string | undefined;
    if (this.#namespaced) {
      const svc = bag.get("destination.service");
      ns = typeof svc === "string" ? svc.split(".")[1] : undefined;
    }
    return rules.filter((r) => {
      if (r.namespace !== this.defaultNamespace && r.namespace !== ns) return false;
      if (!r.match) return true;
      try {
        return r.match.evaluate(bag) === true;
      } catch {
        return false; // an absent attribute in `match` means the rule does not apply
      }
    });
  }

  /**
   * Attribute generation (reference §4.3: Check and Report preprocess their bag first): every
   * applicable rule's attribute-generating handlers (`kubernetesenv`) see their instances and
   * their outputs are bound to attributes that overlay the request's. A handler that generates
   * nothing (undefined: the fs platform) binds nothing. Returns `bag` itself when no rule
   * generates attributes.
   */
  async preprocess(
    bag: AttributeBag,
    run: AdapterRunner,
    signal?: AbortSignal,
  ): Promise<AttributeBag> {
    if (this.#generating.length === 0) return bag;
    const generated = new Map<string, Value>();
    for (const r of this.#applicable(bag, this.#generating)) {
      for (const a of r.actions) {
        if (!a.handler.generate) continue;
        for (const i of a.instances) {
          if (i.variety !== "attribute" || !i.bind) continue;
          const inst = buildInstance(i, bag);
          const out = await run(() => a.handler.generate!(inst, signal), signal);
          if (out) { for (const [k, v] of i.bind(bag, out)) generated.set(k, v); }
        }
      }
    }
    if (generated.size === 0) return bag;
    return {
      get: (n) => generated.has(n) ? generated.get(n) : bag.get(n),
    };
  }

  /** Dispatches a Check's precondition: the first non-OK status, the smallest validity. */
  async check(
    bag: AttributeBag,
    run: AdapterRunner,
    signal?: AbortSignal,
  ): Promise<PreconditionResult> {
    const results: CheckResult[] = [];
    for (const r of this.#applicable(bag)) {
      for (const a of r.actions) {
        if (!a.handler.check) continue;
        for (const i of a.instances) {
          if (i.variety !== "check") continue;
          const inst = buildInstance(i, bag);
          results.push(await run(() => a.handler.check!(inst, signal), signal));
        }
      }
    }
    if (results.length === 0) {
      return {
        status: { code: Code.OK },
        validDurationMs: DEFAULT_VALID_DURATION_MS,
        validUseCount: DEFAULT_VALID_USE_COUNT,
      };
    }
    return {
      status: results.find((x) => x.status.code !== Code.OK)?.status ?? { code: Code.OK },
      validDurationMs: Math.min(...results.map((x) => x.validDurationMs)),
      validUseCount: Math.min(...results.map((x) => x.validUseCount)),
    };
  }

  /** Allocates one quota (`name` is the instance's full or short name). */
  async quota(
    bag: AttributeBag,
    name: string,
    args: { amount: number; bestEffort: boolean; dedupId: string },
    run: AdapterRunner,
    signal?: AbortSignal,
  ): Promise<QuotaOutcome> {
    for (const r of this.#applicable(bag)) {
      for (const a of r.actions) {
        if (!a.handler.quota) continue;
        const i = a.instances.find((x) =>
          x.variety === "quota" && (x.fullName === name || x.fullName.split(".")[0] === name)
        );
        if (!i) continue;
        const inst = buildInstance(i, bag);
        return await run(() => a.handler.quota!(inst, args, signal), signal);
      }
    }
    return { granted: args.amount, validDurationMs: DEFAULT_VALID_DURATION_MS };
  }

  /** Dispatches one attribute bag of a Report to every matching report handler. */
  async report(bag: AttributeBag, run: AdapterRunner, signal?: AbortSignal): Promise<void> {
    const byHandler = new Map<Handler, Instance[]>();
    for (const r of this.#applicable(bag)) {
      for (const a of r.actions) {
        if (!a.handler.report) continue;
        for (const i of a.instances) {
          if (i.variety !== "report") continue;
          const list = byHandler.get(a.handler) ?? [];
          list.push(buildInstance(i, bag));
          byHandler.set(a.handler, list);
        }
      }
    }
    await Promise.all(
      [...byHandler].map(([h, list]) => run(() => h.report!(list, signal), signal)),
    );
  }

  /** Prometheus text of every handler that exposes metrics. */
  async metrics(): Promise<string> {
    const parts = await Promise.all(
      [...this.handlers.values()].map((h) => h.handler.metrics?.() ?? ""),
    );
    return parts.filter((p) => p).join("\n");
  }
}

/** A rule rejected because a handler or instance it names was rejected. */
class DependencyIssue extends ConfigIssue {}

interface Parts {
  rules: Rule[];
  handlers: Map<string, BuiltHandler>;
  roles: ConfigObject[];
  bindings: ConfigObject[];
  /** Handlers built by this pass (not reused). */
  built: (BuiltHandler & { key: string })[];
  issues: ConfigIssue[];
  accepted: Map<string, ConfigObject>;
  rejected: Set<string>;
}

/** One pass over the objects: every object compiled on its own, rules after their parts. */
function buildParts(
  objects: readonly ConfigObject[],
  defaultNamespace: string,
  env: AdapterEnv,
  reuse: ReadonlyMap<string, BuiltHandler>,
): Parts {
  const issues: ConfigIssue[] = [];
  const manifest = buildManifest(objects, issues);
  const p: Parts = {
    rules: [],
    handlers: new Map(),
    roles: [],
    bindings: [],
    built: [],
    issues,
    accepted: new Map(),
    rejected: new Set(issues.map((i) => i.object)),
  };
  const instances = new Map<string, CompiledInstance>();
  const attempt = (o: ConfigObject, f: () => void) => {
    try {
      f();
      if (!p.rejected.has(key(o))) p.accepted.set(key(o), o);
    } catch (e) {
      if (!(e instanceof ConfigIssue)) throw e;
      issues.push(e);
      p.rejected.add(e.object);
    }
  };
  const rbacEnv: AdapterEnv = { ...env, rbac: () => ({ roles: p.roles, bindings: p.bindings }) };
  for (const o of objects) {
    const k = key(o), ns = o.metadata.namespace ?? defaultNamespace;
    if (o.kind === "ServiceRole") p.roles.push(o);
    else if (o.kind === "ServiceRoleBinding") p.bindings.push(o);
    else if (o.kind === "attributemanifest") attempt(o, () => {});
    else if (Object.hasOwn(TEMPLATES, o.kind)) {
      attempt(
        o,
        () =>
          instances.set(k, compileInstance(o.kind, o.metadata.name, ns, o.spec ?? {}, manifest)),
      );
    } else if (ADAPTERS.has(o.kind)) {
      const spec = JSON.stringify(o.spec ?? {});
      const old = reuse.get(k);
      if (old && old.spec === spec) {
        p.handlers.set(k, old);
        p.accepted.set(k, o);
      } else {
        attempt(o, () => {
          const h = { spec, handler: ADAPTERS.get(o.kind)!.build(o.spec ?? {}, rbacEnv, k) };
          p.handlers.set(k, h);
          p.built.push({ ...h, key: k });
        });
      }
    }
  }
  for (const o of objects) {
    if (o.kind === "rule") {
      attempt(o, () =>
        p.rules.push(
          compileRule(o, defaultNamespace, manifest, p.handlers, instances, p.rejected),
        ));
    }
  }
  return p;
}

function buildInstance(i: CompiledInstance, bag: AttributeBag): Instance {
  return { name: i.fullName, kind: i.kind, value: i.build(bag), types: i.types };
}

function compileRule(
  o: ConfigObject,
  defaultNamespace: string,
  manifest: AttributeManifest,
  handlers: Map<string, BuiltHandler>,
  instances: Map<string, CompiledInstance>,
  rejected: ReadonlySet<string>,
): Rule {
  const k = key(o), ns = o.metadata.namespace ?? defaultNamespace;
  const spec = o.spec as { match?: unknown; selector?: unknown; actions?: unknown };
  const matchText = spec.match ?? spec.selector ?? "";
  const field = spec.match !== undefined ? "spec.match" : "spec.selector";
  if (typeof matchText !== "string") {
    throw new ConfigIssue(k, field, "must be an expression (string)");
  }
  let match: Compiled | undefined;
  if (matchText.trim() !== "") {
    try {
      match = compile(matchText, manifest);
    } catch (e) {
      if (e instanceof ExprError) throw new ConfigIssue(k, field, `${e.message} in "${matchText}"`);
      throw e;
    }
    if (match.type !== "BOOL") {
      throw new ConfigIssue(k, field, `must be a BOOL expression, not ${match.type}`);
    }
  }
  const actions: Action[] = [];
  const list = Array.isArray(spec.actions) ? spec.actions : [];
  list.forEach((raw, ai) => {
    const a = raw as { handler?: unknown; instances?: unknown };
    const at = `spec.actions[${ai}]`;
    const h = typeof a.handler === "string" ? resolveRef(a.handler, ns) : undefined;
    if (!h) {
      throw new ConfigIssue(
        k,
        `${at}.handler`,
        `want <name>.<kind>[.<namespace>], got ${JSON.stringify(a.handler)}`,
      );
    }
    const hk = `${h.kind}/${h.ns}/${h.name}`;
    const handler = handlers.get(hk);
    if (!handler && rejected.has(hk)) {
      throw new DependencyIssue(k, `${at}.handler`, `handler "${a.handler}" was rejected`);
    }
    if (!handler) {
      const why = ADAPTERS.has(h.kind) ? "no such handler" : `unsupported adapter kind "${h.kind}"`;
      throw new ConfigIssue(k, `${at}.handler`, `${why}: "${a.handler}"`);
    }
    const adapter = ADAPTERS.get(h.kind)!;
    const insts: CompiledInstance[] = [];
    (Array.isArray(a.instances) ? a.instances : []).forEach((ref: unknown, ii: number) => {
      const r = typeof ref === "string" ? resolveRef(ref, ns) : undefined;
      const path = `${at}.instances[${ii}]`;
      if (!r) {
        throw new ConfigIssue(
          k,
          path,
          `want <name>.<kind>[.<namespace>], got ${JSON.stringify(ref)}`,
        );
      }
      const inst = instances.get(`${r.kind}/${r.ns}/${r.name}`);
      if (!inst && rejected.has(`${r.kind}/${r.ns}/${r.name}`)) {
        throw new DependencyIssue(k, path, `instance "${ref}" was rejected`);
      }
      if (!inst) throw new ConfigIssue(k, path, `no such instance: "${ref}"`);
      if (!adapter.templates.includes(r.kind)) {
        throw new ConfigIssue(
          k,
          path,
          `handler kind "${h.kind}" does not take "${r.kind}" instances (takes ${
            adapter.templates.join(", ")
          })`,
        );
      }
      insts.push(inst);
    });
    actions.push({ handlerKey: hk, handler: handler.handler, instances: insts });
  });
  return { key: k, namespace: ns, match, actions };
}
