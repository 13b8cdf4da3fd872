/**
 * h2load (nghttp2, Debian `nghttp2-client`) as an independent closed-loop client: C, one thread,
 * in its own process, so its CPU is neither the server's nor the bench's. Used by `bench/ca.ts`
 * and `bench/policy.ts`.
 * @module
 */

/** Whether `h2load` runs on this machine. */
export async function hasH2load(): Promise<boolean> {
  try {
    return (await new Deno.Command("h2load", {
      args: ["--version"],
      stdout: "null",
      stderr: "null",
    })
      .output()).success;
  } catch {
    return false;
  }
}

/** One closed-loop run of {@link h2loadClosedLoop}. */
export interface H2loadRun {
  /** Requests answered within the run. */
  done: number;
  /** Requests sent (those still in flight at the end are started, not done). */
  started: number;
  /** Answered with a 2xx status. */
  succeeded: number;
  /** CPU seconds (user + system) h2load itself used. */
  cpuSeconds: number;
  /** h2load's report. */
  text: string;
}

/**
 * h2load back to back for `seconds`: `connections` connections with `streams` requests in
 * flight each, POSTing `body` (a file) with `headers` (`name: value`) to `url`. Throws if h2load
 * fails or a request is not answered with 2xx. h2load runs under bash so that its CPU time
 * (`times`, the shell's children) is measured exactly.
 */
export async function h2loadClosedLoop(o: {
  url: string;
  body: string;
  headers: string[];
  connections: number;
  streams: number;
  seconds: number;
}): Promise<H2loadRun> {
  const args = [
    "-t",
    "1",
    "-c",
    String(o.connections),
    "-m",
    String(o.streams),
    "-D",
    String(o.seconds),
    "-d",
    o.body,
    ...o.headers.flatMap((h) => ["-H", h]),
    o.url,
  ];
  const out = await new Deno.Command("bash", {
    args: ["-c", 'h2load "$@"; s=$?; times >&2; exit $s', "h2load", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  const err = new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`h2load failed: ${err}${text}`);
  const m = /requests: \d+ total, (\d+) started, (\d+) done, (\d+) succeeded/.exec(text);
  if (!m) throw new Error(`h2load: no requests line in its report:\n${text}`);
  const [started, done, succeeded] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (succeeded !== done) throw new Error(`h2load: ${done - succeeded} requests failed:\n${text}`);
  // `times`: the shell's user and system time, then its children's (h2load's).
  const t = [...(err.trim().split("\n").at(-1) ?? "").matchAll(/(\d+)m([\d.]+)s/g)]
    .map((x) => Number(x[1]) * 60 + Number(x[2]));
  if (t.length !== 2) throw new Error(`h2load: no CPU times from bash:\n${err}`);
  return { done, started, succeeded, cpuSeconds: t[0] + t[1], text };
}
