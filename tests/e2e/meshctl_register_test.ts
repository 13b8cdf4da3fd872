/**
 * meshctl register / deregister: on the orch platform against the fake API server (checked with
 * the real kubectl), and on the fs platform with the ServiceEntry served by mesh-discovery (its
 * endpoints, and its service account checked under mutual TLS).
 */
import assert from "node:assert/strict";
import { parse } from "../../lib/deps/yaml.ts";
import { startFakeKube } from "../harness/fake_kube.ts";
import { kubectlAvailable, runKubectl } from "../harness/kubectl.ts";
import { waitUntil } from "../harness/procs.ts";
import { listFiles, meshctl, meshctlProcess, withDir } from "./_meshctl.ts";
import { http, post, startDiscovery } from "./discovery_harness.ts";

type Endpoints = {
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
  subsets?: { addresses?: { ip: string }[]; ports?: { name: string; port: number }[] }[];
};

const subsetsOf = (ep: Endpoints | undefined) =>
  (ep?.subsets ?? []).map((s) => ({
    ips: (s.addresses ?? []).map((a) => a.ip),
    ports: (s.ports ?? []).map((p) => `${p.name}:${p.port}`),
  }));

Deno.test("meshctl register creates the Service and Endpoints of a VM; kubectl sees them", async () => {
  await using kube = await startFakeKube();
  const c = ["-c", kube.kubeconfigPath];
  const r = await meshctlProcess(
    [
      "register",
      "vm-db",
      "10.0.0.5",
      "3306",
      "http-admin:9000",
      "-l",
      "app=db,version=v1",
      "-a",
      "owner=ops,pinned",
      "-s",
      "db-sa",
      ...c,
    ],
  );
  assert.equal(r.stderr, "");
  assert.equal(r.code, 0);
  assert.equal(
    r.stdout,
    "Created service default/vm-db\nCreated endpoints default/vm-db\n" +
      "Registered 10.0.0.5 with service default/vm-db (ports mysql:3306, http-admin:9000)\n",
  );
  assert.ok(await kubectlAvailable(), "kubectl is on PATH");
  const k = await runKubectl(kube.kubeconfigPath, [
    "get",
    "service,endpoints",
    "vm-db",
    "-o",
    "yaml",
  ]);
  assert.equal(k.code, 0, k.stderr);
  const [svc, ep] = (parse(k.stdout) as { items: Record<string, unknown>[] }).items as [
    {
      metadata: Endpoints["metadata"];
      spec: { ports: { name: string; port: number }[]; selector?: unknown };
    },
    Endpoints,
  ];
  assert.deepEqual(svc.spec.ports.map((p) => `${p.name}:${p.port}`), [
    "mysql:3306",
    "http-admin:9000",
  ]);
  assert.equal(svc.spec.selector, undefined, "no selector: the endpoints are ours");
  for (const m of [svc.metadata, ep.metadata]) {
    assert.deepEqual(m.labels, { app: "db", version: "v1" });
    assert.equal(m.annotations?.owner, "ops");
    assert.equal(m.annotations?.pinned, "", "a bare key is an empty annotation");
    assert.equal(m.annotations?.["alpha.mesh.io/orchestrator-serviceaccounts"], "db-sa");
  }
  assert.deepEqual(subsetsOf(ep), [{
    ips: ["10.0.0.5"],
    ports: ["mysql:3306", "http-admin:9000"],
  }]);

  // a second VM with the same ports joins the subset; the same VM again is not added twice
  const r2 = await meshctl([
    "register",
    "vm-db",
    "10.0.0.6",
    "mysql:3306",
    "http-admin:9000",
    ...c,
  ]);
  assert.equal(
    r2.stdout,
    "Registered 10.0.0.6 with service default/vm-db (ports mysql:3306, http-admin:9000)\n",
  );
  const again = await meshctl(["register", "vm-db", "10.0.0.5", "3306", "http-admin:9000", ...c]);
  assert.equal(again.code, 0);
  assert.match(
    again.stdout,
    /^10\.0\.0\.5 is already registered with service default\/vm-db .*nothing changed\n$/,
  );
  // other ports: a subset of their own; a port the Service does not name is warned about
  const other = await meshctl(["register", "vm-db", "10.0.0.7", "3306", ...c]);
  assert.equal(other.code, 0);
  assert.equal(other.stderr, "");
  const unnamed = await meshctl(["register", "vm-db", "10.0.0.8", "grpc:7070", ...c]);
  assert.equal(unnamed.code, 0);
  assert.match(unnamed.stderr, /^Warning: service default\/vm-db has no port named grpc: /);
  const stored = kube.get("endpoints", "default", "vm-db") as unknown as Endpoints;
  assert.deepEqual(subsetsOf(stored), [
    { ips: ["10.0.0.5", "10.0.0.6"], ports: ["mysql:3306", "http-admin:9000"] },
    { ips: ["10.0.0.7"], ports: ["mysql:3306"] },
    { ips: ["10.0.0.8"], ports: ["grpc:7070"] },
  ]);

  // deregister removes the address everywhere and drops empty subsets
  const d = await meshctl(["deregister", "vm-db", "10.0.0.7", ...c]);
  assert.deepEqual(d, {
    code: 0,
    stdout: "Deregistered 10.0.0.7 from service default/vm-db\n",
    stderr: "",
  });
  const d2 = await meshctl(["deregister", "vm-db", "10.0.0.7", ...c]);
  assert.deepEqual(d2, {
    code: 0,
    stdout: "",
    stderr: "Warning: 10.0.0.7 is not registered with service default/vm-db; nothing removed\n",
  });
  const k2 = await runKubectl(kube.kubeconfigPath, ["get", "endpoints", "vm-db", "-o", "yaml"]);
  assert.deepEqual(subsetsOf(parse(k2.stdout) as Endpoints), [
    { ips: ["10.0.0.5", "10.0.0.6"], ports: ["mysql:3306", "http-admin:9000"] },
    { ips: ["10.0.0.8"], ports: ["grpc:7070"] },
  ]);
  const missing = await meshctl(["deregister", "nosuch", "10.0.0.5", ...c]);
  assert.equal(missing.code, 1);
  assert.equal(
    missing.stderr,
    "Error: endpoints default/nosuch not found: nothing is registered with nosuch\n",
  );
});

