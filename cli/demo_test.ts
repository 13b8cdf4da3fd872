import assert from "node:assert/strict";
import { configErrorOf, demoListenError, formatSplit, percentages } from "./demo.ts";

Deno.test("percentages() rounds to whole numbers that add up to exactly 100", () => {
  assert.deepEqual(percentages([1, 1, 1]), [34, 33, 33]);
  assert.deepEqual(percentages([161, 39]), [81, 19]);
  assert.deepEqual(percentages([5, 5]), [50, 50]);
  assert.deepEqual(percentages([0, 0]), [0, 0]);
  for (const c of [[101, 99], [2, 2, 2, 1], [7, 13, 29], [199, 1], [1, 1, 1, 1, 1, 1]]) {
    assert.equal(percentages(c).reduce((a, b) => a + b, 0), 100, String(c));
  }
});

Deno.test("formatSplit() prints versions in order with percentages adding up to 100", () => {
  // 80.5% / 19.5% would round to 81% + 20% = 101%
  const line = formatSplit(new Map([["v2", 39], ["v1", 161]]), new Map());
  assert.equal(line, "last 1s: v1 81% (161)  v2 19% (39)");
  assert.equal(
    formatSplit(new Map(), new Map([["UNAVAILABLE", 3]])),
    "last 1s: no successful calls  errors 3 (UNAVAILABLE x3)",
  );
});

Deno.test("demoListenError() names the demo's flag for mesh-discovery's busy ports", () => {
  const log = "2026-01-01T00:00:00.000Z\terror\tdefault\t";
  assert.equal(
    demoListenError(`${log}Cannot listen on --port 25080: address already in use`),
    "Cannot listen on --httpPort 25080: address already in use",
  );
  assert.equal(
    demoListenError("Error: Cannot listen on --grpcAddr 127.0.0.1:25010: address already in use"),
    "Cannot listen on --grpcPort 25010: address already in use",
  );
  assert.equal(
    demoListenError("Cannot listen on --ctrlz_port 25876 (127.0.0.1): address already in use"),
    "Cannot listen on --ctrlzPort 25876 (127.0.0.1): address already in use",
  );
  assert.equal(demoListenError("Cannot listen on --secureGrpcAddr :15012: x"), undefined);
  assert.equal(demoListenError("ready"), undefined);
});

Deno.test("configErrorOf() keeps a rejected config line from the phrase on", () => {
  assert.equal(
    configErrorOf("2026-01-01T00:00:00Z\terror\tdefault\tConfig file error (x): a.yaml: bad "),
    "Config file error (x): a.yaml: bad",
  );
  assert.equal(configErrorOf("info config loaded"), undefined);
});
