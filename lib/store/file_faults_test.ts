// The file store under faults the file system rarely gives (and never to root, who runs these
// tests): errors of stat, open and read, a file growing while read, a failed rename, a scan that
// takes long. Each is made by replacing one Deno function for the time of the test.
import assert from "node:assert/strict";
import { createFileStore, type FileStore } from "./file.ts";
import {
  recordingLogger,
  vsYaml,
  withFilesDir,
  withJustRewritten,
  withLabel,
} from "./_testutil.ts";

type Fns = Record<string, unknown>;

/** Runs `body` with `Deno[name]` replaced by `make(original)`. */
async function replaced<T>(
  name: string,
  make: (original: (...args: unknown[]) => unknown) => unknown,
  body: () => Promise<T>,
): Promise<T> {
  const d = Deno as unknown as Fns;
  const original = d[name] as (...args: unknown[]) => unknown;
  d[name] = make(original.bind(Deno));
  try {
    return await body();
  } finally {
    d[name] = original;
  }
}

/** A directory of settled files (written an hour ago) and a store (no watcher) over it. */
function withStore(
  files: Record<string, string>,
  fn: (store: FileStore, dir: string) => Promise<void>,
  opts: Partial<Parameters<typeof createFileStore>[0]> = {},
): Promise<void> {
  return withFilesDir("mesh-filefault-", files, async (dir) => {
    const store = await createFileStore({ dir, watch: false, log: false, ...opts });
    try {
      await fn(store, dir);
    } finally {
      await store.close();
    }
  }, { settled: true });
}

/** Touches a file so that the next scan reads it again (a new, settled time). */
async function touch(path: string) {
  const t = new Date(Date.now() - 1800_000);
  await Deno.utime(path, t, t);
}

const names = async (store: FileStore) =>
  (await store.list("virtualservice")).map((o) => o.metadata.name);

Deno.test("file store: a file that cannot be stat'ed or opened keeps its objects, with an error naming it", async () => {
  await withStore({ "a.yaml": vsYaml("a"), "b.yaml": vsYaml("b") }, async (store, dir) => {
    await touch(`${dir}/b.yaml`);
    await replaced("statSync", (statSync) => (path: string) => {
      if (path.endsWith("/b.yaml")) throw new Deno.errors.PermissionDenied("stat denied");
      return statSync(path);
    }, () => store.sync());
    assert.deepEqual(store.errors(), [{
      file: "b.yaml",
      message: "b.yaml: cannot read: stat denied",
    }]);
    assert.deepEqual(await names(store), ["a", "b"]);
    /** Touches b.yaml and syncs while opening it throws `error`. */
    const syncFailingOpen = async (error: Error) => {
      await touch(`${dir}/b.yaml`);
      await replaced("openSync", (openSync) => (path: string) => {
        if (path.endsWith("/b.yaml")) throw error;
        return openSync(path);
      }, () => store.sync());
    };
    await syncFailingOpen(new Deno.errors.PermissionDenied("open denied"));
    assert.deepEqual(store.errors(), [{ file: "b.yaml", message: "b.yaml: open denied" }]);
    assert.deepEqual(await names(store), ["a", "b"]);
    // gone between its stat and its open: gone
    await syncFailingOpen(new Deno.errors.NotFound("gone"));
    assert.deepEqual(store.errors(), []);
    assert.deepEqual(await names(store), ["a"]);
  });
});

Deno.test("file store: a read that fails, or a file grown past the limit since its stat, is an error; its objects stay", async () => {
  await withStore({ "a.yaml": vsYaml("a") }, async (store, dir) => {
    const fakeFile = (readSync: (buf: Uint8Array) => number | null) => () => ({
      readSync,
      close() {},
    });
    await touch(`${dir}/a.yaml`);
    await replaced("openSync", () =>
      fakeFile(() => {
        throw new Error("input/output error");
      }), () => store.sync());
    assert.deepEqual(store.errors(), [{
      file: "a.yaml",
      message: "a.yaml: cannot read: input/output error",
    }]);
    await touch(`${dir}/a.yaml`);
    await replaced(
      "openSync",
      () => fakeFile((buf) => (buf.fill(0x23), buf.length)),
      () => store.sync(),
    );
    assert.deepEqual(store.errors(), [{
      file: "a.yaml",
      message: "a.yaml: cannot read: more than the 4096-byte limit of a config file (split it)",
    }]);
    assert.deepEqual(await names(store), ["a"]);
  }, { maxFileBytes: 4096 });
});

