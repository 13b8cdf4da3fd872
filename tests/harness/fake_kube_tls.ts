/**
 * An HTTPS front for the fake API server that requires a client certificate: TLS (server and
 * client certificates from a {@linkcode TestPki}) is ended here and the bytes are passed on to the
 * fake server's plain HTTP port, as a TLS-terminating proxy would. For tests of client-certificate
 * kubeconfigs.
 * @module
 */
import * as net from "node:net";
import * as tls from "node:tls";
import type { TestPki } from "./certs.ts";

/** A running TLS front. */
export interface KubeTlsFront {
  /** `https://127.0.0.1:<port>`. */
  readonly url: string;
  /** The server certificate and key paths (issued for 127.0.0.1). */
  readonly serverCert: { cert: string; key: string };
  /** How many TLS handshakes were refused (no client certificate, or one from another CA). */
  readonly refused: number;
  close(): Promise<void>;
}

/** Starts a TLS front on a free port before the fake API server listening on `upstreamPort`. */
export async function startKubeTlsFront(pki: TestPki, upstreamPort: number): Promise<KubeTlsFront> {
  const serverCert = await pki.issue("apiserver", { ips: ["127.0.0.1"], dns: ["localhost"] });
  const sockets = new Set<net.Socket>();
  let refused = 0;
  const server = tls.createServer({
    cert: await Deno.readTextFile(serverCert.cert),
    key: await Deno.readTextFile(serverCert.key),
    ca: await Deno.readTextFile(pki.caCert),
    requestCert: true,
    rejectUnauthorized: true,
  }, (client) => {
    const upstream = net.connect(upstreamPort, "127.0.0.1");
    sockets.add(client);
    sockets.add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  server.on("tlsClientError", () => void refused++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    serverCert,
    get refused() {
      return refused;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
