/**
 * Proto3 JSON printer benchmark: the golden xDS resources of `lib/xds/testdata/*.json` (90 today)
 * printed as proto3 JSON by `lib/xds/json.ts` (`ProtoJson`, what `/debug/adsz`, `/debug/cdsz` and
 * REST xDS use), and — with `--bufbuild DIR` — by `@bufbuild/protobuf` 2.x `toJson` in the same
 * run, side by side. Two figures each: "print" (decoded message → JSON value) and "decode+print"
 * (protobuf bytes → JSON value, what the debug pages do). Each figure is the median of `--runs`
 * runs of `--rounds` passes over all resources after one warm-up, in µs per resource. It also
 * counts the resources whose two outputs are equal as JSON values (key order aside) and equal as
 * text. mesh does not depend on `@bufbuild/protobuf`: point `--bufbuild` at a local copy of the
 * package (for example `$(deno info --json | jq -r .npmCache)/registry.npmjs.org/@bufbuild/protobuf/2.17.0`).
 *
 * `deno task bench protojson [--runs N] [--rounds N] [--bufbuild DIR]`
 * @module
 */

import { parseArgs } from "node:util";
import { wholeNumber } from "./_flags.ts";
import { isDeepStrictEqual } from "node:util";
import * as path from "node:path";
import { decodeAny, encodeAny, loadXdsProtos, TYPE_URLS } from "../lib/xds/mod.ts";
import { ProtoJson } from "../lib/xds/json.ts";

const HELP = `Usage: deno task bench protojson [--runs N] [--rounds N] [--bufbuild DIR]

Prints the golden xDS resources (lib/xds/testdata/*.json) as proto3 JSON with lib/xds/json.ts and,
given --bufbuild, with @bufbuild/protobuf's toJson; prints µs per resource side by side.
  --runs N        measured runs after one warm-up (default 5)
  --rounds N      passes over all resources per run (default 200)
  --bufbuild DIR  a local @bufbuild/protobuf 2.x package directory (not a mesh dependency);
                  without it only lib/xds/json.ts is measured`;

const KINDS: Record<string, keyof typeof TYPE_URLS> = {
  listeners: "listener",
  routes: "route",
  clusters: "cluster",
  endpoints: "endpoint",
};

// deno-lint-ignore no-explicit-any
type Any = any;

interface Resource {
  type: string;
  bytes: Uint8Array;
  decoded: unknown;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Every resource of the golden files, encoded once. */
async function goldenResources(): Promise<Resource[]> {
  const dir = new URL("../lib/xds/testdata/", import.meta.url);
  const names = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.endsWith(".json"));
  const out: Resource[] = [];
  for (const name of names.sort()) {
    const snap = JSON.parse(await Deno.readTextFile(new URL(name, dir)));
    for (const [key, list] of Object.entries(snap)) {
      const url = TYPE_URLS[KINDS[key]];
      if (!url || !Array.isArray(list)) continue;
      for (const r of list) {
        const any = encodeAny(url, r) as { type_url: string; value: Uint8Array };
        out.push({ type: url.slice(url.lastIndexOf("/") + 1), bytes: any.value, decoded: null });
      }
    }
  }
  return out;
}

/** `@bufbuild/protobuf` from `dir` with a registry of the xDS protos, or an error naming `dir`. */
async function loadBufbuild(dir: string) {
  let pkg: Any;
  try {
    pkg = JSON.parse(await Deno.readTextFile(path.join(dir, "package.json")));
  } catch (e) {
    throw new Error(`--bufbuild ${JSON.stringify(dir)}: cannot read package.json: ${e}`);
  }
  if (pkg.name !== "@bufbuild/protobuf" || !String(pkg.version).startsWith("2.")) {
    throw new Error(
      `--bufbuild ${
        JSON.stringify(dir)
      }: want @bufbuild/protobuf 2.x, got ${pkg.name}@${pkg.version}`,
    );
  }
  const url = (p: string) => new URL(`file://${path.resolve(dir, p)}`).href;
  const pb: Any = await import(url("dist/esm/index.js"));
  const wkt: Any = await import(url("dist/esm/wkt/index.js"));
  const { xdsDescriptorSet } = await import("./_descriptor_set.ts");
  const registry = pb.createFileRegistry(
    pb.fromJson(wkt.FileDescriptorSetSchema, xdsDescriptorSet()),
  );
  return { pb, registry, version: String(pkg.version) };
}

