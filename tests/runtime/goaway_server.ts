/**
 * A tiny grpc-js server for the GOAWAY regression test (goaway_test.ts); run it with
 * `deno run -A tests/runtime/goaway_server.ts`.
 *
 * It serves a generic service with raw-Buffer messages on 127.0.0.1, port 0:
 * - `/mesh.test.Echo/Echo` answers with the request bytes;
 * - `/mesh.test.Echo/Sessions` answers with the number of open HTTP/2 sessions
 *   (decimal text), so the test can tell when the server has handled a client's GOAWAY.
 *
 * It prints one line `{"port":N}` to stdout once listening, and shuts down gracefully
 * (exit 0) when its stdin reaches end of file.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import * as grpc from "../../lib/deps/grpc.ts";

const identity = (b: Buffer) => b;

/** Path and codec of one unary method with raw-Buffer messages. */
function unary(path: string): grpc.MethodDefinition<Buffer, Buffer> {
  return {
    path,
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  };
}

/** The service definition shared with the test's client. */
export const ECHO_SERVICE = {
  echo: unary("/mesh.test.Echo/Echo"),
  sessions: unary("/mesh.test.Echo/Sessions"),
} as const;

/** Number of open HTTP/2 sessions; grpc-js keeps them in a private map. */
function openSessions(server: grpc.Server): number {
  const sessions = (server as unknown as { sessions?: Map<unknown, unknown> }).sessions;
  if (!(sessions instanceof Map)) {
    throw new Error("grpc-js Server has no sessions map: update goaway_server.ts");
  }
  return sessions.size;
}

async function main(): Promise<void> {
  const server = new grpc.Server();
  server.addService(ECHO_SERVICE, {
    echo: (
      call: grpc.ServerUnaryCall<Buffer, Buffer>,
      callback: grpc.sendUnaryData<Buffer>,
    ) => callback(null, call.request),
    sessions: (
      _call: grpc.ServerUnaryCall<Buffer, Buffer>,
      callback: grpc.sendUnaryData<Buffer>,
    ) => callback(null, Buffer.from(String(openSessions(server)))),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      "127.0.0.1:0",
      grpc.ServerCredentials.createInsecure(),
      (err, p) => err ? reject(err) : resolve(p),
    )
  );
  console.log(JSON.stringify({ port }));

  // Stay up until the parent closes our stdin.
  for await (const _ of Deno.stdin.readable) { /* ignore input */ }

  await new Promise<void>((resolve, reject) =>
    server.tryShutdown((err) => err ? reject(err) : resolve())
  );
}

if (import.meta.main) await main();
