import assert from "node:assert/strict";
import { stringify } from "../deps/yaml.ts";
import { allSchemas } from "../model/mod.ts";
import { createFileStore, type FileStore } from "./file.ts";
import { ConflictError, NotFoundError, ValidationError } from "./types.ts";
import {
  eventLines,
  fixture,
  fixtures,
  recordEvents,
  until,
  withFilesDir,
  withLabel,
} from "./_testutil.ts";

function withStore(
  fn: (store: FileStore, dir: string) => Promise<void>,
  files: Record<string, string> = {},
  opts: Partial<Parameters<typeof createFileStore>[0]> = {},
) {
  return withFilesDir("mesh-filestore-", files, async (dir) => {
    const store = await createFileStore({ dir, ...opts });
    try {
      await fn(store, dir);
    } finally {
      await store.close();
    }
  });
}

async function listFiles(dir: string, rel = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(rel ? `${dir}/${rel}` : dir)) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory) out.push(...await listFiles(dir, r));
    else out.push(r);
  }
  return out.sort();
}

const VS = (name: string, host = name, extra = "") =>
  `apiVersion: networking.istio.io/v1alpha3
kind: VirtualService
metadata:
  name: ${name}${extra}
spec:
  hosts: [${host}]
  http:
  - route:
    - destination: { host: ${host} }
`;

const BAD_VS = `apiVersion: networking.mesh.io/v1alpha3
kind: VirtualService
metadata: { name: x, namespace: default }
spec:
  hosts: [x]
  http:
  - route:
    - destination: { subset: v1 }
`;

Deno.test("createFileStore() round-trips every kind through files", async () => {
  await withStore(async (store, dir) => {
    const objs = await fixtures();
    for (const obj of objs) {
      const schema = allSchemas.find((s) => s.kind === obj.kind)!;
      const created = await store.create(obj);
      assert.ok(created.metadata.resourceVersion);
      assert.deepEqual(created.spec, obj.spec, `${obj.kind} spec`);
      assert.deepEqual(await store.get(schema.type, obj.metadata.name, "default"), created);
      assert.ok(
        (await Deno.stat(`${dir}/default/${schema.plural}/${obj.metadata.name}.yaml`)).isFile,
        `${obj.kind} written to default/${schema.plural}/${obj.metadata.name}.yaml`,
      );
    }
    // a second store over the same directory reads the same objects
    const again = await createFileStore({ dir });
    try {
      for (const obj of objs) {
        const schema = allSchemas.find((s) => s.kind === obj.kind)!;
        const got = await again.get(schema.type, obj.metadata.name, "default");
        assert.deepEqual(got?.spec, obj.spec, `${obj.kind} read back`);
      }
      assert.deepEqual(again.errors(), []);
    } finally {
      await again.close();
    }
  });
});

Deno.test("createFileStore() reads multi-document files, skips unknown kinds, defaults the namespace", async () => {
  const files = {
    "a/two.yaml": `${VS("one")}---\napiVersion: v1\nkind: ConfigMap\nmetadata: { name: cm }\n---\n${
      VS("two", "two", "\n  namespace: team")
    }---\n`,
    "b.json": JSON.stringify({
      apiVersion: "networking.mesh.io/v1alpha3",
      kind: "DestinationRule",
      metadata: { name: "one" },
      spec: { host: "one" },
    }),
    "ignored.txt": VS("nope"),
    ".hidden.yaml": VS("hidden"),
  };
  await withStore(async (store) => {
    const vs = await store.list("virtualservice");
    assert.deepEqual(vs.map((o) => `${o.metadata.namespace}/${o.metadata.name}`), [
      "default/one",
      "team/two",
    ]);
    assert.equal(vs[0].apiVersion, "networking.mesh.io/v1alpha3");
    assert.equal((await store.get("destinationrule", "one", "default"))?.spec.host, "one");
    assert.deepEqual(store.errors(), []);
  }, files);
});

