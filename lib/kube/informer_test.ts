import assert from "node:assert/strict";
import { type FakeKube, startFakeKube } from "../../tests/harness/fake_kube.ts";
import { waitUntil } from "../../tests/harness/procs.ts";
import { createInformer, type InformerEventType, type InformerOptions } from "./informer.ts";
import { apiErrorStatus, kubeClient, loadKubeConfig } from "./mod.ts";
import { configureLogging, defaultLogOptions } from "../log/mod.ts";

async function configMapInformer(
  kube: FakeKube,
  pageSize: number,
  extra: Partial<InformerOptions> = {},
) {
  const k8s = await kubeClient();
  const kc = await loadKubeConfig(kube.kubeconfigPath);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const lists: string[][] = [];
  const events: [InformerEventType, string][] = [];
  const inf = createInformer({
    name: "configmaps",
    kubeConfig: kc,
    watchPath: "/api/v1/namespaces/default/configmaps",
    list: (cont) =>
      core.listNamespacedConfigMap({ namespace: "default", limit: pageSize, _continue: cont }),
    resyncMs: 0,
    onList: (items) =>
      lists.push(items.map((o) => (o as { metadata: { name: string } }).metadata.name)),
    onEvent: (type, o) => events.push([type, (o as { metadata: { name: string } }).metadata.name]),
    ...extra,
  });
  return { inf, lists, events };
}

const cm = (name: string, v = "1") => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "default" },
  data: { v },
});

Deno.test("createInformer() lists in pages, then delivers watch events until stopped", async () => {
  await using kube = await startFakeKube();
  for (const n of ["a", "b", "c"]) kube.upsert(cm(n));
  const { inf, lists, events } = await configMapInformer(kube, 2);
  try {
    await inf.start();
    assert.deepEqual(lists, [["a", "b", "c"]]);
    const pages = kube.requests.filter((r) =>
      r.path === "/api/v1/namespaces/default/configmaps" && !r.search.includes("watch")
    );
    assert.equal(pages.length, 2);
    assert.match(pages[1].search, /continue=/);
    kube.upsert(cm("b", "2"));
    kube.remove("configmaps", "default", "a");
    await waitUntil(() => events.length === 2, 5000, "two events");
    assert.deepEqual(events, [["MODIFIED", "b"], ["DELETED", "a"]]);
  } finally {
    await inf.stop();
  }
  await waitUntil(() => kube.watchCount === 0, 5000, "the watch to close");
});

Deno.test("createInformer() retries a failing relist and stop() ends the retry loop", async () => {
  await using kube = await startFakeKube();
  const { inf, lists } = await configMapInformer(kube, 100);
  await inf.start();
  kube.failNext({
    method: "GET",
    path: "/api/v1/namespaces/default/configmaps",
    code: 500,
    times: 1000,
  });
  await inf.resync(); // fails; the loop now backs off and retries
  assert.equal(lists.length, 1);
  await waitUntil(
    () => kube.requests.filter((r) => r.status === 500).length >= 2,
    5000,
    "a retry",
  );
  await inf.stop();
});

Deno.test("createInformer() start() rejects with the collection name when the first list fails", async () => {
  await using kube = await startFakeKube();
  kube.failNext({ method: "GET", path: "/api/v1/namespaces/default/configmaps", code: 403 });
  const { inf } = await configMapInformer(kube, 100);
  await assert.rejects(inf.start(), /^Error: cannot list configmaps: .*\(HTTP 403\)$/);
  await inf.stop();
});

Deno.test("createInformer() delivers a collection declared absent as empty and lists it again on resync", async () => {
  await using kube = await startFakeKube();
  const path = "/api/v1/namespaces/default/configmaps";
  kube.failNext({ method: "GET", path, code: 404 });
  const reported: string[] = [];
  const { inf, lists, events } = await configMapInformer(kube, 100, {
    onListError(err) {
      reported.push(err.message);
      return apiErrorStatus(err.cause)?.code === 404 ? "absent" : undefined;
    },
  });
  try {
    await inf.start();
    assert.deepEqual(lists, [[]]);
    assert.deepEqual(reported, ["cannot list configmaps: injected failure (HTTP 404)"]);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(kube.requests.filter((r) => r.search.includes("watch")).length, 0, "no watch");
    kube.upsert(cm("a"));
    await inf.resync();
    assert.deepEqual(lists, [[], ["a"]]);
    kube.upsert(cm("a", "2"));
    await waitUntil(() => events.length === 1, 5000, "an event");
    assert.deepEqual(events, [["MODIFIED", "a"]]);
  } finally {
    await inf.stop();
  }
  await waitUntil(() => kube.watchCount === 0, 5000, "the watch to close");
});

