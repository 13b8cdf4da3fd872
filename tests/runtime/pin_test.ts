/** The Deno pin is written in several places; they must all say the same version. */
import assert from "node:assert/strict";
import { PINNED_DENO } from "../../lib/runtime/mod.ts";

const root = new URL("../../", import.meta.url);
const read = (path: string) => Deno.readTextFile(new URL(path, root));

Deno.test("the CI script installs the pinned Deno", async () => {
  const script = await read(".ci/run");
  assert.match(script, new RegExp(`^DENO_VERSION=${PINNED_DENO.replaceAll(".", "\\.")}$`, "m"));
  assert.match(script, /npm i -g "deno@\$DENO_VERSION"/);
  // the one test command, last, and nothing retried: no other test run, no FLAKY pass
  assert.match(script, /\nexec deno task test <\/dev\/null\n*$/);
  assert.equal(script.match(/^\s*(exec\s+)?deno (task )?test\b/gm)?.length, 1, "one test command");
  const code = script.split("\n").filter((l) => !/^\s*#/.test(l)).join("\n");
  assert.doesNotMatch(code, /FLAKY|retry/i);
});

Deno.test("the release workflow installs the pinned Deno and nothing else", async () => {
  const workflow = await read(".github/workflows/release.yml");
  assert.match(workflow, new RegExp(`DENO_VERSION: "${PINNED_DENO.replaceAll(".", "\\.")}"`));
  assert.match(workflow, /npm i -g "deno@\$\{DENO_VERSION\}"/);
  const versions = new Set(workflow.match(/\b2\.\d+\.\d+\b/g));
  assert.deepEqual([...versions], [PINNED_DENO]);
});
