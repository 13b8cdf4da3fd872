import assert from "node:assert/strict";
import { documentsOf, parseDocuments } from "./documents.ts";

const STREAMS: Record<string, string> = {
  "several documents": "a: 1\n---\nb: [1, 2]\n---\n# empty\n---\nc: {d: e}\n",
  "a JSON document": '{"apiVersion": "v1", "kind": "X"}',
  "a broken flow sequence": "a: 1\n---\nb: [1, 2\n---\nc: 3\n",
  "too many aliases": "a: &a [1]\nb: [" + Array(200).fill("*a").join(", ") + "]\n",
  "a duplicate key": "a: 1\na: 2\n",
  "nothing": "",
};

for (const [what, text] of Object.entries(STREAMS)) {
  Deno.test(`documentsOf() gives what parseDocuments() gives for ${what}`, () => {
    assert.deepEqual([...documentsOf(text)], parseDocuments(text));
  });
}

Deno.test("documentsOf() parses only as far as it is read", () => {
  const text = "a: 1\n---\nb: 2\n---\nc: [\n";
  const it = documentsOf(text);
  assert.deepEqual(it.next().value, { index: 1, start: 0, value: { a: 1 } });
  assert.deepEqual(it.next().value?.value, { b: 2 });
  assert.match(String(it.next().value?.error), /^cannot parse YAML: /);
  assert.equal(it.next().done, true);
});
