/**
 * A stand-in for the Envoy binary (none is available here), run by mesh-agent as
 * `--binaryPath tests/harness/proxy-standin`. It:
 *
 * - accepts Envoy's command line (`-c`, `--restart-epoch`, `--drain-time-s`,
 *   `--parent-shutdown-time-s`, `--service-cluster`, `--service-node`, `-l`, `--concurrency`,
 *   `--service-zone`, `--base-id`) and rejects anything else (exit 1), like Envoy;
 * - records what happens as JSON lines in `<record dir>/standin.log` (the directory of `-c`,
 *   or `$STANDIN_RECORD_DIR`): `start` (epoch, pid, args, the config's SHA-256), `drain`,
 *   `parent-shutdown`, `exit` (code, reason);
 * - follows the hot-restart epoch rules: epoch 0 fails while another epoch is live (the hot
 *   restart socket is taken), epoch n > 0 fails without a live epoch n − 1 (no parent) or when
 *   epoch n is live; a child asks its parent to drain at once (SIGHUP) and to shut down after
 *   `--parent-shutdown-time-s` (SIGTERM); SIGTERM/SIGINT end a process with 0;
 * - serves the admin endpoints the agent reads on the bootstrap's `admin.address` (taken over
 *   from the parent when it exits): `/server_info`, `/ready`, `/clusters`, `/listeners`,
 *   `/config_dump`, `POST /drain_listeners`, `POST /quitquitquit` — canned answers that say what
 *   they are: every one carries the header `x-mesh-proxy-standin` (lib/proxyadmin turns it into a
 *   warning of `mesh-agent debug` and `meshctl proxy-config endpoint`), `/clusters` and
 *   `/listeners` start with a `# proxy-standin ...` line, `/server_info` and `/config_dump` have
 *   a `standin` field;
 * - fails on request: `STANDIN_FAIL_AFTER_MS` (every start exits 1 after that delay) or
 *   `STANDIN_FAIL_ONCE_FILE` (when that file exists, empty or naming this epoch, it is removed
 *   and the process exits 1).
 * @module
 */

import { parse as parseYaml } from "../../lib/deps/yaml.ts";
import { STANDIN_HEADER } from "../../lib/proxyadmin/mod.ts";

/** What every admin answer says about the stand-in. */
const STANDIN_NOTE =
  "proxy-standin (tests/harness/proxy-standin): a test stand-in for Envoy; it speaks no xDS and " +
  "forwards nothing, so these are canned answers, not configuration received from discovery";

const ALLOWED = new Set([
  "-c",
  "--config-path",
  "--restart-epoch",
  "--drain-time-s",
  "--parent-shutdown-time-s",
  "--service-cluster",
  "--service-node",
  "-l",
  "--log-level",
  "--concurrency",
  "--service-zone",
  "--base-id",
  "--max-obj-name-len",
]);

function parseArgs(args: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < args.length; i += 2) {
    const k = args[i];
    if (!ALLOWED.has(k)) throw new Error(`unknown argument ${k}`);
    if (i + 1 >= args.length) throw new Error(`missing value for ${k}`);
    out.set(k, args[i + 1]);
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}

