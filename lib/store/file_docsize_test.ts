import assert from "node:assert/strict";
import { createFileStore } from "./file.ts";
import { MAX_DOCUMENT_BYTES, oversizeDocument } from "./_file_scan.ts";
import { vsYaml, withFilesDir } from "./_testutil.ts";

Deno.test("oversizeDocument() finds the first document over the limit, by index and line", () => {
  const small = "a: 1\n";
  const big = `b: "${"x".repeat(100)}"\n`;
  assert.equal(oversizeDocument(small, 50), undefined);
  assert.deepEqual(oversizeDocument(big, 50), { index: 1, line: 1, size: big.length });
  // Documents cut at `---`: the second one is too big, it starts on the line of its marker.
  assert.deepEqual(oversizeDocument(`${small}---\n${big}---\n${small}`, 60), {
    index: 2,
    line: 2,
    size: 4 + big.length,
  });
  // Comments before the first marker are no document; an explicit empty one counts.
  assert.deepEqual(oversizeDocument(`# note\n---\n---\n${big}`, 60)?.index, 2);
  // `---` inside a line or followed by text other than a blank does not cut.
  assert.deepEqual(oversizeDocument(`a: "---"\n---x: 1\n${big}`, 60)?.index, 1);
  // Many small documents are fine whatever the file's size.
  assert.equal(oversizeDocument(Array(100).fill(big).join("---\n"), 200), undefined);
});

Deno.test("file store: a document over the size limit is refused, naming it, and the file's previous content stays in force", async () => {
  await withFilesDir("mesh-docsize-", { "a.yaml": vsYaml("a") }, async (dir) => {
    const store = await createFileStore({ dir, watch: false, log: false });
    try {
      assert.deepEqual((await store.get("virtualservice", "a", "default"))?.metadata.name, "a");
      const huge = `${vsYaml("a")}  # ${"x".repeat(MAX_DOCUMENT_BYTES)}\n`;
      await Deno.writeTextFile(`${dir}/a.yaml`, `${vsYaml("z")}---\n${huge}`);
      await store.sync();
      const [err] = store.errors();
      assert.equal(err.file, "a.yaml");
      assert.equal(err.document, 2);
      assert.match(
        err.message,
        new RegExp(
          `^a\\.yaml document 2: \\d+ bytes \\(from line \\d+\\) is more than the ` +
            `${MAX_DOCUMENT_BYTES}-byte limit of one document \\(a document is parsed in one step; ` +
            `split it into several documents\\)$`,
        ),
      );
      assert.ok(await store.get("virtualservice", "a", "default"), "the previous content stays");
      assert.equal(await store.get("virtualservice", "z", "default"), undefined);
    } finally {
      await store.close();
    }
  });
});
