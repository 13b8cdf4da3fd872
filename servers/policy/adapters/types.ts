/**
 * The contract between the policy runtime and its adapters.
 * @module
 */

import type { Value, ValueType } from "../../../lib/expr/mod.ts";
import type { KubeConfig } from "../../../lib/kube/mod.ts";
import type { Logger } from "../../../lib/log/mod.ts";
import type { ConfigObject } from "../../../lib/model/types.ts";
import type { InstanceValue } from "../templates.ts";

/** A gRPC status carried in a Check result. */
export interface RpcStatus {
  code: number;
  message?: string;
}

/** What one check handler decided. */
export interface CheckResult {
  status: RpcStatus;
  validDurationMs: number;
  validUseCount: number;
}

/** Arguments of a quota allocation. */
export interface QuotaArgs {
  amount: number;
  bestEffort: boolean;
  /** Deduplication id of the allocation (request id + quota name). */
  dedupId: string;
}

/** What a quota handler granted. */
export interface QuotaResult {
  granted: number;
  validDurationMs: number;
}

/** An instance handed to an adapter. */
export interface Instance {
  /** `<name>.<kind>.<namespace>`. */
  name: string;
  kind: string;
  value: InstanceValue;
  /** Types of the top-level expression fields. */
  types: Readonly<Record<string, ValueType>>;
}

/**
 * A configured handler. `signal` is the call's: it aborts when the call's deadline passes or its
 * client cancels, and a handler that does I/O or waits stops then (rejecting with
 * `signal.reason`) so that its worker is freed.
 */
export interface Handler {
  check?(instance: Instance, signal?: AbortSignal): CheckResult | Promise<CheckResult>;
  quota?(
    instance: Instance,
    args: QuotaArgs,
    signal?: AbortSignal,
  ): QuotaResult | Promise<QuotaResult>;
  report?(instances: Instance[], signal?: AbortSignal): void | Promise<void>;
  /**
   * Attribute generation: the outputs (`$out.<name>`) for one instance, or undefined when the
   * handler has nothing to say (its attribute bindings are then not applied).
   */
  generate?(
    instance: Instance,
    signal?: AbortSignal,
  ): Record<string, Value> | undefined | Promise<Record<string, Value> | undefined>;
  /** Prometheus text of the handler's metrics (prometheus adapter). */
  metrics?(): Promise<string>;
  close?(): void | Promise<void>;
}

/** What adapters may use. */
export interface AdapterEnv {
  log: Logger;
  now: () => number;
  /** ServiceRole and ServiceRoleBinding objects of the current configuration. */
  rbac: () => { roles: readonly ConfigObject[]; bindings: readonly ConfigObject[] };
  /** Writes a line to stdout or stderr (stdio adapter). */
  write: (stream: "stdout" | "stderr", line: string) => void;
  /** Fetches a list (listchecker provider_url). */
  fetch: typeof fetch;
  /**
   * The orchestrator's kubeconfig (kubernetesenv): set on the orchestrator platform
   * (`--configStoreURL orch://...`), absent on the fs platform.
   */
  kubeConfig?: () => Promise<KubeConfig>;
  /** The server's `--trace_tracera_url` (zipkin adapter default), when set. */
  traceUrl?: string;
}

/** An adapter kind. */
export interface Adapter {
  kind: string;
  /** Template kinds it accepts. */
  templates: readonly string[];
  /**
   * Builds a handler from its params.
   * @throws {ConfigIssue} naming `object` and the field.
   */
  build(spec: Record<string, unknown>, env: AdapterEnv, object: string): Handler;
}

/** gRPC codes used by adapters. */
export const Code = {
  OK: 0,
  CANCELLED: 1,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  INTERNAL: 13,
} as const;
