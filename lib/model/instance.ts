/**
 * What tells one service instance from another of the same `host|port` key.
 * @module
 */

import type { ServiceInstance } from "./types.ts";

/**
 * The fields an instance's {@link instanceSignature} covers: every field but those of its
 * `host|port` key (the type makes a field added to instances a compile error here until it is
 * listed, and a test changes each listed field and expects another signature).
 */
export const SIGNED_FIELDS: Record<
  Exclude<keyof ServiceInstance, "hostname" | "servicePort">,
  true
> = {
  address: true,
  port: true,
  labels: true,
  locality: true,
  serviceAccount: true,
  weight: true,
};

/**
 * A string equal for two instances of one `host|port` key exactly when every field of
 * {@link SIGNED_FIELDS} is (labels compared in their order).
 */
export function instanceSignature(i: ServiceInstance): string {
  // an array literal: ~10% faster than mapping over the field names
  return JSON.stringify([i.address, i.port, i.labels, i.locality, i.serviceAccount, i.weight]);
}
