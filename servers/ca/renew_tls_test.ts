import assert from "node:assert/strict";
import { Cleanups } from "../../lib/process/mod.ts";
import { recordingLogger } from "./_testutil.ts";
import { renewTls } from "./mod.ts";

/** A renewal whose certificates are issued when the test says (`issued`), recorded when applied. */
function renewal(firstNotAfter: number, applying?: Promise<void>) {
  const cleanups = new Cleanups();
  const log = recordingLogger();
  const applied: { notAfter: number; caChanged: boolean }[] = [];
  const pending: ((notAfter: number) => void)[] = [];
  let caChanged = () => {};
  renewTls({
    issue: () =>
      new Promise<{ notAfter: Date }>((r) => pending.push((n) => r({ notAfter: new Date(n) }))),
    apply: (tls, changed) => {
      applied.push({ notAfter: tls.notAfter.getTime(), caChanged: changed });
      return applying ?? Promise.resolve();
    },
    onCaChange: (cb) => caChanged = cb,
    cleanups,
    log,
    now: Date.now,
  }, new Date(firstNotAfter));
  return {
    cleanups,
    log,
    applied,
    /** Issues the oldest pending certificate, valid until `notAfter`. */
    issued: (notAfter: number) => pending.shift()!(notAfter),
    pending: () => pending.length,
    caChange: () => caChanged(),
  };
}

const settle = () => new Promise((r) => setTimeout(r, 20));

Deno.test("the signing API's certificate is renewed at half its life and when the CA changes", async () => {
  const r = renewal(Date.now() + 2000); // renewed a second from now (half of 2 s)
  try {
    await new Promise((res) => setTimeout(res, 1100));
    assert.equal(r.pending(), 1, "renewal at half the life");
    const next = Date.now() + 3_600_000;
    r.issued(next);
    await settle();
    assert.deepEqual(r.applied, [{ notAfter: next, caChanged: false }]);
    r.caChange();
    assert.equal(r.pending(), 1, "renewal on a CA change");
    r.issued(next + 1);
    await settle();
    assert.deepEqual(r.applied.at(-1), { notAfter: next + 1, caChanged: true });
  } finally {
    await r.cleanups.run();
  }
});

Deno.test("a renewal in flight at shutdown is not applied and leaves no timer behind", async () => {
  const r = renewal(Date.now() + 3_600_000);
  r.caChange(); // a renewal starts
  await r.cleanups.run(); // and the program shuts down meanwhile
  r.issued(Date.now() + 3_600_000);
  await settle();
  assert.deepEqual(r.applied, []);
  r.caChange(); // a late CA change: nothing starts
  assert.equal(r.pending(), 0);
  assert.deepEqual(r.log.lines, []);
  // Deno's sanitizer fails this test if a renewal timer was scheduled after the shutdown.
});

Deno.test("a renewal being applied at shutdown schedules no next one", async () => {
  let done!: () => void;
  const r = renewal(Date.now() + 3_600_000, new Promise<void>((res) => done = res));
  r.caChange();
  r.issued(Date.now() + 3_600_000);
  await settle();
  assert.equal(r.applied.length, 1, "being applied");
  await r.cleanups.run(); // shutdown while the listener takes the new certificate
  done();
  await settle();
  // Deno's sanitizer fails this test if the next renewal's timer was scheduled.
});
