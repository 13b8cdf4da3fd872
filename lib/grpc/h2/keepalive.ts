/**
 * Keepalive of one connection, like grpc-go's server: the client's PINGs are policed
 * (`EnforcementPolicy` with PermitWithoutStream), a silent peer is PINGed and dropped when it
 * does not answer (`ServerParameters.Time`/`Timeout`), and a connection may have a maximum age
 * (`MaxConnectionAge`/`MaxConnectionAgeGrace`).
 * @module
 */

import { Buffer } from "node:buffer";
import { ConnectionError, H2Error, type H2Limits } from "./limits.ts";

/** grpc-go's maxPingStrikes: the third too-early PING ends the connection. */
const MAX_PING_STRIKES = 2;
/** Opaque data of our keepalive PINGs. */
export const KEEPALIVE_PING: Buffer = Buffer.from("meshkeep", "latin1");

/** What keepalive does to its connection. */
export interface KeepaliveHost {
  /** The connection is finished: timers stop. */
  readonly dead: boolean;
  /** Sends a PING with {@link KEEPALIVE_PING}. */
  ping(): void;
  /** Our PING was not acknowledged in time (`message` says so): close the connection. */
  unresponsive(message: string): void;
  /** The connection reached its maximum age: a graceful GOAWAY. */
  goaway(): void;
  /** The grace period after the maximum age is over: end the calls still open. */
  expire(): void;
}

/** The keepalive timers and PING policing of one connection. */
export class Keepalive {
  /** A frame arrived since the keepalive timer last fired. */
  #heard = true;
  #lastClientPing = -Infinity;
  #pingStrikes = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #pingTimeout: ReturnType<typeof setTimeout> | undefined;
  #ageTimer: ReturnType<typeof setTimeout> | undefined;

  /** Starts the interval and age timers that `limits` ask for. */
  constructor(readonly limits: Readonly<H2Limits>, readonly host: KeepaliveHost) {
    if (limits.keepaliveIntervalMs > 0) this.#arm();
    if (limits.maxConnectionAgeMs > 0) {
      const age = limits.maxConnectionAgeMs * (0.9 + Math.random() * 0.2);
      this.#ageTimer = setTimeout(() => this.#maxAge(), age);
    }
  }

  /** Something arrived from the peer. */
  heard(): void {
    this.#heard = true;
  }

  /**
   * A PING from the client (grpc-go's EnforcementPolicy with PermitWithoutStream): one sooner
   * than `keepaliveMinTimeMs` after the previous is a strike; the third throws GOAWAY
   * ENHANCE_YOUR_CALM `too_many_pings`.
   */
  clientPing(): void {
    const now = performance.now();
    if (now - this.#lastClientPing < this.limits.keepaliveMinTimeMs) {
      if (++this.#pingStrikes > MAX_PING_STRIKES) {
        throw new ConnectionError(
          H2Error.ENHANCE_YOUR_CALM,
          `too many pings (more often than every ${this.limits.keepaliveMinTimeMs} ms)`,
          "too_many_pings",
        );
      }
    }
    this.#lastClientPing = now;
  }

  /** The peer acknowledged a PING. */
  acked(): void {
    clearTimeout(this.#pingTimeout);
    this.#pingTimeout = undefined;
  }

  /** We sent headers or data: the client's ping strikes are forgiven (as grpc-go does). */
  forgive(): void {
    this.#pingStrikes = 0;
  }

  /** Stops every timer. */
  stop(): void {
    clearTimeout(this.#timer);
    clearTimeout(this.#pingTimeout);
    clearTimeout(this.#ageTimer);
    this.#timer = this.#pingTimeout = this.#ageTimer = undefined;
  }

  #arm(): void {
    this.#timer = setTimeout(() => {
      if (this.host.dead) return;
      if (this.#heard || this.#pingTimeout) {
        this.#heard = false;
        return this.#arm();
      }
      // Nothing heard for a whole interval: is the peer still there?
      this.host.ping();
      this.#pingTimeout = setTimeout(() => {
        this.host.unresponsive(
          `keepalive PING not acknowledged within ${this.limits.keepaliveTimeoutMs} ms`,
        );
      }, this.limits.keepaliveTimeoutMs);
      this.#arm();
    }, this.limits.keepaliveIntervalMs);
  }

  /** Max connection age: a graceful GOAWAY, then calls still open end after the grace period. */
  #maxAge(): void {
    this.#ageTimer = undefined;
    if (this.host.dead) return;
    this.host.goaway();
    this.#ageTimer = setTimeout(() => {
      this.#ageTimer = undefined;
      this.host.expire();
    }, this.limits.maxConnectionAgeGraceMs);
  }
}
