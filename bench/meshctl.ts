/**
 * meshctl benchmark: `meshctl get virtualservices` on a store of 1000 objects (fs platform with
 * 1000 files; orch platform against the fake API server) and `meshctl version` cold start, each
 * next to a kubectl baseline measured in the same run (`kubectl get ... -A` on the same server,
 * `kubectl version --client`). Every figure is the median wall time of N fresh processes.
 *
 * `deno run -A bench/meshctl.ts [--runs N]` (or `deno task bench`).
 * @module
 */
import { crdManifests } from "../lib/model/mod.ts";
import { type JsonObject, startFakeKube } from "../tests/harness/fake_kube.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const OBJECTS = 1000;

/** One measured command. */
interface Sample {
  label: string;
  ms: number[];
}

/** Runs a command to completion and returns its wall time; throws on failure or bad output. */
async function timed(
  cmd: string,
  args: string[],
  check: (stdout: string) => string | undefined,
  env: Record<string, string> = {},
): Promise<number> {
  const start = performance.now();
  const out = await new Deno.Command(cmd, {
    args,
    cwd: ROOT,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const ms = performance.now() - start;
  const stdout = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(
      `${cmd} ${args.join(" ")} exited ${out.code}: ${new TextDecoder().decode(out.stderr)}`,
    );
  }
  const bad = check(stdout);
  if (bad) throw new Error(`${cmd} ${args.join(" ")}: ${bad}`);
  return ms;
}

async function repeat(label: string, runs: number, fn: () => Promise<number>): Promise<Sample> {
  await fn(); // warm the module cache and the disk cache: "cold" means a fresh process
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) ms.push(await fn());
  return { label, ms };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const lines = (n: number) => (stdout: string) => {
  const got = stdout.trimEnd().split("\n").length;
  return got === n ? undefined : `expected ${n} lines, got ${got}`;
};

function vsYaml(i: number): string {
  const name = `vs-${String(i).padStart(4, "0")}`;
  return `apiVersion: networking.mesh.io/v1alpha3
kind: VirtualService
metadata:
  name: ${name}
  namespace: default
spec:
  hosts: [${name}.example.com]
  http:
    - route:
        - destination: { host: ${name}.example.com, subset: v1 }
`;
}

function vsObject(i: number): JsonObject {
  const name = `vs-${String(i).padStart(4, "0")}`;
  return {
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "VirtualService",
    metadata: { name, namespace: "default" },
    spec: {
      hosts: [`${name}.example.com`],
      http: [{ route: [{ destination: { host: `${name}.example.com`, subset: "v1" } }] }],
    },
  };
}

/** Formats the results table. */
function table(rows: { name: string; ours: Sample; baseline?: Sample }[], runs: number): string {
  const head = ["benchmark", "meshctl median", "min", "max", "baseline", "baseline median"];
  const body = rows.map((r) => [
    r.name,
    `${median(r.ours.ms).toFixed(0)} ms`,
    `${Math.min(...r.ours.ms).toFixed(0)} ms`,
    `${Math.max(...r.ours.ms).toFixed(0)} ms`,
    r.baseline?.label ?? "-",
    r.baseline ? `${median(r.baseline.ms).toFixed(0)} ms` : "-",
  ]);
  const all = [head, ...body];
  const widths = head.map((_, c) => Math.max(...all.map((row) => row[c].length)));
  const fmt = (row: string[]) => row.map((cell, c) => cell.padEnd(widths[c])).join("  ").trimEnd();
  return [
    `meshctl (median of ${runs} fresh processes each, after one warm-up run)`,
    fmt(head),
    widths.map((w) => "-".repeat(w)).join("  "),
    ...body.map(fmt),
  ].join("\n") + "\n";
}

/** Runs the meshctl benchmark and prints its table. */
export async function main(args: string[] = []): Promise<void> {
  const i = args.indexOf("--runs");
  const runs = i >= 0 ? Number(args[i + 1]) : 5;
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`Invalid --runs: ${args[i + 1]}`);
  const deno = Deno.execPath();
  const meshctl = (extra: string[]) => ["run", "-A", "cli/meshctl.ts", ...extra];
  const env = { HOME: Deno.env.get("HOME") ?? "/tmp", PATH: Deno.env.get("PATH") ?? "" };

  const dir = await Deno.makeTempDir({ prefix: "meshctl-bench-" });
  const kube = await startFakeKube({ objects: crdManifests() as JsonObject[] });
  try {
    await Deno.mkdir(`${dir}/store/default/virtualservices`, { recursive: true });
    for (let n = 0; n < OBJECTS; n++) {
      await Deno.writeTextFile(
        `${dir}/store/default/virtualservices/vs-${String(n).padStart(4, "0")}.yaml`,
        vsYaml(n),
      );
      kube.upsert(vsObject(n));
    }
    const fsGet = await repeat(
      "",
      runs,
      () =>
        timed(
          deno,
          meshctl(["get", "virtualservices", "-p", "fs", "--configDir", `${dir}/store`]),
          lines(OBJECTS + 1),
          env,
        ),
    );
    const orchGet = await repeat(
      "",
      runs,
      () =>
        timed(
          deno,
          meshctl(["get", "virtualservices", "-c", kube.kubeconfigPath]),
          lines(OBJECTS + 1),
          env,
        ),
    );
    const kubectlGet = await repeat(
      "kubectl get -A",
      runs,
      () =>
        timed(
          "kubectl",
          [
            "--kubeconfig",
            kube.kubeconfigPath,
            "--cache-dir",
            `${dir}/kube-cache`,
            "get",
            "virtualservices.networking.mesh.io",
            "-A",
          ],
          lines(OBJECTS + 1),
          { ...env, HOME: dir },
        ),
    );
    const version = await repeat(
      "",
      runs,
      () =>
        timed(deno, meshctl(["version"]), (s) => s.startsWith("Version: ") ? undefined : s, env),
    );
    const kubectlVersion = await repeat(
      "kubectl version --client",
      runs,
      () =>
        timed(
          "kubectl",
          ["version", "--client"],
          (s) => s.includes("Client Version") ? undefined : s,
          { ...env, HOME: dir },
        ),
    );
    console.log(table([
      { name: `get virtualservices, fs, ${OBJECTS} files`, ours: fsGet },
      {
        name: `get virtualservices, orch, ${OBJECTS} objects`,
        ours: orchGet,
        baseline: kubectlGet,
      },
      { name: "version (cold start)", ours: version, baseline: kubectlVersion },
    ], runs));
  } finally {
    await kube.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) await main(Deno.args);
