import assert from "node:assert/strict";
import {
  affectedByGoawayBug,
  goawayWarning,
  isPinnedDeno,
  parseDenoVersion,
  PINNED_DENO,
} from "./mod.ts";

Deno.test("PINNED_DENO is 2.7.14", () => {
  assert.equal(PINNED_DENO, "2.7.14");
});

Deno.test("parseDenoVersion() reads major.minor.patch and drops suffixes", () => {
  assert.deepEqual(parseDenoVersion("2.7.14"), { major: 2, minor: 7, patch: 14 });
  assert.deepEqual(parseDenoVersion("v2.9.6"), { major: 2, minor: 9, patch: 6 });
  assert.deepEqual(parseDenoVersion("2.10.0-rc.1"), { major: 2, minor: 10, patch: 0 });
  assert.deepEqual(parseDenoVersion("2.8.1+3f2a1b0"), { major: 2, minor: 8, patch: 1 });
});

Deno.test("parseDenoVersion() throws a message quoting the text when it is not a version", () => {
  assert.throws(() => parseDenoVersion("2.7"), {
    name: "TypeError",
    message: 'Cannot parse Deno version "2.7": expected major.minor.patch',
  });
  assert.throws(() => parseDenoVersion("latest"), TypeError);
});

Deno.test("affectedByGoawayBug() is false before 2.8.0", () => {
  for (const v of ["1.46.3", "2.0.0", "2.7.14", "2.7.99"]) {
    assert.equal(affectedByGoawayBug(v), false, v);
  }
});

Deno.test("affectedByGoawayBug() is true from 2.8.0 through 2.9.6", () => {
  for (const v of ["2.8.0", "2.8.0-rc.2", "2.8.7", "2.9.0", "2.9.5", "2.9.6", "2.9.6+abc"]) {
    assert.equal(affectedByGoawayBug(v), true, v);
  }
});

Deno.test("affectedByGoawayBug() is false after the last measured version 2.9.6", () => {
  for (const v of ["2.9.7", "2.10.0", "3.0.0"]) {
    assert.equal(affectedByGoawayBug(v), false, v);
  }
});

Deno.test("affectedByGoawayBug() checks the running Deno when given no version", () => {
  assert.equal(affectedByGoawayBug(), affectedByGoawayBug(Deno.version.deno));
});

Deno.test("goawayWarning() is null on an unaffected runtime", () => {
  assert.equal(goawayWarning("2.7.14"), null);
  assert.equal(goawayWarning("2.10.0"), null);
});

Deno.test("goawayWarning() is one line naming the issue and the pin on an affected runtime", () => {
  const warning = goawayWarning("2.9.6");
  assert.ok(warning !== null);
  assert.ok(!warning.includes("\n"));
  assert.match(warning, /^Warning: Deno 2\.9\.6 /);
  assert.match(warning, /denoland\/deno#36788/);
  assert.match(warning, /Deno 2\.7\.14/);
});

Deno.test("isPinnedDeno() accepts only the 2.7.14 release", () => {
  assert.equal(isPinnedDeno("2.7.14"), true);
  assert.equal(isPinnedDeno("2.7.14+abc"), true);
  assert.equal(isPinnedDeno("2.7.14-rc.1"), false);
  assert.equal(isPinnedDeno("2.7.13"), false);
  assert.equal(isPinnedDeno("2.9.6"), false);
  assert.equal(isPinnedDeno("nonsense"), false);
});
