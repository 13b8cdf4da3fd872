/**
 * Consumers of apikey instances (listchecker on Check) and tracespan instances (the zipkin
 * adapter on Report), through the gRPC API as a proxy calls it.
 */

import assert from "node:assert/strict";
import { eventually, obj, startTestServer } from "./_testutil.ts";

Deno.test("apikey instances are checked by a listchecker: known keys pass, others are NOT_FOUND, revoked keys PERMISSION_DENIED", async () => {
  const s = await startTestServer([
    obj("listchecker", "keys", { overrides: ["k-alice", "k-bob"], blacklist: false }),
    obj("listchecker", "revoked", { overrides: ["k-bob"], blacklist: true }),
    obj("apikey", "key", {
      api: 'destination.service | ""',
      api_key: 'request.api_key | request.headers["x-api-key"] | ""',
      api_operation: 'request.path | ""',
    }),
    obj("rule", "need-key", {
      match: 'destination.service == "ratings.shop.svc.cluster.local"',
      actions: [
        { handler: "keys.listchecker", instances: ["key.apikey"] },
        { handler: "revoked.listchecker", instances: ["key.apikey"] },
      ],
    }),
  ]);
  try {
    assert.deepEqual(s.handle.issues(), []);
    const code = async (attrs: Record<string, string | Record<string, string>>) =>
      (await s.check({ "destination.service": "ratings.shop.svc.cluster.local", ...attrs }))
        .precondition.status;
    assert.equal((await code({ "request.api_key": "k-alice" })).code ?? 0, 0);
    assert.equal((await code({ "request.headers": { "x-api-key": "k-alice" } })).code ?? 0, 0);
    const unknown = await code({ "request.api_key": "k-eve" });
    assert.equal(unknown.code, 5);
    assert.equal(unknown.message, "k-eve is not whitelisted");
    const revoked = await code({ "request.api_key": "k-bob" });
    assert.equal(revoked.code, 7);
    assert.equal(revoked.message, "k-bob is blacklisted");
    assert.equal((await code({})).code, 5, "no key at all is not whitelisted");
    // Other services need no key.
    const other = await s.check({ "destination.service": "reviews.shop.svc.cluster.local" });
    assert.equal(other.precondition.status.code ?? 0, 0);
  } finally {
    await s.close();
  }
});
