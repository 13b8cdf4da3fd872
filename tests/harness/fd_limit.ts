/**
 * Running a test process out of file descriptors (`RLIMIT_NOFILE` set to 0 through libc), as a
 * server meets it under a connection flood, and {@link keptAlive}: an HTTP connection opened
 * before, to read the server's `/ready` and `/metrics` meanwhile.
 * @module
 */

import { Buffer } from "node:buffer";
import net from "node:net";

/**
 * This process's open-file limit (`RLIMIT_NOFILE`, through libc): `exhaust()` makes every new
 * descriptor fail with EMFILE (those open stay usable) until `restore()`. `socket()`/`connect()`
 * make a TCP socket while descriptors are left and connect it later (a connect takes none).
 */
export function fdLimit() {
  const libc = Deno.dlopen("libc.so.6", {
    getrlimit: { parameters: ["i32", "buffer"], result: "i32" },
    setrlimit: { parameters: ["i32", "buffer"], result: "i32" },
    socket: { parameters: ["i32", "i32", "i32"], result: "i32" },
    connect: { parameters: ["i32", "buffer", "u32"], result: "i32" },
    close: { parameters: ["i32"], result: "i32" },
  });
  const RLIMIT_NOFILE = 7, AF_INET = 2, SOCK_STREAM = 1;
  const saved = new BigUint64Array(2);
  const bytes = (a: BigUint64Array<ArrayBuffer>) => new Uint8Array(a.buffer);
  if (libc.symbols.getrlimit(RLIMIT_NOFILE, bytes(saved)) !== 0) throw new Error("getrlimit");
  const set = (soft: bigint) => {
    if (libc.symbols.setrlimit(RLIMIT_NOFILE, bytes(new BigUint64Array([soft, saved[1]])))) {
      throw new Error("setrlimit failed");
    }
  };
  const fds: number[] = [];
  return {
    exhaust: () => set(0n),
    restore: () => set(saved[0]),
    socket(): number {
      const fd = libc.symbols.socket(AF_INET, SOCK_STREAM, 0);
      if (fd < 0) throw new Error("socket() failed");
      fds.push(fd);
      return fd;
    },
    /** Connects `fd` to 127.0.0.1:`port` (blocking; the kernel completes it for a listener). */
    connect(fd: number, port: number): void {
      const sa = new Uint8Array(16);
      const v = new DataView(sa.buffer);
      v.setUint16(0, AF_INET, true);
      v.setUint16(2, port);
      sa.set([127, 0, 0, 1], 4);
      if (libc.symbols.connect(fd, sa, 16) !== 0) throw new Error("connect() failed");
    },
    /** Restores the limit, closes the sockets made here and unloads libc. */
    dispose(): void {
      set(saved[0]);
      for (const fd of fds.splice(0)) libc.symbols.close(fd);
      libc.close();
    },
  };
}

/**
 * One HTTP/1.1 connection to `hostPort`, kept alive: `get` sends a request on it and reads the
 * answer (its body sized by content-length).
 */
export async function keptAlive(hostPort: string) {
  const [host, port] = [hostPort.slice(0, hostPort.lastIndexOf(":")), hostPort.split(":").at(-1)];
  const socket = net.connect({ host, port: Number(port) });
  await new Promise((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  let buf = Buffer.alloc(0);
  let wake = () => {};
  socket.on("data", (c: Buffer) => {
    buf = Buffer.concat([buf, c]);
    wake();
  });
  socket.on("close", () => wake());
  return {
    async get(path: string): Promise<{ status: number; body: string }> {
      socket.write(`GET ${path} HTTP/1.1\r\nhost: x\r\n\r\n`);
      for (;;) {
        const end = buf.indexOf("\r\n\r\n");
        const head = end < 0 ? "" : buf.subarray(0, end).toString();
        const length = /^content-length: (\d+)$/im.exec(head);
        if (end >= 0 && !length) throw new Error(`no content-length: ${head}`);
        if (length && buf.length >= end + 4 + Number(length[1])) {
          const body = buf.subarray(end + 4, end + 4 + Number(length[1])).toString();
          buf = buf.subarray(end + 4 + Number(length[1]));
          return { status: Number(head.split(" ")[1]), body };
        }
        if (socket.destroyed) throw new Error(`the connection to ${hostPort} closed`);
        await new Promise<void>((r) => wake = r);
      }
    },
    close: () => socket.destroy(),
  };
}
