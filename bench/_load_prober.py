"""The independent prober of `deno task bench config_load` and `xds` (gRPC C-core, python3-grpcio).

Times, in turn and until told to stop, what a kubelet and a proxy would ask of a mesh-discovery
that is loading a large configuration: GET /ready, a REST CDS request (POST
/v3/discovery:clusters) and a new ADS stream asking for CDS (until its first response). It runs in
a process of its own, away from the bench that writes the configuration and reads /metrics, and
uses no JavaScript runtime, so a garbage collection or a busy event loop in the bench cannot be
counted as the server's. Run with /usr/bin/python3 (the interpreter that has the grpc module):

    /usr/bin/python3 _load_prober.py HTTP_ADDR GRPC_ADDR NODE_ID PAUSE_MS [LOG_FILE]

After its first full round of probes (a fresh server's first answers pay for loading code) it
prints "warm" and forgets what it measured; on a "stop" line on stdin it prints the slowest probe
of each kind, and how many of each it made, as one JSON line and exits 0. A failed probe (no
answer, an error status) is printed as an error line on stderr and counted as timed. With
LOG_FILE, every probe after "warm" is appended to it as "<epoch ms at its start> <kind> <ms>", to
be placed beside the server's --trace-gc and MESH_XDS_TRACE lines.

Not a test; started by bench/_core_prober.ts (for bench/config_load.ts and bench/xds.ts).
"""

import http.client
import json
import sys
import threading
import time

import grpc

HTTP_ADDR, GRPC_ADDR, NODE_ID, PAUSE_MS = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
# optional: a file that gets one "<epoch ms at start> <kind> <ms>" line per probe after "warm"
LOG = open(sys.argv[5], "a") if len(sys.argv) > 5 and sys.argv[5] else None
ADS = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
TIMEOUT_S = 60


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, payload):
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


# DiscoveryRequest { node (2): Node { id (1) }, type_url (4) }
ADS_REQUEST = field(2, field(1, NODE_ID.encode())) + field(4, CDS.encode())
REST_BODY = json.dumps({"node": {"id": NODE_ID}}).encode()

stop = threading.Event()
slowest = {"ready": 0.0, "rest": 0.0, "ads": 0.0}
counts = {"ready": 0, "rest": 0, "ads": 0}
warm = False


def timed(kind, probe):
    at = time.time() * 1000
    start = time.perf_counter()
    try:
        probe()
    except Exception as e:  # noqa: BLE001  (a failed probe is reported, not fatal)
        sys.stderr.write(f"{kind}: {e}\n")
    ms = (time.perf_counter() - start) * 1000
    slowest[kind] = max(slowest[kind], ms)
    counts[kind] += 1
    if LOG is not None and warm:
        LOG.write(f"{at:.1f} {kind} {ms:.1f}\n")


def http_probe(method, path, body=None):
    host, port = HTTP_ADDR.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT_S)
    try:
        headers = {"content-type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        res = conn.getresponse()
        res.read()
        if res.status != 200:
            raise RuntimeError(f"{method} {path}: status {res.status}")
    finally:
        conn.close()


def main():
    global warm
    channel = grpc.insecure_channel(GRPC_ADDR)
    ads = channel.stream_stream(ADS, request_serializer=None, response_deserializer=None)

    def ads_probe():
        done = threading.Event()

        def requests():
            yield ADS_REQUEST
            done.wait()  # keep the stream open until the answer came

        call = ads(requests(), timeout=TIMEOUT_S)
        try:
            response = next(call)
            if CDS.encode() not in response:
                raise RuntimeError("ADS: the first response is not CDS")
        finally:
            done.set()
            call.cancel()

    def round_of_probes():
        timed("ready", lambda: http_probe("GET", "/ready"))
        timed("rest", lambda: http_probe("POST", "/v3/discovery:clusters", REST_BODY))
        timed("ads", ads_probe)

    round_of_probes()
    for k in slowest:
        slowest[k] = 0.0
        counts[k] = 0
    warm = True
    sys.stdout.write("warm\n")
    sys.stdout.flush()

    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    while not stop.is_set():
        round_of_probes()
        stop.wait(PAUSE_MS / 1000)
    channel.close()
    if LOG is not None:
        LOG.close()
    sys.stdout.write(json.dumps({"slowest": slowest, "counts": counts}) + "\n")
    sys.stdout.flush()


main()
