import assert from "node:assert/strict";
import { loadRestConfig } from "./rest.ts";

function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown>, ns?: string) {
  return JSON.stringify({
    clusters: [{ name: "c", cluster }],
    users: [{ name: "u", user }],
    contexts: [{
      name: "x",
      context: { cluster: "c", user: "u", ...(ns ? { namespace: ns } : {}) },
    }],
    "current-context": "x",
  });
}

Deno.test("loadRestConfig() takes token, basic and anonymous users; the context's namespace or default", async () => {
  const dir = await Deno.makeTempDir();
  const seen: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    seen.push(req.headers.get("authorization") ?? "");
    return new Response("{}");
  });
  try {
    const url = `http://127.0.0.1:${server.addr.port}/`;
    const cases: [Record<string, unknown>, string][] = [
      [{ token: "t" }, "Bearer t"],
      [{ username: "a", password: "b" }, `Basic ${btoa("a:b")}`],
      [{}, ""],
    ];
    for (const [user, header] of cases) {
      await Deno.writeTextFile(`${dir}/kc`, kubeconfig({ server: url }, user, " team "));
      const rest = await loadRestConfig(`${dir}/kc`);
      assert.ok(rest, JSON.stringify(user));
      assert.equal(rest.server, url.slice(0, -1));
      assert.equal(rest.namespace, "team");
      assert.deepEqual(await rest.get("/api"), { status: 200, body: "{}" });
      rest.close();
      assert.equal(seen.pop(), header);
    }
    await Deno.writeTextFile(`${dir}/kc`, kubeconfig({ server: url }, {}));
    assert.equal((await loadRestConfig(`${dir}/kc`))?.namespace, "default");
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadRestConfig() leaves to the client library what it does not cover", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const https = { server: "https://127.0.0.1:6443" };
    const cases: [string, string][] = [
      ["exec plugin", kubeconfig(https, { exec: { command: "x" } })],
      ["auth-provider", kubeconfig(https, { "auth-provider": { name: "oidc" } })],
      ["insecure https", kubeconfig({ ...https, "insecure-skip-tls-verify": true }, {})],
      ["tls-server-name", kubeconfig({ ...https, "tls-server-name": "api" }, {})],
      ["proxy-url", kubeconfig({ ...https, "proxy-url": "http://proxy:3128" }, {})],
      ["impersonation", kubeconfig(https, { token: "t", as: "admin" })],
      ["a key without a certificate", kubeconfig(https, { "client-key-data": "eA==" })],
      ["a missing CA file", kubeconfig({ ...https, "certificate-authority": "nope.pem" }, {})],
      ["no current context", JSON.stringify({ clusters: [], users: [], contexts: [] })],
      ["not YAML", "a: [\nb"],
    ];
    for (const [what, text] of cases) {
      await Deno.writeTextFile(`${dir}/kc`, text);
      assert.equal(await loadRestConfig(`${dir}/kc`), null, what);
    }
    assert.equal(await loadRestConfig(`${dir}/missing`), null, "a missing file");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
