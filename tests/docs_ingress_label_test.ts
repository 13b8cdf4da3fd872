import assert from "node:assert/strict";
import { INGRESS_GATEWAY_SELECTOR } from "../lib/model/mod.ts";

const root = new URL("../", import.meta.url);

async function markdownFiles(): Promise<URL[]> {
  const out = [new URL("README.md", root)];
  for await (const e of Deno.readDir(new URL("docs/", root))) {
    if (e.isFile && e.name.endsWith(".md")) out.push(new URL(`docs/${e.name}`, root));
  }
  return out;
}

Deno.test("docs name the ingress gateway label the code selects (mesh: ingressgateway), never another mesh label", async () => {
  const [[key, value]] = Object.entries(INGRESS_GATEWAY_SELECTOR);
  // `mesh: <x>` or `mesh=<x>` where x is an ingress-like label value.
  const label = new RegExp(`\\b${key}(?:: |=)(ingress[a-z-]*)\\b`, "g");
  const wrong: string[] = [];
  let seen = 0;
  for (const f of await markdownFiles()) {
    const text = await Deno.readTextFile(f);
    for (const m of text.matchAll(label)) {
      seen++;
      if (m[1] !== value) wrong.push(`${f.pathname.split("/").slice(-2).join("/")}: ${m[0]}`);
    }
  }
  assert.ok(seen > 0, "no doc names the ingress gateway label");
  assert.deepEqual(wrong, []);
});
