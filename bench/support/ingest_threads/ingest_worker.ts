/**
 * One ingest thread of the experiment: `Deno.serve` on the shared port
 * (SO_REUSEPORT), doing what can run off the main thread for a POST to a
 * track (path, credential, Idempotency-Key syntax, body checks) and handing
 * the accepted record to the main thread, whose one committer per track
 * answers. Anything but a POST to a track is refused here with 421: the
 * experiment measures records only.
 */
import { createVerifier, keySourceFrom, type Verifier } from "../../../src/auth/mod.ts";
import { authorize } from "../../../src/funnel/mod.ts";
import { readJsonBody } from "../../../src/funnel/mod.ts";
import { errorResponse } from "../../../src/funnel/mod.ts";
import { idempotencyKeyProblem } from "../../../src/funnel/mod.ts";
import { TrackPaths } from "../../../src/funnel/mod.ts";
import { HttpProblem, problemResponse } from "../../../src/http/mod.ts";
import {
  ANSWER_STRIDE,
  type AnswersMessage,
  batcher,
  type FromWorker,
  type StartMessage,
} from "./messages.ts";

// Parsed track paths kept, as the funnel's router keeps its own.
const paths = new TrackPaths();

interface WorkerScope {
  postMessage(message: FromWorker): void;
  onmessage: ((event: MessageEvent<StartMessage | AnswersMessage>) => void) | null;
}
const scope = self as unknown as WorkerScope;

let verifier: Verifier | undefined;
let nextId = 0;
const pending = new Map<number, (response: Response) => void>();
let outbox: unknown[] = [];
let inFlight = 0;
const send = (): void => {
  if (inFlight > 0 || outbox.length === 0) return;
  const items = outbox;
  outbox = [];
  inFlight++;
  scope.postMessage({ kind: "records", items });
};
const schedule = batcher(send);

async function handle(request: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>) {
  if (request.method !== "POST") {
    return problemResponse(421, "This ingest thread takes only POSTs to tracks");
  }
  try {
    const path = paths.of(request.url);
    const headers = request.headers;
    const { sender } = await authorize(verifier, headers.get("authorization"), "post", path);
    const key = headers.get("idempotency-key");
    if (key !== null) {
      const problem = idempotencyKeyProblem(key);
      if (problem) throw new HttpProblem(400, problem);
    }
    const payload = await readJsonBody(request);
    const limitKey = sender === undefined ? `addr:${info.remoteAddr.hostname}` : `sub:${sender}`;
    const id = nextId++;
    outbox.push(id, request.url, sender ?? null, limitKey, payload, key);
    schedule();
    return await new Promise<Response>((resolve) => pending.set(id, resolve));
  } catch (error) {
    return errorResponse(error, (message, e) => console.error(message, e));
  }
}

scope.onmessage = async (event) => {
  const message = event.data;
  if (message.kind === "answers") {
    inFlight -= message.received;
    send();
    const items = message.items;
    for (let i = 0; i < items.length; i += ANSWER_STRIDE) {
      const id = items[i] as number;
      const resolve = pending.get(id);
      if (!resolve) continue;
      pending.delete(id);
      const extra = items[i + 3] as Record<string, string> | null;
      resolve(
        new Response(items[i + 2] as string, {
          status: items[i + 1] as number,
          headers: extra ? { ...JSON_TYPE, ...extra } : JSON_TYPE,
        }),
      );
    }
    return;
  }
  if (message.keys) verifier = await createVerifier(keySourceFrom(message.keys));
  Deno.serve(
    { hostname: "127.0.0.1", port: message.port, reusePort: true, onListen: () => {} },
    handle,
  );
  scope.postMessage({ kind: "listening" });
};

const JSON_TYPE = { "content-type": "application/json" };
