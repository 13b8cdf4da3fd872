/// <reference lib="deno.worker" />
// A worker for pool_test.ts: answers `echo`, fails `fail`, dies on `crash`, answers `wait` after
// the milliseconds it is given, logs on `log` (and on `logTo`, in a scope and at a level it is given); its init
// never answers for the tag "hang" and fails for "refuse".
import { serveControl } from "../mod.ts";

let started = 0;
let link: Parameters<Parameters<typeof serveControl>[0]>[1] | undefined;
serveControl<{ tag: string }>((init, l) => {
  link = l;
  started = Date.now();
  if (init.arg.tag === "hang") return new Promise(() => {}); // never answers its init
  if (init.arg.tag === "refuse") throw new Error("bad init");
  return { index: init.index, tag: init.arg.tag };
}, {
  echo: (a) => ({ echo: a, started }),
  fail: () => {
    throw new Error("asked to fail");
  },
  crash: () => {
    setTimeout(() => {
      throw new Error("asked to crash");
    });
    return true;
  },
  log: (a) => {
    link!.logger().info(String(a)); // no scope: the default one
    link!.logger("default").debug("below the level");
    link!.logger("default").warn(`warn ${a}`);
    link!.logger("default").error(`error ${a}`);
    return true;
  },
  logTo: (a) => {
    const { scope, msg, level = "warn" } = a as {
      scope: string;
      msg: string;
      level?: "debug" | "info" | "warn" | "error";
    };
    link!.logger(scope)[level](msg);
    return true;
  },
  ask: () => link!.channel.request("double", 21),
  wait: (ms) => new Promise((r) => setTimeout(() => r(true), ms as number)),
  close: () => true,
});
