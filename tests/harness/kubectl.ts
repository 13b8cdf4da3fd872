/**
 * Runs the real `kubectl` against a kubeconfig (usually a {@linkcode FakeKube}'s) without touching
 * the user's home: `HOME` and `--cache-dir` point into the kubeconfig's directory, and every call
 * has `--request-timeout=5s`.
 *
 * @module
 */

import { dirname, join } from "node:path";

/** Result of {@linkcode runKubectl}. */
export interface KubectlResult {
  /** Exit code. */
  code: number;
  /** Standard output. */
  stdout: string;
  /** Standard error. */
  stderr: string;
}

/** Options for {@linkcode runKubectl}. */
export interface KubectlOptions {
  /** Text for kubectl's standard input (for `-f -`). */
  stdin?: string;
  /** Directory used as `HOME` (default: the kubeconfig's directory). */
  home?: string;
  /** Kill kubectl after this many ms (default 20000). */
  timeoutMs?: number;
}

/** True when a `kubectl` binary is on PATH. */
export async function kubectlAvailable(): Promise<boolean> {
  try {
    const out = await new Deno.Command("kubectl", {
      args: ["version", "--client"],
      stdout: "null",
      stderr: "null",
    }).output();
    return out.success;
  } catch {
    return false;
  }
}

/**
 * Runs `kubectl --kubeconfig <kubeconfigPath> --request-timeout=5s --cache-dir <dir> ...args`.
 * Never throws for a non-zero exit; check `code`.
 */
export async function runKubectl(
  kubeconfigPath: string,
  args: string[],
  opts: KubectlOptions = {},
): Promise<KubectlResult> {
  const home = opts.home ?? dirname(kubeconfigPath);
  const child = new Deno.Command("kubectl", {
    args: [
      "--kubeconfig",
      kubeconfigPath,
      "--request-timeout=5s",
      "--cache-dir",
      join(home, ".kube-cache"),
      ...args,
    ],
    env: { HOME: home, KUBECONFIG: kubeconfigPath },
    stdin: opts.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (opts.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(opts.stdin));
    await w.close();
  }
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
  }, opts.timeoutMs ?? 20_000);
  try {
    const out = await child.output();
    const dec = new TextDecoder();
    return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
  } finally {
    clearTimeout(timer);
  }
}
