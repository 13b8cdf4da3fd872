/**
 * meshctl create / replace / delete / get on the `fs` platform (a --configDir directory, no
 * cluster): the real program as a subprocess for the main paths, in-process for the many error
 * paths.
 */
import assert from "node:assert/strict";
import { parseMeshConfig } from "../../lib/model/mod.ts";
import { createFileStore } from "../../lib/store/file.ts";
import {
  allSamplesText,
  expected,
  ingressText,
  listFiles,
  meshctl,
  meshctlProcess,
  parseYamlOutput,
  samples,
  withDir,
} from "./_meshctl.ts";

const fs = (dir: string) => ["-p", "fs", "--configDir", dir];

const vs = (name: string, ns?: string, host = "reviews") =>
  `apiVersion: networking.mesh.io/v1alpha3
kind: VirtualService
metadata:
  name: ${name}${ns ? `\n  namespace: ${ns}` : ""}
spec:
  hosts: [${host}]
  http:
    - route:
        - destination: { host: ${host} }
`;

Deno.test("meshctl create -f then get -o yaml round-trips every kind on the fs platform", async () => {
  await withDir(async (dir) => {
    const all = await samples();
    await Deno.writeTextFile(`${dir}/all.yaml`, await allSamplesText());
    const store = `${dir}/store`;
    await Deno.mkdir(store);
    // the real program, relative -f resolved against its working directory
    const r = await meshctlProcess(["create", "-f", "all.yaml", ...fs(store)], { cwd: dir });
    // the legacy kinds are stored, with one warning each that they are not served
    assert.deepEqual(
      r.stderr.trimEnd().split("\n").map((l) =>
        /^Warning: (\w+) is stored but not served/.exec(l)?.[1]
      ),
      ["RouteRule", "EgressRule", "DestinationPolicy"],
    );
    assert.equal(r.code, 0);
    const lines = r.stdout.trimEnd().split("\n");
    assert.equal(lines.length, all.length);
    all.forEach(({ schema, raw }, i) => {
      const meta = raw.metadata as { name: string; namespace: string };
      const type = schema.meshctl ? schema.internalType : schema.kind;
      assert.match(
        lines[i],
        new RegExp(
          `^Created config ${type}/${meta.namespace}/${meta.name} at revision [0-9a-f]{12}$`,
        ),
      );
    });
    // files where mesh-discovery --configDir reads them
    assert.ok((await listFiles(store)).includes("default/virtualservices/reviews.yaml"));

    for (const { schema, raw } of all.filter((s) => s.schema.meshctl)) {
      const g = await meshctl(["get", schema.plural, "-o", "yaml", ...fs(store)]);
      assert.equal(g.code, 0, g.stderr);
      assert.match(g.stdout, /\n---\n$/);
      const got = parseYamlOutput(g.stdout);
      assert.equal(got.length, 1, schema.type);
      const want = expected(raw);
      assert.ok(got[0].metadata.resourceVersion, `${schema.type} has a resourceVersion`);
      delete got[0].metadata.resourceVersion;
      assert.deepEqual(got[0], want, schema.type);
    }
  });
});

Deno.test("meshctl get prints the short table, one object, and No resources found", async () => {
  await withDir(async (dir) => {
    const input = vs("reviews") + "---\n" + vs("a-very-long-virtual-service-name", "team") +
      "---\n" + vs("ratings", "default", "ratings");
    const c = await meshctl(["create", ...fs(dir)], { stdin: input });
    assert.equal(c.code, 0, c.stderr);
    const r = await meshctlProcess(["get", "VirtualServices", ...fs(dir)]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      "NAME                               KIND                                         NAMESPACE\n" +
        "ratings                            VirtualService.networking.mesh.io.v1alpha3   default\n" +
        "reviews                            VirtualService.networking.mesh.io.v1alpha3   default\n" +
        "a-very-long-virtual-service-name   VirtualService.networking.mesh.io.v1alpha3   team\n",
    );
    // one namespace
    const team = await meshctl(["get", "virtualservice", "-n", "team", ...fs(dir)]);
    assert.equal(team.stdout.split("\n").length, 3);
    // one object: -n or the default namespace
    const one = await meshctl(["get", "virtualservice", "reviews", "-o", "yaml", ...fs(dir)]);
    assert.equal(parseYamlOutput(one.stdout)[0].metadata.name, "reviews");
    // a name that does not exist is an error (kubectl's habit; istioctl 0.8 printed "No
    // resources found." and exited 0)
    const none = await meshctl(["get", "virtualservice", "reviews", "-n", "team", ...fs(dir)]);
    assert.deepEqual(none, {
      code: 1,
      stdout: "",
      stderr: 'Error: virtualservice "reviews" not found in namespace "team"\n',
    });
    const empty = await meshctl(["get", "gateways", ...fs(dir)]);
    assert.deepEqual(empty, { code: 0, stdout: "", stderr: "No resources found.\n" });
    // policy (authentication group) short output
    await meshctl(["create", "-f", "-", ...fs(dir)], {
      stdin: "apiVersion: authentication.mesh.io/v1alpha1\nkind: Policy\n" +
        "metadata: { name: p1 }\nspec: { targets: [{ name: reviews }] }\n",
    });
    const p = await meshctl(["get", "policies", ...fs(dir)]);
    assert.equal(
      p.stdout,
      "NAME      KIND                                     NAMESPACE\n" +
        "p1        Policy.authentication.mesh.io.v1alpha1   default\n",
    );
  });
});

