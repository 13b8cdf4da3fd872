/**
 * The baseline of bench/policy: a grpc-js server (the reference gRPC implementation for Node)
 * serving `mesh.mixer.v1.Mixer/Check` with a no-op handler that decodes the request and answers
 * OK. Prints `listening <port>` and runs until killed.
 * @module
 */

import * as grpc from "../lib/deps/grpc.ts";
import { mixerCodec } from "../lib/mixer/mod.ts";

const codec = await mixerCodec();
// deno-lint-ignore no-explicit-any
const pkg = grpc.loadPackageDefinition(codec.definition) as any;
const server = new grpc.Server();
const ok = {
  precondition: { status: { code: 0 }, valid_duration: { seconds: 10 }, valid_use_count: 200 },
};
server.addService(pkg.mesh.mixer.v1.Mixer.service, {
  Check: (_call: unknown, cb: (e: null, r: unknown) => void) => cb(null, ok),
  Report: (_call: unknown, cb: (e: null, r: unknown) => void) => cb(null, {}),
});
server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  console.log(`listening ${port}`);
});