Deno.test("createInformer() start() still rejects when onListError does not declare the collection absent", async () => {
  await using kube = await startFakeKube();
  kube.failNext({ method: "GET", path: "/api/v1/namespaces/default/configmaps", code: 500 });
  const { inf, lists } = await configMapInformer(kube, 100, { onListError: () => undefined });
  await assert.rejects(inf.start(), (e: Error) => {
    assert.equal(e.message, "cannot list configmaps: injected failure (HTTP 500)");
    assert.equal(apiErrorStatus(e.cause)?.code, 500);
    return true;
  });
  assert.deepEqual(lists, []);
  await inf.stop();
});

Deno.test("createInformer() resets the retry delay once a watch is established again", async () => {
  await using kube = await startFakeKube();
  const delays: number[] = [];
  const { inf } = await configMapInformer(kube, 100, {
    watchTimeoutSeconds: 1, // the server ends each watch after 1 s: the informer rewatches
    onRetryDelay: (ms) => delays.push(ms),
  });
  try {
    await inf.start();
    const path = "/api/v1/namespaces/default/configmaps";
    // an outage: the next four watches fail, with growing delays
    kube.failNext({ method: "GET", path, code: 500, times: 4 });
    await waitUntil(() => delays.length === 4, 10_000, "four retries");
    assert.deepEqual(delays, [100, 200, 400, 800]);
    // the fifth watch is established; a later failure starts again from the minimum
    await waitUntil(() => kube.watchCount === 1, 10_000, "the watch to be back");
    kube.failNext({ method: "GET", path, code: 500, times: 1 });
    await waitUntil(() => delays.length === 5, 10_000, "one more retry");
    assert.equal(delays[4], 100);
  } finally {
    await inf.stop();
  }
});

/**
 * Runs `fn` with the default logger writing into a file (its path given to `fn`); answers the
 * lines written, once the logger is closed and the file removed.
 */
