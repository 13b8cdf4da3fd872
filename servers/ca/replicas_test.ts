import assert from "node:assert/strict";
import { startFakeKube } from "../../tests/harness/fake_kube.ts";
import { orchCaConfig, recordingLogger } from "./_testutil.ts";
import { RootExistsError, type RootStore, startKeySource } from "./keys.ts";
import { CA_SECRET, start } from "./mod.ts";

Deno.test("two mesh_ca replicas starting at once against one orchestrator end with one root, both serving it", async () => {
  await using kube = await startFakeKube();
  const config = orchCaConfig(kube.kubeconfigPath);
  const logs = [recordingLogger(), recordingLogger()];
  const [a, b] = await Promise.all(logs.map((log) => start(config, { host: "127.0.0.1", log })));
  try {
    await Promise.all([a.ready, b.ready]);
    const stored = kube.get("secrets", "mesh-system", CA_SECRET.name)!;
    const root = atob((stored.data as Record<string, string>)["ca-cert.pem"]).trim();
    assert.equal(a.ca().rootPem.trim(), root);
    assert.equal(b.ca().rootPem.trim(), root);
  } finally {
    await a.shutdown();
    await b.shutdown();
  }
});

Deno.test("startKeySource() self-signed: a replica whose save loses the race uses the winner's root", async () => {
  let kept: { cert: string; key: string } | undefined;
  let loads = 0;
  // Both replicas read before either writes (the race); the store creates only if absent.
  const store: RootStore = {
    where: "memory",
    load() {
      loads++;
      return Promise.resolve(loads <= 2 ? undefined : kept);
    },
    save(root) {
      if (kept) return Promise.reject(new RootExistsError("exists"));
      kept = root;
      return Promise.resolve();
    },
  };
  const mode = {
    kind: "self-signed" as const,
    org: "example",
    ttlMs: 86_400_000,
    keySize: 2048,
  };
  const log = recordingLogger();
  const deps = { store, maxTtlMs: 3_600_000, graceRatio: 0.5, minGraceMs: 1000, log };
  const [x, y] = await Promise.all([startKeySource(mode, deps), startKeySource(mode, deps)]);
  assert.equal(x.ca().rootPem, y.ca().rootPem);
  assert.equal(x.ca().rootPem.trim(), kept!.cert.trim());
  assert.ok(
    log.lines.some((l) => l.includes("another replica stored first")),
    log.lines.join("\n"),
  );
});
