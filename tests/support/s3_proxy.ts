import http from "node:http";
import { HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import type { TestS3 } from "./s3rver.ts";

/*
 * An HTTP front for s3rver that behaves like a real object store where
 * s3rver does not, and misbehaves on request:
 *
 * - It honours `If-None-Match: *` on PUT (s3rver ignores it): under a lock
 *   per key it HEADs the key and answers 412 PreconditionFailed when it
 *   exists, else passes the PUT on, like AWS S3, MinIO or R2.
 * - `delay` holds requests (a slow store). A held request has been received
 *   whole and is applied when its time comes even if the client gave up
 *   meanwhile: a late write. Its condition is checked when it lands.
 * - `fail` answers requests with an error status without passing them on.
 * - `tear` answers PUTs 200 having stored only half the body: a store that
 *   acknowledges a write before it holds it whole (s3rver itself did).
 *
 * Requests are forwarded byte for byte, Host header included, so their
 * signatures stay valid.
 */

/** Which requests a fault applies to; an empty match takes every request. */
export interface S3RequestMatch {
  /** HTTP method, e.g. "PUT". */
  readonly method?: string;
  /** Tested against the object key (decoded, without the bucket). */
  readonly key?: RegExp;
}

/** A running front for s3rver with fault controls. */
export interface S3Proxy {
  /** `http://127.0.0.1:<port>`: give this to clients instead of s3rver's. */
  readonly endpoint: string;
  /** S3Backend options for a ledger under `prefix`, through the proxy. */
  backendOptions(prefix: string): ReturnType<TestS3["backendOptions"]>;
  /** The LEDGER_URI of a ledger under `prefix`, through the proxy. */
  ledgerUri(prefix: string): string;
  /**
   * Holds the next `count` matching requests for `ms` before passing them
   * on; each is applied then even when its client has gone (a late write).
   * Resolves once the first of them is held (received whole).
   */
  delay(match: S3RequestMatch, ms: number, count?: number): Promise<void>;
  /** Answers the next `count` matching requests with `status`, storing nothing. */
  fail(match: S3RequestMatch, status?: number, count?: number): void;
  /**
   * Answers the next `count` matching PUTs 200 after storing the first half
   * of each body under its key, with its metadata.
   */
  tear(match: S3RequestMatch, count?: number): void;
  /** Conditional PUTs answered 412 because their key existed. */
  readonly refused: number;
  /** Requests whose client had gone (aborted, timed out) by the time they were answered. */
  readonly abandoned: number;
  /** Resolves once every request received so far has been applied or answered. */
  idle(): Promise<void>;
  /** Stops the proxy (s3rver keeps running). */
  close(): Promise<void>;
}

interface Fault {
  readonly match: S3RequestMatch;
  left: number;
  readonly delayMs?: number;
  readonly status?: number;
  readonly tear?: boolean;
  /** Told when a request is taken by this fault. */
  readonly taken?: () => void;
}

/** Starts a proxy in front of `s3` on an ephemeral port. */
export async function startS3Proxy(s3: TestS3): Promise<S3Proxy> {
  const upstream = new URL(s3.endpoint);
  const client = s3.client();
  const faults: Fault[] = [];
  const pending = new Set<Promise<void>>();
  const locks = new Map<string, Promise<void>>();
  let refused = 0;
  let abandoned = 0;

  const take = (
    method: string,
    key: string,
    kind: "delay" | "fail" | "tear",
  ): Fault | undefined => {
    const fault = faults.find((f) =>
      f.left > 0 &&
      (kind === "delay"
        ? f.delayMs !== undefined
        : kind === "fail"
        ? f.status !== undefined
        : f.tear === true) &&
      (f.match.method === undefined || f.match.method === method) &&
      (f.match.key === undefined || f.match.key.test(key))
    );
    if (fault) {
      fault.left--;
      fault.taken?.();
    }
    return fault;
  };

  const forward = (req: http.IncomingMessage, body: Uint8Array): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const out = http.request({
        hostname: upstream.hostname,
        port: Number(upstream.port),
        method: req.method,
        path: req.url,
        headers: req.headers,
      }, (res) => {
        const chunks: Uint8Array[] = [];
        res.on("data", (c: Uint8Array) => chunks.push(c));
        res.on(
          "end",
          () =>
            resolve({ status: res.statusCode ?? 502, headers: res.headers, body: concat(chunks) }),
        );
        res.on("error", reject);
      });
      out.on("error", reject);
      out.end(body);
    });

  // Under the key's lock, so two conditional PUTs of one key are decided one after the other.
  const exclusive = async <T>(key: string, f: () => Promise<T>): Promise<T> => {
    const before = locks.get(key) ?? Promise.resolve();
    const run = before.then(f);
    const settled = run.then(() => {}, () => {});
    locks.set(key, settled);
    settled.then(() => {
      if (locks.get(key) === settled) locks.delete(key);
    });
    return await run;
  };

  const exists = async (key: string): Promise<boolean> => {
    try {
      await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key }));
      return true;
    } catch (error) {
      if (
        (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404
      ) {
        return false;
      }
      throw error;
    }
  };

  const answer = (res: http.ServerResponse, a: Answer): void => {
    // The client may have given up (a late write): then there is no one to answer.
    if (res.destroyed || res.socket?.destroyed !== false) {
      abandoned++;
      return;
    }
    res.writeHead(a.status, a.headers);
    res.end(a.body);
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const chunks: Uint8Array[] = [];
    for await (const chunk of req) chunks.push(chunk as Uint8Array);
    const body = concat(chunks);
    const method = req.method ?? "GET";
    const key = objectKey(req.url ?? "/", s3.bucket);
    const failure = take(method, key, "fail");
    if (failure) return answer(res, errorAnswer(failure.status!, "InjectedFailure"));
    if (method === "PUT" && take(method, key, "tear")) {
      const metadata: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (name.startsWith("x-amz-meta-") && typeof value === "string") {
          metadata[name.slice("x-amz-meta-".length)] = value;
        }
      }
      const half = body.subarray(0, Math.floor(body.length / 2));
      await client.send(
        new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: half, Metadata: metadata }),
      );
      return answer(res, { status: 200, headers: {}, body: new Uint8Array() });
    }
    const delay = take(method, key, "delay");
    if (delay) await new Promise((r) => setTimeout(r, delay.delayMs));
    const conditional = method === "PUT" && req.headers["if-none-match"] === "*";
    if (!conditional) return answer(res, await forward(req, body));
    const result = await exclusive(key, async () => {
      if (await exists(key)) {
        refused++;
        return errorAnswer(412, "PreconditionFailed");
      }
      return await forward(req, body);
    });
    answer(res, result);
  };

  const server = http.createServer((req, res) => {
    const p = handle(req, res).catch(() => {
      try {
        answer(res, errorAnswer(502, "ProxyError"));
      } catch {
        // The client has gone.
      }
    });
    pending.add(p);
    p.finally(() => pending.delete(p));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    backendOptions: (prefix) => ({ ...s3.backendOptions(prefix), endpoint }),
    ledgerUri: (prefix) =>
      s3.ledgerUri(prefix).replace(encodeURIComponent(s3.endpoint), encodeURIComponent(endpoint)),
    delay(match, ms, count = 1): Promise<void> {
      const held = Promise.withResolvers<void>();
      faults.push({ match, left: count, delayMs: ms, taken: held.resolve });
      return held.promise;
    },
    fail(match, status = 503, count = 1): void {
      faults.push({ match, left: count, status });
    },
    tear(match, count = 1): void {
      faults.push({ match, left: count, tear: true });
    },
    get refused(): number {
      return refused;
    },
    get abandoned(): number {
      return abandoned;
    },
    async idle(): Promise<void> {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
    async close(): Promise<void> {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.allSettled([...pending]);
      client.destroy();
    },
  };
}

interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Uint8Array;
}

function errorAnswer(status: number, code: string): Answer {
  const body = new TextEncoder().encode(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code>` +
      `<Message>${code} (test proxy)</Message></Error>`,
  );
  return {
    status,
    headers: { "content-type": "application/xml", "content-length": String(body.length) },
    body,
  };
}

// Path-style URLs: /<bucket>/<key>?<query>.
function objectKey(url: string, bucket: string): string {
  const path = url.split("?")[0]!;
  const prefix = `/${bucket}/`;
  return path.startsWith(prefix) ? decodeURIComponent(path.slice(prefix.length)) : "";
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
