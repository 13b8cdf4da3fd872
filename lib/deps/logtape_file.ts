/** Rotating file sinks for logging. */
export * from "npm:@logtape/file@2.3.10";
