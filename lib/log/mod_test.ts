import assert from "node:assert/strict";
import { join } from "node:path";
import {
  configureLogging,
  defaultLogOptions,
  getLogger,
  libraryLogger,
  type LogOptions,
  scopeLevels,
  setScopeLevel,
  setStackTraceLevel,
} from "./mod.ts";

const SCOPES = ["ads", "default"];
const TIME = String.raw`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`;

/** Runs `fn` with logging configured to write to one file; returns the file's lines. */
async function capture(
  opts: Partial<LogOptions>,
  fn: () => void,
): Promise<string[]> {
  const dir = await Deno.makeTempDir();
  try {
    const file = join(dir, "out.log");
    const logging = await configureLogging({
      ...defaultLogOptions(SCOPES),
      targets: [file],
      ...opts,
    });
    try {
      fn();
    } finally {
      await logging.dispose();
    }
    return (await Deno.readTextFile(file)).split("\n").filter((l) => l !== "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The line number of the first line of this file containing `marker`. */
async function lineOf(marker: string): Promise<number> {
  const text = await Deno.readTextFile(new URL(import.meta.url));
  return text.split("\n").findIndex((l) => l.includes(marker) && !l.includes("lineOf(")) + 1;
}

Deno.test("configureLogging() writes the console format with key=value fields", async () => {
  const lines = await capture({}, () => {
    getLogger("ads").info("push done", { proxies: 3, node: "sidecar~10.0.0.1", note: "two words" });
  });
  assert.equal(lines.length, 1);
  assert.match(
    lines[0],
    new RegExp(`^${TIME}\tinfo\tads\tpush done proxies=3 node=sidecar~10.0.0.1 note="two words"$`),
  );
});

Deno.test("configureLogging() writes one JSON object per line with the record's fields", async () => {
  const lines = await capture({ asJson: true }, () => {
    getLogger("default").warn("slow {not a template}", {
      ms: 1200,
      err: new Error("boom"),
      obj: { a: [1] },
      level: "shadowed",
    });
  });
  assert.equal(lines.length, 1);
  const o = JSON.parse(lines[0]);
  assert.match(o.time, new RegExp(`^${TIME}$`));
  assert.deepEqual({ ...o, time: "T" }, {
    time: "T",
    level: "warn",
    scope: "default",
    msg: "slow {not a template}",
    ms: 1200,
    err: "boom",
    obj: { a: [1] },
    _level: "shadowed",
  });
});

Deno.test("configureLogging() adds the caller file:line for the scopes in caller", async () => {
  const lines = await capture({ asJson: true, caller: ["ads"] }, () => {
    getLogger("ads").info("with caller"); // CALLER-MARK-1
    getLogger("default").info("without caller");
  });
  const expected = `lib/log/mod_test.ts:${await lineOf("CALLER-MARK-1")}`;
  assert.equal(JSON.parse(lines[0]).caller, expected);
  assert.equal("caller" in JSON.parse(lines[1]), false);
});

Deno.test("configureLogging() puts the caller in its own console column", async () => {
  const lines = await capture({ caller: ["default"] }, () => {
    getLogger("default").info("hi"); // CALLER-MARK-2
  });
  const expected = `lib/log/mod_test.ts:${await lineOf("CALLER-MARK-2")}`;
  assert.match(lines[0], new RegExp(`^${TIME}\tinfo\tdefault\t${expected}\thi$`));
});

Deno.test("configureLogging() adds a stack at and above the stack trace level only", async () => {
  const lines = await capture({ asJson: true, stacktraceLevels: { ads: "warn" } }, () => {
    const log = getLogger("ads");
    log.info("no stack");
    log.warn("stack"); // STACK-MARK
    log.error("stack too");
    getLogger("default").error("default scope has none");
  });
  const [info, warn, error, other] = lines.map((l) => JSON.parse(l));
  assert.equal(info.stack, undefined);
  assert.match(
    warn.stack,
    new RegExp(`^at .*lib/log/mod_test\\.ts:${await lineOf("STACK-MARK")}:`),
  );
  assert.equal(warn.stack.includes("lib/log/mod.ts"), false, "lib/log's own frames are left out");
  assert.match(error.stack, /mod_test\.ts/);
  assert.equal(other.stack, undefined);
});

Deno.test("configureLogging() writes the stack on indented lines after a console record", async () => {
  const lines = await capture({ stacktraceLevels: { default: "error" } }, () => {
    getLogger("default").error("failed");
  });
  assert.match(lines[0], /\terror\tdefault\tfailed$/);
  assert.match(lines[1], /^\tat .*mod_test\.ts:\d+:\d+/);
});

Deno.test("configureLogging() drops records below each scope's level and silences none", async () => {
  const lines = await capture({ outputLevels: { ads: "debug", default: "none" } }, () => {
    getLogger("ads").debug("ads debug");
    getLogger("default").error("default error");
    getLogger("other").info("unlisted scope follows default");
  });
  assert.equal(lines.length, 1);
  assert.match(lines[0], /\tdebug\tads\tads debug$/);
});

Deno.test("configureLogging() writes every record to every target", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const a = join(dir, "a.log");
    const b = join(dir, "b.log");
    await Deno.writeTextFile(a, "existing line\n");
    const logging = await configureLogging({ ...defaultLogOptions(SCOPES), targets: [a, b] });
    getLogger("ads").info("one");
    getLogger("default").error("two");
    await logging.dispose();
    const la = (await Deno.readTextFile(a)).trimEnd().split("\n");
    const lb = (await Deno.readTextFile(b)).trimEnd().split("\n");
    assert.equal(la[0], "existing line", "file targets are appended to");
    assert.deepEqual(la.slice(1), lb);
    assert.equal(lb.length, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("setScopeLevel() changes a scope's level for the next record", async () => {
  const lines = await capture({}, () => {
    const log = getLogger("ads");
    log.debug("before");
    setScopeLevel("ads", "debug");
    log.debug("after");
    setStackTraceLevel("ads", "debug");
    log.debug("with stack");
  });
  assert.equal(lines.filter((l) => !l.startsWith("\t")).length, 2);
  assert.match(lines[0], /\tdebug\tads\tafter$/);
  assert.match(lines[1], /\tdebug\tads\twith stack$/);
  assert.match(lines[2], /^\tat /);
});

Deno.test("scopeLevels() lists the configured scopes and levels", async () => {
  const logging = await configureLogging({
    ...defaultLogOptions(SCOPES),
    targets: [],
    outputLevels: { ads: "debug", default: "warn" },
    caller: ["ads"],
  });
  try {
    const byName = Object.fromEntries(scopeLevels().map((s) => [s.name, s]));
    assert.deepEqual(byName.ads, {
      name: "ads",
      outputLevel: "debug",
      stackTraceLevel: "none",
      logCallers: true,
    });
    assert.equal(byName.default.outputLevel, "warn");
  } finally {
    await logging.dispose();
  }
});

Deno.test("setScopeLevel() rejects unknown scopes and levels", () => {
  assert.throws(() => setScopeLevel("nope", "info"), { message: /unknown scope "nope"/ });
  assert.throws(() => setScopeLevel("default", "loud"), { message: /unknown level "loud"/ });
});

Deno.test("configureLogging() rejects invalid options with every problem on one line", async () => {
  await assert.rejects(
    configureLogging({
      ...defaultLogOptions(SCOPES),
      outputLevels: { x: "info" },
      rotateMaxBackups: -1,
    }),
    {
      message:
        'invalid log options: outputLevels: unknown scope "x" (scopes: ads, default); rotateMaxBackups must be a non-negative integer, got -1',
    },
  );
});

Deno.test("configureLogging() fails with the path when a target cannot be opened", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const bad = join(dir, "missing", "x.log");
    await assert.rejects(
      configureLogging({ ...defaultLogOptions(SCOPES), targets: [join(dir, "ok.log"), bad] }),
      { message: new RegExp(`^cannot open log target "${bad}": `) },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("getLogger() writes info and above to stderr before configureLogging", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", new URL("./testdata/before_configure.ts", import.meta.url).pathname],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0);
  assert.equal(new TextDecoder().decode(out.stdout), "");
  const lines = new TextDecoder().decode(out.stderr).trimEnd().split("\n");
  assert.equal(lines.length, 2);
  assert.match(lines[0], new RegExp(`^${TIME}\tinfo\tdefault\tshown before configure n=1$`));
  assert.match(lines[1], /\twarn\tads\tother scope$/);
});

Deno.test("libraryLogger() turns a library's console output into debug records of a scope", async () => {
  const lib = libraryLogger("ads");
  const atInfo = await capture({}, () => lib.error("No address added out of total 1 resolved"));
  assert.deepEqual(atInfo, [], "hidden at the default level");
  const atDebug = await capture({ outputLevels: { ads: "debug", default: "info" } }, () => {
    lib.error("No address added", new Error("listen EADDRINUSE"));
    lib.info("subchannel", { state: "READY" });
  });
  assert.equal(atDebug.length, 2);
  assert.match(
    atDebug[0],
    new RegExp(`^${TIME}\tdebug\tads\tNo address added listen EADDRINUSE source=grpc-js$`),
  );
  assert.match(atDebug[1], /\tdebug\tads\tsubchannel \{ state: "READY" \} source=grpc-js$/);
});
