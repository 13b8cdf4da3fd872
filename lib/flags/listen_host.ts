/**
 * The `listenHost` flag type: the local address an HTTP listener binds (`0.0.0.0` every IPv4
 * interface, `127.0.0.1` loopback only, `::`, or `localhost`).
 * @module
 */

import type { FlagType } from "./types.ts";

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const IPV6 = /^[0-9a-fA-F:]*:[0-9a-fA-F:]*$/;

/** A listen host: an IPv4 or IPv6 address literal, or `localhost`. */
export const listenHost: FlagType<string> = {
  name: "string",
  parse(text) {
    if (
      text === "localhost" || IPV4.test(text) || (IPV6.test(text) && text.split("::").length <= 2)
    ) {
      return text;
    }
    throw new Error(
      `${JSON.stringify(text)} is not a local address: want an IP address such as 127.0.0.1 ` +
        "(loopback only) or 0.0.0.0 (every interface)",
    );
  },
  format: (v) => v,
};
