import assert from "node:assert/strict";
import { formatConsole } from "./format.ts";

Deno.test("formatConsole() escapes newlines in a message: input cannot forge log lines", () => {
  const line = formatConsole({
    time: Date.UTC(2026, 0, 1),
    level: "error",
    scope: "default",
    msg: "Config file error: x\n2026-01-01T00:00:00.000Z\tinfo\tdefault\tforged\r",
    props: {},
  });
  assert.equal(
    line,
    "2026-01-01T00:00:00.000Z\terror\tdefault\tConfig file error: x\\n" +
      "2026-01-01T00:00:00.000Z\tinfo\tdefault\tforged\\r\n",
  );
});
