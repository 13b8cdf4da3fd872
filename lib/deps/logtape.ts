/** Structured logging. */
export * from "npm:@logtape/logtape@2.4.2";
