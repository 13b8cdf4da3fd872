// The file store's write path as a user of `meshctl create/replace/delete` on a `--configDir`
// sees it: which file is written, what it holds afterwards, and why a write is refused.
import assert from "node:assert/strict";
import { createFileStore, type FileStore } from "./file.ts";
import { ConflictError } from "./types.ts";
import { vsYaml, withFilesDir, withJustRewritten, withLabel } from "./_testutil.ts";

/** A store (no watcher: sync() and writes rescan) over a directory of settled `files`. */
function withFiles(
  files: Record<string, string>,
  fn: (store: FileStore, dir: string) => Promise<void>,
): Promise<void> {
  return withFilesDir("mesh-filewrite-", files, async (dir) => {
    const store = await createFileStore({ dir, watch: false, log: false });
    try {
      await fn(store, dir);
    } finally {
      await store.close();
    }
  }, { settled: true });
}

const vs = async (store: FileStore, name: string) =>
  (await store.get("virtualservice", name, "default"))!;

Deno.test("file store create: a file of that name holding something else is kept; the object gets the next free name-N.yaml", async () => {
  const taken = "default/virtualservices/x.yaml";
  const other = { [taken]: vsYaml("other"), "default/virtualservices/x-1.yaml": "# notes\n" };
  await withFiles(other, async (store, dir) => {
    const created = await store.create({
      apiVersion: "networking.mesh.io/v1alpha3",
      kind: "VirtualService",
      metadata: { name: "x", namespace: "default" },
      spec: { hosts: ["x"], http: [{ route: [{ destination: { host: "x" } }] }] },
    });
    assert.equal(created.metadata.name, "x");
    assert.equal(await Deno.readTextFile(`${dir}/${taken}`), vsYaml("other"));
    assert.equal(await Deno.readTextFile(`${dir}/default/virtualservices/x-1.yaml`), "# notes\n");
    assert.match(
      await Deno.readTextFile(`${dir}/default/virtualservices/x-2.yaml`),
      /^apiVersion: networking\.mesh\.io\/v1alpha3\nkind: VirtualService\nmetadata:\n {2}name: x\n/,
    );
  });
});

Deno.test("file store update: the first document keeps a leading ---, a later one gets one", async () => {
  const text = `---\n${vsYaml("a")}---\n${vsYaml("b")}`;
  await withFiles(
    { "t.yaml": text, "u.yaml": `${vsYaml("c")}---\n${vsYaml("d")}` },
    async (store, dir) => {
      await store.update(withLabel(await vs(store, "a"), "k", "v"));
      const t = await Deno.readTextFile(`${dir}/t.yaml`);
      assert.ok(t.startsWith("---\napiVersion: networking.mesh.io/v1alpha3\n"), t);
      assert.ok(t.endsWith(`---\n${vsYaml("b")}`), t);
      await store.update(withLabel(await vs(store, "c"), "k", "v"));
      const u = await Deno.readTextFile(`${dir}/u.yaml`);
      assert.ok(u.startsWith("apiVersion: networking.mesh.io/v1alpha3\n"), u);
      await store.update(withLabel(await vs(store, "d"), "k", "v"));
      const u2 = await Deno.readTextFile(`${dir}/u.yaml`);
      assert.equal(u2.split("\n---\n").length, 2, u2);
      assert.equal((await vs(store, "d")).metadata.labels?.k, "v");
      assert.equal((await vs(store, "c")).metadata.labels?.k, "v");
    },
  );
});

Deno.test("file store update: without a resourceVersion the last writer wins; with a stale one it is refused, naming both", async () => {
  await withFiles({ "a.yaml": vsYaml("a") }, async (store) => {
    const a = await vs(store, "a");
    const noVersion = withLabel(a, "k", "1");
    delete noVersion.metadata.resourceVersion;
    const a1 = await store.update(noVersion);
    assert.equal(a1.metadata.labels?.k, "1");
    await assert.rejects(
      store.update(withLabel(a, "k", "2")),
      (e: Error) =>
        e instanceof ConflictError && e.message.includes(a.metadata.resourceVersion!) &&
        e.message.includes(a1.metadata.resourceVersion!),
    );
  });
});

Deno.test("file store delete: a file left with only comments or empty documents is removed", async () => {
  const files = {
    "a.yaml": `${vsYaml("a")}---\n# nothing else here\n---\n`,
    "b.yaml": vsYaml("b"),
  };
  await withFiles(files, async (store, dir) => {
    await store.delete("virtualservice", "a", "default");
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["b.yaml"]);
  });
});

Deno.test("file store: an object whose file has errors cannot be changed until it is fixed", async () => {
  await withFiles({ "a.yaml": vsYaml("a") }, async (store, dir) => {
    const a = await vs(store, "a");
    const broken = `${vsYaml("a", "a2")}---\nkind: [x\n`;
    await Deno.writeTextFile(`${dir}/a.yaml`, broken);
    const old = new Date(Date.now() - 3600_000);
    await Deno.utime(`${dir}/a.yaml`, old, old);
    await store.sync();
    assert.deepEqual((await vs(store, "a")).spec.hosts, ["a"], "the last good content is in force");
    const refused = new RegExp(
      `^Error: Cannot change VirtualService "a" in namespace "default": its file a\\.yaml has ` +
        `errors \\(fix it first\\): a\\.yaml document 2: cannot parse YAML`,
    );
    await assert.rejects(store.update(withLabel(a, "k", "v")), refused);
    await assert.rejects(store.delete("virtualservice", "a", "default"), refused);
    assert.equal(await Deno.readTextFile(`${dir}/a.yaml`), broken, "the file is left as it is");
  });
});

