import assert from "node:assert/strict";
import { createWebhookClient } from "./webhook.ts";

function echoServer(opts: Deno.ServeTcpOptions | Deno.ServeUnixOptions) {
  return Deno.serve({ ...opts, onListen: () => {} } as Deno.ServeTcpOptions, async (req) => {
    const body = await req.json();
    if (body.fail) return new Response("boom", { status: 500 });
    return Response.json({ path: new URL(req.url).pathname, echoed: body });
  });
}

Deno.test("createWebhookClient() posts JSON over TCP and returns the reply", async () => {
  const server = echoServer({ hostname: "127.0.0.1", port: 0 });
  const client = createWebhookClient({
    kind: "http",
    url: `http://127.0.0.1:${(server.addr as Deno.NetAddr).port}`,
  });
  try {
    const reply = await client.post("/v3/discovery:clusters", { resources: [1] });
    assert.deepEqual(reply, { path: "/v3/discovery:clusters", echoed: { resources: [1] } });
    await assert.rejects(() => client.post("/x", { fail: true }), /status 500: boom/);
  } finally {
    client.close();
    await server.shutdown();
  }
});

Deno.test("createWebhookClient() posts JSON over a unix socket", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-hook-" });
  const server = echoServer({ path: `${dir}/hook.sock` } as Deno.ServeUnixOptions);
  const client = createWebhookClient({ kind: "unix", path: `${dir}/hook.sock` });
  try {
    const reply = await client.post("/v3/discovery:routes", { a: 1 });
    assert.deepEqual(reply, { path: "/v3/discovery:routes", echoed: { a: 1 } });
  } finally {
    client.close();
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createWebhookClient() fails with the address when nothing listens", async () => {
  const client = createWebhookClient({ kind: "unix", path: "/nonexistent/hook.sock" });
  try {
    await assert.rejects(
      () => client.post("/p", {}),
      /webhook unix:\/\/\/nonexistent\/hook\.sock\/p/,
    );
  } finally {
    client.close();
  }
});
