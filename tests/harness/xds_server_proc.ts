/**
 * Subprocess side of {@link ./proxyless.ts}: a proxyless gRPC server (grpc-js-xds, see
 * `startXdsWhoAmI` in cli/demo/whoami.ts) serving WhoAmI on the address given, configured by the
 * control plane named in its bootstrap (`GRPC_XDS_BOOTSTRAP`).
 *
 *     GRPC_XDS_BOOTSTRAP=b.json deno run -A xds_server_proc.ts 127.0.0.1:17070 v1
 *
 * Prints `{"bound": <port>}` (or `{"error": "..."}`) and exits when stdin closes. Not a test;
 * run by the harness only.
 * @module
 */

import { startXdsWhoAmI } from "../../cli/demo/whoami.ts";

const [address, version] = Deno.args;
const out = (v: unknown) => console.log(JSON.stringify(v));
let backend;
try {
  backend = await startXdsWhoAmI({ address, version });
  out({ bound: backend.port });
} catch (e) {
  out({ error: (e as Error).message });
}
for await (const _ of Deno.stdin.readable) { /* until the parent closes stdin */ }
backend?.shutdown();
Deno.exit(0);