Deno.test("file store: writes are refused once closed", async () => {
  await withFiles({ "a.yaml": vsYaml("a") }, async (store) => {
    const a = await vs(store, "a");
    await store.close();
    const closed = /^Error: Config store is closed$/;
    await assert.rejects(store.update(withLabel(a, "k", "v")), closed);
    await assert.rejects(store.delete("virtualservice", "a", "default"), closed);
    await assert.rejects(store.create({ ...a, metadata: { name: "b" } }), closed);
  });
});

Deno.test("file store update: a .JSON file (any case) stays JSON", async () => {
  const json = JSON.stringify(
    {
      apiVersion: "networking.mesh.io/v1alpha3",
      kind: "DestinationRule",
      metadata: { name: "j" },
      spec: { host: "j" },
    },
    null,
    2,
  );
  await withFiles({ "J.JSON": json }, async (store, dir) => {
    const j = (await store.get("destinationrule", "j", "default"))!;
    await store.update(withLabel(j, "k", "v"));
    const parsed = JSON.parse(await Deno.readTextFile(`${dir}/J.JSON`));
    assert.deepEqual(parsed.metadata, { name: "j", namespace: "default", labels: { k: "v" } });
  });
});

Deno.test("file store: get, list and errors() hand out copies; list filters by namespace, sorted", async () => {
  const team = (name: string) => vsYaml(name).replace("{ name: ", "{ namespace: team, name: ");
  const files = {
    "a.yaml": `${team("z")}---\n${vsYaml("b")}---\n${team("c")}`,
    "bad.yaml": "kind: [",
  };
  await withFiles(files, async (store) => {
    assert.deepEqual(
      (await store.list("virtualservice", "team")).map((o) => o.metadata.name),
      ["c", "z"],
    );
    assert.deepEqual(
      (await store.list("virtualservice")).map((o) => `${o.metadata.namespace}/${o.metadata.name}`),
      ["default/b", "team/c", "team/z"],
    );
    (await store.list("virtualservice"))[0].spec.hosts = ["changed"];
    (await vs(store, "b")).metadata.name = "changed";
    assert.deepEqual((await vs(store, "b")).spec.hosts, ["b"]);
    store.errors()[0].message = "changed";
    assert.match(store.errors()[0].message, /^bad\.yaml document 1: cannot parse YAML/);
    await assert.rejects(store.list("nosuchtype"), /^Error: Unknown config type "nosuchtype"/);
  });
});

Deno.test("file store update: a .json.yaml file stays YAML, a .json file ends with a newline", async () => {
  const json = JSON.stringify({
    apiVersion: "networking.mesh.io/v1alpha3",
    kind: "DestinationRule",
    metadata: { name: "j" },
    spec: { host: "j" },
  });
  await withFiles({ "a.json.yaml": vsYaml("a"), "j.json": json }, async (store, dir) => {
    await store.update(withLabel(await vs(store, "a"), "k", "v"));
    assert.match(await Deno.readTextFile(`${dir}/a.json.yaml`), /^apiVersion: /);
    await store.update(withLabel((await store.get("destinationrule", "j", "default"))!, "k", "v"));
    assert.match(await Deno.readTextFile(`${dir}/j.json`), /^\{\n[^]*\n\}\n$/);
  });
});

Deno.test("file store: an object of a file being rewritten by another writer cannot be changed meanwhile", async () => {
  await withJustRewritten("mesh-filewrite-", async (store, dir) => {
    assert.ok(await store.get("virtualservice", "b", "default"), "b is held");
    await assert.rejects(
      store.update(withLabel(await vs(store, "a"), "k", "v")),
      (e: Error) =>
        e instanceof ConflictError &&
        e.message === "a.yaml is being rewritten by another writer; try again",
    );
    assert.equal(await Deno.readTextFile(`${dir}/a.yaml`), vsYaml("a"), "left as it is");
  });
});

Deno.test("file store with watch: false arms no timer and no file watcher", async () => {
  await withFiles({ "a.yaml": vsYaml("a") }, async (_, dir) => {
    const realSetTimeout = globalThis.setTimeout;
    const realWatchFs = Deno.watchFs;
    const armed: string[] = [];
    globalThis.setTimeout = ((fn: () => void, ms?: number) => {
      armed.push(`setTimeout ${ms}`);
      return realSetTimeout(fn, ms);
    }) as typeof setTimeout;
    Deno.watchFs = ((...args: Parameters<typeof Deno.watchFs>) => {
      armed.push("watchFs");
      return realWatchFs(...args);
    }) as typeof Deno.watchFs;
    try {
      const store = await createFileStore({ dir, watch: false, log: false });
      await store.sync();
      await store.update(withLabel(await vs(store, "a"), "k", "v"));
      await store.close();
    } finally {
      globalThis.setTimeout = realSetTimeout;
      Deno.watchFs = realWatchFs;
    }
    assert.deepEqual(armed, []);
  });
});
