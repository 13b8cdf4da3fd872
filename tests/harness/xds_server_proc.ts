/**
 * Subprocess side of {@link ./proxyless.ts}: a proxyless gRPC server (grpc-js-xds `XdsServer`
 * with `XdsServerCredentials`) serving the WhoAmI service (`cli/demo/whoami.ts`) on the address
 * given, configured by the control plane named in its bootstrap (`GRPC_XDS_BOOTSTRAP`). Replies
 * carry the caller's SPIFFE identity from its TLS certificate (`peer`, empty over plaintext).
 *
 *     GRPC_XDS_BOOTSTRAP=b.json deno run -A xds_server_proc.ts 127.0.1.1:17070 v1
 *
 * Prints `{"bound": <port>}` once bound, `{"serving": true|false, ...}` on every serving-state
 * change, and exits when stdin closes. Not a test; run by the harness only.
 * @module
 */

import { WHOAMI_SERVICE } from "../../cli/demo/whoami.ts";

const [address, version] = Deno.args;
const grpc = await import("../../lib/deps/grpc.ts");
const xds = await import("../../lib/deps/grpc_xds.ts");
xds.register();
const out = (v: unknown) => console.log(JSON.stringify(v));

/** `spiffe://...` of the peer certificate's URI SAN, or "". */
function peerOf(
  call: { getAuthContext?: () => { sslPeerCertificate?: { subjectaltname?: string } } | null },
): string {
  const san = call.getAuthContext?.()?.sslPeerCertificate?.subjectaltname ?? "";
  return /URI:(spiffe:\/\/[^,\s]+)/.exec(san)?.[1] ?? "";
}

const server = new xds.XdsServer();
server.addService(
  WHOAMI_SERVICE as unknown as import("../../lib/deps/grpc.ts").ServiceDefinition,
  {
    // deno-lint-ignore no-explicit-any
    get: (call: any, cb: (e: null, r: unknown) => void) => {
      cb(null, { version, address, attempt: 1, peer: peerOf(call) });
    },
  },
);
server.addServingStateListener(address, (s) => out({ serving: s.code === 0, details: s.details }));
server.bindAsync(
  address,
  new xds.XdsServerCredentials(grpc.ServerCredentials.createInsecure()),
  (err, port) => err ? out({ error: err.message }) : out({ bound: port }),
);
for await (const _ of Deno.stdin.readable) { /* until the parent closes stdin */ }
server.forceShutdown();
Deno.exit(0);