Deno.test("meshctl create reads standard input when -f is absent or -", async () => {
  await withDir(async (dir) => {
    const r = await meshctlProcess(["create", ...fs(dir)], { stdin: vs("from-stdin") });
    assert.equal(r.stderr, "");
    assert.equal(r.code, 0);
    assert.match(
      r.stdout,
      /^Created config virtual-service\/default\/from-stdin at revision [0-9a-f]{12}\n$/,
    );
    const r2 = await meshctl(["create", "-f", "-", ...fs(dir)], { stdin: vs("dash") });
    assert.match(r2.stdout, /^Created config virtual-service\/default\/dash at revision \w+\n$/);
    const empty = await meshctl(["create", ...fs(dir)], { stdin: "# nothing\n---\n" });
    assert.deepEqual(empty, { code: 1, stdout: "", stderr: "Error: nothing to create\n" });
  });
});

Deno.test("meshctl create --all-or-nothing writes nothing when one document of a file is bad", async () => {
  await withDir(async (dir) => {
    const store = `${dir}/store`;
    await Deno.mkdir(store);
    const bad = vs("one") + "---\n" + vs("two") + "---\n" +
      "apiVersion: networking.mesh.io/v1alpha3\nkind: VirtualService\n" +
      "metadata: { name: x }\nspec: { hosts: [x], http: [{ route: [] }] }\n" +
      "---\nkind: Frobnicator\nmetadata: { name: f }\n";
    await Deno.writeTextFile(`${dir}/bad.yaml`, bad);
    const r = await meshctl(["create", "--all-or-nothing", "-f", "bad.yaml", ...fs(store)], {
      cwd: dir,
    });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "");
    const lines = r.stderr.trimEnd().split("\n");
    assert.match(
      lines[0],
      /^Error: bad\.yaml document 3: VirtualService\/default\/x: spec\.http\[0\]: /,
    );
    assert.equal(lines[1], "Error: bad.yaml document 4: kind Frobnicator is not known");
    assert.equal(lines[2], "Error: bad.yaml: 2 problems found; nothing was created");
    assert.deepEqual(await listFiles(store), []);
    // YAML syntax errors and the same object twice are problems too
    const r2 = await meshctl(["create", "--all-or-nothing", ...fs(store)], {
      stdin: vs("one") + "---\n" + vs("one") + "---\nkind: [unclosed\n",
    });
    assert.equal(r2.code, 1);
    assert.match(
      r2.stderr,
      /^Error: stdin document 2: VirtualService\/default\/one: defined again \(first in document 1\)\n/,
    );
    assert.match(r2.stderr, /\nError: stdin document 3: cannot parse YAML: /);
    assert.deepEqual(await listFiles(store), []);
    // a missing file
    const r3 = await meshctl(["create", "-f", "nope.yaml", ...fs(store)], { cwd: dir });
    assert.deepEqual(r3, {
      code: 1,
      stdout: "",
      stderr: 'Error: Cannot read "nope.yaml": no such file\n',
    });
  });
});

