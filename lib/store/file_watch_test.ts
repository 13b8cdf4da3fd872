// How the file store's watch tells an atomically written file (renamed into place, whole) from
// one still being written, and what a scan does with that: the first is read at once, the
// second waits for SETTLE_MS of quiet.
import assert from "node:assert/strict";
import { allSchemas } from "../model/mod.ts";
import { SchemaSet } from "./_common.ts";
import { scanFiles, type ScanHooks, type ScanSettings } from "./_file_scan.ts";
import { DirectoryWatch } from "./_file_watch.ts";
import { TimeSlicer } from "../process/slice.ts";
import { until, vsYaml, withFilesDir } from "./_testutil.ts";
import { quietLogger as quiet } from "../log/testing.ts";

Deno.test("file scan: a file written this instant waits to settle unless it was renamed into place", async () => {
  await withFilesDir("mesh-filewatch-", { "a.yaml": vsYaml("a") }, async (dir) => {
    const now = new Date();
    await Deno.utime(`${dir}/a.yaml`, now, now); // written this instant, as far as a scan knows
    const settings: ScanSettings = {
      dir,
      set: new SchemaSet(allSchemas),
      defaultNamespace: "default",
      log: quiet,
      maxFileBytes: 1 << 20,
      removalQuietMs: 0,
      watching: true,
    };
    const scan = (renamed: string[]) => {
      const hooks: ScanHooks = { ownWrites: new Map(), renamed: new Set(renamed), holdUntil() {} };
      return scanFiles(settings, hooks, ["a.yaml"], new Map(), true, new TimeSlicer(null));
    };
    const waiting = await scan([]);
    assert.equal(waiting.unsettled, true);
    assert.equal(waiting.files.size, 0, "left aside until it settles");
    const whole = await scan(["a.yaml"]);
    assert.equal(whole.unsettled, false);
    assert.deepEqual(whole.files.get("a.yaml")?.docs.map((d) => d.object.metadata.name), ["a"]);
  });
});

Deno.test("file watch: a file renamed into place is marked whole until it is written, created or removed again", async () => {
  await withFilesDir("mesh-filewatch-", {}, async (dir) => {
    const renamed = new Set<string>();
    let scans = 0;
    const watch = new DirectoryWatch({
      dir,
      log: quiet,
      pollMs: 600_000,
      rescanMs: 600_000,
      rescan: () => (scans++, Promise.resolve()),
      renamed,
    });
    watch.listen();
    try {
      await Deno.mkdir(`${dir}/team`);
      // the watch sees the new directory first (a recursive watch adds the directory's own watch
      // when told of it: a rename into it before then is not reported)
      await until(() => scans > 0, 10_000, "the new directory's notification");
      await Deno.writeTextFile(`${dir}/.a.tmp`, vsYaml("a"));
      await Deno.rename(`${dir}/.a.tmp`, `${dir}/team/a.yaml`);
      await until(() => renamed.has("team/a.yaml"), 10_000, "the rename");
      assert.deepEqual([...renamed], ["team/a.yaml"], "the temporary file is not marked");
      // written in place (an append): no longer known to be whole
      await Deno.writeTextFile(`${dir}/team/a.yaml`, "# more\n", { append: true });
      await until(() => !renamed.has("team/a.yaml"), 10_000, "the write");
      // a plain write of a new file is never marked (seen once its notification came)
      const before = scans;
      await Deno.writeTextFile(`${dir}/b.yaml`, vsYaml("b"));
      await until(() => scans > before, 10_000, "b's notification");
      assert.equal(renamed.has("b.yaml"), false);
      // renamed over, then removed
      await Deno.writeTextFile(`${dir}/.b.tmp`, vsYaml("b"));
      await Deno.rename(`${dir}/.b.tmp`, `${dir}/b.yaml`);
      await until(() => renamed.has("b.yaml"), 10_000, "b renamed over");
      await Deno.remove(`${dir}/b.yaml`);
      await until(() => !renamed.has("b.yaml"), 10_000, "b removed");
    } finally {
      await watch.close();
    }
  });
});
