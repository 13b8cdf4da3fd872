"""Subprocess side of tests/harness/proxyless.ts for gRPC C-core (Debian's python3-grpcio).

A proxyless gRPC server (`grpc.server(..., xds=True)` with `grpc.xds_server_credentials`) serving
/mesh.demo.WhoAmI/Get on the address given, configured by the control plane named in the bootstrap
file of GRPC_XDS_BOOTSTRAP. Replies carry the caller's SPIFFE identity from its TLS certificate
(`peer`, empty over plaintext). Run with /usr/bin/python3:

    GRPC_XDS_BOOTSTRAP=b.json /usr/bin/python3 xds_server_proc.py 127.0.1.2:17070 v2

Prints {"bound": <port>} once started and exits when stdin closes. Not a test; run by the harness.
"""

import json
import sys
from concurrent import futures

import grpc

ADDRESS, VERSION = sys.argv[1], sys.argv[2]


def out(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def peer_of(context):
    auth = context.auth_context() or {}
    for key in ("peer_spiffe_id", "peer_uri", "x509_subject_alternative_name"):
        for value in auth.get(key, []):
            v = value.decode("utf-8", "replace")
            if v.startswith("spiffe://"):
                return v
    return ""


def get(request, context):
    return {"version": VERSION, "address": ADDRESS, "attempt": 1, "peer": peer_of(context)}


handler = grpc.method_handlers_generic_handler("mesh.demo.WhoAmI", {
    "Get": grpc.unary_unary_rpc_method_handler(
        get,
        request_deserializer=lambda b: json.loads(b.decode("utf-8")) if b else {},
        response_serializer=lambda v: json.dumps(v).encode("utf-8"),
    ),
})
server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), xds=True)
server.add_generic_rpc_handlers((handler,))
port = server.add_secure_port(ADDRESS, grpc.xds_server_credentials(grpc.insecure_server_credentials()))
server.start()
# an xDS server binds once its Listener arrives: grpcio reports -1 here
out({"bound": port if port > 0 else int(ADDRESS.rsplit(":", 1)[1])})
for _ in sys.stdin:
    pass
server.stop(0)