Deno.test("meshctl reports usage errors with exit 2", async () => {
  await withDir(async (dir) => {
    const usage = async (args: string[], message: string, at: string) => {
      const r = await meshctl(args);
      assert.deepEqual(r, {
        code: 2,
        stdout: "",
        stderr: `Error: ${message}\nRun '${at} --help' for usage.\n`,
      }, args.join(" "));
    };
    const types = "routerule, virtualservice, gateway, egressrule, serviceentry, " +
      "destinationpolicy, destinationrule, httpapispec, httpapispecbinding, quotaspec, " +
      "quotaspecbinding, policy, servicerole, servicerolebinding";
    await usage(
      ["get", "frob", ...fs(dir)],
      `configuration type frob not found, the types are ${types}`,
      "meshctl get",
    );
    await usage(
      ["get", "virtual-services", ...fs(dir)],
      '"virtual-services" not recognized. Please use non-hyphenated resource name "virtualservices"',
      "meshctl get",
    );
    await usage(
      ["delete", "route-rule", "x", ...fs(dir)],
      '"route-rule" not recognized. Please use non-hyphenated resource name "routerule"',
      "meshctl delete",
    );
    await usage(
      ["get", "vs", "-o", "json", ...fs(dir)],
      "unknown output format json. Types are yaml|short",
      "meshctl get",
    );
    await usage(
      ["get"],
      "specify the type of resource to get. Types are routerule, virtualservice, gateway, egressrule, serviceentry, destinationpolicy, destinationrule, httpapispec, httpapispecbinding, quotaspec, quotaspecbinding, policy, servicerole, servicerolebinding",
      "meshctl get",
    );
    await usage(
      ["create", "extra", ...fs(dir)],
      "Too many arguments for 'create'. Expected 0 arguments but got 1: extra.",
      "meshctl create",
    );
    await usage(
      ["delete", "virtualservice", ...fs(dir)],
      "provide configuration type and name or -f option",
      "meshctl delete",
    );
    await usage(
      ["delete", "virtualservice", "x", "-f", "a.yaml", ...fs(dir)],
      "delete takes no arguments when the file option is used",
      "meshctl delete",
    );
    await usage(
      ["get", "virtualservices", "-p", "kube"],
      'Unknown platform "kube": want "orch" (orchestrator API) or "fs" (a --configDir directory)',
      "meshctl get",
    );
    await usage(
      ["get", "virtualservices", "-p", "fs"],
      "--configDir is required with --platform fs",
      "meshctl get",
    );
    assert.deepEqual(await listFiles(dir), []);
  });
});

Deno.test("meshctl create refuses a namespace mismatch and an existing object", async () => {
  await withDir(async (dir) => {
    const mismatch = await meshctl(["create", "-n", "team", ...fs(dir)], {
      stdin: vs("a", "default"),
    });
    assert.equal(mismatch.code, 1);
    assert.equal(
      mismatch.stderr.split("\n")[0],
      'Error: stdin document 1: the namespace from the provided object "default" does not match ' +
        `the namespace "team". You must pass '--namespace=default' to perform this operation`,
    );
    // -n applies to objects without a namespace
    const ok = await meshctl(["create", "-n", "team", ...fs(dir)], { stdin: vs("a") });
    assert.match(ok.stdout, /^Created config virtual-service\/team\/a at revision \w+\n$/);
    const again = await meshctl(["create", "-n", "team", ...fs(dir)], {
      stdin: vs("a") + "---\n" + vs("b"),
    });
    assert.equal(again.code, 1);
    assert.match(again.stdout, /^Created config virtual-service\/team\/b at revision \w+\n$/);
    assert.equal(
      again.stderr,
      "Error: cannot create virtual-service/team/a: it already exists " +
        '(VirtualService "a" already exists in namespace "team")\n',
    );
  });
});

