import assert from "node:assert/strict";
import { apiPort } from "./steps.ts";

Deno.test("apiPort() keeps the preferred port when it is free", () => {
  const l = Deno.listen({ hostname: "0.0.0.0", port: 0 });
  const free = (l.addr as Deno.NetAddr).port;
  l.close();
  assert.equal(apiPort(free), free);
});

Deno.test("apiPort() picks another free port when the preferred one is held", () => {
  const held = Deno.listen({ hostname: "0.0.0.0", port: 0 });
  const port = (held.addr as Deno.NetAddr).port;
  try {
    const got = apiPort(port);
    assert.notEqual(got, port);
    const probe = Deno.listen({ hostname: "0.0.0.0", port: got });
    probe.close();
  } finally {
    held.close();
  }
});