Deno.test("createFileStore() keeps loaded config when a file breaks and applies it once fixed", async () => {
  await withStore(async (store, dir) => {
    const rec = recordEvents(store);
    assert.ok(await store.get("virtualservice", "a", "default"));
    // a good second document plus a bad third one: nothing of the new content applies
    await Deno.writeTextFile(`${dir}/cfg.yaml`, `${VS("a", "a2")}---\n${VS("b")}---\n${BAD_VS}`);
    await until(() => store.errors().length > 0, 2000, "the error to be reported");
    assert.deepEqual(store.errors(), [{
      file: "cfg.yaml",
      document: 3,
      message: "cfg.yaml document 3: VirtualService/default/x: " +
        "spec.http[0].route[0].destination.host: is required",
    }]);
    assert.deepEqual((await store.get("virtualservice", "a", "default"))?.spec.hosts, ["a"]);
    assert.equal(await store.get("virtualservice", "b", "default"), undefined);
    // half-written file: a parse error, previous content still in force
    await Deno.writeTextFile(`${dir}/cfg.yaml`, `${VS("a", "a3")}---\nkind: [VirtualServ`);
    await until(() => store.errors()[0]?.message.includes("cannot parse"), 2000, "parse error");
    assert.match(store.errors()[0].message, /^cfg\.yaml document 2: cannot parse YAML: /);
    assert.deepEqual((await store.get("virtualservice", "a", "default"))?.spec.hosts, ["a"]);
    // other files still load meanwhile
    await Deno.writeTextFile(`${dir}/other.yaml`, VS("c"));
    await until(async () => !!(await store.get("virtualservice", "c", "default")), 2000, "c");
    // fixed: the new content applies, the error goes away
    await Deno.writeTextFile(`${dir}/cfg.yaml`, `${VS("a", "a4")}---\n${VS("b")}`);
    await until(() => store.errors().length === 0, 2000, "errors to clear");
    assert.deepEqual((await store.get("virtualservice", "a", "default"))?.spec.hosts, ["a4"]);
    assert.ok(await store.get("virtualservice", "b", "default"));
    assert.deepEqual(eventLines(rec.events), [
      "ADDED VirtualService/default/c",
      "MODIFIED VirtualService/default/a",
      "ADDED VirtualService/default/b",
    ]);
    rec.close();
  }, { "cfg.yaml": VS("a") });
});

// Each of the next three tests leaves one way of noticing a change fast and slows the others
// to a minute, so a change seen within the (generous) wait was seen by the way under test. How
// fast each way is belongs to the benchmarks, not to these tests.
Deno.test("createFileStore() sees new files through notifications", async () => {
  await withStore(
    async (store, dir) => {
      for (let i = 0; i < 5; i++) {
        await Deno.writeTextFile(`${dir}/new-${i}.yaml`, VS(`n${i}`));
        await until(async () => !!(await store.get("virtualservice", `n${i}`, "default")), 10_000);
      }
    },
    {},
    // neither the safety-net rescan nor polling can be what sees them
    { rescanMs: 60_000, pollMs: 60_000 },
  );
});

Deno.test("createFileStore() sees changes by polling when notifications are off", async () => {
  await withStore(
    async (store, dir) => {
      await Deno.writeTextFile(`${dir}/p.yaml`, VS("p"));
      await until(async () => !!(await store.get("virtualservice", "p", "default")), 10_000);
    },
    {},
    { watchFs: false, pollMs: 50, rescanMs: 60_000 },
  );
});

