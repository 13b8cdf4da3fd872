/// <reference lib="deno.worker" />
// A worker for address_counts_test.ts, as listener `index` of a shared table: waits for the start
// word, adds and removes a connection of one of the addresses `rounds` times (each address's slot
// made and emptied again and again: the table's structure changes under the other worker), answers
// the most it saw of an address, and then holds one connection of each until "release".
import { SharedAddressCounts } from "../address_counts.ts";

let counts: SharedAddressCounts | undefined;
let addresses: string[] = [];
self.onmessage = (e: MessageEvent) => {
  if (e.data === "release") {
    for (const a of addresses) counts!.remove(a);
    return self.postMessage("released");
  }
  const { buffer, of, index, rounds, start } = e.data;
  addresses = e.data.addresses;
  counts = new SharedAddressCounts(buffer, of, index);
  // both workers at once: each says it is ready, then waits for the word to say go
  const go = new Int32Array(start);
  Atomics.add(go, 1, 1);
  Atomics.wait(go, 0, 0);
  let most = 0;
  for (let r = 0; r < rounds; r++) {
    const a = addresses[r % addresses.length];
    most = Math.max(most, counts.add(a));
    counts.remove(a);
  }
  for (const a of addresses) counts.add(a);
  self.postMessage({ most });
};
