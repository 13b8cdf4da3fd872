/**
 * End-to-end: mesh mTLS contexts name the workload certificate files in the directory the node's
 * agent keeps them in (node metadata `CERT_DIR`, set by mesh-agent from `MESH_CERT_DIR`), and in
 * `/etc/certs` for nodes that do not say; two nodes asking one mesh-discovery each get theirs.
 */

import assert from "node:assert/strict";
import { withTempDir } from "../harness/procs.ts";
import { post, startDiscovery } from "./discovery_harness.ts";

const CONFIG = `apiVersion: networking.istio.io/v1alpha3
kind: ServiceEntry
metadata: {name: echo, namespace: default}
spec:
  hosts: [echo.test.example]
  ports: [{number: 7070, name: grpc, protocol: GRPC}]
  location: MESH_INTERNAL
  resolution: STATIC
  endpoints: [{address: 127.0.0.1}]
`;

// deno-lint-ignore no-explicit-any
type Any = any;

Deno.test("mesh-discovery names the certificate files of each node's CERT_DIR in mesh mTLS clusters and listeners", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/config`);
    await Deno.writeTextFile(`${dir}/config/echo.yaml`, CONFIG);
    await Deno.writeTextFile(`${dir}/mesh.yaml`, "authPolicy: MUTUAL_TLS\n");
    const d = await startDiscovery([
      "--registries",
      "Mock",
      "--configDir",
      `${dir}/config`,
      "--meshConfig",
      `${dir}/mesh.yaml`,
    ]);
    try {
      const files = async (node: Record<string, unknown>) => {
        const r = await post(`http://${d.http}/v3/discovery:clusters`, { node });
        assert.equal(r.status, 200, r.body);
        const c = JSON.parse(r.body).resources.find((x: Any) =>
          x.name === "outbound|7070||echo.test.example"
        );
        const common = c.transport_socket.typed_config.common_tls_context;
        return [
          common.tls_certificates[0].certificate_chain.filename,
          common.tls_certificates[0].private_key.filename,
          common.validation_context.trusted_ca.filename,
        ];
      };
      const vm = {
        id: "sidecar~127.0.0.1~vm.default~default.svc.cluster.local",
        metadata: { CERT_DIR: "/home/me/web/certs" },
      };
      const pod = { id: "sidecar~10.0.0.2~pod.default~default.svc.cluster.local", metadata: {} };
      assert.deepEqual(await files(vm), [
        "/home/me/web/certs/cert-chain.pem",
        "/home/me/web/certs/key.pem",
        "/home/me/web/certs/root-cert.pem",
      ]);
      assert.deepEqual(await files(pod), [
        "/etc/certs/cert-chain.pem",
        "/etc/certs/key.pem",
        "/etc/certs/root-cert.pem",
      ]);
      // a bad value is ignored, not trusted
      assert.deepEqual(
        await files({ ...vm, id: vm.id.replace("vm.", "vm2."), metadata: { CERT_DIR: "../x" } }),
        await files(pod),
      );
      // Mock's hello v1 instance is on 127.0.1.1: its inbound mTLS listener too
      const r = await post(`http://${d.http}/v3/discovery:listeners`, {
        node: {
          id: "sidecar~127.0.1.1~hello.default~default.svc.cluster.local",
          metadata: { CERT_DIR: "/vm/certs" },
        },
      });
      assert.equal(r.status, 200, r.body);
      const names = JSON.stringify(JSON.parse(r.body).resources);
      assert.ok(names.includes("/vm/certs/cert-chain.pem"), names.slice(0, 500));
      assert.ok(!names.includes("/etc/certs/"), "no default paths left");
    } finally {
      await d.proc.stop();
    }
  });
});
