/**
 * Test helpers shared by the registry tests.
 * @module
 */
import { configureLogging, defaultLogOptions } from "../log/mod.ts";

/** Logs the "default" scope to a file in a new temporary directory, for asserting log lines. */
export async function logFile() {
  const dir = await Deno.makeTempDir();
  const logging = await configureLogging({
    ...defaultLogOptions(["default"]),
    targets: [`${dir}/out.log`],
  });
  return {
    /**
     * Ends the logging and gives the lines logged that contain `part`, without their time
     * stamps: "level category message".
     */
    async lines(part = ""): Promise<string[]> {
      await logging.dispose();
      return (await Deno.readTextFile(`${dir}/out.log`)).split("\n")
        .filter((l) => l && l.includes(part)).map((l) => l.split("\t").slice(1).join(" "));
    },
    /** Ends the logging and removes the directory. */
    async close(): Promise<void> {
      await logging.dispose();
      await Deno.remove(dir, { recursive: true });
    },
  };
}
