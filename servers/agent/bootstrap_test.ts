import assert from "node:assert/strict";
import { buildBootstrap, checkBootstrap, renderTemplate } from "./bootstrap.ts";
import { type ProxyFlags, toConfig } from "./config.ts";
import { POD_ENV, proxyFlags } from "./_test_util.ts";

const UPDATE = Deno.env.get("UPDATE_GOLDEN") === "1";
const golden = (name: string) => new URL(`./testdata/${name}`, import.meta.url);

async function assertGolden(name: string, doc: unknown) {
  const text = JSON.stringify(doc, null, 2) + "\n";
  if (UPDATE) await Deno.writeTextFile(golden(name), text);
  assert.equal(text, await Deno.readTextFile(golden(name)), `golden ${name} (UPDATE_GOLDEN=1)`);
}

const CASES: [string, Partial<ProxyFlags>, string, Record<string, string>][] = [
  ["sidecar-rest.json", {}, "sidecar", { MESH_META_INTERCEPTION_MODE: "REDIRECT" }],
  [
    "sidecar-ads.json",
    { bootstrapv2: true, discoveryAddress: "mesh-discovery.mesh-system:15007" },
    "sidecar",
    {},
  ],
  [
    "sidecar-ads-mtls-sds.json",
    { bootstrapv2: true, controlPlaneAuthPolicy: "MUTUAL_TLS", configPath: "/etc/mesh/proxy" },
    "sidecar",
    { MESH_AGENT_SDS: "true" },
  ],
  [
    "ingress-mtls-files.json",
    { bootstrapv2: true, controlPlaneAuthPolicy: "MUTUAL_TLS", serviceCluster: "mesh-ingress" },
    "ingress",
    { MESH_AGENT_SDS: "false" },
  ],
  [
    "router-telemetry.json",
    {
      availabilityZone: "eu-west-1a",
      tracerBAddress: "tracerb.mesh-system:9411",
      statsdUdpAddress: "10.0.0.9:9125",
      disableInternalTelemetry: true,
      proxyAdminPort: 15001,
      connectTimeout: 1500,
      discoveryRefreshDelay: 250,
    },
    "router",
    {},
  ],
];

for (const [name, flags, role, env] of CASES) {
  Deno.test(`buildBootstrap() writes ${name} that Envoy's Bootstrap proto accepts`, async () => {
    const b = buildBootstrap(toConfig(proxyFlags(flags), role, { ...POD_ENV, ...env }));
    assert.ok(await checkBootstrap(b) > 0);
    await assertGolden(name, b);
  });
}

Deno.test("checkBootstrap() rejects unknown and mistyped fields, naming them", async () => {
  const c = toConfig(proxyFlags(), "sidecar", POD_ENV);
  // deno-lint-ignore no-explicit-any
  const cases: [(b: Record<string, any>) => void, RegExp][] = [
    [
      (b) => b.admin.bogus = 1,
      /Bootstrap\.admin\.bogus: unknown field of envoy\.config\.bootstrap\.v3\.Admin/,
    ],
    [
      (b) => b.admin.address.socket_address.port_value = "x",
      /port_value: expected a number, got "x"/,
    ],
    [
      (b) => b.static_resources.clusters[0].connect_timeout = 5,
      /Bootstrap\.static_resources\.clusters\[0\]\.connect_timeout: want a duration like "1\.5s", got 5$/,
    ],
    [(b) => b.static_resources.clusters[0].lb_policy = "FOO", /"FOO" is not a value of LbPolicy/],
    [(b) => b.static_resources.clusters[0].name = "", /clusters\[0\]\.name: string min_len 1/],
    [(b) => b.node = "n", /Bootstrap\.node: want a JSON object for envoy\.config\.core\.v3\.Node/],
    [
      (b) => b.admin.bogus = null,
      /Bootstrap\.admin\.bogus: unknown field of envoy\.config\.bootstrap\.v3\.Admin/,
    ],
  ];
  for (const [mutate, want] of cases) {
    // deno-lint-ignore no-explicit-any
    const b = buildBootstrap(c) as Record<string, any>;
    mutate(b);
    await assert.rejects(checkBootstrap(b), (e: Error) => {
      assert.match(e.message, /^Invalid bootstrap: /);
      assert.match(e.message, want);
      return true;
    });
  }
});

Deno.test("renderTemplate() renders --templateFile with the agent's data", async () => {
  const c = toConfig(proxyFlags({ templateFile: "/t.yaml" }), "sidecar", POD_ENV);
  const doc = await renderTemplate(
    c,
    [
      "node:",
      "  id: [[ .NodeID | toJson ]]",
      "  cluster: [[ .Cluster ]]",
      "  metadata: { POD: [[ .PodName | toJson ]], NS: [[ .PodNamespace | toJson ]] }",
      "admin:",
      "  address: { socket_address: { address: 127.0.0.1, port_value: [[ .AdminPort ]] } }",
    ].join("\n"),
  );
  assert.deepEqual(doc, {
    node: {
      id: "sidecar~10.1.2.3~web-1.shop~shop.svc.cluster.local",
      cluster: "mesh-proxy",
      metadata: { POD: "web-1", NS: "shop" },
    },
    admin: { address: { socket_address: { address: "127.0.0.1", port_value: 15000 } } },
  });
  assert.ok(await checkBootstrap(doc) > 0);
  await assert.rejects(
    renderTemplate(c, "[[ if ]]"),
    /^Error: Cannot render --templateFile \/t\.yaml: /,
  );
  await assert.rejects(renderTemplate(c, "- a\n- b"), /did not render to an object/);
});

Deno.test("buildBootstrap() tells discovery the certificate directory (node metadata CERT_DIR) unless it is /etc/certs", () => {
  const meta = (env: Record<string, string>) =>
    (buildBootstrap(toConfig(proxyFlags(), "sidecar", { ...POD_ENV, ...env })) as {
      node: { metadata: Record<string, string> };
    }).node.metadata;
  assert.equal(meta({ MESH_CERT_DIR: "/home/me/web/certs/" }).CERT_DIR, "/home/me/web/certs");
  assert.equal(meta({ MESH_CERT_DIR: "/etc/certs" }).CERT_DIR, undefined);
  assert.equal(meta({}).CERT_DIR, undefined);
  assert.equal(meta({ MESH_CERT_DIR: "web/../certs" }).CERT_DIR, `${Deno.cwd()}/certs`);
});
