/** The `denier` adapter: always answers its status (default FAILED_PRECONDITION). @module */

import { Params } from "./params.ts";
import { type Adapter, Code } from "./types.ts";

/** denier: checknothing, listentry, quota. */
export const denier: Adapter = {
  kind: "denier",
  templates: ["checknothing", "listentry", "quota"],
  build(spec, _env, object) {
    const p = new Params(spec, object).only(["status", "valid_duration", "valid_use_count"]);
    const st = p.sub("status")?.only(["code", "message", "details"]);
    const status = {
      code: st?.number("code", Code.FAILED_PRECONDITION, 0) ?? Code.FAILED_PRECONDITION,
      message: st?.string("message", "") ?? "",
    };
    const validDurationMs = p.durationMs("valid_duration", 5000);
    const validUseCount = p.number("valid_use_count", 1000, 0);
    return {
      check: () => ({ status, validDurationMs, validUseCount }),
      quota: () => ({ granted: 0, validDurationMs }),
    };
  },
};
