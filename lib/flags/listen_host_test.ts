import assert from "node:assert/strict";
import { listenHost } from "./listen_host.ts";

Deno.test("listenHost.parse() accepts IP literals and localhost", () => {
  for (const v of ["127.0.0.1", "0.0.0.0", "::", "::1", "localhost"]) {
    assert.equal(listenHost.parse(v, undefined), v);
  }
});

Deno.test("listenHost.parse() rejects a name or a host:port with the reason", () => {
  for (const v of ["example.com", "127.0.0.1:80", "", "1.2.3.256"]) {
    assert.throws(
      () => listenHost.parse(v, undefined),
      /is not a local address: want an IP address/,
    );
  }
});
