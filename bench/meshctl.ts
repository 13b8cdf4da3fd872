/**
 * meshctl benchmark: `meshctl get virtualservices` on a store of 1000 objects (fs platform with
 * 1000 files; orch platform against the fake API server, over the direct REST path of a token
 * kubeconfig and through the client library as an exec-plugin kubeconfig needs) and `meshctl
 * version` cold start, each next to a kubectl baseline measured in the same run (`kubectl get ...
 * -A` on the same server, `kubectl version --client`). Every figure is the median wall time of N
 * fresh processes, a command's runs interleaved with its baseline's. Targets (issue 14): get on orch (direct) and version within 1.5x their baseline;
 * the table says whether each was met.
 *
 * `deno run -A bench/meshctl.ts [--runs N]` (or `deno task bench`).
 * @module
 */
import { crdManifests } from "../lib/model/mod.ts";
import { type JsonObject, startFakeKube } from "../tests/harness/fake_kube.ts";
import { helpIfAsked } from "./_help.ts";

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

/** A command to measure. */
interface Task {
  label: string;
  fn: () => Promise<number>;
}

const task = (label: string, fn: () => Promise<number>): Task => ({ label, fn });

/**
 * Runs each task once to warm the module and disk caches ("cold" means a fresh process), then
 * `runs` rounds of every task in turn, so that a command and its baseline see the same load.
 */
async function interleave(runs: number, tasks: Task[]): Promise<Sample[]> {
  for (const t of tasks) await t.fn();
  const samples = tasks.map((t) => ({ label: t.label, ms: [] as number[] }));
  for (let i = 0; i < runs; i++) {
    for (const [k, t] of tasks.entries()) samples[k].ms.push(await t.fn());
  }
  return samples;
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
function table(
  rows: { name: string; ours: Sample; baseline?: Sample; target?: number }[],
  runs: number,
): string {
  const head = [
    "benchmark",
    "meshctl median",
    "min",
    "max",
    "baseline",
    "baseline median",
    "ratio",
    "target",
  ];
  const body = rows.map((r) => {
    const ratio = r.baseline ? median(r.ours.ms) / median(r.baseline.ms) : undefined;
    return [
      r.name,
      `${median(r.ours.ms).toFixed(0)} ms`,
      `${Math.min(...r.ours.ms).toFixed(0)} ms`,
      `${Math.max(...r.ours.ms).toFixed(0)} ms`,
      r.baseline?.label ?? "-",
      r.baseline ? `${median(r.baseline.ms).toFixed(0)} ms` : "-",
      ratio === undefined ? "-" : `${ratio.toFixed(2)}x`,
      r.target === undefined || ratio === undefined
        ? "-"
        : `<= ${r.target}x ${ratio <= r.target ? "met" : "MISSED"}`,
    ];
  });
  const all = [head, ...body];
  const widths = head.map((_, c) => Math.max(...all.map((row) => row[c].length)));
  const fmt = (row: string[]) => row.map((cell, c) => cell.padEnd(widths[c])).join("  ").trimEnd();
  return [
    `meshctl (median of ${runs} fresh processes each, after one warm-up run; interleaved with the baselines)`,
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
    const fsGetTask = task(
      "",
      () =>
        timed(
          deno,
          meshctl(["get", "virtualservices", "-p", "fs", "--configDir", `${dir}/store`]),
          lines(OBJECTS + 1),
          env,
        ),
    );
    const orchGetTask = task(
      "",
      () =>
        timed(
          deno,
          meshctl(["get", "virtualservices", "-c", kube.kubeconfigPath]),
          lines(OBJECTS + 1),
          env,
        ),
    );
    // an exec credential plugin: the client library's path (list + watch store)
    const execKubeconfig = `${dir}/exec-kubeconfig`;
    await Deno.writeTextFile(
      execKubeconfig,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{
          name: "fake",
          cluster: { server: kube.url, "insecure-skip-tls-verify": true },
        }],
        users: [{
          name: "exec",
          user: {
            exec: {
              apiVersion: "client.authentication.k8s.io/v1beta1",
              command: "/bin/sh",
              args: [
                "-c",
                `echo '${
                  JSON.stringify({
                    apiVersion: "client.authentication.k8s.io/v1beta1",
                    kind: "ExecCredential",
                    status: { token: kube.token },
                  })
                }'`,
              ],
              interactiveMode: "Never",
            },
          },
        }],
        contexts: [{ name: "fake", context: { cluster: "fake", user: "exec" } }],
        "current-context": "fake",
      }),
    );
    const orchExecGetTask = task(
      "",
      () =>
        timed(
          deno,
          meshctl(["get", "virtualservices", "-c", execKubeconfig]),
          lines(OBJECTS + 1),
          env,
        ),
    );
    const kubectlGetTask = task(
      "kubectl get -A",
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
    const versionTask = task(
      "",
      () =>
        timed(deno, meshctl(["version"]), (s) => s.startsWith("Version: ") ? undefined : s, env),
    );
    const kubectlVersionTask = task(
      "kubectl version --client",
      () =>
        timed(
          "kubectl",
          ["version", "--client"],
          (s) => s.includes("Client Version") ? undefined : s,
          { ...env, HOME: dir },
        ),
    );
    const [fsGet] = await interleave(runs, [fsGetTask]);
    const [orchGet, orchExecGet, kubectlGet] = await interleave(runs, [
      orchGetTask,
      orchExecGetTask,
      kubectlGetTask,
    ]);
    const [version, kubectlVersion] = await interleave(runs, [versionTask, kubectlVersionTask]);
    console.log(table([
      { name: `get virtualservices, fs, ${OBJECTS} files`, ours: fsGet },
      {
        name: `get virtualservices, orch (direct REST), ${OBJECTS} objects`,
        ours: orchGet,
        baseline: kubectlGet,
        target: 1.5,
      },
      {
        name: `get virtualservices, orch (exec plugin: client-node), ${OBJECTS} objects`,
        ours: orchExecGet,
        baseline: kubectlGet,
      },
      { name: "version (cold start)", ours: version, baseline: kubectlVersion, target: 1.5 },
    ], runs));
  } finally {
    await kube.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  await helpIfAsked(import.meta.url);
  await main(Deno.args);
}
