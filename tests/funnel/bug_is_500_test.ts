// A bug of ours is a 500, never a client's 400: a `TypeError` thrown inside
// a request (here by the storage under a funnel redaction and under a
// Durable Streams read) is logged and answered 500 with code "internal",
// while the client's own bad request keeps its 400 by its class.
import assert from "node:assert/strict";
import { loadFunnelConfig } from "../../src/config/mod.ts";
import { startFunnel } from "../../src/funnel/mod.ts";
import {
  type LedgerBackend,
  MemoryBackend,
  type TrackBackend,
  type TrackPath,
} from "../../src/ledger/mod.ts";
import type { Logger } from "../../src/log/mod.ts";
import { call } from "./_http.ts";

/** The memory backend, whose `get` and `readAfter` throw a TypeError once `broken` is set: a bug. */
class BuggyBackend implements LedgerBackend {
  readonly name = "memory";
  readonly #inner = new MemoryBackend();
  broken = false;

  listTracks(): Promise<TrackPath[]> {
    return this.#inner.listTracks();
  }

  async openTrack(path: TrackPath, create: boolean): Promise<TrackBackend | undefined> {
    const track = await this.#inner.openTrack(path, create);
    if (!track) return undefined;
    return new Proxy(track, {
      get: (target, prop) => {
        if ((prop === "get" || prop === "readAfter") && this.broken) {
          return () => Promise.reject(new TypeError("Cannot read properties of undefined"));
        }
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}

/** A logger that keeps what was logged as errors. */
function keepingLogger(errors: unknown[]): Logger {
  return {
    error: (_message, error) => errors.push(error),
    warn: () => {},
    info: () => {},
    debug: () => {},
  };
}

async function started(backend: BuggyBackend, errors: unknown[]) {
  const funnel = await startFunnel(
    loadFunnelConfig({ FUNNEL_ADDR: "127.0.0.1:0", FUNNEL_SERVE_ADDR: "none" }),
    { backend, log: keepingLogger(errors) },
  );
  return { funnel, base: `http://127.0.0.1:${funnel.addr.port}` };
}

Deno.test("A TypeError thrown under a redaction is a logged 500, not the client's 400", async () => {
  const backend = new BuggyBackend();
  const errors: unknown[] = [];
  const { funnel, base } = await started(backend, errors);
  try {
    assert.equal((await call(base, "POST", "/tracks/a/t", { body: "1" })).status, 201);
    // The client's own mistake stays a 400, by its class.
    const bad = await call(base, "DELETE", "/tracks/a/t?group=nonsense");
    assert.equal(bad.status, 400);
    assert.equal(bad.json.code, "invalid_request");

    backend.broken = true;
    const failed = await call(base, "DELETE", "/tracks/a/t?group=e000001-g00000000");
    assert.equal(failed.status, 500, failed.text);
    assert.equal(failed.json.code, "internal");
    assert.ok(!failed.text.includes("Cannot read properties"), "the bug's text stays in the log");
    assert.ok(errors.some((e) => e instanceof TypeError), "the bug is logged");
  } finally {
    await funnel.stop();
  }
});

Deno.test("A TypeError thrown under a Durable Streams read is a logged 500", async () => {
  const backend = new BuggyBackend();
  const errors: unknown[] = [];
  const { funnel, base } = await started(backend, errors);
  try {
    const url = `${base}/v1/stream/bugs`;
    const put = await fetch(url, { method: "PUT", headers: { "content-type": "text/plain" } });
    assert.equal(put.status, 201);
    await put.body?.cancel();
    // A malformed offset is the client's: 400, by its class.
    const bad = await fetch(`${url}?offset=nonsense`);
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).code, "invalid_request");

    backend.broken = true;
    const failed = await fetch(`${url}?offset=-1`);
    const text = await failed.text();
    assert.equal(failed.status, 500, text);
    assert.equal(JSON.parse(text).code, "internal");
    assert.ok(!text.includes("Cannot read properties"), "the bug's text stays in the log");
    assert.ok(errors.some((e) => e instanceof TypeError), "the bug is logged");
  } finally {
    await funnel.stop();
  }
});
