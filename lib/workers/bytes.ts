/**
 * Byte helpers shared by the HTTP front's two sides (`http_front.ts` in the serving isolate,
 * `http_front_worker.ts` in the front): reading a body up to a size, and joining chunks. Apart so
 * that the worker loads them without the pool and its logging.
 * @module
 */

/** What {@link readUpTo} read: the chunks, their total size, and whether the body ended. */
export interface ReadPart {
  chunks: Uint8Array[];
  size: number;
  done: boolean;
}

/**
 * Reads chunks from `reader` until `limit` bytes or more were read (`done` false: the reader is
 * left where it stopped) or the body ended (`done` true).
 */
export async function readUpTo(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  limit: number,
): Promise<ReadPart> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (size < limit) {
    const r = await reader.read();
    if (r.done) return { chunks, size, done: true };
    chunks.push(r.value);
    size += r.value.length;
  }
  return { chunks, size, done: false };
}

/** `chunks` (of `size` bytes in all) as one array (the only chunk itself), or null when none. */
export function concat(chunks: Uint8Array[], size: number): Uint8Array | null {
  if (chunks.length === 0) return null;
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
