/**
 * kube-inject over a multi-document YAML stream: the pod templates of workloads are injected,
 * every other document passes through byte for byte, in order, with its separator.
 * @module
 */

import { parseDocument } from "../deps/yaml.ts";
import { firstErrorLine } from "../model/errors.ts";
import { checkPod, InjectError, type Injector, type PodLike } from "./injector.ts";
import { toYaml } from "./yaml_emit.ts";

/** Where the pod template of each injectable kind is, by the apiVersions that serve it. */
export const WORKLOADS: Readonly<Record<string, { versions: readonly string[]; path: string[] }>> =
  {
    Pod: { versions: ["v1"], path: [] },
    ReplicationController: { versions: ["v1"], path: ["spec", "template"] },
    Deployment: {
      versions: ["apps/v1", "apps/v1beta1", "apps/v1beta2", "extensions/v1beta1"],
      path: ["spec", "template"],
    },
    DaemonSet: {
      versions: ["apps/v1", "apps/v1beta2", "extensions/v1beta1"],
      path: ["spec", "template"],
    },
    ReplicaSet: {
      versions: ["apps/v1", "apps/v1beta2", "extensions/v1beta1"],
      path: ["spec", "template"],
    },
    StatefulSet: {
      versions: ["apps/v1", "apps/v1beta1", "apps/v1beta2"],
      path: ["spec", "template"],
    },
    Job: { versions: ["batch/v1"], path: ["spec", "template"] },
    CronJob: {
      versions: ["batch/v1", "batch/v1beta1", "batch/v2alpha1"],
      path: ["spec", "jobTemplate", "spec", "template"],
    },
    DeploymentConfig: { versions: ["apps.openshift.io/v1", "v1"], path: ["spec", "template"] },
  };

/** Result of {@link injectStream}. */
export interface StreamResult {
  /** The output stream. */
  output: string;
  /** Skipped workloads, one line each (for stderr). */
  messages: string[];
  /** How many pod templates were injected. */
  injected: number;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

interface Chunk {
  /** The separator line before the document ("" for the first). */
  sep: string;
  body: string;
}

const SEPARATOR = /^---(?=[ \t]|\r?\n|$)/;

/** Splits a stream at `---` lines (a marker at column 0 is always a separator in YAML). */
function split(text: string): Chunk[] {
  const chunks: Chunk[] = [{ sep: "", body: "" }];
  for (const line of text.split(/(?<=\n)/)) {
    if (SEPARATOR.test(line)) {
      const rest = line.slice(3);
      // `--- <content>` keeps its content in the document
      if (/^[ \t]*(#.*)?\r?\n?$/.test(rest)) chunks.push({ sep: line, body: "" });
      else chunks.push({ sep: "---\n", body: rest.replace(/^[ \t]+/, "") });
    } else chunks[chunks.length - 1].body += line;
  }
  return chunks;
}

function hasContent(body: string): boolean {
  return body.split("\n").some((l) => l.trim() !== "" && !l.trim().startsWith("#"));
}

function describe(obj: Record<string, unknown>): string {
  const meta = isRecord(obj.metadata) ? obj.metadata : {};
  const name = typeof meta.name === "string" ? meta.name : "";
  return `${obj.kind} ${JSON.stringify(name)}`;
}

/**
 * Injects every workload of a YAML stream. Throws an Error naming the document
 * (`document 3: ...`, 1-based, counting documents with content) for bad YAML or a workload
 * that cannot be injected; nothing is returned then.
 */
export function injectStream(text: string, injector: Injector): StreamResult {
  const messages: string[] = [];
  let injected = 0;
  let index = 0;
  const out: string[] = [];
  for (const chunk of split(text)) {
    out.push(chunk.sep);
    if (!hasContent(chunk.body)) {
      out.push(chunk.body);
      continue;
    }
    index++;
    const doc = parseDocument(chunk.body);
    if (doc.errors.length > 0) {
      throw new Error(
        `document ${index}: cannot parse YAML: ${firstErrorLine(doc.errors[0].message)}`,
      );
    }
    const value = doc.toJS();
    const ctx: Ctx = { changed: false, messages, where: `document ${index}` };
    const result = injectObject(value, injector, ctx, "");
    if (!ctx.changed) {
      out.push(chunk.body);
      continue;
    }
    injected += ctx.count ?? 0;
    out.push(toYaml(result));
  }
  return { output: out.join(""), messages, injected };
}

interface Ctx {
  changed: boolean;
  count?: number;
  messages: string[];
  where: string;
}

function injectObject(value: unknown, injector: Injector, ctx: Ctx, parentNs: string): unknown {
  if (!isRecord(value)) return value;
  const kind = value.kind;
  const apiVersion = value.apiVersion;
  if (kind === "List" && apiVersion === "v1" && Array.isArray(value.items)) {
    const items = value.items.map((item) => injectObject(item, injector, ctx, parentNs));
    return ctx.changed ? { ...value, items } : value;
  }
  if (typeof kind !== "string" || !Object.hasOwn(WORKLOADS, kind)) return value;
  const w = WORKLOADS[kind];
  if (typeof apiVersion !== "string" || !w.versions.includes(apiVersion)) return value;
  const meta = isRecord(value.metadata) ? value.metadata : {};
  const ns = typeof meta.namespace === "string" && meta.namespace !== ""
    ? meta.namespace
    : parentNs;
  const what = `${ctx.where} (${describe(value)})`;
  let target: unknown = value;
  for (const p of w.path) {
    target = isRecord(target) ? target[p] : undefined;
  }
  let pod: PodLike;
  try {
    pod = checkPod(target, w.path.length ? w.path.join(".") : "pod");
  } catch (e) {
    throw new Error(`${what}: ${(e as Error).message}`);
  }
  const decision = injector.decide(pod, ns);
  if (!decision.inject) {
    ctx.messages.push(
      decision.reason === "host networking is enabled"
        ? `Skipping injection because ${
          JSON.stringify(meta.name ?? "")
        } has host networking enabled`
        : `Skipping injection of ${describe(value)}: ${decision.reason}`,
    );
    return value;
  }
  let result: PodLike;
  try {
    result = injector.inject(pod);
  } catch (e) {
    if (e instanceof InjectError) throw new Error(`${what}: ${e.message}`);
    throw e;
  }
  ctx.changed = true;
  ctx.count = (ctx.count ?? 0) + 1;
  if (w.path.length === 0) return result;
  const copy = structuredClone(value);
  let parent: Record<string, unknown> = copy;
  for (const p of w.path.slice(0, -1)) parent = parent[p] as Record<string, unknown>;
  parent[w.path[w.path.length - 1]] = result;
  return copy;
}
