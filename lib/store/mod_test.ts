import assert from "node:assert/strict";
import { openStoreFromURL } from "./mod.ts";

Deno.test("openStoreFromURL() refuses malformed URLs with the accepted forms, and mem:// takes options", async () => {
  await assert.rejects(
    openStoreFromURL("mem://x"),
    /^Error: Invalid config store URL "mem:\/\/x": mem:\/\/ takes nothing after "\/\/"$/,
  );
  // the scheme must start the value
  await assert.rejects(
    openStoreFromURL(" fs:///tmp"),
    /^Error: Invalid config store URL " fs:\/\/\/tmp": want fs:\/\/<dir>, orch:\/\/<kubeconfig path> or mem:\/\/$/,
  );
  await assert.rejects(
    openStoreFromURL("http://x"),
    /^Error: Invalid config store URL "http:\/\/x": unsupported scheme "http:\/\/" \(want fs:\/\/, orch:\/\/ or mem:\/\/\)$/,
  );
  const mem = await openStoreFromURL("MEM://", { defaultNamespace: "team" });
  try {
    const created = await mem.create({
      apiVersion: "networking.mesh.io/v1alpha3",
      kind: "Gateway",
      metadata: { name: "gw" },
      spec: { servers: [{ port: { number: 80, name: "http", protocol: "HTTP" }, hosts: ["*"] }] },
    });
    assert.equal(created.metadata.namespace, "team");
  } finally {
    await mem.close();
  }
});