/** Runs the bench with `args` (`--help` prints the usage and returns). */
export async function main(args: string[] = []): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      help: { type: "boolean", default: false },
      runs: { type: "string", default: "5" },
      rounds: { type: "string", default: "200" },
      bufbuild: { type: "string" },
    },
    strict: false,
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  const runs = wholeNumber("runs", values.runs);
  const rounds = wholeNumber("rounds", values.rounds);
  const pj = new ProtoJson(await loadXdsProtos());
  const resources = await goldenResources();
  for (const r of resources) r.decoded = decodeAny({ type_url: r.type, value: r.bytes });
  const bb = typeof values.bufbuild === "string" ? await loadBufbuild(values.bufbuild) : undefined;
  const schemas = resources.map((r) => bb?.registry.getMessage(r.type));
  const messages = resources.map((r, i) => bb?.pb.fromBinary(schemas[i], r.bytes));
  const opts = { registry: bb?.registry, useProtoFieldName: true };

  const ours = {
    print: () => {
      for (const r of resources) pj.message(r.type, r.decoded);
    },
    decodePrint: () => {
      for (const r of resources) {
        pj.message(r.type, decodeAny({ type_url: r.type, value: r.bytes }));
      }
    },
  };
  const theirs = {
    print: () => {
      for (let i = 0; i < resources.length; i++) bb!.pb.toJson(schemas[i], messages[i], opts);
    },
    decodePrint: () => {
      for (let i = 0; i < resources.length; i++) {
        bb!.pb.toJson(schemas[i], bb!.pb.fromBinary(schemas[i], resources[i].bytes), opts);
      }
    },
  };
  const time = (f: () => void) => {
    const t0 = performance.now();
    for (let k = 0; k < rounds; k++) f();
    return (performance.now() - t0) * 1000 / (rounds * resources.length);
  };
  const figures: Record<string, number[]> = {};
  const add = (k: string, v: number) => (figures[k] ??= []).push(v);
  for (let run = 0; run <= runs; run++) {
    // alternate the printers inside each run so both see the same machine load
    const o1 = time(ours.print), o2 = time(ours.decodePrint);
    const t1 = bb ? time(theirs.print) : NaN, t2 = bb ? time(theirs.decodePrint) : NaN;
    if (run === 0) continue; // warm-up
    add("ours.print", o1), add("ours.decodePrint", o2), add("bb.print", t1);
    add("bb.decodePrint", t2);
  }
  const us = (k: string) => median(figures[k]).toFixed(2).padStart(8);
  const ratio = (a: string, b: string) => (median(figures[a]) / median(figures[b])).toFixed(2);
  console.log(`resources: ${resources.length}, ${rounds} rounds × ${runs} runs (median)`);
  if (!bb) {
    console.log(
      `lib/xds/json.ts  print ${us("ours.print")} µs  decode+print ${us("ours.decodePrint")} µs`,
    );
    console.log("@bufbuild/protobuf: not measured (pass --bufbuild DIR)");
    return;
  }
  let same = 0, sameText = 0;
  resources.forEach((r, i) => {
    const a = pj.message(r.type, r.decoded);
    const b = bb.pb.toJson(schemas[i], messages[i], opts);
    if (isDeepStrictEqual(a, b)) same++;
    if (JSON.stringify(a) === JSON.stringify(b)) sameText++;
  });
  console.log(
    `                       lib/xds/json.ts  @bufbuild/protobuf ${bb.version}  time ours/bufbuild`,
  );
  console.log(
    `print (µs/resource)           ${us("ours.print")}  ${us("bb.print")}                  ${
      ratio("ours.print", "bb.print")
    }`,
  );
  console.log(
    `decode+print (µs/resource)    ${us("ours.decodePrint")}  ${
      us("bb.decodePrint")
    }                  ${ratio("ours.decodePrint", "bb.decodePrint")}`,
  );
  console.log(
    `equal as JSON values: ${same}/${resources.length}; equal as text (key order too): ${sameText}/${resources.length}`,
  );
}

if (import.meta.main) await main(Deno.args);
