import assert from "node:assert/strict";
import { Hono } from "../../lib/deps/hono.ts";
import { json, jsonArrayBody } from "./http_util.ts";

/** The answer of `jsonArrayBody(items, map)`: its text and the chunks it came in. */
async function answer<T>(items: T[], map?: (item: T, index: number) => unknown) {
  const app = new Hono();
  app.get("/", (c) => jsonArrayBody(c, items, map));
  const res = await app.request("/");
  assert.equal(res.headers.get("content-type"), "application/json");
  const chunks: Uint8Array[] = [];
  for await (const chunk of res.body!) chunks.push(chunk);
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const chunk of chunks) bytes.set(chunk, (at += chunk.length) - chunk.length);
  return { text: new TextDecoder().decode(bytes), chunks: chunks.length };
}

Deno.test("jsonArrayBody() sends the same text as jsonBody, to the byte", async () => {
  const cases: unknown[][] = [
    [],
    [{}],
    [1, "two", null, true],
    [{ a: { b: [1, 2, { c: "x\ny" }] }, d: [] }, [], [[]], {}],
    [undefined, () => 1, { toJSON: () => "custom" }],
  ];
  for (const items of cases) {
    assert.equal((await answer(items)).text, json(items) + "\n", JSON.stringify(items));
  }
});

Deno.test("jsonArrayBody() maps each item with its index", async () => {
  const { text } = await answer(["a", "b", "c"], (s, i) => ({ [s]: i }));
  assert.deepEqual(JSON.parse(text), [{ a: 0 }, { b: 1 }, { c: 2 }]);
});

Deno.test("jsonArrayBody() sends a large array in several chunks, whole", async () => {
  const items = Array.from({ length: 5000 }, (_, i) => ({
    kind: "VirtualService",
    metadata: { name: `vs-${i}`, namespace: "default" },
    spec: { hosts: [`svc-${i}.default.svc.cluster.local`], http: [{ timeout: "5s" }] },
  }));
  const { text, chunks } = await answer(items);
  assert.equal(text, json(items) + "\n");
  assert.ok(chunks >= 5, `a ${text.length}-character answer in ${chunks} chunk(s)`);
});