Deno.test("createFileStore() rescans every rescanMs for changes notifications miss", async () => {
  // A file behind a symbolic link to another directory: editing it in place notifies nobody
  // watching the config directory.
  const outside = await Deno.makeTempDir({ prefix: "mesh-filestore-outside-" });
  try {
    await Deno.writeTextFile(`${outside}/vs.yaml`, VS("out", "v1"));
    await withStore(
      async (store, dir) => {
        await Deno.symlink(`${outside}/vs.yaml`, `${dir}/vs.yaml`);
        await store.sync();
        assert.deepEqual((await store.get("virtualservice", "out", "default"))?.spec.hosts, ["v1"]);
        await Deno.writeTextFile(`${outside}/vs.yaml`, VS("out", "v2"));
        await until(
          async () =>
            ((await store.get("virtualservice", "out", "default"))?.spec.hosts as string[])[0] ===
              "v2",
          10_000,
          "the edit behind the link",
        );
      },
      {},
      { rescanMs: 300, pollMs: 60_000 },
    );
  } finally {
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("createFileStore() with watch: false reads once and sees changes only on sync()", async () => {
  await withStore(
    async (store, dir) => {
      assert.ok(await store.get("virtualservice", "a", "default"));
      await Deno.writeTextFile(`${dir}/b.yaml`, VS("b"));
      // no timers or watchers run (the test sanitizers check it); sync() rescans
      await store.sync();
      assert.ok(await store.get("virtualservice", "b", "default"));
      // writes rescan too
      await store.delete("virtualservice", "a", "default");
      assert.deepEqual((await store.list("virtualservice")).map((o) => o.metadata.name), ["b"]);
    },
    { "a.yaml": VS("a") },
    { watch: false },
  );
});

Deno.test("createFileStore() update and delete edit only their document, atomically", async () => {
  const userFile = `# team config, keep this comment
${VS("a")}---
# the second one
${VS("b")}---
apiVersion: networking.mesh.io/v1alpha3
kind: DestinationRule
metadata: { name: a }   # inline comment
spec: { host: a }
`;
  await withStore(async (store, dir) => {
    const a = (await store.get("virtualservice", "a", "default"))!;
    const b = (await store.get("virtualservice", "b", "default"))!;
    const updated = await store.update(withLabel(a, "edited", "yes"));
    assert.equal(updated.metadata.labels?.edited, "yes");
    assert.notEqual(updated.metadata.resourceVersion, a.metadata.resourceVersion);
    const text = await Deno.readTextFile(`${dir}/team.yaml`);
    assert.ok(text.startsWith("# team config, keep this comment\n"), text);
    assert.ok(text.includes(`---\n# the second one\n${VS("b")}---\n`), text);
    assert.ok(text.includes("metadata: { name: a }   # inline comment"), text);
    assert.match(text, /edited: "?yes"?/);
    // stale version
    await assert.rejects(store.update(withLabel(a, "edited", "again")), ConflictError);
    // unchanged content keeps its version
    assert.equal(
      (await store.get("virtualservice", "b", "default"))!.metadata.resourceVersion,
      b.metadata.resourceVersion,
    );
    await store.delete("virtualservice", "b", "default");
    const after = await Deno.readTextFile(`${dir}/team.yaml`);
    assert.ok(!after.includes("name: b"), after);
    assert.ok(after.includes("# inline comment"), after);
    assert.equal(await store.get("virtualservice", "b", "default"), undefined);
    assert.ok(await store.get("virtualservice", "a", "default"));
    assert.ok(await store.get("destinationrule", "a", "default"));
    await assert.rejects(store.delete("virtualservice", "b", "default"), NotFoundError);
    // deleting the last objects removes the file; no temp files anywhere
    await store.delete("virtualservice", "a", "default");
    await store.delete("destinationrule", "a", "default");
    assert.deepEqual(await listFiles(dir), []);
  }, { "team.yaml": userFile });
});

Deno.test("createFileStore() create refuses existing objects and invalid ones", async () => {
  await withStore(async (store, dir) => {
    const vs = await fixture("VirtualService");
    await store.create(vs);
    await assert.rejects(store.create(vs), ConflictError);
    const bad = structuredClone(vs);
    bad.metadata.name = "bad";
    bad.spec = { hosts: [] };
    await assert.rejects(store.create(bad), ValidationError);
    assert.deepEqual(await listFiles(dir), ["default/virtualservices/reviews.yaml"]);
    // a created file in JSON format is edited as JSON
    await Deno.writeTextFile(
      `${dir}/j.json`,
      JSON.stringify({ ...vs, metadata: { name: "j" }, apiVersion: "networking.mesh.io/v1alpha3" }),
    );
    await store.sync();
    const j = (await store.get("virtualservice", "j", "default"))!;
    await store.update(withLabel(j, "k", "v"));
    const parsed = JSON.parse(await Deno.readTextFile(`${dir}/j.json`));
    assert.equal(parsed.metadata.labels.k, "v");
    assert.equal(parsed.metadata.resourceVersion, undefined);
  });
});

Deno.test("createFileStore() reports duplicates and lets the first file in path order win", async () => {
  await withStore(async (store, dir) => {
    assert.deepEqual((await store.get("virtualservice", "d", "default"))?.spec.hosts, ["first"]);
    assert.deepEqual(store.errors(), [{
      file: "2.yaml",
      document: 1,
      message:
        "2.yaml document 1: VirtualService/default/d: duplicate of 1.yaml document 1 (ignored)",
    }]);
    await Deno.remove(`${dir}/1.yaml`);
    await store.sync();
    assert.deepEqual((await store.get("virtualservice", "d", "default"))?.spec.hosts, ["second"]);
    assert.deepEqual(store.errors(), []);
  }, { "1.yaml": VS("d", "first"), "2.yaml": VS("d", "second") });
});

Deno.test("createFileStore() emits events only for real changes", async () => {
  await withStore(async (store, dir) => {
    const rec = recordEvents(store);
    // same content, different formatting and key order
    const same = stringify({
      spec: { http: [{ route: [{ destination: { host: "a" } }] }], hosts: ["a"] },
      metadata: { namespace: "default", name: "a" },
      kind: "VirtualService",
      apiVersion: "networking.mesh.io/v1alpha3",
    });
    await Deno.writeTextFile(`${dir}/a.yaml`, same);
    await store.sync();
    await Deno.writeTextFile(`${dir}/a.yaml`, VS("a", "a2"));
    await store.sync();
    await Deno.remove(`${dir}/a.yaml`);
    await store.sync();
    assert.deepEqual(eventLines(rec.events), [
      "MODIFIED VirtualService/default/a",
      "DELETED VirtualService/default/a",
    ]);
    rec.close();
  }, { "a.yaml": VS("a") });
});

Deno.test("createFileStore() fails clearly on a missing directory", async () => {
  await assert.rejects(
    createFileStore({ dir: "/nonexistent/mesh-config" }),
    /Cannot use config directory "\/nonexistent\/mesh-config"/,
  );
});

Deno.test("createFileStore() refuses a file, and poll or rescan periods that are not positive", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-filestore-" });
  try {
    await Deno.writeTextFile(`${dir}/f.yaml`, "");
    await assert.rejects(
      createFileStore({ dir: `${dir}/f.yaml` }),
      new RegExp(`^Error: Cannot use config directory "${dir}/f.yaml": not a directory$`),
    );
    for (const bad of [0, -5, NaN, Infinity]) {
      await assert.rejects(
        createFileStore({ dir, pollMs: bad }),
        new RegExp(`^Error: Invalid file store pollMs ${bad}: must be a positive number$`),
      );
      await assert.rejects(
        createFileStore({ dir, rescanMs: bad }),
        new RegExp(`^Error: Invalid file store rescanMs ${bad}: must be a positive number$`),
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createFileStore() follows a mounted config map's symlinks and sees its swaps", async () => {
  await withStore(async (store, dir) => {
    await Deno.mkdir(`${dir}/..2024_01`);
    await Deno.writeTextFile(`${dir}/..2024_01/vs.yaml`, VS("cm", "v1"));
    await Deno.symlink("..2024_01", `${dir}/..data`);
    await Deno.symlink("..data/vs.yaml", `${dir}/vs.yaml`);
    await store.sync();
    assert.deepEqual((await store.list("virtualservice")).map((o) => o.spec.hosts), [["v1"]]);
    // the kubelet's update: a new timestamped directory, ..data relinked atomically
    await Deno.mkdir(`${dir}/..2024_02`);
    await Deno.writeTextFile(`${dir}/..2024_02/vs.yaml`, VS("cm", "v2"));
    await Deno.symlink("..2024_02", `${dir}/..data_tmp`);
    await Deno.rename(`${dir}/..data_tmp`, `${dir}/..data`);
    await Deno.remove(`${dir}/..2024_01`, { recursive: true });
    await until(
      async () =>
        ((await store.get("virtualservice", "cm", "default"))?.spec.hosts as string[])[0] === "v2",
      1000,
      "the swapped content",
    );
    assert.deepEqual(store.errors(), []);
  });
});

Deno.test("createFileStore() logs file problems to the injected logger, and nowhere with log: false", async () => {
  const vs = await fixture("VirtualService");
  const bad = stringify({ ...vs, metadata: { name: "bad" }, spec: { hosts: "x" } });
  const dir = await Deno.makeTempDir({ prefix: "mesh-filestore-" });
  try {
    await Deno.writeTextFile(`${dir}/bad.yaml`, bad);
    const lines: string[] = [];
    const log = {
      debug: (m: string) => void lines.push(`debug ${m}`),
      info: (m: string) => void lines.push(`info ${m}`),
      warn: (m: string) => void lines.push(`warn ${m}`),
      error: (m: string) => void lines.push(`error ${m}`),
    };
    const logged = await createFileStore({ dir, log, watchFs: false });
    await logged.close();
    assert.deepEqual(lines, [
      'error Config file error (nothing of it applies): bad.yaml document 1: VirtualService/default/bad: spec.hosts: must be a list, got string "x"',
    ]);
    const silent = await createFileStore({ dir, log: false, watchFs: false });
    assert.equal(silent.errors().length, 1);
    await silent.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createFileStore() derives resourceVersion from content: the same in another store, changed only by an edit", async () => {
  const vs = await fixture("VirtualService");
  const named = (name: string) => ({ ...vs, metadata: { ...vs.metadata, name } });
  await withStore(async (store, dir) => {
    const a = await store.create(named("a"));
    const b = await store.create(named("b"));
    const other = await createFileStore({ dir, watchFs: false });
    try {
      assert.equal(
        (await other.get("virtualservice", a.metadata.name, "default"))!.metadata.resourceVersion,
        a.metadata.resourceVersion,
      );
      assert.match(a.metadata.resourceVersion!, /^[0-9a-f]{12}$/);
      // an update through the other store changes b's version only
      const b2 = await other.update({ ...b, spec: { ...b.spec, hosts: ["changed"] } });
      assert.notEqual(b2.metadata.resourceVersion, b.metadata.resourceVersion);
      await store.sync();
      assert.equal(
        (await store.get("virtualservice", b.metadata.name, "default"))!.metadata.resourceVersion,
        b2.metadata.resourceVersion,
      );
      assert.equal(
        (await store.get("virtualservice", a.metadata.name, "default"))!.metadata.resourceVersion,
        a.metadata.resourceVersion,
      );
      // the version read before the other store's update is stale
      await assert.rejects(() => store.update(b), ConflictError);
    } finally {
      await other.close();
    }
  });
});

Deno.test("createFileStore(): a self-referencing alias costs only its own file; later changes apply", async () => {
  await withStore(async (store, dir) => {
    const bad = "apiVersion: config.mesh.io/v1alpha2\nkind: denier\nmetadata: {name: d}\n" +
      "spec:\n  custom: &c [*c]\n";
    await Deno.writeTextFile(`${dir}/bad.yaml`, bad);
    await until(() => store.errors().length > 0, 2000, "the error to be reported");
    assert.deepEqual(store.errors().map((e) => e.message), [
      "bad.yaml document 1: denier/default/d: spec.custom[0]: contains itself " +
      "(a YAML alias inside its own anchor)",
    ]);
    // the pipeline keeps going: a VirtualService written afterwards is applied
    await Deno.writeTextFile(`${dir}/later.yaml`, VS("later"));
    await until(async () => !!(await store.get("virtualservice", "later", "default")), 2000);
    assert.equal(store.stalled(), undefined);
  }, { "cfg.yaml": VS("a") });
});

Deno.test("createFileStore() refuses a file over maxFileBytes, naming it; its objects stay", async () => {
  await withStore(
    async (store, dir) => {
      await Deno.writeTextFile(`${dir}/cfg.yaml`, VS("a", "a2") + "#" + "x".repeat(5000) + "\n");
      await until(() => store.errors().length > 0, 2000, "the error to be reported");
      assert.match(
        store.errors()[0].message,
        /^cfg\.yaml: \d+ bytes is more than the 4096-byte limit of a config file \(split it/,
      );
      assert.deepEqual((await store.get("virtualservice", "a", "default"))?.spec.hosts, ["a"]);
    },
    { "cfg.yaml": VS("a") },
    { maxFileBytes: 4096 },
  );
});

Deno.test("createFileStore() keeps documents of a file rewritten in place until it is quiet", async () => {
  await withStore(
    async (store, dir) => {
      const rec = recordEvents(store);
      // truncate then write, pausing at a document boundary: nothing vanishes meanwhile
      await Deno.writeTextFile(`${dir}/cfg.yaml`, "");
      await store.sync();
      await Deno.writeTextFile(`${dir}/cfg.yaml`, VS("a", "a2"));
      await until(async () =>
        JSON.stringify((await store.get("virtualservice", "a", "default"))?.spec.hosts) === `["a2"]`
      );
      assert.ok(
        await store.get("virtualservice", "b", "default"),
        "b is held while the file settles",
      );
      await new Promise((r) => setTimeout(r, 100));
      await store.sync();
      assert.ok(await store.get("virtualservice", "b", "default"), "b is still held");
      // once quiet for removalQuietMs, the removal applies
      await until(
        async () => !(await store.get("virtualservice", "b", "default")),
        3000,
        "b to go",
      );
      assert.deepEqual(eventLines(rec.events), [
        "MODIFIED VirtualService/default/a",
        "DELETED VirtualService/default/b",
      ]);
      rec.close();
    },
    { "cfg.yaml": `${VS("a")}---\n${VS("b")}` },
    { removalQuietMs: 600 },
  );
});

Deno.test("createFileStore() stalled() tells when the directory cannot be read", async () => {
  await withStore(
    async (store, dir) => {
      assert.equal(store.stalled(), undefined);
      await Deno.rename(dir, `${dir}-moved`);
      try {
        await store.sync();
        assert.match(store.stalled() ?? "", /^Cannot read config directory /);
      } finally {
        await Deno.rename(`${dir}-moved`, dir);
      }
      await store.sync();
      assert.equal(store.stalled(), undefined);
    },
    { "cfg.yaml": VS("a") },
    { watchFs: false },
  );
});

Deno.test("createFileStore() writes by replacing the file: a reader holding the old file sees it whole, the mode is kept", async () => {
  const text = `${VS("a")}---\n${VS("b")}`;
  await withStore(async (store, dir) => {
    const path = `${dir}/team.yaml`;
    // 0o660, not 0o640: the umask (022) would turn a file created with 0o660 into 0o640.
    await Deno.chmod(path, 0o660);
    /** Opens the file as a reader would, then runs `edit`: the open file must still read whole. */
    const check = async (edit: () => Promise<unknown>) => {
      const before = await Deno.readTextFile(path);
      const { ino } = await Deno.stat(path);
      const reader = await Deno.open(path);
      await edit();
      // Written in place, the open file would show the truncated or new text instead.
      assert.equal(await new Response(reader.readable).text(), before);
      const after = await Deno.stat(path);
      assert.notEqual(after.ino, ino, "a new file was renamed over the old one");
      assert.equal(after.mode! & 0o777, 0o660, "the mode is kept");
      assert.deepEqual(await listFiles(dir), ["team.yaml"], "no temporary file is left");
    };
    const a = (await store.get("virtualservice", "a", "default"))!;
    await check(() => store.update(withLabel(a, "edited", "yes")));
    await check(() => store.delete("virtualservice", "b", "default"));
    assert.match(await Deno.readTextFile(path), /edited: "?yes"?/);
    // A new file gets the usual mode (owner read-write), not the mode of an absent one.
    await store.create({ ...a, metadata: { name: "c", namespace: "default" } });
    const files = (await listFiles(dir)).filter((f) => f !== "team.yaml");
    assert.equal(files.length, 1, `one new file: ${files}`);
    assert.equal((await Deno.stat(`${dir}/${files[0]}`)).mode! & 0o600, 0o600);
  }, { "team.yaml": text });
});
