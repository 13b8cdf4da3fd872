/** Command-line parsing (commander with strict typings). Versions are pinned here once. */
export * from "npm:@commander-js/extra-typings@15.1.0";
