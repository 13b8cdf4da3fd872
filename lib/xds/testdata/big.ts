/**
 * A large push context for the scale test and the generate bench (test fixture, not a public API).
 * @module
 */

import type { Service, ServiceInstance, ServicePort } from "../../model/types.ts";
import { DEFAULT_XDS_MESH_CONFIG, emptyPushConfigs, type PushContext } from "../types.ts";

/** `services` services (http 80, grpc 7070, tcp 9000) × `endpoints` endpoints each. */
export function bigContext(count = 1000, endpoints = 5): PushContext {
  const ports: ServicePort[] = [
    { name: "http", port: 80, protocol: "HTTP" },
    { name: "grpc", port: 7070, protocol: "GRPC" },
    { name: "tcp", port: 9000, protocol: "TCP" },
  ];
  const services: Service[] = [];
  const instances: ServiceInstance[] = [];
  for (let i = 0; i < count; i++) {
    const hostname = `svc${i}.ns${i % 10}.svc.cluster.local`;
    services.push({
      hostname,
      address: `10.${(i >> 8) & 255}.${i & 255}.1`,
      ports,
      namespace: `ns${i % 10}`,
      meshExternal: false,
      resolution: "ClientSideLB",
      serviceAccounts: [],
      registry: "Mock",
    });
    for (let e = 0; e < endpoints; e++) {
      for (const p of ports) {
        instances.push({
          hostname,
          servicePort: p,
          address: `172.16.${i & 255}.${e + 1 + ((i >> 8) * 5)}`,
          port: p.port + 10000,
          labels: { version: `v${e % 2}` },
          locality: `r/z${e % 3}`,
          serviceAccount: "",
        });
      }
    }
  }
  return {
    services,
    instances,
    configs: emptyPushConfigs(),
    meshConfig: DEFAULT_XDS_MESH_CONFIG,
    domain: "cluster.local",
  };
}