Deno.test("meshctl replace updates, fetches the revision, and reports conflicts", async () => {
  await withDir(async (dir) => {
    await meshctl(["create", ...fs(dir)], { stdin: vs("r") });
    const r = await meshctlProcess(["replace", ...fs(dir)], { stdin: vs("r", "default", "v2") });
    assert.equal(r.stderr, "");
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^Updated config virtual-service\/default\/r to revision \w{12}\n$/);
    const got = await meshctl(["get", "virtualservice", "r", "-o", "yaml", ...fs(dir)]);
    assert.deepEqual(parseYamlOutput(got.stdout)[0].spec.hosts, ["v2"]);
    // a stale resourceVersion is a conflict; nothing changes
    const stale = vs("r").replace("  name: r\n", '  name: r\n  resourceVersion: "999"\n');
    const c = await meshctl(["replace", ...fs(dir)], { stdin: stale });
    assert.equal(c.code, 1);
    assert.match(
      c.stderr,
      /^Error: cannot replace virtual-service\/default\/r: conflict: it was modified since it was read \(.*stale.*\)\n$/,
    );
    const missing = await meshctl(["replace", ...fs(dir)], { stdin: vs("ghost") });
    assert.equal(missing.code, 1);
    assert.match(
      missing.stderr,
      /^Error: cannot replace virtual-service\/default\/ghost: it does not exist/,
    );
    const after = await meshctl(["get", "virtualservice", "r", "-o", "yaml", ...fs(dir)]);
    assert.deepEqual(parseYamlOutput(after.stdout)[0].spec.hosts, ["v2"]);
  });
});

Deno.test("meshctl delete by names and by file, aggregating failures", async () => {
  await withDir(async (dir) => {
    const input = vs("a") + "---\n" + vs("b") + "---\n" + vs("c") + "---\n" + vs("d", "team");
    await meshctl(["create", ...fs(dir)], { stdin: input });
    const r = await meshctlProcess(["delete", "VirtualService", "a", "missing", "b", ...fs(dir)]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "Deleted config: VirtualService a\nDeleted config: VirtualService b\n");
    assert.equal(
      r.stderr,
      'Error: cannot delete missing: VirtualService "missing" not found in namespace "default"\n',
    );
    // by file (the spec does not matter, the identity does)
    const byFile = await meshctl(["delete", "-f", "-", ...fs(dir)], {
      stdin: "apiVersion: networking.mesh.io/v1alpha3\nkind: VirtualService\n" +
        "metadata: { name: c }\nspec: { hosts: 7 }\n---\n" + vs("d", "team") + "---\n" + vs("z"),
    });
    assert.equal(byFile.code, 1);
    assert.equal(
      byFile.stdout,
      "Deleted config: virtual-service/default/c\nDeleted config: virtual-service/team/d\n",
    );
    assert.match(byFile.stderr, /^Error: cannot delete virtual-service\/default\/z: /);
    // no file and no arguments: standard input
    await meshctl(["create", ...fs(dir)], { stdin: vs("e") });
    const viaStdin = await meshctl(["delete", ...fs(dir)], { stdin: vs("e") });
    assert.deepEqual(viaStdin, {
      code: 0,
      stdout: "Deleted config: virtual-service/default/e\n",
      stderr: "",
    });
    const nothing = await meshctl(["delete", ...fs(dir)]);
    assert.deepEqual(nothing, { code: 1, stdout: "", stderr: "Error: nothing to delete\n" });
    const left = await createFileStore({ dir, watchFs: false });
    try {
      assert.deepEqual(await left.list("virtualservice"), []);
    } finally {
      await left.close();
    }
    assert.deepEqual(await listFiles(dir), []);
  });
});

Deno.test("meshctl get -o yaml | meshctl replace works with a broken file in the directory: stdout carries results only", async () => {
  await withDir(async (dir) => {
    await meshctl(["create", ...fs(dir)], { stdin: vs("r") });
    await Deno.writeTextFile(
      `${dir}/broken.yaml`,
      vs("x", "", "x").replace("hosts: [x]", "hosts: x"),
    );
    // the real program, with logging at its defaults (stdout)
    const g = await meshctlProcess(["get", "virtualservices", "-o", "yaml", ...fs(dir)]);
    assert.equal(g.code, 0, g.stderr);
    const objects = parseYamlOutput(g.stdout);
    assert.deepEqual(objects.map((o) => o.metadata.name), ["r"]);
    assert.doesNotMatch(g.stdout, /error|broken/i);
    assert.deepEqual(g.stderr.trimEnd().split("\n"), [
      'Warning: broken.yaml document 1: VirtualService/default/x: spec.hosts: must be a list, got string "x"',
    ]);
    const r = await meshctlProcess(["replace", ...fs(dir)], { stdin: g.stdout });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Updated config virtual-service\/default\/r to revision \w+\n$/);
  });
});

