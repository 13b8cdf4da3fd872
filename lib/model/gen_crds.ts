/**
 * Writes lib/model/crds/crds.yaml from the schemas: `deno run -A lib/model/gen_crds.ts`.
 * @module
 */
import { crdsYaml } from "./crds.ts";

/** Path of the generated manifest file. */
export const CRDS_FILE = new URL("./crds/crds.yaml", import.meta.url);

async function main(): Promise<void> {
  const text = crdsYaml();
  const tmp = new URL("./crds/.crds.yaml.tmp", import.meta.url);
  await Deno.writeTextFile(tmp, text);
  await Deno.rename(tmp, CRDS_FILE);
  console.log(`wrote ${CRDS_FILE.pathname}`);
}

if (import.meta.main) await main();
