import assert from "node:assert/strict";
import { END, renderFlagsSection, START } from "../../cli/_shared/gen_readme_flags.ts";

Deno.test("README flag tables match the flag definitions", async () => {
  const readme = await Deno.readTextFile(new URL("../../README.md", import.meta.url));
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  assert.ok(start !== -1 && end > start, "README.md lacks the flags markers");
  assert.equal(
    readme.slice(start + START.length, end),
    renderFlagsSection(),
    "README.md is out of date: run `deno run -A cli/_shared/gen_readme_flags.ts`",
  );
});

Deno.test("renderFlagsSection() has one table per program and per command with own flags", () => {
  const text = renderFlagsSection();
  for (
    const heading of [
      "### Logging flags (L)",
      "### Introspection flags (I)",
      "### Probe flags",
      "### meshctl global flags",
      "#### `mesh-discovery discovery`",
      "#### `sidecar-injector`",
      "#### `mesh-agent proxy`",
      "#### `mesh-policy server`",
      "#### `meshctl experimental rbac can`",
      "#### `mesh_ca`",
    ]
  ) {
    assert.ok(text.includes(`\n${heading}\n`), heading);
  }
  assert.ok(text.includes("| `--max-workload-cert-ttl` |  | duration | `2160h0m0s` |"));
  assert.ok(!text.includes("--emitTemplate"), "hidden flags stay out of the README");
});
