/**
 * Generates `lib/xds/xds_descriptors.json`: the Envoy v3 message and service descriptions mesh
 * uses ({@link PROTO_FILES} and everything they import), read from the `.proto` files of the pinned
 * `@grpc/grpc-js-xds` package and written as protobufjs JSON. The programs import that file as a
 * module, so the descriptions travel with the code: from a checkout, from an `http(s)://` URL with
 * a fresh `DENO_DIR`, and inside a `deno compile` binary.
 *
 * `deno task gen:protos [--check]` (`--check`: exit 1 when the committed file differs from what
 * the pinned package gives, instead of writing it). Run it after changing PROTO_FILES or the
 * `@grpc/grpc-js-xds` pin; `lib/xds/descriptors_test.ts` fails until then.
 * @module
 */

import { createRequire } from "node:module";
import * as path from "node:path";
import { PROTO_FILES, xdsIncludeDirs, xdsProtoRoot } from "./protos.ts";

/** Where the generated file goes. */
export const DESCRIPTORS_FILE: string = new URL("./xds_descriptors.json", import.meta.url).pathname;

/**
 * The descriptions as the committed file holds them (protobufjs `Root.toJSON()`, field names as
 * written in the .proto files, no comments), serialized with one-space indentation.
 */
export function generateDescriptors(): string {
  const require = createRequire(import.meta.url);
  // the protobufjs copy @grpc/proto-loader uses, so its common (well-known) types come along
  const main = require.resolve("@grpc/proto-loader");
  require(main); // registers the common protos (descriptor.proto...) with protobufjs
  const util = createRequire(main)("./util");
  const root = util.loadProtosWithOptionsSync(
    PROTO_FILES.map((f) => path.join(xdsProtoRoot(), "envoy-api", f)),
    { keepCase: true, includeDirs: xdsIncludeDirs() },
  );
  return JSON.stringify(root.toJSON({ keepComments: false })) + "\n";
}

if (import.meta.main) {
  const check = Deno.args.includes("--check");
  const want = generateDescriptors();
  let have = "";
  try {
    have = await Deno.readTextFile(DESCRIPTORS_FILE);
  } catch { /* absent */ }
  if (check) {
    if (have !== want) {
      console.error(`${DESCRIPTORS_FILE} is out of date: run deno task gen:protos`);
      Deno.exit(1);
    }
    console.log(`${DESCRIPTORS_FILE} is up to date`);
  } else {
    await Deno.writeTextFile(DESCRIPTORS_FILE + ".tmp", want);
    await Deno.rename(DESCRIPTORS_FILE + ".tmp", DESCRIPTORS_FILE);
    console.log(`wrote ${DESCRIPTORS_FILE} (${want.length} bytes)`);
  }
}
