/** YAML parsing and printing. */
export * from "npm:yaml@2.9.1";
