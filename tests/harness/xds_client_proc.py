"""Subprocess side of tests/harness/xds_client.ts for gRPC C-core (Debian's python3-grpcio).

A proxyless xDS client that reads commands as JSON lines on stdin and answers with one JSON line
each on stdout, exactly like xds_client_proc.ts (grpc-js-xds). C-core reads its bootstrap from the
file named by GRPC_XDS_BOOTSTRAP (set by the parent) once per process, so each client identity runs
in its own process. Run with /usr/bin/python3 (the interpreter that has the grpc module):

    GRPC_XDS_BOOTSTRAP=bootstrap.json /usr/bin/python3 xds_client_proc.py /mesh.demo.WhoAmI/Get

Commands:
- {"id": 1, "op": "call", "target": "xds:///host:port", "n": 100, "concurrency": 10,
  "metadata": {"k": "v"}, "deadlineMs": 2000, "uniqueIds": true}
  -> {"id": 1, "versions": {"v1": 80}, "codes": {"14": 20}, "attempts": {"1": 100},
      "addresses": {...}, "errors": ["..."]}
- {"id": 2, "op": "version"} -> {"id": 2, "version": "1.51.1"}
- {"id": 3, "op": "exit"} -> closes the channels and exits 0.

Not a test; run by the harness only.
"""

import itertools
import json
import os
import sys
import threading

import grpc
import grpc.experimental  # noqa: F401  (insecure_channel_credentials for xDS credentials)

METHOD = sys.argv[1]
_out_lock = threading.Lock()
_channels_lock = threading.Lock()
_channels = {}
_seq = itertools.count(1)


def out(msg):
    line = json.dumps(msg) + "\n"
    with _out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def stub_for(target):
    with _channels_lock:
        entry = _channels.get(target)
        if entry is None:
            if os.environ.get("MESH_TEST_XDS_CREDS") == "1":
                # TLS as the control plane says, plaintext otherwise
                creds = grpc.xds_channel_credentials(grpc.experimental.insecure_channel_credentials())
                # C-core 1.51 sends the authority with its port as TLS SNI
                # ("host:7070"), which Deno's TLS server (grpc-js-xds servers) refuses with
                # "illegal parameter": name the host alone.
                host = target.split("///", 1)[-1].rsplit(":", 1)[0]
                channel = grpc.secure_channel(
                    target, creds, options=[("grpc.ssl_target_name_override", host)])
            else:
                channel = grpc.insecure_channel(target)
            call = channel.unary_unary(
                METHOD,
                request_serializer=lambda v: json.dumps(v).encode("utf-8"),
                response_deserializer=lambda b: json.loads(b.decode("utf-8")),
            )
            entry = (channel, call)
            _channels[target] = entry
        return entry[1]


def call_once(cmd):
    call = stub_for(cmd["target"])
    req = {"id": "r%d-%d" % (os.getpid(), next(_seq))} if cmd.get("uniqueIds") else {}
    metadata = [(k.lower(), v) for k, v in (cmd.get("metadata") or {}).items()]
    try:
        reply = call(req, timeout=cmd.get("deadlineMs", 5000) / 1000.0, metadata=metadata)
        return 0, reply, None
    except grpc.RpcError as e:  # a call that ended with a non-OK status
        return e.code().value[0], None, e.details()


def run_calls(cmd):
    versions, codes, attempts, addresses, peers = {}, {}, {}, {}, {}
    errors = []
    lock = threading.Lock()
    left = [int(cmd.get("n", 100))]

    def worker():
        while True:
            with lock:
                if left[0] <= 0:
                    return
                left[0] -= 1
            code, reply, message = call_once(cmd)
            with lock:
                codes[str(code)] = codes.get(str(code), 0) + 1
                if reply is not None:
                    peer = str(reply.get("peer") or "")
                    peers[peer] = peers.get(peer, 0) + 1
                    for d, k in ((versions, "version"), (addresses, "address"), (attempts, "attempt")):
                        key = str(reply.get(k))
                        d[key] = d.get(key, 0) + 1
                else:
                    e = "%d: %s" % (code, message)
                    if len(errors) < 5 and e not in errors:
                        errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(max(1, int(cmd.get("concurrency", 10))))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"versions": versions, "codes": codes, "attempts": attempts, "addresses": addresses,
            "peers": peers, "errors": errors}


def handle_call(cmd):
    try:
        out(dict(run_calls(cmd), id=cmd["id"]))
    except Exception as e:  # report, never die silently
        out({"id": cmd["id"], "error": repr(e)})


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        cmd = json.loads(line)
        op = cmd.get("op")
        if op == "exit":
            with _channels_lock:
                for channel, _ in _channels.values():
                    channel.close()
            out({"id": cmd["id"], "ok": True})
            os._exit(0)
        elif op == "reset":  # new channels: new connections with the current TLS settings
            with _channels_lock:
                for channel, _ in _channels.values():
                    channel.close()
                _channels.clear()
            out({"id": cmd["id"], "ok": True})
        elif op == "call":
            threading.Thread(target=handle_call, args=(cmd,), daemon=True).start()
        elif op == "version":
            out({"id": cmd["id"], "version": grpc.__version__})
        else:
            out({"id": cmd["id"], "error": 'unknown op "%s"' % op})
    os._exit(0)


main()
