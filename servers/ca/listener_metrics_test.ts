/**
 * mesh_ca's `/metrics` tells the state of the signing API's listeners (`mesh_ca_grpc_*`), with
 * one isolate and with worker isolates (summed over them).
 */
import {
  acceptingThroughFdExhaustion,
  throttleUntilCounted,
} from "../../tests/harness/listener_metrics.ts";
import { withCa } from "./_testutil.ts";

for (const workers of [1, 2]) {
  const w = workers > 1 ? ` with workers ${workers}` : "";

  Deno.test(`mesh_ca${w}: TLS connections that keep failing are counted in mesh_ca_grpc_throttled_connections; nothing else moves`, async () => {
    // monitoringPort 1: on (its port comes from deps)
    await withCa({ monitoringPort: 1, workers }, async (ca) => {
      await throttleUntilCounted({
        port: Number(ca.addresses.grpc!.split(":")[1]),
        tls: true,
        monitoring: ca.addresses.monitoring!,
        prefix: "mesh_ca_grpc",
      });
    });
  });

  Deno.test(`mesh_ca${w}: out of file descriptors, mesh_ca_grpc_accepting is 0, and 1 again once they are back`, async () => {
    await withCa({ monitoringPort: 1, workers }, async (ca) => {
      await acceptingThroughFdExhaustion(ca.addresses.monitoring!, "mesh_ca_grpc");
    });
  });
}
