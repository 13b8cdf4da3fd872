/**
 * `deno task demo-integration` end to end: the integration procedure on the fs platform with the
 * real programs. The demo checks every step itself (REST xDS from discovery, the injected YAML,
 * mesh_ca's certificate); this test runs it as a user does and requires every check to hold and
 * every step of the procedure to be there.
 */
import assert from "node:assert/strict";
import { runProgram } from "../harness/procs.ts";

/** The procedure's claims, one per check the demo must report as held. */
const CLAIMS = [
  /held +the signing API listens on 127\.0\.0\.1:\d+/,
  /held +discovery listens on 127\.0\.0\.1:\d+ \(loopback only\) and knows no service yet/,
  /held +discovery serves echo\.default\.svc\.cluster\.local with the endpoint 127\.0\.10\.5:\d+/,
  /held +the port named http is served as HTTP/,
  /held +a real call from the proxyless client sleep-1 to xds:\/\/\/echo\.default\.svc\.cluster\.local:80 reaches the instance at 127\.0\.10\.5:\d+ \(plaintext\)/,
  /held +a direct call from outside the mesh to 127\.0\.10\.5:\d+ is answered/,
  /held +a real call from sleep-1 through the mesh is answered over mutual TLS \(the server sees spiffe:\/\/cluster\.local\/ns\/default\/sa\/sleep\)/,
  /held +a direct call from outside the mesh \(plaintext, no certificate\) is refused/,
  /held +the init container redirects only 10\.0\.0\.0\/8,172\.16\.0\.0\/12 \(-i\)/,
  /held +traffic to the API management backend 203\.0\.113\.10 is left alone/,
  /held +without --includeIPRanges \(-i \*\) the backend would be captured too/,
  /held +the gateway's route 80 maps \/echo to outbound\|80\|\|echo\.default\.svc\.cluster\.local/,
  /held +\/debug\/configz shows the Gateway made from the Ingress/,
  /held +the API proxy's sidecar listener 127\.0\.10\.5_\d+ requires client certificates/,
  /held +another workload's cluster outbound\|80\|\|echo\.default\.svc\.cluster\.local presents its certificate and checks spiffe:\/\/cluster\.local\/ns\/default\/sa\/default/,
  /held +the ingress gateway still accepts plain HTTP from outside/,
  /held +mesh_ca issued the API proxy's certificate for spiffe:\/\/cluster\.local\/ns\/default\/sa\/default, signed by its root/,
  /held +the API proxy's sidecar listener 127\.0\.10\.5_\d+ is tcp_proxy and takes plain TCP/,
  /held +other workloads get 10\.96\.0\.20_80 with tcp_proxy and a cluster without mesh TLS/,
  /held +no outbound listener conflict/,
];

Deno.test("deno task demo-integration: every step of the integration procedure holds", async () => {
  const r = await runProgram("demo_integration", [], { timeoutMs: 240_000 });
  const out = r.stdout + r.stderr;
  assert.doesNotMatch(out, /FAILED/, out);
  for (const claim of CLAIMS) assert.match(r.stdout, claim);
  assert.match(r.stdout, /Every step held: (\d+) of \1 checks held\./);
  assert.equal(r.code, 0, out);
});

Deno.test("deno task demo-integration refuses arguments with exit 2", async () => {
  const r = await runProgram("demo_integration", ["--verbose"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^Error: demo-integration takes no arguments, got "--verbose"/);
});
