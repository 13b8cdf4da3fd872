/**
 * The `Mock` registry: a fixed demo set so the local demo needs no registry.
 *
 * Services `hello.default.svc.<domain>` (VIP 10.1.0.1) and `world.default.svc.<domain>` (VIP
 * 10.2.0.1), each with ports `http` 80 (HTTP), `grpc` 7070 (GRPC) and `tcp` 9000 (TCP), and two
 * versions `v1` and `v2`. Endpoints live on loopback so the demo backends can serve them:
 * `127.0.<service>.<version>` (hello v1 = 127.0.1.1, hello v2 = 127.0.1.2, world v1 = 127.0.2.1,
 * world v2 = 127.0.2.2), endpoint port = service port + the port offset (default 10000: 80 → 10080,
 * 7070 → 17070, 9000 → 19000; `MESH_MOCK_PORT_OFFSET` for mesh-discovery), labels `app=<name>`, `version=v<N>`, locality `mock-region/mock-zone`.
 * @module
 */
import type { Service, ServiceInstance, ServicePort, ServiceRegistry } from "../model/types.ts";

/** The ports of every mock service. */
export const MOCK_PORTS: readonly ServicePort[] = [
  { name: "http", port: 80, protocol: "HTTP" },
  { name: "grpc", port: 7070, protocol: "GRPC" },
  { name: "tcp", port: 9000, protocol: "TCP" },
];

/** Default offset from a mock service port to its endpoint port (7070 → 17070). */
export const MOCK_PORT_OFFSET = 10000;

/** Largest port offset: the highest mock port (9000) plus it must stay a port number. */
export const MAX_MOCK_PORT_OFFSET = 65535 - 9000;

/** Endpoint port of a mock service port, `offset` above it (default {@link MOCK_PORT_OFFSET}). */
export function mockEndpointPort(servicePort: number, offset = MOCK_PORT_OFFSET): number {
  return servicePort + offset;
}

/** Loopback address of a mock endpoint: service index 1 (hello) or 2 (world), version 1 or 2. */
export function mockEndpointAddress(serviceIndex: number, version: number): string {
  return `127.0.${serviceIndex}.${version}`;
}

/**
 * Creates the Mock registry for a DNS domain (default `cluster.local`); endpoint ports are
 * `portOffset` above the service ports (default {@link MOCK_PORT_OFFSET}).
 */
export function createMockRegistry(
  domain = "cluster.local",
  portOffset = MOCK_PORT_OFFSET,
): ServiceRegistry {
  const names = ["hello", "world"];
  const services: Service[] = names.map((name, i) => ({
    hostname: `${name}.default.svc.${domain}`,
    address: `10.${i + 1}.0.1`,
    ports: MOCK_PORTS.map((p) => ({ ...p })),
    namespace: "default",
    meshExternal: false,
    resolution: "ClientSideLB",
    serviceAccounts: [`spiffe://${domain}/ns/default/sa/${name}`],
    registry: "Mock",
  }));
  const instances: ServiceInstance[] = [];
  services.forEach((svc, i) => {
    for (const v of [1, 2]) {
      for (const port of svc.ports) {
        instances.push({
          hostname: svc.hostname,
          servicePort: port,
          address: mockEndpointAddress(i + 1, v),
          port: mockEndpointPort(port.port, portOffset),
          labels: { app: names[i], version: `v${v}` },
          locality: "mock-region/mock-zone",
          serviceAccount: svc.serviceAccounts[0],
        });
      }
    }
  });
  return {
    name: "Mock",
    services: () => services,
    instances: () => instances,
    onChange: () => {},
    start: () => Promise.resolve(),
    stop: () => Promise.resolve(),
  };
}
