/**
 * `deno task demo --mtls`: the whole mesh on one machine prints the split and the caller's SPIFFE
 * identity over mutual TLS; editing `authPolicy` in its mesh configuration switches to plaintext
 * while it runs; Ctrl-C stops every program it started.
 */

import assert from "node:assert/strict";
import { spawnProgram } from "../harness/procs.ts";

const LINE =
  /last 1s: v1 (\d+)% \(\d+\)\s+v2 (\d+)% \(\d+\)\s+caller (spiffe:\/\/\S+ \(mTLS\)|none \(plaintext\))$/gm;

function lines(text: string): { v1: number; v2: number; caller: string }[] {
  return [...text.matchAll(LINE)].map((m) => ({
    v1: Number(m[1]),
    v2: Number(m[2]),
    caller: m[3],
  }));
}

Deno.test("demo --mtls prints the split and the caller identity, and follows an authPolicy edit", async () => {
  const demo = spawnProgram("cli/demo.ts", ["--mtls", "--rate", "100"]);
  let workDir = "";
  try {
    const started = await demo.waitFor(/work dir (\S+)/, 60_000, "stdout");
    workDir = /work dir (\S+)/.exec(started)![1];
    const client = "spiffe://cluster.local/ns/mesh-demo/sa/demo-client (mTLS)";
    await demo.waitFor(
      (out) => lines(out).some((l) => l.caller === client && l.v1 >= 60 && l.v2 >= 5),
      60_000,
      "stdout",
    );
    const offset = demo.stdout().length;
    const meshFile = `${workDir}/mesh.yaml`;
    await Deno.writeTextFile(`${meshFile}.tmp`, "authPolicy: NONE\n");
    await Deno.rename(`${meshFile}.tmp`, meshFile);
    await demo.waitFor(
      (out) => lines(out.slice(offset)).some((l) => l.caller === "none (plaintext)"),
      30_000,
      "stdout",
    );
    demo.kill("SIGINT");
    const status = await demo.status;
    assert.equal(status.code, 0, demo.output().slice(-2000));
    assert.match(demo.stdout(), /demo: stopping/);
    // everything it started is gone with its work directory
    await assert.rejects(Deno.stat(workDir));
  } finally {
    await demo.stop();
  }
});
