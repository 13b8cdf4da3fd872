import assert from "node:assert/strict";
import { agentEnvFile, checkCaAddress, checkName } from "./_workload.ts";

Deno.test("agentEnvFile() writes the agent's identity and mesh_ca settings, quoting paths with spaces", () => {
  const text = agentEnvFile({
    serviceAccount: "web",
    namespace: "shop",
    dir: "/home/me/my mesh/it's",
    caAddress: "ca.local:8060",
    ip: "10.0.0.7",
  });
  assert.equal(
    text,
    "# mesh-agent environment of web.shop (meshctl experimental workload bootstrap)\n" +
      "POD_NAME=web\nPOD_NAMESPACE=shop\nINSTANCE_IP=10.0.0.7\nMESH_META_NAMESPACE=shop\n" +
      "MESH_CERT_DIR='/home/me/my mesh/it'\\''s/certs'\n" +
      "MESH_CA_ADDRESS=ca.local:8060\n" +
      "MESH_CA_ROOT_CERT='/home/me/my mesh/it'\\''s/root-cert.pem'\n" +
      "MESH_CA_TOKEN_FILE='/home/me/my mesh/it'\\''s/token'\n",
  );
});

Deno.test("checkName() and checkCaAddress() refuse what the orchestrator and mesh-agent would", () => {
  checkName("namespace", "shop-1");
  assert.throws(() => checkName("namespace", "Shop"), /Invalid namespace "Shop"/);
  assert.throws(() => checkName("service account", "-a"), /Invalid service account "-a"/);
  checkCaAddress("[::1]:8060");
  assert.throws(() => checkCaAddress("ca:0"), /for --ca-address: want <host>:<port>/);
  assert.throws(() => checkCaAddress("ca"), /for --ca-address/);
});
