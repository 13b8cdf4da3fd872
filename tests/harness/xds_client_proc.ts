/**
 * Subprocess side of {@link ../xds_client.ts}: a proxyless gRPC client (grpc-js-xds) that reads
 * commands as JSON lines on stdin and answers with one JSON line each on stdout. grpc-js-xds reads
 * its bootstrap (`GRPC_XDS_BOOTSTRAP_CONFIG`, set by the parent) once per process, which is why
 * each distinct client identity runs in its own process.
 *
 * Commands:
 * - `{"id": 1, "op": "call", "target": "xds:///host:port", "n": 100, "concurrency": 10,
 *   "metadata": {"k": "v"}, "deadlineMs": 2000, "uniqueIds": true}` →
 *   `{"id": 1, "versions": {"v1": 80}, "codes": {"14": 20}, "attempts": {"1": 100},
 *   "errors": ["..."]}`
 * - `{"id": 2, "op": "exit"}` → closes the channels and exits 0.
 *
 * Not a test; run by the harness only.
 * @module
 */

import { Buffer } from "node:buffer";
import process from "node:process";
import {
  WHOAMI_METHOD,
  whoAmIClientConstructor,
  type WhoAmIReply,
  yieldingCallCredentials,
} from "../../cli/demo/whoami.ts";

interface CallCommand {
  id: number;
  op: "call";
  target: string;
  n: number;
  concurrency?: number;
  metadata?: Record<string, string>;
  deadlineMs?: number;
  uniqueIds?: boolean;
}

const grpc = await import("../../lib/deps/grpc.ts");
const xds = await import("../../lib/deps/grpc_xds.ts");
xds.register();
const Client = whoAmIClientConstructor(grpc);
const clients = new Map<string, InstanceType<typeof Client>>();
/**
 * One channel per target that `reset` never closes: it keeps grpc-js-xds's watches of the target's
 * resources, so that closing the calling channels does not end the ADS stream. (grpc-js-xds ends
 * its ADS stream with a half-close when the last watch goes and opens a new one for the next; a
 * client that reset its channels a few hundred times left 100 ADS streams open at the server, where
 * the half-close was lost is not known, and its next stream was refused.)
 */
const keepers = new Map<string, InstanceType<typeof Client>>();
let seq = 0;

function credentials() {
  // MESH_TEST_XDS_CREDS=1: TLS as the control plane says (XdsChannelCredentials), else plaintext
  return Deno.env.get("MESH_TEST_XDS_CREDS") === "1"
    ? new xds.XdsChannelCredentials(grpc.credentials.createInsecure())
    : grpc.credentials.createInsecure();
}

function clientFor(target: string) {
  let c = clients.get(target);
  if (!c) {
    if (!keepers.has(target)) {
      const keeper = new Client(target, credentials());
      keeper.getChannel().getConnectivityState(true); // resolves: watches the resources
      keepers.set(target, keeper);
    }
    // its own subchannels: after a reset, calls go over new connections, not the keeper's
    c = new Client(target, credentials(), { "grpc.use_local_subchannel_pool": 1 });
    clients.set(target, c);
  }
  return c;
}

/** See {@link yieldingCallCredentials}: no grpc-js re-pick loop can starve the event loop. */
const yieldToEventLoop = yieldingCallCredentials(grpc);

function callOnce(
  cmd: CallCommand,
): Promise<{ reply?: WhoAmIReply; code: number; message?: string }> {
  const client = clientFor(cmd.target);
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(cmd.metadata ?? {})) md.set(k, v);
  const req = cmd.uniqueIds ? { id: `r${process.pid}-${++seq}` } : {};
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      WHOAMI_METHOD,
      (v: unknown) => Buffer.from(JSON.stringify(v)),
      (b: Buffer) => JSON.parse(b.toString("utf8")),
      req,
      md,
      { deadline: Date.now() + (cmd.deadlineMs ?? 5000), credentials: yieldToEventLoop },
      (err: { code?: number; details?: string } | null, reply?: WhoAmIReply) => {
        if (err) resolve({ code: err.code ?? 2, message: err.details });
        else resolve({ reply, code: 0 });
      },
    );
  });
}

async function runCalls(cmd: CallCommand) {
  const versions: Record<string, number> = {};
  const codes: Record<string, number> = {};
  const attempts: Record<string, number> = {};
  const addresses: Record<string, number> = {};
  const peers: Record<string, number> = {};
  const errors = new Set<string>();
  let left = cmd.n;
  const worker = async () => {
    while (left > 0) {
      left--;
      const r = await callOnce(cmd);
      codes[r.code] = (codes[r.code] ?? 0) + 1;
      if (r.reply) {
        versions[r.reply.version] = (versions[r.reply.version] ?? 0) + 1;
        addresses[r.reply.address] = (addresses[r.reply.address] ?? 0) + 1;
        attempts[r.reply.attempt] = (attempts[r.reply.attempt] ?? 0) + 1;
        const peer = String(r.reply.peer ?? "");
        peers[peer] = (peers[peer] ?? 0) + 1;
      } else if (errors.size < 5) errors.add(`${r.code}: ${r.message}`);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, cmd.concurrency ?? 10) }, worker));
  return { versions, codes, attempts, addresses, peers, errors: [...errors] };
}

const decoder = new TextDecoder();
let buf = "";
const out = (v: unknown) => Deno.stdout.write(new TextEncoder().encode(JSON.stringify(v) + "\n"));

for await (const chunk of Deno.stdin.readable) {
  buf += decoder.decode(chunk, { stream: true });
  let nl;
  while ((nl = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, nl).trim();
    buf = buf.slice(nl + 1);
    if (!line) continue;
    const cmd = JSON.parse(line);
    if (cmd.op === "exit") {
      for (const c of [...clients.values(), ...keepers.values()]) c.close();
      await out({ id: cmd.id, ok: true });
      Deno.exit(0);
    }
    if (cmd.op === "reset") {
      // new channels for every target (new connections with the current TLS settings)
      for (const c of clients.values()) c.close();
      clients.clear();
      await out({ id: cmd.id, ok: true });
    } else if (cmd.op === "call") {
      // Run calls concurrently with reading further commands.
      runCalls(cmd).then(
        (r) => out({ id: cmd.id, ...r }),
        (e) => out({ id: cmd.id, error: String(e) }),
      );
    } else await out({ id: cmd.id, error: `unknown op "${cmd.op}"` });
  }
}
for (const c of [...clients.values(), ...keepers.values()]) c.close();
Deno.exit(0);
