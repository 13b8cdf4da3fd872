import assert from "node:assert/strict";
import { checkGolden, unifiedDiff, UPDATE_GOLDEN } from "./golden.ts";

Deno.test("unifiedDiff() prints diff -u style hunks with 3 lines of context", () => {
  const a = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", ""].join("\n");
  const b = ["a", "b", "c", "D", "e", "f", "g", "h", "i", "j", "k", "l", "m", ""].join("\n");
  assert.equal(
    unifiedDiff(a, b, "x.json"),
    [
      "--- x.json",
      "+++ x.json (new)",
      "@@ -1,7 +1,7 @@",
      " a",
      " b",
      " c",
      "-d",
      "+D",
      " e",
      " f",
      " g",
      "@@ -10,3 +10,4 @@",
      " j",
      " k",
      " l",
      "+m",
    ].join("\n"),
  );
  assert.equal(unifiedDiff(a, a), "");
  // Changes 6 lines apart or less share one hunk.
  const c = a.replace("d", "D").replace("i", "I");
  assert.equal(unifiedDiff(a, c).split("\n").filter((l) => l.startsWith("@@")).length, 1);
});

Deno.test("checkGolden() passes on equal text, fails naming UPDATE_GOLDEN, and with UPDATE_GOLDEN=1 rewrites and prints the diff", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-golden-" });
  try {
    const file = `${dir}/g.txt`;
    await Deno.writeTextFile(file, "one\ntwo\n");
    if (UPDATE_GOLDEN) {
      const printed: string[] = [];
      await checkGolden(file, "one\nthree\n", { print: (s) => printed.push(s) });
      assert.equal(await Deno.readTextFile(file), "one\nthree\n");
      assert.match(
        printed[0],
        /changed:\n--- .*g\.txt\n\+\+\+ .*\n@@ -1,2 \+1,2 @@\n one\n-two\n\+three$/,
      );
      return;
    }
    await checkGolden(file, "one\ntwo\n");
    await assert.rejects(checkGolden(file, "one\nthree\n"), /UPDATE_GOLDEN=1/);
    assert.equal(
      await Deno.readTextFile(file),
      "one\ntwo\n",
      "not rewritten without UPDATE_GOLDEN",
    );
    // The update mode, in a child process with UPDATE_GOLDEN=1.
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `import { checkGolden } from ${
          JSON.stringify(new URL("./golden.ts", import.meta.url).href)
        };
        await checkGolden(${JSON.stringify(file)}, "one\\nthree\\n");
        await checkGolden(${JSON.stringify(file)}, "one\\nthree\\n");`,
      ],
      env: { UPDATE_GOLDEN: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    assert.equal(await Deno.readTextFile(file), "one\nthree\n");
    assert.equal(
      text,
      `UPDATE_GOLDEN: ${file} changed:\n--- ${file}\n+++ ${file} (new)\n@@ -1,2 +1,2 @@\n one\n-two\n+three\n` +
        `UPDATE_GOLDEN: ${file} unchanged\n`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
