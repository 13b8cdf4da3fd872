import assert from "node:assert/strict";
import type { ConfigObject } from "../../model/types.ts";
import { model, SERVICES } from "../testdata/model.ts";
import { peerAuthnMode, peerAuthnModeOf } from "./peer_authn.ts";
import { mtlsModeOf } from "./security.ts";

const pa = (name: string, spec: unknown, ns = "default", created?: string): ConfigObject => ({
  apiVersion: "security.mesh.io/v1beta1",
  kind: "PeerAuthentication",
  metadata: { name, namespace: ns, ...(created ? { creationTimestamp: created } : {}) },
  spec: spec as Record<string, unknown>,
});

const app = { app: "world", version: "v1" };

Deno.test("peerAuthnMode() takes workload over namespace over mesh, and UNSET defers to the next scope", () => {
  const mesh = pa("m", { mtls: { mode: "STRICT" } }, "mesh-system");
  const ns = pa("n", { mtls: { mode: "PERMISSIVE" } });
  const wl = pa("w", { selector: { matchLabels: { app: "world" } }, mtls: { mode: "DISABLE" } });
  assert.equal(peerAuthnMode([mesh], "default", app, 80), "STRICT");
  assert.equal(peerAuthnMode([mesh, ns], "default", app, 80), "PERMISSIVE");
  assert.equal(peerAuthnMode([mesh, ns, wl], "default", app, 80), "NONE");
  assert.equal(peerAuthnMode([mesh, ns, wl], "default", { app: "hello" }, 80), "PERMISSIVE");
  assert.equal(peerAuthnMode([mesh, ns, wl], "other", app, 80), "STRICT");
  const unset = pa("u", { selector: { matchLabels: { app: "world" } }, mtls: { mode: "UNSET" } });
  assert.equal(peerAuthnMode([mesh, ns, unset], "default", app, 80), "PERMISSIVE");
  assert.equal(peerAuthnMode([pa("x", { mtls: {} })], "default", app, 80), undefined);
  // a selector-less object in another namespace than the root one is not mesh-wide
  assert.equal(
    peerAuthnMode([pa("o", { mtls: { mode: "STRICT" } }, "other")], "default", app, 80),
    undefined,
  );
});

Deno.test("peerAuthnMode() uses portLevelMtls for the workload port and the oldest object at one scope", () => {
  const wl = pa("w", {
    selector: { matchLabels: { app: "world" } },
    mtls: { mode: "STRICT" },
    portLevelMtls: { "8080": { mode: "DISABLE" } },
  });
  assert.equal(peerAuthnMode([wl], "default", app, 8080), "NONE");
  assert.equal(peerAuthnMode([wl], "default", app, 9000), "STRICT");
  const newer = pa("a-newer", { mtls: { mode: "DISABLE" } }, "default", "2026-01-02T00:00:00Z");
  const older = pa("z-older", { mtls: { mode: "STRICT" } }, "default", "2026-01-01T00:00:00Z");
  assert.equal(peerAuthnMode([newer, older], "default", app, 80), "STRICT");
});

Deno.test("peerAuthnModeOf() gives a client STRICT if any instance is STRICT, else plaintext if any is DISABLE", () => {
  const world = SERVICES[1];
  const http = world.ports[0];
  const ctx = (objs: ConfigObject[]) => model({ configs: { peerAuthentications: objs } });
  const v1 = (mode: string) =>
    pa("v1", { selector: { matchLabels: { app: "world", version: "v1" } }, mtls: { mode } });
  const nsPermissive = pa("n", { mtls: { mode: "PERMISSIVE" } });
  assert.equal(peerAuthnModeOf(ctx([nsPermissive, v1("DISABLE")]), world, http), "NONE");
  assert.equal(peerAuthnModeOf(ctx([nsPermissive, v1("STRICT")]), world, http), "STRICT");
  assert.equal(peerAuthnModeOf(ctx([nsPermissive]), world, http), "PERMISSIVE");
  assert.equal(peerAuthnModeOf(ctx([]), world, http), undefined);
});

Deno.test("mtlsModeOf() lets a deciding PeerAuthentication win over a 0.8 Policy and the mesh authPolicy, and falls back to them otherwise", () => {
  const world = SERVICES[1];
  const http = world.ports[0];
  const policy: ConfigObject = {
    apiVersion: "authentication.mesh.io/v1alpha1",
    kind: "Policy",
    metadata: { name: "p", namespace: "default" },
    spec: { peers: [{ mtls: {} }] },
  };
  const disable = pa("n", { mtls: { mode: "DISABLE" } });
  const worldMode = (opts: Parameters<typeof model>[0]) => mtlsModeOf(model(opts), world, http);
  assert.equal(
    worldMode({ configs: { policies: [policy], peerAuthentications: [disable] } }),
    "NONE",
  );
  assert.equal(
    worldMode({
      configs: { policies: [policy], peerAuthentications: [pa("u", { mtls: { mode: "UNSET" } })] },
    }),
    "STRICT",
  );
  assert.equal(
    worldMode({ configs: { peerAuthentications: [disable] }, mesh: { authPolicy: "MUTUAL_TLS" } }),
    "NONE",
  );
  // mesh-external services are never mTLS
  assert.equal(
    mtlsModeOf(
      model({
        configs: { peerAuthentications: [pa("s", { mtls: { mode: "STRICT" } }, "mesh-system")] },
      }),
      SERVICES[2],
      SERVICES[2].ports[0],
    ),
    "NONE",
  );
});
