/**
 * A transport baseline of bench/ca: our TLS gRPC transport (`lib/grpc`, as mesh_ca serves it)
 * answering `CreateCertificate` with a fixed certificate chain without any crypto, to measure what
 * the transport alone costs per CSR. `deno run -A bench/_noop_ca.ts <cert.pem> <key.pem>
 * <ca.pem>` (a server certificate for `mesh-ca`, its key, the CA certificate); prints `listening <port>` and runs until killed.
 * @module
 */

import { type CallHandler, listenGrpc } from "../lib/grpc/mod.ts";
import { CREATE_CERTIFICATE, encodeMeshCertificateResponse } from "../lib/pki/ca_messages.ts";

const [certFile, keyFile, caFile] = Deno.args;
const te = new TextEncoder();
const cert = await Deno.readTextFile(certFile);
const ca = await Deno.readTextFile(caFile);

const answer = encodeMeshCertificateResponse([cert, ca]);

const handler: CallHandler = (call) => {
  let gone = false;
  call.onMessage = () => {};
  call.onCancel = () => gone = true;
  call.onEnd = () => {
    if (gone) return;
    // As mesh_ca answers: the trailers queued with the message, one write for both.
    call.send([answer]).catch(() => {});
    call.end(0);
  };
};

const listener = await listenGrpc({
  host: "127.0.0.1",
  port: 0,
  tls: {
    cert: te.encode(cert),
    key: te.encode(await Deno.readTextFile(keyFile)),
    ca: te.encode(ca),
  },
  handlers: new Map([[CREATE_CERTIFICATE, handler]]),
});
console.log(`listening ${listener.port}`);