async function main(): Promise<number> {
  const { promise: done, resolve: finish } = Promise.withResolvers<[number, string]>();
  for (const sig of ["SIGTERM", "SIGINT"] as const) {
    Deno.addSignalListener(sig, () => finish([0, sig]));
  }
  let opts: Map<string, string>;
  try {
    opts = parseArgs(Deno.args);
  } catch (e) {
    console.error(`standin: ${(e as Error).message}`);
    return 1;
  }
  const file = opts.get("-c") ?? opts.get("--config-path");
  const epoch = Number(opts.get("--restart-epoch") ?? "0");
  const dir = Deno.env.get("STANDIN_RECORD_DIR") ||
    (file ? file.slice(0, Math.max(file.lastIndexOf("/"), 0)) || "." : ".");
  const logFile = `${dir}/standin.log`;
  const record = (event: string, extra: Record<string, unknown> = {}) =>
    Deno.writeTextFileSync(
      logFile,
      JSON.stringify({ event, epoch, pid: Deno.pid, t: Date.now(), ...extra }) + "\n",
      { append: true },
    );
  const pidFile = (n: number) => `${dir}/standin-epoch-${n}.pid`;
  const livePid = (n: number): number | undefined => {
    try {
      const pid = Number(Deno.readTextFileSync(pidFile(n)));
      return alive(pid) ? pid : undefined;
    } catch {
      return undefined;
    }
  };
  const fail = (reason: string) => {
    record("exit", { code: 1, reason });
    console.error(`standin: ${reason}`);
    return 1;
  };
  if (!file) return fail("no configuration: -c is required");
  let text: string;
  let config: Record<string, unknown>;
  try {
    text = Deno.readTextFileSync(file);
    config = parseYaml(text) as Record<string, unknown>;
  } catch (e) {
    return fail(`cannot read ${file}: ${(e as Error).message}`);
  }
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  record("start", {
    args: Deno.args,
    sha256: [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join(""),
  });
  if (!Number.isInteger(epoch) || epoch < 0) return fail(`bad --restart-epoch`);
  if (livePid(epoch) !== undefined) return fail(`epoch ${epoch} is already running`);
  if (epoch === 0) {
    for (const e of Deno.readDirSync(dir)) {
      const m = /^standin-epoch-(\d+)\.pid$/.exec(e.name);
      if (m && livePid(Number(m[1])) !== undefined) {
        return fail(`unable to bind the hot restart socket: epoch ${m[1]} is live`);
      }
    }
  }
  const parent = epoch > 0 ? livePid(epoch - 1) : undefined;
  if (epoch > 0 && parent === undefined) {
    return fail(`no parent: epoch ${epoch - 1} is not running`);
  }
  Deno.writeTextFileSync(pidFile(epoch), String(Deno.pid));

  Deno.addSignalListener("SIGHUP", () => record("drain", { by: "child" }));
  const failAfter = Number(Deno.env.get("STANDIN_FAIL_AFTER_MS") ?? "");
  if (failAfter > 0) setTimeout(() => finish([1, "STANDIN_FAIL_AFTER_MS"]), failAfter);
  const failOnce = Deno.env.get("STANDIN_FAIL_ONCE_FILE");
  if (failOnce) {
    try {
      // empty: the next epoch to start fails; else only the epoch it names (so that an epoch
      // already running when the file appears cannot take it)
      const only = Deno.readTextFileSync(failOnce).trim();
      if (only === "" || only === String(epoch)) {
        Deno.removeSync(failOnce);
        setTimeout(() => finish([1, "STANDIN_FAIL_ONCE_FILE"]), 100);
      }
    } catch { /* absent: run normally */ }
  }
  if (parent !== undefined) {
    Deno.kill(parent, "SIGHUP");
    const after = Number(opts.get("--parent-shutdown-time-s") ?? "0") * 1000;
    setTimeout(() => {
      record("parent-shutdown", { parent });
      try {
        Deno.kill(parent, "SIGTERM");
      } catch { /* gone already */ }
    }, after);
  }

  const admin = (config.admin as { address?: { socket_address?: { port_value?: number } } })
    ?.address?.socket_address?.port_value;
  let server: Deno.HttpServer | undefined;
  // Every answer says what this is: a header (lib/proxyadmin turns it into a warning of
  // `mesh-agent debug` and `meshctl proxy-config endpoint`) and, in the body, a note.
  const headers = { [STANDIN_HEADER]: STANDIN_NOTE };
  const answer = (body: string, status = 200) => new Response(body, { status, headers });
  const handler = async (req: Request): Promise<Response> => {
    const path = new URL(req.url).pathname;
    switch (path) {
      case "/server_info":
        return Response.json({
          state: "LIVE",
          version: "proxy-standin/1.0",
          standin: STANDIN_NOTE,
          command_line_options: { restart_epoch: epoch, service_node: opts.get("--service-node") },
        }, { headers });
      case "/ready":
        return answer("LIVE\n");
      case "/clusters":
        return answer(`# ${STANDIN_NOTE}\nxds-grpc::default_priority::max_connections::100000\n`);
      case "/listeners":
        return answer(`# ${STANDIN_NOTE}\n["virtualInbound"]\n`);
      case "/config_dump":
        return Response.json({
          standin: STANDIN_NOTE,
          configs: [{
            "@type": "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump",
            bootstrap: config,
          }, {
            "@type": "type.googleapis.com/envoy.admin.v3.RoutesConfigDump",
            dynamic_route_configs: [],
          }],
        }, { headers });
      case "/drain_listeners":
        if (req.method !== "POST") return answer("POST only\n", 405);
        record("drain", { by: "admin" });
        return answer("OK\n");
      case "/quitquitquit":
        if (req.method !== "POST") return answer("POST only\n", 405);
        setTimeout(() => finish([0, "quitquitquit"]), 10);
        return answer("OK\n");
      default:
        await req.body?.cancel();
        return answer("not found\n", 404);
    }
  };
  const bind = () => {
    if (!admin || server) return;
    try {
      server = Deno.serve({ hostname: "127.0.0.1", port: admin, onListen: () => {} }, handler);
    } catch { /* the parent still holds it */ }
  };
  bind();
  const binder = setInterval(bind, 50);
  const [code, reason] = await done;
  clearInterval(binder);
  await server?.shutdown();
  try {
    if (Deno.readTextFileSync(pidFile(epoch)) === String(Deno.pid)) Deno.removeSync(pidFile(epoch));
  } catch { /* removed */ }
  record("exit", { code, reason });
  return code;
}

if (import.meta.main) Deno.exit(await main());

/** One line of the stand-in's record (`standin.log`). */
export interface StandinEvent {
  event: "start" | "drain" | "parent-shutdown" | "exit";
  epoch: number;
  pid: number;
  t: number;
  args?: string[];
  code?: number;
  reason?: string;
  by?: string;
  sha256?: string;
}

/** Path of the stand-in binary to pass as `--binaryPath`. */
export const STANDIN_BINARY = new URL("./proxy-standin", import.meta.url).pathname;

/** The stand-in's record in `dir` (empty when none yet). */
export function standinEvents(dir: string): StandinEvent[] {
  let text = "";
  try {
    text = Deno.readTextFileSync(`${dir}/standin.log`);
  } catch { /* none yet */ }
  return text.split("\n").filter((l) => l).map((l) => JSON.parse(l));
}
