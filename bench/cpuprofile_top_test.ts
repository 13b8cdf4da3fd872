import assert from "node:assert/strict";
import { main } from "./cpuprofile_top.ts";

const frame = (functionName: string, lineNumber = 0) => ({
  functionName,
  url: "file:///x/a.ts",
  lineNumber,
});

/** What `main(args)` prints. */
async function printed(args: string[]): Promise<string[]> {
  const lines: string[] = [];
  const log = console.log;
  console.log = (s: string) => lines.push(s);
  try {
    await main(args);
  } finally {
    console.log = log;
  }
  return lines;
}

Deno.test("cpuprofile_top sums the bytes of allocation profiles per function, with their callers", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // root → push (1 MB itself) → encode (3 MB); root → read → encode (1 MB)
    const heap = (encodeUnderPush: number) => ({
      head: {
        callFrame: frame("(root)"),
        selfSize: 0,
        children: [
          {
            callFrame: frame("push", 9),
            selfSize: 1e6,
            children: [{ callFrame: frame("encode", 19), selfSize: encodeUnderPush, children: [] }],
          },
          {
            callFrame: frame("read", 29),
            selfSize: 0,
            children: [{ callFrame: frame("encode", 19), selfSize: 1e6, children: [] }],
          },
        ],
      },
      samples: [],
    });
    await Deno.writeTextFile(`${dir}/a.heapprofile`, JSON.stringify(heap(2e6)));
    await Deno.writeTextFile(`${dir}/b.heapprofile`, JSON.stringify(heap(1e6)));
    const out = await printed([
      "--depth",
      "1",
      `${dir}/a.heapprofile`,
      `${dir}/b.heapprofile`,
    ]);
    assert.deepEqual(out, [
      "7.0 MB allocated (sampled) in the profile(s)",
      " 71.4% encode@a.ts:20",
      "        42.9% < push@a.ts:10",
      "        28.6% < read@a.ts:30",
      " 28.6% push@a.ts:10",
      "        28.6% < (root)@a.ts:1",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cpuprofile_top answers --help without reading anything", async () => {
  const out = await printed(["--help", "/nonexistent.cpuprofile"]);
  assert.match(out[0], /^Usage: deno run -A bench\/cpuprofile_top.ts/);
});
