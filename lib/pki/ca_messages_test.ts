/**
 * The hand-written CA messages against proto-loader (protobufjs) reading `proto/ca.proto`: what
 * one side encodes, the other decodes to the same values, for random messages; the seed is
 * printed (replay with `FUZZ_SEED=<seed>`).
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { type Rng, rng, runSeed } from "../../tests/fuzz/_gen.ts";
import {
  decodeCsrRequest,
  decodeMeshCertificateRequest,
  decodeMeshCertificateResponse,
  encodeCsrResponse,
  encodeMeshCertificateRequest,
  encodeMeshCertificateResponse,
  WireError,
} from "./ca_messages.ts";

const PROTO = fileURLToPath(new URL("../../proto/ca.proto", import.meta.url));

// deno-lint-ignore no-explicit-any
async function methods(): Promise<{ create: any; csr: any }> {
  const loader = await import("../deps/proto_loader.ts");
  // deno-lint-ignore no-explicit-any
  const def: any = await loader.load(PROTO, { keepCase: true, longs: Number, defaults: true });
  return {
    create: def["mesh.v1.auth.MeshCertificateService"].CreateCertificate,
    csr: def["mesh.v1.auth.MeshCAService"].HandleCSR,
  };
}

function fuzz(): Rng {
  const seed = runSeed();
  console.log(`FUZZ_SEED=${seed}`);
  return rng(seed);
}

const text = (r: Rng) =>
  r.chance(0.2)
    ? ""
    : Array.from({ length: r.int(300) }, () => r.pick(["a", "Z", "-", "\n", "é", "😀", "="])).join(
      "",
    );
const int = (r: Rng, bits: 32 | 53) =>
  r.pick([0, 1, -1, 127, 128, 3600, 2 ** 31 - 1, -(2 ** 31)]) +
  (bits === 53 && r.chance(0.3) ? r.pick([2 ** 40, -(2 ** 45)]) : 0);
const bytes = (b: Uint8Array) => Uint8Array.from(b);

Deno.test("encodeMeshCertificateRequest() encodes what protobufjs decodes, and decodes what it encodes", async () => {
  const { create } = await methods();
  const r = fuzz();
  for (let i = 0; i < 300; i++) {
    const m = { csr: text(r), validityDuration: int(r, 53) };
    const ours = encodeMeshCertificateRequest(m);
    const theirs = bytes(
      create.requestSerialize({ csr: m.csr, validity_duration: m.validityDuration }),
    );
    // protobufjs writes a default it is given; proto3 leaves it out, as we do.
    if (m.csr && m.validityDuration) assert.deepEqual(ours, theirs, JSON.stringify(m));
    assert.deepEqual(create.requestDeserialize(ours), {
      csr: m.csr,
      validity_duration: m.validityDuration,
    });
    assert.deepEqual(decodeMeshCertificateRequest(theirs), m);
  }
});

Deno.test("encodeMeshCertificateResponse() writes every chain element, empty ones included, as protobufjs", async () => {
  const { create } = await methods();
  const r = fuzz();
  for (let i = 0; i < 200; i++) {
    const chain = Array.from({ length: r.int(4) }, () => text(r));
    const ours = encodeMeshCertificateResponse(chain);
    assert.deepEqual(ours, bytes(create.responseSerialize({ cert_chain: chain })));
    assert.deepEqual(create.responseDeserialize(ours), { cert_chain: chain });
    assert.deepEqual(decodeMeshCertificateResponse(ours), chain);
  }
  assert.deepEqual([...encodeMeshCertificateResponse([""])], [0x0a, 0]);
});

Deno.test("decodeCsrRequest() and encodeCsrResponse() agree with protobufjs", async () => {
  const { csr } = await methods();
  const r = fuzz();
  const te = new TextEncoder();
  for (let i = 0; i < 200; i++) {
    const req = {
      csrPem: text(r),
      nodeAgentCredential: text(r),
      credentialType: text(r),
      requestedTtlMinutes: int(r, 32),
    };
    const wire = csr.requestSerialize({
      csr_pem: te.encode(req.csrPem),
      node_agent_credential: te.encode(req.nodeAgentCredential),
      credential_type: req.credentialType,
      requested_ttl_minutes: req.requestedTtlMinutes,
    });
    assert.deepEqual(decodeCsrRequest(bytes(wire)), req);
    const res = {
      isApproved: r.chance(0.5),
      ...(r.chance(0.5) ? { status: { code: int(r, 32), message: text(r) } } : {}),
      ...(r.chance(0.7) ? { signedCert: text(r) } : {}),
      ...(r.chance(0.7) ? { certChain: text(r) } : {}),
    };
    const got = csr.responseDeserialize(encodeCsrResponse(res));
    assert.equal(got.is_approved, res.isApproved);
    assert.deepEqual(got.status ?? undefined, res.status && { ...res.status });
    assert.equal(new TextDecoder().decode(got.signed_cert), res.signedCert ?? "");
    assert.equal(new TextDecoder().decode(got.cert_chain), res.certChain ?? "");
  }
});

Deno.test("the CA decoders skip unknown fields and keep the last value of a repeated scalar", () => {
  // csr "a" (1), an unknown fixed64 (2), an unknown fixed32 (4), validity 5 then 7 (3).
  const b = Uint8Array.from([
    0x0a,
    1,
    0x61,
    0x11,
    ...Array(8).fill(0xff),
    0x25,
    ...Array(4).fill(0),
    0x18,
    5,
    0x18,
    7,
  ]);
  assert.deepEqual(decodeMeshCertificateRequest(b), { csr: "a", validityDuration: 7 });
  const s = (t: string) => [...new TextEncoder().encode(t)];
  const chain = Uint8Array.from([0x0a, 4, ...s("leaf"), 0x10, 5, 0x0a, 4, ...s("root")]);
  assert.deepEqual(decodeMeshCertificateResponse(chain), ["leaf", "root"]);
});

Deno.test("the CA decoders refuse malformed input with a WireError naming the field", () => {
  const refused = (f: (b: Uint8Array) => unknown, b: number[], why: RegExp) =>
    assert.throws(
      () => f(Uint8Array.from(b)),
      (e) => e instanceof WireError && why.test(e.message),
    );
  refused(
    decodeMeshCertificateResponse,
    [0x0a, 9, 1],
    /field of 9 bytes at byte 2 runs past the end/,
  );
  refused(decodeMeshCertificateRequest, [0x08, 1], /^csr: wrong wire type 0$/);
  refused(decodeMeshCertificateRequest, [0x1a, 0], /^validity_duration: wrong wire type 2$/);
  refused(decodeMeshCertificateRequest, [0x0a, 1, 0xff], /^csr: not UTF-8$/);
  refused(decodeCsrRequest, [0x22, 0], /^requested_ttl_minutes: wrong wire type 2$/);
  refused(decodeCsrRequest, [0x12, 2, 0xc3, 0x28], /^node_agent_credential: not UTF-8$/);
  refused(decodeMeshCertificateRequest, [0x18, 0x80], /truncated varint at byte 2/);
  refused(decodeMeshCertificateRequest, [0x02, 0], /^field number 0 at byte 0$/);
  refused(decodeMeshCertificateRequest, [0x23], /unsupported wire type 3/);
});
