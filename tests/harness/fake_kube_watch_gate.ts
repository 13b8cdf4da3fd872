/**
 * A gate on the watch events of the fake API server (`FakeKube.watchGate`): events can be held
 * back (a slow watch: the write is answered, its event comes later) or dropped (a watch that
 * misses a change, which only a relist repairs). Every change still goes to the watch history
 * as usual, so a watch opened later from an older resourceVersion replays it, as a real API
 * server's would. Hooked into `fake_kube.ts` by a few lines.
 * @module
 */

/** Which events a {@linkcode WatchGate.drop} applies to (every field optional). */
export interface WatchEventMatch {
  /** `ADDED`, `MODIFIED` or `DELETED`. */
  type?: string;
  /** The object's `metadata.name`. */
  name?: string;
  /** The resource, as the fake keys its storage (`services`, `ingresses.networking.k8s.io`). */
  resource?: string;
}

/** Controls when the changes of the fake API server reach its open watches. */
export interface WatchGate {
  /**
   * Holds the watch events matching `match` (default: every event) from now on, in order, until
   * {@linkcode WatchGate.release}; the others go through.
   */
  hold(match?: WatchEventMatch): void;
  /** Delivers the held events in order, then lets events through again. */
  release(): void;
  /** How many events are held now. */
  readonly held: number;
  /** The next `count` (default 1) events matching `match` reach no watch. */
  drop(match?: WatchEventMatch, count?: number): void;
  /** How many events have been dropped so far. */
  readonly dropped: number;
}

/** The fake's side of a {@linkcode WatchGate}. */
export interface WatchGateControl extends WatchGate {
  /**
   * Called by the fake for each change of `resource`, with `deliver` sending it to the open
   * watches: runs `deliver` now, later (held) or never (dropped).
   */
  pass(type: string, object: { metadata?: unknown }, deliver: () => void, resource: string): void;
}

/** A gate that lets every event through until told otherwise. */
export function createWatchGate(): WatchGateControl {
  let holding: WatchEventMatch | undefined;
  const queue: (() => void)[] = [];
  const drops: { match: WatchEventMatch; left: number }[] = [];
  let dropped = 0;
  const nameOf = (o: { metadata?: unknown }) =>
    typeof o.metadata === "object" && o.metadata !== null
      ? (o.metadata as { name?: unknown }).name
      : undefined;
  return {
    hold(match = {}) {
      holding = match;
    },
    release() {
      holding = undefined;
      for (const deliver of queue.splice(0)) deliver();
    },
    get held() {
      return queue.length;
    },
    drop(match = {}, count = 1) {
      if (!Number.isInteger(count) || count < 1) {
        throw new TypeError(`WatchGate.drop: "count" must be a positive integer, got ${count}`);
      }
      drops.push({ match, left: count });
    },
    get dropped() {
      return dropped;
    },
    pass(type, object, deliver, resource) {
      const matches = (m: WatchEventMatch) =>
        (m.type === undefined || m.type === type) &&
        (m.name === undefined || m.name === nameOf(object)) &&
        (m.resource === undefined || m.resource === resource);
      const d = drops.find((d) => matches(d.match));
      if (d) {
        if (--d.left === 0) drops.splice(drops.indexOf(d), 1);
        dropped++;
        return;
      }
      if (holding && matches(holding)) queue.push(deliver);
      else deliver();
    },
  };
}
