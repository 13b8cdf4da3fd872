import assert from "node:assert/strict";
import { grpcTimeoutMs } from "./deadline.ts";

Deno.test("grpcTimeoutMs(): the whole value must be digits and one unit (nothing before or after)", () => {
  const t = (v: string) => grpcTimeoutMs([["grpc-timeout", v]]);
  assert.equal(t("12345678m"), 12345678);
  assert.equal(grpcTimeoutMs([["x-other", "5S"]]), undefined);
  for (const bad of ["5Sx", "5SS", "x5S", " 5S", "5S "]) {
    assert.throws(
      () => t(bad),
      new RegExp(
        `^Error: malformed grpc-timeout header ${JSON.stringify(bad)}: want 1 to 8 digits`,
      ),
      bad,
    );
  }
});
