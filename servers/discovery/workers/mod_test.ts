import assert from "node:assert/strict";
import { addressSlots } from "./mod.ts";

Deno.test("addressSlots(): the per-address table holds twice --grpcMaxConnections addresses (64 to 65,536), or 16,384 without a cap", () => {
  assert.equal(addressSlots(0), 16_384);
  assert.equal(addressSlots(1), 64);
  assert.equal(addressSlots(32), 64);
  assert.equal(addressSlots(33), 66);
  assert.equal(addressSlots(1000), 2000);
  assert.equal(addressSlots(32_768), 65_536);
  assert.equal(addressSlots(40_000), 65_536);
});
