import assert from "node:assert/strict";
import { join } from "node:path";
import { configureLogging, defaultLogOptions, getLogger, type LogOptions } from "./mod.ts";
import { withTempDir } from "../../tests/harness/procs.ts";

const SCOPES = ["default"];
const DAY_MS = 24 * 60 * 60 * 1000;

/** Logs records "record 000".."record <n-1>" to a rotating file configured by `opts`. */
async function logRecords(path: string, n: number, opts: Partial<LogOptions>): Promise<void> {
  const logging = await configureLogging({
    ...defaultLogOptions(SCOPES),
    targets: [],
    rotate: path,
    ...opts,
  });
  try {
    for (let i = 0; i < n; i++) getLogger().info(`record ${String(i).padStart(3, "0")}`);
  } finally {
    await logging.dispose();
  }
}

/** File names in `dir`, sorted. */
async function names(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) out.push(e.name);
  return out.sort();
}

/** The record numbers in a file, in order. */
async function recordsIn(file: string): Promise<number[]> {
  const text = await Deno.readTextFile(file);
  return [...text.matchAll(/record (\d+)/g)].map((m) => Number(m[1]));
}

// Each console line is about 50 bytes, so 200 bytes hold 4 records.
const SIZE = 200;

Deno.test("log rotation creates backups no larger than the maximum size", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "mesh.log");
    await logRecords(path, 12, { rotateMaxSizeBytes: SIZE, rotateMaxBackups: 10 });
    const files = await names(dir);
    assert.deepEqual(files, ["mesh.log", "mesh.log.1", "mesh.log.2"]);
    for (const f of files) assert.ok((await Deno.stat(join(dir, f))).size <= SIZE, f);
    assert.deepEqual(await recordsIn(join(dir, "mesh.log.2")), [0, 1, 2, 3]);
    assert.deepEqual(await recordsIn(join(dir, "mesh.log.1")), [4, 5, 6, 7]);
    assert.deepEqual(await recordsIn(path), [8, 9, 10, 11]);
  });
});

Deno.test("log rotation removes the oldest backups beyond the maximum count", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "mesh.log");
    await logRecords(path, 20, { rotateMaxSizeBytes: SIZE, rotateMaxBackups: 2 });
    assert.deepEqual(await names(dir), ["mesh.log", "mesh.log.1", "mesh.log.2"]);
    assert.deepEqual(await recordsIn(join(dir, "mesh.log.2")), [8, 9, 10, 11]);
    assert.deepEqual(await recordsIn(join(dir, "mesh.log.1")), [12, 13, 14, 15]);
    assert.deepEqual(await recordsIn(path), [16, 17, 18, 19]);
  });
});

Deno.test("log rotation keeps every backup when the maximum count is 0", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "mesh.log");
    await logRecords(path, 24, { rotateMaxSizeBytes: SIZE, rotateMaxBackups: 0 });
    const files = await names(dir);
    assert.equal(files.length, 6);
    const all: number[] = [];
    for (let i = 5; i >= 1; i--) all.push(...await recordsIn(join(dir, `mesh.log.${i}`)));
    all.push(...await recordsIn(path));
    assert.deepEqual(all, Array.from({ length: 24 }, (_, i) => i), "nothing lost, oldest last");
  });
});

Deno.test("log rotation appends to an existing file and counts its size", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "mesh.log");
    await Deno.writeTextFile(path, "x".repeat(SIZE - 10) + "\n");
    await logRecords(path, 1, { rotateMaxSizeBytes: SIZE, rotateMaxBackups: 3 });
    assert.deepEqual(await names(dir), ["mesh.log", "mesh.log.1"]);
    assert.deepEqual(await recordsIn(path), [0]);
  });
});

Deno.test("log rotation removes backups older than the maximum age", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "mesh.log");
    const old = new Date(Date.now() - 3 * DAY_MS);
    for (const i of [1, 2, 3]) await Deno.writeTextFile(`${path}.${i}`, `backup ${i}\n`);
    await Deno.utime(`${path}.2`, old, old);
    await Deno.utime(`${path}.3`, old, old);
    // At open: .2 and .3 are older than two days.
    await logRecords(path, 1, { rotateMaxSizeBytes: SIZE, rotateMaxAgeDays: 2 });
    assert.deepEqual(await names(dir), ["mesh.log", "mesh.log.1"]);

    // After a rotation: .1 (made old now) becomes .2 and is removed; the new .1 stays.
    await Deno.utime(`${path}.1`, old, old);
    await logRecords(path, 4, { rotateMaxSizeBytes: SIZE, rotateMaxAgeDays: 2 });
    assert.deepEqual(await names(dir), ["mesh.log", "mesh.log.1"]);
    assert.deepEqual(await recordsIn(`${path}.1`), [0, 0, 1, 2]);
  });
});

Deno.test("log rotation keeps old backups when the maximum age is 0", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "mesh.log");
    const old = new Date(Date.now() - 400 * DAY_MS);
    await Deno.writeTextFile(`${path}.1`, "ancient\n");
    await Deno.utime(`${path}.1`, old, old);
    await logRecords(path, 1, { rotateMaxSizeBytes: SIZE, rotateMaxAgeDays: 0 });
    assert.deepEqual(await names(dir), ["mesh.log", "mesh.log.1"]);
  });
});

Deno.test("log rotation removes leftover backups numbered beyond the maximum at open", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "mesh.log");
    for (const i of [1, 2, 5]) await Deno.writeTextFile(`${path}.${i}`, "b\n");
    await logRecords(path, 1, { rotateMaxSizeBytes: SIZE, rotateMaxBackups: 2 });
    assert.deepEqual(await names(dir), ["mesh.log", "mesh.log.1", "mesh.log.2"]);
  });
});

Deno.test("log rotation writes the rotating file besides the other targets", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "rot.log");
    const plain = join(dir, "plain.log");
    await logRecords(path, 2, { targets: [plain], rotateMaxSizeMB: 1 });
    assert.deepEqual(await recordsIn(path), [0, 1]);
    assert.deepEqual(await recordsIn(plain), [0, 1]);
  });
});