Deno.test("meshctl register uses -n, else the context's namespace, and keeps an existing Service", async () => {
  await using kube = await startFakeKube({ namespaces: ["default", "team"] });
  kube.upsert({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "web", namespace: "team", labels: { keep: "me" } },
    spec: { ports: [{ name: "http", port: 80 }], selector: { app: "web" } },
  });
  const r = await meshctl([
    "register",
    "web",
    "10.1.0.1",
    "80",
    "-n",
    "team",
    "-l",
    "x=y",
    "-c",
    kube.kubeconfigPath,
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stdout,
    "Created endpoints team/web\nRegistered 10.1.0.1 with service team/web (ports http:80)\n",
  );
  assert.match(r.stderr, /^Warning: service team\/web has a selector: the orchestrator manages /);
  const svc = kube.get("services", "team", "web")!;
  assert.deepEqual(
    (svc.metadata as { labels: unknown }).labels,
    { keep: "me" },
    "the Service is left alone",
  );
  await withDir(async (dir) => {
    await kube.writeKubeconfig(`${dir}/kc`, { namespace: "team" });
    const d = await meshctl(["deregister", "web", "10.1.0.1", "-c", `${dir}/kc`]);
    assert.equal(d.stdout, "Deregistered 10.1.0.1 from service team/web\n");
  });
});