Deno.test("meshctl replace with a resourceVersion read by an earlier run: unrelated writes are no conflict, an edit of the object is", async () => {
  await withDir(async (dir) => {
    await meshctl(["create", ...fs(dir)], { stdin: vs("r") });
    const read = await meshctlProcess(["get", "virtualservice", "r", "-o", "yaml", ...fs(dir)]);
    assert.equal(read.code, 0, read.stderr);
    const rv = parseYamlOutput(read.stdout)[0].metadata.resourceVersion;
    assert.ok(rv);
    // other objects created by other runs (sorted before "r" in the directory)
    const others = await meshctlProcess(["create", ...fs(dir)], {
      stdin: vs("a1") + "---\n" + vs("a2") + "---\n" + vs("a3", "team"),
    });
    assert.equal(others.code, 0, others.stderr);
    const edited = read.stdout.replace("- reviews", "- reviews-v2");
    const ok = await meshctlProcess(["replace", ...fs(dir)], { stdin: edited });
    assert.equal(ok.code, 0, ok.stderr);
    const rv2 = /to revision (\w+)/.exec(ok.stdout)![1];
    assert.notEqual(rv2, rv);

    // someone edits the file on disk after our read: the revision read before is stale
    const read2 = await meshctl(["get", "virtualservice", "r", "-o", "yaml", ...fs(dir)]);
    assert.equal(parseYamlOutput(read2.stdout)[0].metadata.resourceVersion, rv2);
    const file = `${dir}/default/virtualservices/r.yaml`;
    await Deno.writeTextFile(
      file,
      (await Deno.readTextFile(file)).replace("reviews-v2", "reviews-v3"),
    );
    const stale = await meshctlProcess(["replace", ...fs(dir)], {
      stdin: read2.stdout.replace("- reviews-v2", "- reviews-v4"),
    });
    assert.equal(stale.code, 1);
    assert.match(
      stale.stderr,
      /^Error: cannot replace virtual-service\/default\/r: conflict: it was modified since it was read/,
    );
    const now = await meshctl(["get", "virtualservice", "r", "-o", "yaml", ...fs(dir)]);
    assert.deepEqual(parseYamlOutput(now.stdout)[0].spec.hosts, ["reviews-v3"]);
  });
});

Deno.test("meshctl -p fs creates a missing --configDir on create; get and delete report it in one line", async () => {
  await withDir(async (dir) => {
    const missing = `${dir}/new/config`;
    const c = await meshctl(["create", ...fs(missing)], { stdin: vs("a") });
    assert.equal(c.code, 0, c.stderr);
    assert.deepEqual(await listFiles(missing), ["default/virtualservices/a.yaml"]);
    const other = `${dir}/absent`;
    for (
      const args of [["get", "virtualservices"], ["delete", "virtualservice", "a"], [
        "replace",
      ]]
    ) {
      const r = await meshctl([...args, ...fs(other)], {
        stdin: args[0] === "replace" ? vs("a") : "",
      });
      if (args[0] === "replace") {
        // replace creates the directory too, then finds nothing to replace
        assert.match(
          r.stderr,
          /^Error: cannot replace virtual-service\/default\/a: it does not exist/,
        );
        continue;
      }
      assert.deepEqual(r, {
        code: 1,
        stdout: "",
        stderr: `Error: Config directory "${other}" does not exist\n`,
      }, args.join(" "));
    }
  });
});

Deno.test("meshctl reports a YAML syntax error in one line without a dangling colon", async () => {
  await withDir(async (dir) => {
    const r = await meshctl(["create", ...fs(dir)], { stdin: "a: [\nb: c\n" });
    assert.equal(r.code, 1);
    const [first] = r.stderr.split("\n");
    assert.match(first, /^Error: stdin document 1: cannot parse YAML: .* at line 2, column 1$/);
  });
});

Deno.test("parseMeshConfig() reports a YAML syntax error of a mesh configuration file in one line without a dangling colon", () => {
  // the file behind --meshConfig (mesh-discovery, sidecar-injector) and kube-inject's
  // --meshConfigFile; same parser, same message shape as meshctl's input files
  assert.throws(() => parseMeshConfig("a: [\nb: c\n", "mesh.yaml"), {
    message: "Cannot parse mesh configuration mesh.yaml: Flow sequence in block collection must " +
      "be sufficiently indented and end with a ] at line 2, column 1",
  });
});

