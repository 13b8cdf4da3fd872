// The file store's scanning rules, each seen as a user of `--configDir` would: which files and
// documents load, what errors() and the log say, and when a changed file is read again. File
// times are set with Deno.utime, so no test depends on how fast it runs.
import assert from "node:assert/strict";
import { allSchemas } from "../model/mod.ts";
import { createFileStore, type FileStore, type FileStoreOptions } from "./file.ts";
import {
  eventLines,
  recordEvents,
  recordingLogger,
  until,
  vsYaml,
  withFilesDir,
} from "./_testutil.ts";

function withDir(
  files: Record<string, string>,
  fn: (dir: string) => Promise<void>,
): Promise<void> {
  return withFilesDir("mesh-filescan-", files, fn);
}

async function open(dir: string, opts: Partial<FileStoreOptions> = {}): Promise<FileStore> {
  return await createFileStore({ dir, watch: false, log: false, ...opts });
}

const hosts = async (store: FileStore, name: string) =>
  (await store.get("virtualservice", name, "default"))?.spec.hosts;

Deno.test("file store: an empty directory has no errors and no objects", async () => {
  await withDir({ "notes.txt": "not config" }, async (dir) => {
    const store = await open(dir);
    try {
      assert.deepEqual(store.errors(), []);
      assert.deepEqual(await store.list("virtualservice"), []);
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: a directory reached twice through links, or a link loop, is read once", async () => {
  await withDir({ "sub/x.yaml": vsYaml("x") }, async (dir) => {
    await Deno.symlink("sub", `${dir}/again`);
    await Deno.symlink(".", `${dir}/sub/loop`);
    const store = await open(dir);
    try {
      // read twice, x would be reported as its own duplicate
      assert.deepEqual(store.errors(), []);
      assert.deepEqual((await store.list("virtualservice")).map((o) => o.metadata.name), ["x"]);
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: among duplicates the first file in sorted path order wins, errors in path order", async () => {
  const names = ["m", "c", "x", "a", "q", "h", "t", "e", "b/z", "b/a"];
  const files = Object.fromEntries(
    names.map((n) => [`${n}.yaml`, vsYaml("d", n.replace("/", "-"))]),
  );
  await withDir(files, async (dir) => {
    const store = await open(dir);
    try {
      assert.deepEqual(await hosts(store, "d"), ["a"]);
      assert.deepEqual(store.errors().map((e) => e.file), [
        "b/a.yaml",
        "b/z.yaml",
        "c.yaml",
        "e.yaml",
        "h.yaml",
        "m.yaml",
        "q.yaml",
        "t.yaml",
        "x.yaml",
      ]);
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: documents that are no object are errors; unknown and not-held kinds are skipped, logged", async () => {
  const files = {
    "a.yaml": `hello\n---\n- 1\n- 2\n---\n${vsYaml("ok")}---\n---\n`,
    "b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n" +
      "apiVersion: networking.mesh.io/v1alpha3\nkind: DestinationRule\n" +
      "metadata: {name: d}\nspec: {host: d}\n---\nkind: Foo\nmetadata: {name: f}\n---\nkind: Bar\n",
    "c.yaml": "apiVersion: networking.mesh.io/v1alpha3\nmetadata: {name: k}\nspec: {}\n",
  };
  await withDir(files, async (dir) => {
    const { lines, log } = recordingLogger();
    const store = await open(dir, {
      log,
      schemas: allSchemas.filter((s) => s.kind === "VirtualService"),
    });
    try {
      const shape = "must be an object with apiVersion, kind, metadata and spec";
      assert.deepEqual(store.errors(), [
        { file: "a.yaml", document: 1, message: `a.yaml document 1: ${shape}` },
        { file: "a.yaml", document: 2, message: `a.yaml document 2: ${shape}` },
        // no kind: an error, not an unknown kind to skip
        { file: "c.yaml", document: 1, message: "c.yaml document 1: kind: is required" },
      ]);
      assert.deepEqual(lines, [
        `error Config file error (nothing of it applies): a.yaml document 1: ${shape}`,
        `error Config file error (nothing of it applies): a.yaml document 2: ${shape}`,
        'warn Skipping b.yaml document 1: unknown kind "ConfigMap" (apiVersion "v1")',
        'debug Skipping b.yaml document 2: kind "DestinationRule" is not held here',
        'warn Skipping b.yaml document 3: unknown kind "Foo" (apiVersion "")',
        // an unknown kind with other problems too is still skipped
        'warn Skipping b.yaml document 4: unknown kind "Bar" (apiVersion "")',
        "error Config file error (nothing of it applies): c.yaml document 1: kind: is required",
      ]);
      assert.equal(await hosts(store, "ok"), undefined, "a file with errors applies nothing");
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: the log tells when a broken file keeps its previous content and when it is valid again", async () => {
  await withDir({ "a.yaml": vsYaml("a") }, async (dir) => {
    const { lines, log } = recordingLogger();
    const store = await open(dir, { log });
    try {
      await Deno.writeTextFile(`${dir}/a.yaml`, "kind: [x");
      await store.sync();
      await Deno.writeTextFile(`${dir}/a.yaml`, vsYaml("a", "a2"));
      await store.sync();
      assert.equal(lines.length, 2, lines.join("\n"));
      assert.match(
        lines[0],
        /^error Config file error \(its previous content stays in force\): a\.yaml document 1: cannot parse YAML: /,
      );
      assert.equal(lines[1], "info Config file a.yaml is valid again");
      assert.deepEqual(await hosts(store, "a"), ["a2"]);
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: an unreadable directory is one error with no file, logged once", async () => {
  await withDir({ "a.yaml": vsYaml("a") }, async (dir) => {
    const { lines, log } = recordingLogger();
    const store = await open(dir, { log });
    try {
      await Deno.rename(dir, `${dir}-moved`);
      try {
        await store.sync();
        await store.sync();
        await store.sync();
      } finally {
        await Deno.rename(`${dir}-moved`, dir);
      }
      const message = `Cannot read config directory "${dir}": No such file or directory ` +
        `(os error 2): realpath '${dir}'`;
      assert.deepEqual(lines, [`error ${message}`]);
      assert.deepEqual(store.errors(), [{ file: "", message }]);
      assert.deepEqual(await hosts(store, "a"), ["a"], "what was loaded stays in force");
      await store.sync();
      assert.deepEqual(store.errors(), []);
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: a file of exactly maxFileBytes is read", async () => {
  const text = vsYaml("a");
  await withDir({ "a.yaml": text }, async (dir) => {
    const store = await open(dir, { maxFileBytes: new TextEncoder().encode(text).length });
    try {
      assert.deepEqual(store.errors(), []);
      assert.deepEqual(await hosts(store, "a"), ["a"]);
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: a changed file is read again whatever its time says", async () => {
  // Same size each time (hosts of one letter), so only the time and the inode tell a change.
  const hour = 3600_000;
  await withDir({ "a.yaml": vsYaml("a", "p") }, async (dir) => {
    const path = `${dir}/a.yaml`;
    const old = new Date(Date.now() - hour);
    await Deno.utime(path, old, old);
    const store = await open(dir);
    try {
      assert.deepEqual(await hosts(store, "a"), ["p"]);
      // rewritten in place, its time set back to another old time (as `touch -d`, `cp -p` do)
      await Deno.writeTextFile(path, vsYaml("a", "q"));
      const older = new Date(old.getTime() - 1000);
      await Deno.utime(path, older, older);
      await store.sync();
      assert.deepEqual(await hosts(store, "a"), ["q"], "an old time, but another one");
      // replaced by another file (rename) with the same old time and size: another inode
      await Deno.writeTextFile(`${dir}/.new`, vsYaml("a", "r"));
      await Deno.utime(`${dir}/.new`, older, older);
      await Deno.rename(`${dir}/.new`, path);
      await store.sync();
      assert.deepEqual(await hosts(store, "a"), ["r"], "the same time, but another file");
      // a time in the future (a skewed clock): rewritten in place keeping it, still read
      const future = new Date(Date.now() + hour);
      await Deno.utime(path, future, future);
      await store.sync();
      await Deno.writeTextFile(path, vsYaml("a", "s"));
      await Deno.utime(path, future, future);
      await store.sync();
      assert.deepEqual(await hosts(store, "a"), ["s"], "the same future time and size");
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: by default a document gone from a file just rewritten stays until it is quiet", async () => {
  await withDir({ "a.yaml": `${vsYaml("a")}---\n${vsYaml("b")}` }, async (dir) => {
    const store = await createFileStore({ dir, log: false, watchFs: false, pollMs: 60_000 });
    try {
      const rec = recordEvents(store);
      // rewritten in place a moment ago, without b: b is held for REMOVAL_QUIET_MS (2 s)
      await Deno.writeTextFile(`${dir}/a.yaml`, vsYaml("a", "a2"));
      await store.sync();
      assert.deepEqual(await hosts(store, "a"), ["a2"]);
      assert.deepEqual(await hosts(store, "b"), ["b"]);
      assert.deepEqual(store.errors(), [], "holding is no error");
      // changed again while b is held: the change applies at once, b is still held
      await Deno.writeTextFile(`${dir}/a.yaml`, vsYaml("a", "a3"));
      await store.sync();
      assert.deepEqual(await hosts(store, "a"), ["a3"]);
      assert.deepEqual(await hosts(store, "b"), ["b"]);
      assert.deepEqual(eventLines(rec.events), [
        "MODIFIED VirtualService/default/a",
        "MODIFIED VirtualService/default/a",
      ]);
      // a file whose time is in the future (a skewed clock) is not "just rewritten": no hold
      await Deno.writeTextFile(`${dir}/f.yaml`, `${vsYaml("c")}---\n${vsYaml("d")}`);
      const future = new Date(Date.now() + 3600_000);
      await Deno.utime(`${dir}/f.yaml`, future, future);
      await store.sync();
      await Deno.writeTextFile(`${dir}/f.yaml`, vsYaml("c"));
      await Deno.utime(`${dir}/f.yaml`, future, future);
      await store.sync();
      assert.equal(await hosts(store, "d"), undefined);
      assert.deepEqual(eventLines(rec.events).slice(2), [
        "ADDED VirtualService/default/c",
        "ADDED VirtualService/default/d",
        "DELETED VirtualService/default/d",
      ]);
      rec.close();
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: a held removal applies by itself once the file is quiet, with no poll or notification", async () => {
  await withDir({ "a.yaml": `${vsYaml("a")}---\n${vsYaml("b")}` }, async (dir) => {
    const store = await createFileStore({
      dir,
      log: false,
      watchFs: false,
      pollMs: 600_000,
      removalQuietMs: 1500,
    });
    try {
      await Deno.writeTextFile(`${dir}/a.yaml`, vsYaml("a"));
      await store.sync();
      assert.deepEqual(await hosts(store, "b"), ["b"], "held while the file may be rewritten");
      // nothing but the store's own timer rescans now
      await until(async () => (await hosts(store, "b")) === undefined, 20_000, "b to go");
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: a file over the size limit, and duplicates, are logged once however often scanned", async () => {
  const files = { "a.yaml": vsYaml("d"), "b.yaml": vsYaml("d", "other") };
  await withDir(files, async (dir) => {
    const { lines, log } = recordingLogger();
    const store = await open(dir, { log, maxFileBytes: 1024 });
    try {
      await Deno.writeTextFile(`${dir}/big.yaml`, `${vsYaml("big")}#${"x".repeat(2000)}\n`);
      await store.sync();
      await store.sync();
      await store.sync();
      const big = "big.yaml: 2160 bytes is more than the 1024-byte limit of a config file " +
        "(split it into several files)";
      const dup = "b.yaml document 1: VirtualService/default/d: duplicate of a.yaml document 1 " +
        "(ignored)";
      assert.deepEqual(lines, [`error Config file error: ${dup}`, `error ${big}`]);
      assert.deepEqual(store.errors(), [
        { file: "big.yaml", message: big },
        { file: "b.yaml", document: 1, message: dup },
      ]);
      assert.equal(await hosts(store, "big"), undefined, "nothing of it applies");
      assert.deepEqual(await hosts(store, "d"), ["d"]);
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: the events of one scan come sorted by type, namespace and name", async () => {
  await withDir({ "m.yaml": vsYaml("mm") }, async (dir) => {
    const store = await open(dir);
    try {
      const rec = recordEvents(store);
      await Deno.writeTextFile(`${dir}/1.yaml`, vsYaml("zz"));
      await Deno.writeTextFile(`${dir}/2.yaml`, vsYaml("aa"));
      await Deno.writeTextFile(
        `${dir}/3.yaml`,
        "apiVersion: networking.mesh.io/v1alpha3\nkind: DestinationRule\n" +
          "metadata: {name: x}\nspec: {host: x}\n",
      );
      await Deno.remove(`${dir}/m.yaml`);
      // written an hour ago: settled, so one scan sees all four changes
      const old = new Date(Date.now() - 3600_000);
      for (const f of ["1", "2", "3"]) await Deno.utime(`${dir}/${f}.yaml`, old, old);
      await store.sync();
      assert.deepEqual(eventLines(rec.events), [
        "ADDED DestinationRule/default/x",
        "ADDED VirtualService/default/aa",
        "DELETED VirtualService/default/mm",
        "ADDED VirtualService/default/zz",
      ]);
      rec.close();
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: once closed, sync() no longer reads the directory", async () => {
  await withDir({ "a.yaml": vsYaml("a") }, async (dir) => {
    const store = await open(dir);
    await store.close();
    await Deno.writeTextFile(`${dir}/b.yaml`, vsYaml("b"));
    const old = new Date(Date.now() - 3600_000);
    await Deno.utime(`${dir}/b.yaml`, old, old);
    await store.sync();
    assert.equal(await hosts(store, "b"), undefined);
    assert.deepEqual(await hosts(store, "a"), ["a"]);
  });
});

Deno.test("file store: notifications cover files in subdirectories", async () => {
  await withDir({ "team/a.yaml": vsYaml("a") }, async (dir) => {
    // neither the safety-net rescan nor polling can be what sees it
    const store = await createFileStore({ dir, log: false, rescanMs: 600_000, pollMs: 600_000 });
    try {
      await Deno.writeTextFile(`${dir}/team/b.yaml`, vsYaml("b"));
      await until(async () => (await hosts(store, "b")) !== undefined, 20_000, "b by notification");
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: polling goes on after the first poll, and closing logs nothing", async () => {
  await withDir({}, async (dir) => {
    const { lines, log } = recordingLogger();
    const store = await createFileStore({
      dir,
      log,
      watchFs: false,
      pollMs: 20,
      rescanMs: 600_000,
    });
    try {
      for (const name of ["p", "q", "r"]) {
        await Deno.writeTextFile(`${dir}/${name}.yaml`, vsYaml(name));
        await until(async () => (await hosts(store, name)) !== undefined, 20_000, name);
      }
    } finally {
      await store.close();
    }
    const notified = await createFileStore({ dir, log });
    await notified.close();
    assert.deepEqual(lines, []);
  });
});

/**
 * Runs `fn` with Deno.watchFs replaced: `watcher` gives what the store's watcher yields (it may
 * throw or end), or Deno.watchFs throws `fails`.
 */
async function withFakeWatchFs(
  opts: { fails?: Error; events?: () => AsyncGenerator<Deno.FsEvent> },
  fn: () => Promise<void>,
): Promise<void> {
  const real = Deno.watchFs;
  Deno.watchFs = (() => {
    if (opts.fails) throw opts.fails;
    return {
      close() {},
      [Symbol.asyncIterator]: opts.events!,
    } as unknown as Deno.FsWatcher;
  }) as typeof Deno.watchFs;
  try {
    await fn();
  } finally {
    Deno.watchFs = real;
  }
}

/** Opens a store (notifications wanted, safety-net rescan off) and checks that polling sees changes. */
async function pollsAfter(
  dir: string,
  log: ReturnType<typeof recordingLogger>["log"],
  after = () => {},
) {
  const store = await createFileStore({ dir, log, pollMs: 20, rescanMs: 600_000 });
  try {
    after();
    for (const name of ["p", "q"]) {
      await Deno.writeTextFile(`${dir}/${name}.yaml`, vsYaml(name));
      await until(async () => (await hosts(store, name)) !== undefined, 20_000, name);
    }
  } finally {
    await store.close();
  }
}

Deno.test("file store: without file notifications it says so and polls every pollMs", async () => {
  await withDir({}, async (dir) => {
    const { lines, log } = recordingLogger();
    await withFakeWatchFs({ fails: new Error("too many watches") }, () => pollsAfter(dir, log));
    assert.deepEqual(lines, [
      `warn No file notifications for "${dir}" (polling only): too many watches`,
    ]);
  });
});

Deno.test("file store: when notifications end or fail it says why and polls every pollMs from then on", async () => {
  for (const failure of [undefined, "inotify gone"]) {
    await withDir({}, async (dir) => {
      const { lines, log } = recordingLogger();
      let stop!: () => void;
      const stopped = new Promise<void>((r) => stop = r);
      // the watcher ends (or fails) once the store is open, its safety-net rescan armed
      const events = async function* (): AsyncGenerator<Deno.FsEvent> {
        await stopped;
        if (failure) throw new Error(failure);
        yield* [];
      };
      await withFakeWatchFs({ events }, () => pollsAfter(dir, log, stop));
      assert.deepEqual(lines, [
        `warn File notifications for "${dir}" stopped (polling every 20 ms): ${
          failure ?? "the watcher ended"
        }`,
      ]);
    });
  }
});

Deno.test("file store: reads .yaml, .yml and .json files in any case, nothing else", async () => {
  const files = {
    "a.yml": vsYaml("a"),
    "b.YAML": vsYaml("b"),
    "c.Json": JSON.stringify({
      apiVersion: "networking.mesh.io/v1alpha3",
      kind: "DestinationRule",
      metadata: { name: "c" },
      spec: { host: "c" },
    }),
    "d.yaml.orig": vsYaml("d"),
    "e.yaml~": vsYaml("e"),
    "f.jsonl": vsYaml("f"),
  };
  await withDir(files, async (dir) => {
    const store = await open(dir);
    try {
      assert.deepEqual((await store.list("virtualservice")).map((o) => o.metadata.name), [
        "a",
        "b",
      ]);
      assert.ok(await store.get("destinationrule", "c", "default"));
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: a file over the limit that is then emptied is read again: no error, nothing in force", async () => {
  await withDir({ "a.yaml": `${vsYaml("a")}#${"x".repeat(2000)}\n` }, async (dir) => {
    const store = await open(dir, { maxFileBytes: 1024 });
    try {
      assert.equal(store.errors().length, 1);
      await Deno.writeTextFile(`${dir}/a.yaml`, "");
      const old = new Date(Date.now() - 3600_000);
      await Deno.utime(`${dir}/a.yaml`, old, old);
      await store.sync();
      assert.deepEqual(store.errors(), []);
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: a file larger than the read buffer (64 KiB) is read whole", async () => {
  const comment = `# ${"long line of notes ".repeat(60)}\n`.repeat(80);
  await withDir({ "a.yaml": `${comment}${vsYaml("a", "whole")}${comment}` }, async (dir) => {
    assert.ok((await Deno.stat(`${dir}/a.yaml`)).size > 2 * 64 * 1024);
    const store = await open(dir);
    try {
      assert.deepEqual(store.errors(), []);
      assert.deepEqual(await hosts(store, "a"), ["whole"]);
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: links added while it watches are followed by later scans", async () => {
  await withDir({ "real/x.yaml": vsYaml("x") }, async (dir) => {
    const store = await createFileStore({ dir, log: false, watchFs: false, pollMs: 600_000 });
    try {
      await Deno.symlink("real/x.yaml", `${dir}/link.yaml`);
      await Deno.symlink("nowhere.yaml", `${dir}/dangling.yaml`);
      await store.sync();
      // x read through the link too (first in path order): real/x.yaml is its duplicate
      assert.deepEqual(store.errors().map((e) => e.file), ["real/x.yaml"]);
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: a file renamed with a new object in one scan: the old object goes, the new one comes", async () => {
  await withDir({ "a.yaml": vsYaml("a") }, async (dir) => {
    const store = await open(dir);
    try {
      await Deno.remove(`${dir}/a.yaml`);
      await Deno.writeTextFile(`${dir}/b.yaml`, vsYaml("b"));
      const old = new Date(Date.now() - 3600_000);
      await Deno.utime(`${dir}/b.yaml`, old, old);
      await store.sync();
      assert.deepEqual((await store.list("virtualservice")).map((o) => o.metadata.name), ["b"]);
      assert.equal(store.stalled(), undefined);
    } finally {
      await store.close();
    }
  });
});

Deno.test("file store: the first scan follows links to files", async () => {
  await withDir({ "real/x.yaml": vsYaml("x") }, async (dir) => {
    await Deno.symlink("real/x.yaml", `${dir}/link.yaml`);
    const store = await open(dir);
    try {
      // x read through the link too (first in path order): real/x.yaml is its duplicate
      assert.deepEqual(store.errors().map((e) => e.file), ["real/x.yaml"]);
    } finally {
      await store.close();
    }
  });
});
