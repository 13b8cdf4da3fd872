/**
 * Error-text helpers shared by everything that parses user files.
 * @module
 */

/**
 * The first line of a parser's error message, without the trailing colon that introduces the
 * code frame the YAML parser appends (`Flow sequence ... at line 2, column 1:` → `... column 1`).
 */
export function firstErrorLine(message: string): string {
  return message.split("\n")[0].replace(/:\s*$/, "");
}
