/**
 * Helpers of the meshctl end-to-end tests: run meshctl in-process (through the real runner,
 * with captured output and a given standard input) or as a subprocess, one sample object per
 * kind, and a fake API server with the mesh CRDs registered.
 * @module
 */
import { runCli } from "../../cli/_shared/command.ts";
import type { MeshctlContext } from "../../cli/meshctl/_config_io.ts";
import { program } from "../../cli/meshctl.ts";
import { parseAllDocuments } from "../../lib/deps/yaml.ts";
import {
  allSchemas,
  type ConfigObject,
  crdManifests,
  meshctlSchemas,
  type ModelSchema,
  normalizeObject,
} from "../../lib/model/mod.ts";
import { type FakeKube, type JsonObject, startFakeKube } from "../harness/fake_kube.ts";
import { runProgram } from "../harness/procs.ts";

/** Exit code and output of one meshctl run. */
export interface MeshctlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options of {@link meshctl} and {@link meshctlProcess}. */
export interface MeshctlOptions {
  /** Standard input text (default: empty). */
  stdin?: string;
  /** Environment (default: `HOME` only, pointing nowhere useful). */
  env?: Record<string, string>;
  /** Working directory (default `/`). */
  cwd?: string;
  /**
   * In-process only: standard input is a terminal (default false, as when input is piped). Then
   * `stdin` must not be read: a read fails the command with "Error: standard input was read".
   */
  stdinIsTerminal?: boolean;
}

/** Runs `meshctl ...args` in this process through the real command runner. */
export async function meshctl(args: string[], opts: MeshctlOptions = {}): Promise<MeshctlResult> {
  let stdout = "";
  let stderr = "";
  const text = opts.stdin ?? "";
  const terminal = opts.stdinIsTerminal ?? false;
  const ctx: MeshctlContext = {
    stdout: { write: (t) => Promise.resolve(void (stdout += t)) },
    stderr: { write: (t) => Promise.resolve(void (stderr += t)) },
    stdin: new ReadableStream({
      start(c) {
        if (terminal && !text) return c.error(new Error("standard input was read"));
        if (text) c.enqueue(new TextEncoder().encode(text));
        c.close();
      },
    }),
    stdinIsTerminal: terminal,
    env: opts.env ?? { HOME: "/nonexistent" },
    cwd: opts.cwd ?? "/",
    commandPath: [],
    waitForShutdown: () => new Promise(() => {}),
  };
  const code = await runCli(program, args, ctx);
  return { code, stdout, stderr };
}

/** Runs `deno run -A cli/meshctl.ts ...args` as a subprocess. */
export async function meshctlProcess(
  args: string[],
  opts: MeshctlOptions = {},
): Promise<MeshctlResult> {
  const r = await runProgram("meshctl", args, {
    stdin: opts.stdin,
    cwd: opts.cwd,
    env: opts.env ?? {},
    clearEnv: true,
  });
  return { code: r.code, stdout: r.stdout, stderr: r.stderr };
}

const TESTDATA = new URL("../../lib/model/testdata/", import.meta.url);

/** The sample file of a type from lib/model/testdata (`virtualservice.yaml`...), as text. */
export function sampleText(type: string): Promise<string> {
  return Deno.readTextFile(new URL(`${type}.yaml`, TESTDATA));
}

/** One sample document per meshctl type (14), plus policy-server kinds `rule` and `denier`. */
export async function samples(): Promise<{ schema: ModelSchema; text: string; raw: JsonObject }[]> {
  const types = [...meshctlSchemas.map((s) => s.type), "rule", "denier"];
  const out = [];
  for (const type of types) {
    const schema = allSchemas.find((s) => s.type === type)!;
    const text = await sampleText(type);
    const docs = parseAllDocuments(text);
    const raw = (Array.isArray(docs) ? docs[0] : docs).toJS() as JsonObject;
    out.push({ schema, text, raw });
  }
  return out;
}

/** The multi-document text of every sample. */
export async function allSamplesText(): Promise<string> {
  return (await samples()).map((s) => `---\n${s.text.replace(/^---\n/, "")}`).join("");
}

/** What a stored sample should look like (normalized; namespace defaulted). */
export function expected(raw: JsonObject, defaultNamespace = "default"): ConfigObject {
  const r = normalizeObject(raw, "sample", { defaultNamespace });
  if (!r.object) throw new Error(`sample is invalid: ${JSON.stringify(r.issues)}`);
  return r.object;
}

/** Parses `get -o yaml` output: the documents between `---` lines. */
export function parseYamlOutput(text: string): ConfigObject[] {
  const docs = parseAllDocuments(text);
  return (Array.isArray(docs) ? docs : [docs])
    .map((d) => d.toJS() as ConfigObject)
    .filter((d) => d !== null && d !== undefined);
}

/** A fake API server with every mesh CRD registered, and namespaces default, team, istio-system. */
export function startKubeWithCrds(): Promise<FakeKube> {
  return startFakeKube({
    objects: crdManifests() as JsonObject[],
    namespaces: ["default", "team", "istio-system", "mesh-system"],
  });
}

/** Runs `fn` with a temp directory that is removed afterwards. */
export async function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "meshctl-test-" });
  try {
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** Every regular file below `dir`, relative, sorted. */
export async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  async function visit(rel: string) {
    for await (const e of Deno.readDir(rel ? `${dir}/${rel}` : dir)) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory) await visit(p);
      else out.push(p);
    }
  }
  await visit("");
  return out.sort();
}

/**
 * The spec's integration procedure, step 3: an `extensions/v1beta1` Ingress of the mesh class
 * with one path `/echo` to `backend` port 80.
 */
export function ingressText(backend = "echo"): string {
  return `apiVersion: extensions/v1beta1
kind: Ingress
metadata:
  name: web
  annotations:
    kubernetes.io/ingress.class: mesh
spec:
  rules:
    - http:
        paths:
          - path: /echo
            backend:
              serviceName: ${backend}
              servicePort: 80
`;
}