Deno.test("meshctl register refuses bad arguments with one line and exit 2", async () => {
  const cases: [string[], string][] = [
    [
      ["register", "vm", "10.0.0.300", "80"],
      'Invalid IP "10.0.0.300": must be an IPv4 or IPv6 address',
    ],
    [["register", "Vm", "10.0.0.3", "80"], 'Invalid service name "Vm": must be a DNS-1035 label'],
    [["register", "vm", "10.0.0.3", "http:0"], 'Invalid port "http:0": want [name:]port'],
    [
      ["register", "vm", "10.0.0.3", "80", "8080"],
      'Invalid port "8080": ports 80 and 8080 would both be named "http"',
    ],
    [["register", "vm", "10.0.0.3", "a:80", "b:80"], 'Invalid port "b:80": port 80 is given twice'],
    [
      ["register", "vm", "10.0.0.3", "Web:80"],
      'Invalid port "Web:80": name "Web" must be a DNS-1123 label',
    ],
    [
      ["register", "vm", "10.0.0.3", "80", "-l", "novalue"],
      'Invalid --labels item "novalue": want key=value',
    ],
    [
      ["register", "vm", "10.0.0.3", "80", "-l", "a=b c"],
      'Invalid --labels item "a=b c": invalid label value',
    ],
    [["register", "vm", "10.0.0.3"], "Missing required argument 'ports'"],
    [["deregister", "vm", "nope"], 'Invalid IP "nope"'],
  ];
  for (const [args, want] of cases) {
    const r = await meshctl([...args, "-c", "/nonexistent/kubeconfig"]);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    assert.ok(r.stderr.startsWith(`Error: ${want}`), `${args.join(" ")}: ${r.stderr}`);
  }
});

