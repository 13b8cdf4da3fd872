import assert from "node:assert/strict";
import {
  buildVersionInfo,
  checkoutRevision,
  formatVersion,
  renderStamp,
  VERSION,
  versionInfo,
} from "./mod.ts";

const INFO = {
  version: "1.2.3",
  gitRevision: "0123456789abcdef0123456789abcdef01234567",
  buildTime: "2024-05-01T12:00:00Z",
  deno: "2.7.14",
  v8: "14.7",
  typescript: "5.9.2",
};

Deno.test("formatVersion() prints the version alone in the short form", () => {
  assert.equal(formatVersion(INFO, true), "1.2.3");
});

Deno.test("formatVersion() prints one key: value line per field in the long form", () => {
  assert.equal(
    formatVersion(INFO, false),
    [
      "Version: 1.2.3",
      "GitRevision: 0123456789abcdef0123456789abcdef01234567",
      "BuildTime: 2024-05-01T12:00:00Z",
      "DenoVersion: 2.7.14",
      "V8Version: 14.7",
      "TypeScriptVersion: 5.9.2",
    ].join("\n"),
  );
});

Deno.test("versionInfo() reports the checkout's git revision when unstamped", async () => {
  const info = versionInfo();
  assert.equal(info.version, VERSION);
  assert.equal(info.buildTime, "unknown");
  assert.equal(info.deno, Deno.version.deno);
  const git = await new Deno.Command("git", {
    args: ["rev-parse", "HEAD"],
    cwd: new URL("../../", import.meta.url).pathname,
    stdout: "piped",
    stderr: "null",
  }).output();
  assert.ok(git.success, "the tests run in a git checkout");
  const rev = new TextDecoder().decode(git.stdout).trim();
  assert.ok(
    info.gitRevision === rev || info.gitRevision === `${rev}-dirty`,
    `${info.gitRevision} is HEAD ${rev}, with -dirty when the checkout has changes`,
  );
  assert.match(info.gitRevision, /^[0-9a-f]{40}(-dirty)?$/);
});

/** Runs git in `dir` with a fixed identity; returns stdout. */
async function git(dir: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", {
    args: ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args],
    cwd: dir,
    stdout: "piped",
    stderr: "piped",
    env: { GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" },
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout).trim();
}

Deno.test("checkoutRevision() adds -dirty only when the checkout has uncommitted changes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    assert.equal(checkoutRevision(dir), "unknown", "not a git checkout");
    await git(dir, "init", "-q");
    await Deno.writeTextFile(`${dir}/a.txt`, "one\n");
    await git(dir, "add", "a.txt");
    await git(dir, "commit", "-q", "-m", "first");
    const head = await git(dir, "rev-parse", "HEAD");
    assert.equal(checkoutRevision(dir), head);
    await Deno.writeTextFile(`${dir}/a.txt`, "two\n");
    assert.equal(checkoutRevision(dir), `${head}-dirty`);
    await git(dir, "checkout", "-q", "--", "a.txt");
    assert.equal(checkoutRevision(dir), head);
    await Deno.writeTextFile(`${dir}/new.txt`, "untracked\n");
    assert.equal(checkoutRevision(dir), `${head}-dirty`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("buildVersionInfo() reports unknown revision when loaded from an http URL", () => {
  const info = buildVersionInfo(null, "http://127.0.0.1:8000/lib/version/mod.ts");
  assert.equal(info.gitRevision, "unknown");
  assert.equal(info.version, VERSION);
});

Deno.test("buildVersionInfo() uses the stamp when present", () => {
  const stamp = { version: "1.0.0", gitRevision: "abc1234", buildTime: "2024-05-01T00:00:00Z" };
  assert.deepEqual(buildVersionInfo(stamp, "file:///nowhere/lib/version/mod.ts"), {
    ...stamp,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    typescript: Deno.version.typescript,
  });
});

Deno.test("renderStamp() produces a stamp module that evaluates to the stamp", async () => {
  const stamp = { version: "1.0.0", gitRevision: "abc1234", buildTime: "2024-05-01T00:00:00Z" };
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/stamp.ts`, renderStamp(stamp));
    const mod = await import(`file://${dir}/stamp.ts`);
    assert.deepEqual(mod.STAMP, stamp);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  assert.throws(() => renderStamp({ ...stamp, version: "" }), {
    message: 'invalid stamp field version: ""',
  });
});
