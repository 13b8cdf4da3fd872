/**
 * End-to-end: an endpoints-only registry change that touches a proxy's own workload (an instance
 * at the proxy's IP) is sent to that proxy as CDS and LDS too, not only as EDS: its inbound
 * cluster and listener come and go with its own endpoint. Through the program, with a polled
 * registry (RegistryA, a fake Consul catalog) whose instances change while the service stays.
 */

import assert from "node:assert/strict";
import { TYPE_URLS } from "../../lib/xds/mod.ts";
import { waitUntil } from "../harness/procs.ts";
import { adsClient, type AdsStream, type Response } from "./_ads_client.ts";
import { fakeConsul, http, startDiscovery } from "./discovery_harness.ts";

const { cluster: CDS, listener: LDS } = TYPE_URLS;
const PROXY_IP = "10.0.0.7";
const INBOUND_CLUSTER = "inbound|9080||web.service.consul";
const INBOUND_LISTENER = `${PROXY_IP}_9080`;

const names = (r: Response) => r.resources.map((x) => x.name as string);

/** ACKs `r` on `stream`. */
function ack(stream: AdsStream, r: Response) {
  stream.send({ type_url: r.type_url, version_info: r.version_info, response_nonce: r.nonce });
}

/** The next CDS and LDS responses (ACKed), within 10 s each. */
async function nextCdsLds(stream: AdsStream): Promise<{ cds: string[]; lds: string[] }> {
  const cds = await stream.next(CDS, 10_000);
  ack(stream, cds);
  const lds = await stream.next(LDS, 10_000);
  ack(stream, lds);
  return { cds: names(cds), lds: names(lds) };
}

Deno.test("mesh-discovery sends a proxy CDS and LDS when its own endpoint joins or leaves a service", async () => {
  const web = (address: string) => ({
    Node: `node-${address}`,
    Address: address,
    ServicePort: 9080,
    NodeMeta: { protocol: "http" },
  });
  let instances = [web("10.0.0.1")];
  const { server: consul, args: consulArgs } = fakeConsul(() => instances);
  const dir = await Deno.makeTempDir({ prefix: "mesh-proxypush-" });
  const d = await startDiscovery([
    "--configDir",
    dir,
    ...consulArgs,
  ]);
  const client = adsClient(d.grpc);
  const stream = client.open();
  try {
    await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
    stream.send({
      node: { id: `sidecar~${PROXY_IP}~web-1.default~default.svc.cluster.local` },
      type_url: CDS,
    });
    stream.send({ type_url: LDS });
    const before = await nextCdsLds(stream);
    assert.ok(before.cds.includes("outbound|9080||web.service.consul"), before.cds.join(","));
    assert.ok(!before.cds.includes(INBOUND_CLUSTER), before.cds.join(","));
    assert.ok(!before.lds.includes(INBOUND_LISTENER), before.lds.join(","));
    // Let start-up pushes settle: a late full push would stand in for the one under test (it
    // can make this test pass, never fail).
    await new Promise((r) => setTimeout(r, 1000));

    // The proxy's own workload joins the service: an endpoints-only change.
    instances = [web("10.0.0.1"), web(PROXY_IP)];
    const joined = await nextCdsLds(stream);
    assert.ok(joined.cds.includes(INBOUND_CLUSTER), joined.cds.join(","));
    assert.ok(joined.lds.includes(INBOUND_LISTENER), joined.lds.join(","));

    // ... and leaves it again.
    instances = [web("10.0.0.1")];
    const left = await nextCdsLds(stream);
    assert.ok(!left.cds.includes(INBOUND_CLUSTER), left.cds.join(","));
    assert.ok(!left.lds.includes(INBOUND_LISTENER), left.lds.join(","));
  } finally {
    await stream.close();
    client.close();
    await d.proc.stop();
    await consul.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
