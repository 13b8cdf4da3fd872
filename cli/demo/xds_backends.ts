/**
 * The backends of `deno task demo --mtls`: proxyless WhoAmI servers (see `startXdsWhoAmI`), one
 * per `<ip>:<port>=<version>` argument, in one process with the bootstrap its mesh-agent wrote
 * (`GRPC_XDS_BOOTSTRAP`). Prints `serving <address> <version>` per backend; stops on
 * SIGTERM/SIGINT.
 *
 *     GRPC_XDS_BOOTSTRAP=.../grpc-bootstrap.json deno run -A cli/demo/xds_backends.ts \
 *       127.0.0.1:25071=v1 127.0.0.1:25072=v2
 * @module
 */

import { startXdsWhoAmI, type XdsWhoAmIBackend } from "./whoami.ts";

const backends: XdsWhoAmIBackend[] = [];
const stop = () => {
  for (const b of backends) b.shutdown();
  Deno.exit(0);
};
Deno.addSignalListener("SIGTERM", stop);
Deno.addSignalListener("SIGINT", stop);
for (const arg of Deno.args) {
  const [address, version] = arg.split("=");
  try {
    backends.push(await startXdsWhoAmI({ address, version }));
    console.log(`serving ${address} ${version}`);
  } catch (e) {
    console.error(`Error: ${(e as Error).message}`);
    Deno.exit(1);
  }
}
