/// <reference lib="deno.worker" />
// A worker for pool_test.ts: answers `echo`, fails `fail`, dies on `crash`, answers `wait` after
// the milliseconds it is given, counts descriptors a listener accepted on `accept`, logs on `log`
// (and on `logTo`, in a scope and at a level it is given); its init never answers for the tag
// "hang" and fails for "refuse".
import { DescriptorBudget } from "../../grpc/descriptors.ts";
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
  /** Counts `n` descriptors opened by a listener of this worker (negative: closed). */
  accept: (n) => {
    const budget = new DescriptorBudget();
    for (let i = 0; i < Math.abs(n as number); i++) {
      (n as number) > 0 ? budget.opened() : budget.closed();
    }
    return true;
  },
  close: () => true,
});