Deno.test("file store: a write whose rename fails leaves the file and no temporary file, and says why", async () => {
  await withStore({ "a.yaml": vsYaml("a") }, async (store, dir) => {
    const a = (await store.get("virtualservice", "a", "default"))!;
    await assert.rejects(
      replaced(
        "rename",
        () => () => Promise.reject(new Error("no space left on device")),
        () => store.update(withLabel(a, "k", "v")),
      ),
      /^Error: no space left on device$/,
    );
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["a.yaml"]);
    assert.equal(await Deno.readTextFile(`${dir}/a.yaml`), vsYaml("a"));
  });
});

Deno.test("file store: stalled() tells a scan that has made no progress for more than 10 s", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-filefault-" });
  try {
    await Deno.writeTextFile(`${dir}/a.yaml`, vsYaml("a"));
    const store = await createFileStore({ dir, log: false, watchFs: false, pollMs: 600_000 });
    try {
      let release!: () => void;
      const blocked = new Promise<void>((r) => release = r);
      let entered!: () => void;
      const inScan = new Promise<void>((r) => entered = r);
      // later scans use the non-blocking calls: hold the scan in its stat of a.yaml
      await replaced("stat", (stat) => async (path: string) => {
        if (path.endsWith("/a.yaml")) {
          entered();
          await blocked;
        }
        return stat(path);
      }, async () => {
        const scan = store.sync();
        try {
          await inScan;
          assert.equal(store.stalled(), undefined, "a scan just started is no stall");
          const realNow = Date.now;
          Date.now = () => realNow() + 12_000;
          try {
            assert.equal(
              store.stalled(),
              `Config directory scan of "${dir}" has made no progress for 12 s`,
            );
          } finally {
            Date.now = realNow;
          }
        } finally {
          release();
          await scan;
        }
      });
      assert.equal(store.stalled(), undefined);
    } finally {
      await store.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("file store: a scan that fails is logged once, told by stalled(), and forgotten once a scan succeeds", async () => {
  const { lines, log } = recordingLogger();
  await withStore({ "a.yaml": vsYaml("a") }, async (store, dir) => {
    await touch(`${dir}/a.yaml`);
    // a stat answer that breaks when read: nothing a file can do, so the scan itself fails
    const broken = {
      isFile: true,
      size: 10,
      get mtime(): Date {
        throw new Error("broken stat");
      },
    };
    await replaced(
      "statSync",
      (statSync) => (path: string) => path.endsWith("/a.yaml") ? broken : statSync(path),
      async () => {
        await store.sync();
        await store.sync();
        await store.sync();
      },
    );
    assert.deepEqual(lines, ["error Config directory scan failed: broken stat"]);
    assert.equal(store.stalled(), "Config directory scan failed: broken stat");
    assert.deepEqual(await names(store), ["a"], "what was loaded stays in force");
    await store.sync();
    assert.equal(store.stalled(), undefined);
  }, { log });
});

Deno.test("file store: a write to a file that keeps changing under it is refused; one change is waited out", async () => {
  await withStore({ "a.yaml": vsYaml("a") }, async (store, dir) => {
    const a = (await store.get("virtualservice", "a", "default"))!;
    const path = `${dir}/a.yaml`;
    // another writer's content each time the store looks before writing
    let looks = 0;
    await assert.rejects(
      replaced(
        "readTextFile",
        (readTextFile) => (p: string) =>
          p === path
            ? Promise.resolve(`# another writer ${++looks}\n${vsYaml("a")}`)
            : readTextFile(p),
        () => store.update(withLabel(a, "k", "v")),
      ),
      /^ConflictError: a\.yaml keeps changing; try again$/,
    );
    assert.equal(looks, 4);
    assert.equal(await Deno.readTextFile(path), vsYaml("a"), "left as it is");
    // changed once only: the store looks again and writes
    looks = 0;
    await replaced(
      "readTextFile",
      (readTextFile) => (p: string) =>
        p === path && ++looks === 1 ? Promise.resolve("# another writer\n") : readTextFile(p),
      () => store.update(withLabel(a, "k", "v")),
    );
    assert.equal(looks, 2);
    assert.equal((await store.get("virtualservice", "a", "default"))?.metadata.labels?.k, "v");
  });
});

Deno.test("file store: a write that does not show in the directory is an error, not a silent success", async () => {
  await withStore({}, async (store) => {
    await assert.rejects(
      // the rename "succeeds" but the file never appears
      replaced("rename", () => () => Promise.resolve(), () =>
        store.create({
          apiVersion: "networking.mesh.io/v1alpha3",
          kind: "DestinationRule",
          metadata: { name: "d", namespace: "default" },
          spec: { host: "d" },
        })),
      /^Error: DestinationRule "d" in namespace "default" was written but is not in force \(see the store errors\)$/,
    );
  });
});

Deno.test("file store: a file modified moments ago is left aside until it has been quiet", async () => {
  await withStore({ "a.yaml": vsYaml("a") }, async (store, dir) => {
    await Deno.writeTextFile(`${dir}/a.yaml`, vsYaml("a", "half"));
    const { mtime } = await Deno.stat(`${dir}/a.yaml`);
    // the clock stands 10 ms after the write: the writer may still be at it
    const realNow = Date.now;
    Date.now = () => mtime!.getTime() + 10;
    try {
      await store.sync(); // gives up after its ~1 s of settling rounds
      assert.deepEqual((await store.get("virtualservice", "a", "default"))?.spec.hosts, ["a"]);
    } finally {
      Date.now = realNow;
    }
    await store.sync();
    assert.deepEqual((await store.get("virtualservice", "a", "default"))?.spec.hosts, ["half"]);
  });
});

Deno.test("file store: a file or subdirectory gone while a scan reaches it is gone, not an error", async () => {
  await withStore({ "a.yaml": vsYaml("a"), "b.yaml": vsYaml("b") }, async (store, dir) => {
    await Deno.mkdir(`${dir}/sub`);
    await Deno.writeTextFile(`${dir}/sub/c.yaml`, vsYaml("c"));
    await store.sync();
    assert.deepEqual(await names(store), ["a", "b", "c"]);
    // b.yaml vanishes between the directory listing and its stat; sub between its listing and
    // its walk
    await replaced("statSync", (statSync) => (path: string) => {
      if (path.endsWith("/b.yaml")) throw new Deno.errors.NotFound("gone");
      return statSync(path);
    }, () =>
      replaced("realPathSync", (realPathSync) => (path: string) => {
        if (path.endsWith("/sub")) throw new Deno.errors.NotFound("gone");
        return realPathSync(path);
      }, () => store.sync()));
    assert.deepEqual(store.errors(), []);
    assert.deepEqual(await names(store), ["a"]);
  });
});

Deno.test("file store: a held removal applies once the quiet period is over, the file unchanged since", async () => {
  await withJustRewritten("mesh-filefault-", async (store) => {
    assert.deepEqual(await names(store), ["a", "b"], "b held while the file may be rewritten");
    // 3 s later by the clock (past the 2 s quiet period), the file not touched since
    const realNow = Date.now;
    Date.now = () => realNow() + 3000;
    try {
      await store.sync();
    } finally {
      Date.now = realNow;
    }
    assert.deepEqual(await names(store), ["a"]);
  });
});
