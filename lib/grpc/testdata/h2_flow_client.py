"""An independent HTTP/2 client (python-hyper `h2`) for lib/grpc/flow_control_test.ts.

    /usr/bin/python3 h2_flow_client.py PORT upload STREAMS BYTES
    /usr/bin/python3 h2_flow_client.py PORT download STREAMS BYTES STREAM_WINDOW

upload: opens STREAMS gRPC calls to /t.S/Sink at once and sends BYTES on each (1 MiB messages),
never more than the server's windows allow (it waits for WINDOW_UPDATE), then reads the answer.
download: announces STREAM_WINDOW per stream (the connection window stays 65535 until we
acknowledge data), opens STREAMS calls to /t.S/Source asking for BYTES each, and acknowledges
data only as it reads it; h2 raises FlowControlError if the server sends past a window.
Prints one JSON line: {"ok": true, "streams": [{"status": "0", "bytes": N, "sum": S}, ...]} or
{"ok": false, "error": "..."}. Gives up after 30 s without progress.
"""

import json
import socket
import struct
import sys

import h2.config
import h2.connection
import h2.events
import h2.settings

MIB = 1024 * 1024


def grpc(body: bytes) -> bytes:
    return b"\0" + struct.pack(">I", len(body)) + body


def pattern(n: int, seed: int) -> bytes:
    return bytes(((i * 31 + seed) & 0xFF) for i in range(256)) * (n // 256) + bytes(n % 256)


def main() -> None:
    port, mode, streams, size = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(30)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    if mode == "download":
        conn.local_settings = h2.settings.Settings(
            client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: int(sys.argv[5])}
        )
    conn.initiate_connection()
    path = "/t.S/Sink" if mode == "upload" else "/t.S/Source"
    ids = []
    out = {}  # stream id -> bytes still to send
    res = {}
    for k in range(streams):
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":path", path),
                                (":authority", "127.0.0.1"), ("content-type", "application/grpc"),
                                ("te", "trailers")])
        ids.append(sid)
        res[sid] = {"status": None, "bytes": 0, "sum": 0, "data": bytearray()}
        if mode == "upload":
            msgs = bytearray()
            left = size
            while left > 0:
                n = min(MIB, left)
                msgs += grpc(pattern(n, k))
                left -= n
            out[sid] = bytes(msgs)
        else:
            conn.send_data(sid, grpc(struct.pack(">Q", size)), end_stream=True)
    sock.sendall(conn.data_to_send())
    ended = set()
    while len(ended) < len(ids):
        # Send what the windows allow.
        for sid in list(out):
            data = out[sid]
            while data:
                room = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size)
                if room <= 0:
                    break
                conn.send_data(sid, data[:room], end_stream=len(data) <= room)
                data = data[room:]
            if data:
                out[sid] = data
            else:
                del out[sid]
        sock.sendall(conn.data_to_send())
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            waiting = {sid: len(d) for sid, d in out.items()}
            print(json.dumps({"ok": False, "error": f"no progress for 30 s; unsent bytes {waiting}"}))
            return
        if not chunk:
            print(json.dumps({"ok": False, "error": "connection closed"}))
            return
        for ev in conn.receive_data(chunk):
            if isinstance(ev, h2.events.DataReceived):
                res[ev.stream_id]["data"] += ev.data
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.TrailersReceived):
                res[ev.stream_id]["status"] = dict(ev.headers).get(b"grpc-status", b"").decode()
            elif isinstance(ev, h2.events.StreamEnded):
                ended.add(ev.stream_id)
            elif isinstance(ev, (h2.events.StreamReset, h2.events.ConnectionTerminated)):
                print(json.dumps({"ok": False, "error": repr(ev)}))
                return
        sock.sendall(conn.data_to_send())
    streams_out = []
    for sid in ids:
        r = res[sid]
        data, at, total, s = bytes(r["data"]), 0, 0, 0
        while at + 5 <= len(data):
            n = struct.unpack(">I", data[at + 1:at + 5])[0]
            body = data[at + 5:at + 5 + n]
            total += len(body)
            s = (s + sum(body)) & 0xFFFFFFFF
            at += 5 + n
        streams_out.append({"status": r["status"], "bytes": total, "sum": s, "reply": data[5:].decode()
                            if mode == "upload" else ""})
    print(json.dumps({"ok": True, "streams": streams_out}))
    sock.close()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - a protocol error is the answer, not a crash
        print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"}))
