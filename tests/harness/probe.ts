/**
 * A kubelet-like HTTP probe from another process (curl), started before this isolate holds its
 * thread: what a probe sees of a server whose serving isolate is busy.
 * @module
 */

/** What curl saw: the status, the body and its `time_total` in seconds. */
export interface CurlAnswer {
  status: number;
  body: string;
  secs: number;
}

/**
 * Runs `curl -s -m 10 <url>` after `delay` seconds in a child process (so it runs while this
 * isolate is held by {@link hold}); resolves with its answer once this isolate is free again.
 */
export function curlLater(url: string, delay = 0): Promise<CurlAnswer> {
  const child = new Deno.Command("/bin/sh", {
    args: ["-c", `sleep ${delay}; curl -s -m 10 -w '\\n%{http_code} %{time_total}' "$0"`, url],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  return child.output().then((out) => {
    const text = new TextDecoder().decode(out.stdout);
    const nl = text.lastIndexOf("\n");
    const [status, secs] = text.slice(nl + 1).split(" ").map(Number);
    return { status, body: text.slice(0, nl), secs };
  });
}

/** Holds this isolate's thread for `ms`, as a serving isolate saturated by pushes is held. */
export function hold(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* held */ }
}
