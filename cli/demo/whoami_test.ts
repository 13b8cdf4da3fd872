import assert from "node:assert/strict";
import { yieldingCallCredentials } from "./whoami.ts";

Deno.test("yieldingCallCredentials() answers with no metadata, after a timer turn (never from a microtask)", async () => {
  const grpc = await import("../../lib/deps/grpc.ts");
  const creds = yieldingCallCredentials(grpc);
  const order: string[] = [];
  setTimeout(() => order.push("timer"), 0);
  const md = await creds.generateMetadata({ method_name: "/x.Y/Z", service_url: "https://h/x.Y" })
    .then((m) => {
      order.push("metadata");
      return m;
    });
  // grpc-js's re-pick loop waits on this promise: resolving it before a timer could run is what
  // let the loop starve the event loop
  assert.deepEqual(order, ["timer", "metadata"]);
  assert.deepEqual(md.toJSON(), {});
});