async function logged(fn: (file: string) => Promise<void>): Promise<string[]> {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/out.log`;
  const logging = await configureLogging({ ...defaultLogOptions(["default"]), targets: [file] });
  try {
    await fn(file);
  } finally {
    await logging.dispose();
  }
  const text = await Deno.readTextFile(file);
  await Deno.remove(dir, { recursive: true });
  return text.split("\n").filter((l) => l !== "");
}

Deno.test("createInformer() logs an API server outage once, not once per watch and retry", async () => {
  const lines = await logged(async (file) => {
    await using kube = await startFakeKube();
    const delays: number[] = [];
    const opts = { watchTimeoutSeconds: 1, onRetryDelay: (ms: number) => delays.push(ms) };
    const a = await configMapInformer(kube, 100, { ...opts, name: "configmaps a" });
    const b = await configMapInformer(kube, 100, { ...opts, name: "configmaps b" });
    try {
      await a.inf.start();
      await b.inf.start();
      // both watches fail three times each (an outage), then come back
      kube.failNext({
        method: "GET",
        path: "/api/v1/namespaces/default/configmaps",
        code: 500,
        times: 6,
      });
      await waitUntil(() => delays.length >= 6, 15_000, "six retries");
      await waitUntil(() => kube.watchCount === 2, 15_000, "both watches back");
      await waitUntil(
        async () => (await Deno.readTextFile(file)).includes("reachable again"),
        5000,
        "the recovery line",
      );
    } finally {
      await a.inf.stop();
      await b.inf.stop();
    }
  });
  const failing = lines.filter((l) => /Orchestrator API server \S+ failing: /.test(l));
  assert.equal(failing.length, 1, lines.join("\n"));
  assert.equal(lines.filter((l) => /\twarn\t/.test(l)).length, 1, lines.join("\n"));
  assert.equal(lines.filter((l) => /reachable again after [\d.]+ s$/.test(l)).length, 1);
});

const CM_PATH = "/api/v1/namespaces/default/configmaps";
/** The informer's watch requests so far (their query strings). */
const watches = (kube: FakeKube) =>
  kube.requests.filter((r) => r.path === CM_PATH && /[?&]watch=/.test(r.search)).map((r) =>
    new URLSearchParams(r.search)
  );
const names = (kube: FakeKube) => kube.objects("configmaps", "default").map((o) => o.metadata.name);

Deno.test("createInformer() resumes a watch that ended from the last resourceVersion delivered, bookmarks included, without listing again", async () => {
  await using kube = await startFakeKube({ bookmarkIntervalMs: 60_000 });
  const delays: number[] = [];
  const { inf, lists, events } = await configMapInformer(kube, 100, {
    watchTimeoutSeconds: 2, // the bookmark below must reach the watch before it ends
    onRetryDelay: (ms) => delays.push(ms),
  });
  try {
    await inf.start();
    await waitUntil(() => watches(kube).length === 1, 5000, "the watch");
    assert.equal(watches(kube)[0].get("allowWatchBookmarks"), "true");
    kube.upsert(cm("a"));
    await waitUntil(() => events.length === 1, 5000, "the event");
    const afterEvent = String(kube.resourceVersion);
    await waitUntil(() => watches(kube).length === 2, 5000, "the watch resumed");
    assert.equal(watches(kube)[1].get("resourceVersion"), afterEvent);
    // a bookmark carries a newer resourceVersion (a change elsewhere), with no event
    kube.upsert({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "s", namespace: "default" },
    });
    await waitUntil(() => kube.watchCount === 1, 5000, "the watch open");
    kube.bookmark();
    const bookmarked = String(kube.resourceVersion);
    await waitUntil(() => watches(kube).length === 3, 5000, "the watch resumed again");
    assert.equal(watches(kube)[2].get("resourceVersion"), bookmarked);
    kube.upsert(cm("b"));
    await waitUntil(() => events.length === 2, 5000, "an event on the resumed watch");
    assert.deepEqual(events, [["ADDED", "a"], ["ADDED", "b"]]);
    assert.equal(lists.length, 1, "no relist");
    assert.deepEqual(delays, [], "an ended watch is no failure: resumed at once");
  } finally {
    await inf.stop();
  }
});

for (const how of ["ERROR event", "HTTP status"]) {
  Deno.test(`createInformer() lists again when its resourceVersion expired (410 Gone as an ${how}) and watches from the new list`, async () => {
    await using kube = await startFakeKube();
    kube.upsert(cm("a"));
    const { inf, lists, events } = await configMapInformer(kube, 100, {
      watchTimeoutSeconds: 1,
    });
    try {
      await inf.start();
      kube.missEvents("configmaps"); // a change the watch never delivers: only a list finds it
      kube.upsert(cm("b"));
      if (how === "ERROR event") kube.expireHistory(); // the resume's resourceVersion is too old
      else kube.failNext({ method: "GET", path: CM_PATH, code: 410 });
      await waitUntil(() => lists.length === 2, 10_000, "the relist");
      assert.deepEqual(lists[1], ["a", "b"]);
      assert.deepEqual(lists[1], names(kube));
      const relistRv = String(kube.resourceVersion);
      await waitUntil(() => watches(kube).length === 3, 5000, "the watch after the relist");
      assert.equal(watches(kube)[2].get("resourceVersion"), relistRv);
      kube.upsert(cm("c"));
      await waitUntil(() => events.some(([, n]) => n === "c"), 5000, "an event after the relist");
    } finally {
      await inf.stop();
    }
  });
}

Deno.test("createInformer() with resyncMs lists again periodically, and stop() ends it", async () => {
  await using kube = await startFakeKube();
  const { inf, lists } = await configMapInformer(kube, 100, { resyncMs: 100 });
  await inf.start();
  try {
    await waitUntil(() => lists.length >= 3, 5000, "two periodic relists");
  } finally {
    await inf.stop();
  }
  const n = lists.length;
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(lists.length, n, "no relist after stop()");
});

Deno.test("createInformer() logs a failure of its event handler and delivers the events after it", async () => {
  const lines = await logged(async () => {
    await using kube = await startFakeKube();
    const seen: string[] = [];
    const { inf } = await configMapInformer(kube, 100, {
      onEvent: (_type, o) => {
        const name = (o as { metadata: { name: string } }).metadata.name;
        seen.push(name);
        if (name === "bad") throw new Error("cannot handle it");
      },
    });
    try {
      await inf.start();
      kube.upsert(cm("bad"));
      kube.upsert(cm("good"));
      await waitUntil(() => seen.length === 2, 5000, "both events");
      assert.deepEqual(seen, ["bad", "good"]);
    } finally {
      await inf.stop();
    }
  });
  assert.ok(
    lines.some((l) => l.endsWith("Handling a ADDED event of configmaps failed: cannot handle it")),
    lines.join("\n"),
  );
});

Deno.test("createInformer() start() twice rejects; resync() before start() and after stop() resolves at once", async () => {
  await using kube = await startFakeKube();
  const { inf, lists } = await configMapInformer(kube, 100);
  await inf.resync();
  assert.equal(kube.requests.length, 0, "nothing listed before start()");
  await inf.start();
  await assert.rejects(inf.start(), /^Error: Informer for configmaps already started$/);
  await inf.stop();
  await inf.resync();
  assert.equal(lists.length, 1);
});

Deno.test("createInformer() recovers from an outage after its first list: it lists again and delivers what changed meanwhile", async () => {
  await using kube = await startFakeKube();
  kube.upsert(cm("a"));
  const { inf, lists } = await configMapInformer(kube, 100, { resyncMs: 0 });
  try {
    await inf.start();
    // the next list and watches fail a few times; meanwhile b comes
    kube.failNext({ method: "GET", path: CM_PATH, code: 503, times: 4 });
    kube.missEvents("configmaps");
    kube.upsert(cm("b"));
    void inf.resync();
    await waitUntil(() => lists.length === 2, 10_000, "a list once the API server is back");
    assert.deepEqual(lists[1], ["a", "b"]);
  } finally {
    await inf.stop();
  }
});

Deno.test("createInformer() logs a watch ERROR event other than 410 and watches again from its resourceVersion, without listing again", async () => {
  let events: [InformerEventType, string][] = [];
  let lists: string[][] = [];
  const lines = await logged(async () => {
    await using kube = await startFakeKube();
    kube.upsert(cm("a"));
    const made = await configMapInformer(kube, 100);
    ({ events, lists } = made);
    await made.inf.start();
    try {
      await waitUntil(() => watches(kube).length === 1 && kube.watchCount === 1, 5000, "a watch");
      kube.upsert(cm("b"));
      await waitUntil(() => events.some(([, n]) => n === "b"), 5000, "b through the watch");
      const rv = String(kube.resourceVersion);
      assert.equal(kube.errorWatches("configmaps", "etcdserver: leader changed"), 1);
      await waitUntil(() => watches(kube).length === 2, 5000, "the next watch");
      assert.equal(watches(kube)[1].get("resourceVersion"), rv, "from the last event's");
      kube.upsert(cm("c"));
      await waitUntil(() => events.some(([, n]) => n === "c"), 5000, "c through the new watch");
    } finally {
      await made.inf.stop();
    }
  });
  assert.equal(lists.length, 1, "listed once");
  assert.deepEqual(events.map(([t, n]) => `${t} ${n}`), ["ADDED b", "ADDED c"]);
  const warned = lines.filter((l) => l.includes("reported an error"));
  assert.equal(warned.length, 1, lines.join("\n"));
  assert.match(
    warned[0],
    /warn.*Watch of configmaps reported an error: etcdserver: leader changed$/,
  );
});

for (const how of ["an ERROR event", "no event (a proxy cutting long requests)"]) {
  Deno.test(`createInformer() backs off while every watch ends at once with ${how}`, async () => {
    await logged(async () => {
      await using kube = await startFakeKube();
      const { inf } = await configMapInformer(kube, 100);
      await inf.start();
      try {
        // for 1.5 s, every watch the informer opens is ended at once
        const until = Date.now() + 1500;
        while (Date.now() < until) {
          if (how === "an ERROR event") {
            kube.errorWatches("configmaps", "etcdserver: request timed out");
          } else kube.endWatches("configmaps");
          await new Promise((r) => setTimeout(r, 5));
        }
        // 100, 200, 400 and 800 ms between them: 5 watches at most, not one per failure
        const n = watches(kube).length;
        assert.ok(n >= 2 && n <= 6, `${n} watches in 1.5 s`);
      } finally {
        await inf.stop();
      }
    });
  });
}

Deno.test("createInformer(): an established watch ends an outage at once; the retry delay resets only once a watch delivers", async () => {
  const delays: number[] = [];
  const lines = await logged(async (file) => {
    // no bookmarks for a minute: nothing is delivered until the test writes
    await using kube = await startFakeKube({ bookmarkIntervalMs: 60_000 });
    const { inf, events } = await configMapInformer(kube, 100, {
      onRetryDelay: (ms) => delays.push(ms),
    });
    await inf.start();
    try {
      await waitUntil(() => kube.watchCount === 1, 5000, "the first watch");
      // the watch fails midway, then the next three watch requests fail: an outage
      kube.failNext({ method: "GET", path: CM_PATH, code: 500, times: 3 });
      kube.errorWatches("configmaps", "etcdserver: leader changed");
      await waitUntil(() => delays.length === 4 && kube.watchCount === 1, 10_000, "the watch back");
      // established, nothing delivered yet (its timeout is minutes away): the outage is over
      await waitUntil(
        async () => (await Deno.readTextFile(file)).includes("reachable again"),
        2000,
        "the recovery line",
      );
      kube.upsert(cm("x"));
      await waitUntil(() => events.some(([, n]) => n === "x"), 5000, "an event");
      kube.errorWatches("configmaps", "etcdserver: leader changed");
      await waitUntil(() => delays.length === 5, 5000, "one more retry");
    } finally {
      await inf.stop();
    }
  });
  assert.deepEqual(delays, [100, 200, 400, 800, 100]);
  assert.equal(lines.filter((l) => /reachable again after [\d.]+ s$/.test(l)).length, 1);
});