Deno.test("meshctl stores an extensions/v1beta1 Ingress on fs, lists and deletes it", async () => {
  await withDir(async (dir) => {
    const c = await meshctl(["create", "-f", "-", ...fs(dir)], { stdin: ingressText() });
    assert.equal(c.stderr, "");
    assert.match(c.stdout, /^Created config ingress\/default\/web at revision \w+\n$/);
    assert.deepEqual(await listFiles(dir), ["default/ingresses/web.yaml"]);
    const g = await meshctl(["get", "ingresses", ...fs(dir)]);
    assert.equal(
      g.stdout,
      "NAME      KIND                         NAMESPACE\n" +
        "web       Ingress.extensions.v1beta1   default\n",
    );
    const y = await meshctl(["get", "ing", "web", "-o", "yaml", ...fs(dir)]);
    const [obj] = parseYamlOutput(y.stdout);
    assert.equal(obj.apiVersion, "extensions/v1beta1");
    assert.deepEqual(obj.metadata.annotations, { "kubernetes.io/ingress.class": "mesh" });
    const bad = await meshctl(["create", ...fs(dir)], {
      stdin: ingressText().replace("name: web", "name: bad").replace(
        "servicePort: 80",
        "servicePort: 0",
      ),
    });
    assert.equal(bad.code, 1);
    assert.match(
      bad.stderr,
      /^Error: stdin document 1: Ingress\/default\/bad: spec\.rules\[0\]\.http\.paths\[0\]\.backend\.servicePort: must be between 1 and 65535, got 0\n/,
    );
    const d = await meshctl(["delete", "ingress", "web", ...fs(dir)]);
    assert.equal(d.stdout, "Deleted config: ingress web\n");
    assert.deepEqual(await listFiles(dir), []);
  });
});

Deno.test("meshctl create, replace and delete without -f fail at once when standard input is a terminal", async () => {
  await withDir(async (dir) => {
    const usage = (command: string, ways: string) => ({
      code: 2,
      stdout: "",
      stderr: `Error: no input: give ${ways}-f <file>, or pipe YAML on standard input (-f -)\n` +
        `Run 'meshctl ${command} --help' for usage.\n`,
    });
    // the helper's terminal stdin fails any read: these must not read it
    for (const command of ["create", "replace"]) {
      const r = await meshctl([command, ...fs(dir)], { stdinIsTerminal: true });
      assert.deepEqual(r, usage(command, ""), command);
    }
    const d = await meshctl(["delete", ...fs(dir)], { stdinIsTerminal: true });
    assert.deepEqual(d, usage("delete", "<type> <name>, "));
    assert.deepEqual(await listFiles(dir), []);
    // an explicit -f - still reads the terminal, as kubectl does
    const typed = await meshctl(["create", "-f", "-", ...fs(dir)], {
      stdinIsTerminal: true,
      stdin: vs("typed"),
    });
    assert.equal(typed.code, 0, typed.stderr);
    assert.match(
      typed.stdout,
      /^Created config virtual-service\/default\/typed at revision \w+\n$/,
    );
    // names and files need no standard input
    const byName = await meshctl(["delete", "vs", "typed", ...fs(dir)], { stdinIsTerminal: true });
    assert.deepEqual(byName, { code: 0, stdout: "Deleted config: vs typed\n", stderr: "" });
    await Deno.writeTextFile(`${dir}/in.yaml`, vs("fromfile"));
    const byFile = await meshctl(["create", "-f", "in.yaml", ...fs(`${dir}/store`)], {
      cwd: dir,
      stdinIsTerminal: true,
    });
    assert.equal(byFile.code, 0, byFile.stderr);
  });
});

