// A tiny server for mod_test.ts: logs to a file, listens on 127.0.0.1:0, prints its port, and
// shuts down on SIGINT/SIGTERM through runUntilSignal. Mode "hang": shutdown never finishes.
import { configureLogging, defaultLogOptions, getLogger } from "../../log/mod.ts";
import { runUntilSignal } from "../mod.ts";

const [logFile, mode = "ok"] = Deno.args;
const logging = await configureLogging({ ...defaultLogOptions(["default"]), targets: [logFile] });
const log = getLogger();
const server = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen: () => {} },
  () => new Response("up"),
);
const exit = runUntilSignal({
  async shutdown() {
    if (mode === "hang") return new Promise<void>(() => {});
    await server.shutdown();
    log.info("listener closed");
  },
}, logging);
console.log(`ready ${server.addr.port}`);
const code = await exit;
Deno.exit(code);
