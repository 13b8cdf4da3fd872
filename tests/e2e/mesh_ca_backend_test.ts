/**
 * mesh_ca's signing backends as users choose them: `--signing-backend openssl` and `webcrypto`
 * (and `auto` falling back to WebCrypto when libcrypto cannot load or FFI is denied) each serve
 * CSRs whose chains `openssl verify` accepts and refuse a CSR with a bad signature; forcing
 * `openssl` without a loadable libcrypto stops the start with one line.
 */
import assert from "node:assert/strict";
import { decodePem, encodePem } from "../../lib/pki/mod.ts";
import { csrFor, opensslVerify } from "../../servers/ca/_testutil.ts";
import { decodeMeshCertificateResponse } from "../../lib/pki/ca_messages.ts";
import { createCertificateH2, testIssuer } from "../harness/ca_client.ts";
import {
  freePort,
  runProgram,
  type SpawnOptions,
  spawnProgram,
  withTempDir,
} from "../harness/procs.ts";

/** An ECDSA P-256 CA made with openssl (the self-signed mode makes RSA roots). */
async function ecCa(dir: string): Promise<{ cert: string; key: string }> {
  const run = async (args: string[]) => {
    const o = await new Deno.Command("openssl", { args, stdout: "null", stderr: "piped" })
      .output();
    assert.ok(o.success, new TextDecoder().decode(o.stderr));
  };
  const key = `${dir}/ec-ca-key.pem`, cert = `${dir}/ec-ca.pem`;
  await run(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key]);
  await run([
    "req",
    "-x509",
    "-new",
    "-key",
    key,
    "-subj",
    "/O=ec-test",
    "-days",
    "1",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
    "-out",
    cert,
  ]);
  return { cert, key };
}

const CASES: { name: string; args: string[]; opts?: SpawnOptions; backend: RegExp }[] = [
  {
    name: "--signing-backend openssl",
    args: ["--signing-backend", "openssl"],
    backend: /signing backend: openssl \(libcrypto\.so\.3 through FFI\)/,
  },
  {
    name: "--signing-backend webcrypto",
    args: ["--signing-backend", "webcrypto"],
    backend: /signing backend: webcrypto \(Deno crypto\.subtle\)\n/,
  },
  {
    name: "auto with $MESH_CA_LIBCRYPTO not loadable",
    args: [],
    opts: { env: { MESH_CA_LIBCRYPTO: "/nonexistent/libcrypto.so.3" } },
    backend:
      /signing backend: webcrypto \(Deno crypto\.subtle; OpenSSL not used: cannot load OpenSSL libcrypto \(\/nonexistent\/libcrypto\.so\.3: /,
  },
  {
    name: "auto with FFI denied",
    args: [],
    opts: { denoArgs: ["-A", "--deny-ffi"] },
    backend: /signing backend: webcrypto \(Deno crypto\.subtle; OpenSSL not used: .*ffi/i,
  },
];

for (const c of CASES) {
  Deno.test(`mesh_ca ${c.name}: RSA and ECDSA CA keys sign RSA and ECDSA CSRs that openssl verify accepts; a bad CSR signature is INVALID_ARGUMENT`, async () => {
    await withTempDir(async (dir) => {
      const issuer = await testIssuer();
      await Deno.writeTextFile(`${dir}/jwks.json`, JSON.stringify(issuer.jwks));
      const token = await issuer.token("system:serviceaccount:ns1:web");
      const ec = await ecCa(dir);
      const modes = [
        { ca: "RSA", args: ["--self-signed-ca", "--local-storage-dir", `${dir}/rsa`] },
        {
          ca: "ECDSA",
          args: [
            "--signing-cert",
            ec.cert,
            "--signing-key",
            ec.key,
            "--root-cert",
            ec.cert,
            "--local-storage-dir",
            `${dir}/ec`,
          ],
        },
      ];
      for (const mode of modes) {
        const port = freePort();
        await using server = spawnProgram("mesh_ca", [
          ...mode.args,
          ...c.args,
          "--trusted-jwks",
          `${dir}/jwks.json`,
          "--grpc-port",
          String(port),
          "--monitoring-port",
          "0",
        ], c.opts);
        await server.waitFor(/gRPC signing API listening/, 30_000);
        assert.match(server.output(), c.backend);
        const root = mode.ca === "RSA"
          ? await Deno.readTextFile(`${dir}/rsa/ca-cert.pem`)
          : await Deno.readTextFile(ec.cert);
        const call = (csr: string) =>
          createCertificateH2({ address: `127.0.0.1:${port}`, root, token, csr });
        for (const key of [{ kind: "rsa", bits: 2048 } as const, { kind: "ec" } as const]) {
          const what = `${mode.ca} CA, ${key.kind} CSR`;
          const { csr } = await csrFor("ns1", "web", { key });
          const ok = await call(csr);
          assert.equal(ok.status, 0, `${what}: ${ok.message}`);
          const chain = decodeMeshCertificateResponse(ok.response!);
          assert.match(await opensslVerify(chain), /leaf\.pem: OK$/, what);
          const der = decodePem(csr)[0].der;
          der[der.length - 1] ^= 0x01;
          const bad = await call(encodePem("CERTIFICATE REQUEST", der));
          assert.equal(bad.status, 3, what);
          assert.equal(bad.message, "CSR parsing error (CSR signature does not verify)", what);
        }
      }
    });
  });
}

Deno.test("mesh_ca --signing-backend openssl without a loadable libcrypto exits 1 with one line; a bad value exits 2", async () => {
  await withTempDir(async (dir) => {
    const common = ["--self-signed-ca", "--local-storage-dir", dir, "--monitoring-port", "0"];
    const forced = await runProgram("mesh_ca", [...common, "--signing-backend", "openssl"], {
      env: { MESH_CA_LIBCRYPTO: `${dir}/libcrypto.so.3` },
    });
    assert.equal(forced.code, 1);
    const lines = (forced.stderr + forced.stdout).trim().split("\n").filter((l) => /Error/.test(l));
    assert.equal(lines.length, 1, forced.stderr + forced.stdout);
    assert.match(
      lines[0],
      new RegExp(
        `^Error: --signing-backend openssl: cannot load OpenSSL libcrypto \\(${dir}/libcrypto\\.so\\.3: .*No such file`,
      ),
    );
    const bad = await runProgram("mesh_ca", [...common, "--signing-backend", "fast"]);
    assert.equal(bad.code, 2);
    assert.match(
      bad.stderr,
      /^Error: Invalid value for --signing-backend: want one of auto, openssl, webcrypto, got "fast"\n/,
    );
  });
});