Deno.test("meshctl get and delete accept every storable kind: rules, handlers, instances, manifests", async () => {
  await withDir(async (dir) => {
    const input = `apiVersion: config.istio.io/v1alpha2
kind: denier
metadata: { name: handler }
spec: { status: { code: 7, message: Not allowed } }
---
apiVersion: config.istio.io/v1alpha2
kind: checknothing
metadata: { name: denyrequest, namespace: team }
spec: {}
---
apiVersion: config.istio.io/v1alpha2
kind: rule
metadata: { name: denyreviewsv3 }
spec:
  match: destination.labels["app"] == "ratings"
  actions: [{ handler: handler.denier, instances: [denyrequest.checknothing] }]
---
apiVersion: config.istio.io/v1alpha2
kind: attributemanifest
metadata: { name: extra }
spec: { name: extra, attributes: { a.b: { valueType: STRING } } }
`;
    const c = await meshctl(["create", ...fs(dir)], { stdin: input });
    assert.equal(c.code, 0, c.stderr);
    const rules = await meshctl(["get", "rules", ...fs(dir)]);
    assert.deepEqual(rules, {
      code: 0,
      stdout: "NAME            KIND                           NAMESPACE\n" +
        "denyreviewsv3   rule.config.mesh.io.v1alpha2   default\n",
      stderr: "",
    });
    const inst = await meshctl(["get", "checknothing", ...fs(dir)]);
    assert.equal(
      inst.stdout,
      "NAME          KIND                                   NAMESPACE\n" +
        "denyrequest   checknothing.config.mesh.io.v1alpha2   team\n",
    );
    const handler = await meshctl(["get", "Deniers", "handler", "-o", "yaml", ...fs(dir)]);
    assert.equal(handler.code, 0, handler.stderr);
    assert.deepEqual(parseYamlOutput(handler.stdout)[0].spec, {
      status: { code: 7, message: "Not allowed" },
    });
    const manifests = await meshctl(["get", "attributemanifests", ...fs(dir)]);
    assert.match(
      manifests.stdout,
      /\nextra +attributemanifest\.config\.mesh\.io\.v1alpha2 +default\n$/,
    );
    // delete by name prints the type as typed
    const d = await meshctl(["delete", "rule", "denyreviewsv3", ...fs(dir)]);
    assert.deepEqual(d, { code: 0, stdout: "Deleted config: rule denyreviewsv3\n", stderr: "" });
    const d2 = await meshctl(["delete", "checknothings", "denyrequest", "-n", "team", ...fs(dir)]);
    assert.equal(d2.stdout, "Deleted config: checknothings denyrequest\n", d2.stderr);
    assert.deepEqual(await meshctl(["get", "rules", ...fs(dir)]), {
      code: 0,
      stdout: "",
      stderr: "No resources found.\n",
    });
    assert.deepEqual(await listFiles(dir), [
      "default/attributemanifests/extra.yaml",
      "default/deniers/handler.yaml",
    ]);
  });
});

Deno.test("meshctl get takes several names and -A, and reports missing names like kubectl", async () => {
  await withDir(async (dir) => {
    const input = vs("a") + "---\n" + vs("b") + "---\n" + vs("c", "team");
    assert.equal((await meshctl(["create", ...fs(dir)], { stdin: input })).code, 0);
    const both = await meshctl(["get", "vs", "b", "a", ...fs(dir)]);
    assert.deepEqual(both, {
      code: 0,
      stdout: "NAME      KIND                                         NAMESPACE\n" +
        "b         VirtualService.networking.mesh.io.v1alpha3   default\n" +
        "a         VirtualService.networking.mesh.io.v1alpha3   default\n",
      stderr: "",
    });
    // the found ones are printed, then each missing one is an error (exit 1)
    const some = await meshctl(["get", "vs", "a", "x", "b", "y", "-o", "yaml", ...fs(dir)]);
    assert.equal(some.code, 1);
    assert.deepEqual(parseYamlOutput(some.stdout).map((o) => o.metadata.name), ["a", "b"]);
    assert.equal(
      some.stderr,
      'Error: virtualservice "x" not found in namespace "default"\n' +
        'Error: virtualservice "y" not found in namespace "default"\n',
    );
    const one = await meshctl(["get", "virtualservices", "c", ...fs(dir)]);
    assert.deepEqual(one, {
      code: 1,
      stdout: "",
      stderr: 'Error: virtualservice "c" not found in namespace "default"\n',
    });
    // -A: every namespace, even with -n (as kubectl); the default without -n anyway
    const all = await meshctl(["get", "vs", ...fs(dir)]);
    assert.equal(all.stdout.trimEnd().split("\n").length, 4);
    for (const flags of [["-A"], ["--all-namespaces", "-n", "team"]]) {
      const r = await meshctl(["get", "vs", ...flags, ...fs(dir)]);
      assert.deepEqual(r, all, flags.join(" "));
    }
    const team = await meshctl(["get", "vs", "-n", "team", ...fs(dir)]);
    assert.equal(team.stdout.trimEnd().split("\n").length, 2);
    assert.deepEqual(await meshctl(["get", "vs", "a", "-A", ...fs(dir)]), {
      code: 2,
      stdout: "",
      stderr: "Error: a resource cannot be retrieved by name across all namespaces\n" +
        "Run 'meshctl get --help' for usage.\n",
    });
  });
});