Deno.test("meshctl -p fs register keeps a ServiceEntry whose endpoints mesh-discovery serves", async () => {
  await withDir(async (dir) => {
    const fs = ["-p", "fs", "--configDir", dir];
    const r = await meshctlProcess([
      "register",
      "vm-web",
      "10.0.0.5",
      "80",
      "grpc:7070",
      "-l",
      "version=v1",
      ...fs,
    ]);
    assert.equal(r.stderr, "");
    assert.equal(
      r.stdout,
      "Created service-entry default/vm-web\n" +
        "Registered 10.0.0.5 with service-entry default/vm-web (ports http:80, grpc:7070)\n",
    );
    const r2 = await meshctl(["register", "vm-web", "10.0.0.6", "80", "grpc:7070", ...fs]);
    assert.equal(r2.code, 0, r2.stderr);
    const same = await meshctl(["register", "vm-web", "10.0.0.6", "80", ...fs]);
    assert.match(same.stdout, /already registered.*nothing changed/);
    const clash = await meshctl(["register", "vm-web", "10.0.0.7", "web:80", ...fs]);
    assert.equal(clash.code, 1);
    assert.equal(
      clash.stderr,
      'Error: cannot register web:80: service-entry default/vm-web names port 80 "http"\n',
    );
    assert.deepEqual(await listFiles(dir), ["default/serviceentries/vm-web.yaml"]);
    const se = parse(await Deno.readTextFile(`${dir}/default/serviceentries/vm-web.yaml`)) as {
      metadata: { annotations: Record<string, string> };
      spec: Record<string, unknown>;
    };
    assert.equal(se.metadata.annotations["alpha.mesh.io/orchestrator-serviceaccounts"], "default");
    assert.deepEqual(se.spec, {
      hosts: ["vm-web.default.svc.cluster.local"],
      ports: [{ number: 80, protocol: "HTTP", name: "http" }, {
        number: 7070,
        protocol: "GRPC",
        name: "grpc",
      }],
      location: "MESH_INTERNAL",
      resolution: "STATIC",
      endpoints: [
        { address: "10.0.0.5", ports: { http: 80, grpc: 7070 }, labels: { version: "v1" } },
        { address: "10.0.0.6", ports: { http: 80, grpc: 7070 } },
      ],
    });

    // mutual TLS on: the clusters of the VM's service check its service account
    const meshFile = await Deno.makeTempFile({ suffix: ".yaml" });
    await Deno.writeTextFile(meshFile, "authPolicy: MUTUAL_TLS\n");
    const d = await startDiscovery([
      "--registries",
      "Mock",
      "--configDir",
      dir,
      "--meshConfig",
      meshFile,
    ]);
    const sans = async () => {
      const res = await post(`http://${d.http}/v3/discovery:clusters`, {
        node: { id: "sidecar~10.9.0.1~app.default~default.svc.cluster.local" },
      });
      const body = JSON.parse(res.body) as { resources?: { name: string }[] };
      const c = (body.resources ?? []).find((c) =>
        c.name === "outbound|7070||vm-web.default.svc.cluster.local"
      );
      return JSON.stringify(c ?? null).match(/spiffe:\/\/[^"]+/g) ?? [];
    };
    const eds = async () => {
      const res = await post(`http://${d.http}/v3/discovery:endpoints`, {
        node: { id: "sidecar~10.9.0.1~app.default~default.svc.cluster.local" },
        resource_names: ["outbound|80||vm-web.default.svc.cluster.local"],
      });
      if (res.status !== 200) return [];
      const body = JSON.parse(res.body) as {
        resources?: {
          endpoints?: {
            lb_endpoints?: {
              endpoint: { address: { socket_address: { address: string; port_value: number } } };
            }[];
          }[];
        }[];
      };
      return (body.resources ?? []).flatMap((r) =>
        (r.endpoints ?? []).flatMap((l) =>
          (l.lb_endpoints ?? []).map((e) =>
            `${e.endpoint.address.socket_address.address}:${e.endpoint.address.socket_address.port_value}`
          )
        )
      ).sort();
    };
    try {
      await waitUntil(async () => (await http(`http://${d.http}/ready`)).status === 200, 10_000);
      await waitUntil(async () => (await eds()).length === 2, 10_000);
      assert.deepEqual(await eds(), ["10.0.0.5:80", "10.0.0.6:80"]);
      assert.deepEqual(await sans(), ["spiffe://cluster.local/ns/default/sa/default"]);
      // deregister: discovery drops the endpoint; the last one deletes the entry
      const dr = await meshctl(["deregister", "vm-web", "10.0.0.5", ...fs]);
      assert.deepEqual(dr, {
        code: 0,
        stdout: "Deregistered 10.0.0.5 from service-entry default/vm-web\n",
        stderr: "",
      });
      await waitUntil(async () => (await eds()).join() === "10.0.0.6:80", 10_000);
      const last = await meshctl(["deregister", "vm-web", "10.0.0.6", ...fs]);
      assert.equal(
        last.stdout,
        "Deregistered 10.0.0.6 from service-entry default/vm-web\n" +
          "Deleted service-entry default/vm-web (no endpoints left)\n",
      );
      assert.deepEqual(await listFiles(dir), []);
      const none = await meshctl(["deregister", "vm-web", "10.0.0.6", ...fs]);
      assert.equal(none.code, 1);
      assert.match(none.stderr, /^Error: service-entry default\/vm-web not found/);
    } finally {
      const status = await d.proc.stop();
      await Deno.remove(meshFile);
      assert.equal(status.code, 0, d.proc.output().slice(-3000));
    }
  });
});

Deno.test("meshctl register name:port:targetPort gives the Service a targetPort and the Endpoints the instance's port", async () => {
  await using kube = await startFakeKube();
  const r = await meshctlProcess(
    ["register", "echo", "10.0.0.7", "http:80:8081", "-c", kube.kubeconfigPath],
  );
  assert.equal(r.stderr, "");
  assert.equal(r.code, 0);
  assert.match(
    r.stdout,
    /Registered 10\.0\.0\.7 with service default\/echo \(ports http:80:8081\)\n$/,
  );
  const k = await runKubectl(kube.kubeconfigPath, [
    "get",
    "service,endpoints",
    "echo",
    "-o",
    "yaml",
  ]);
  assert.equal(k.code, 0, k.stderr);
  const [svc, ep] = (parse(k.stdout) as { items: Record<string, unknown>[] }).items as [
    { spec: { ports: { name: string; port: number; targetPort?: number }[] } },
    Endpoints,
  ];
  assert.deepEqual(svc.spec.ports.map((p) => [p.name, p.port, p.targetPort]), [["http", 80, 8081]]);
  assert.deepEqual(subsetsOf(ep), [{ ips: ["10.0.0.7"], ports: ["http:8081"] }]);
});
