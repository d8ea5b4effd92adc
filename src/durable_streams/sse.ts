import { answerHeaders, offsetText, type StreamContext } from "./context.ts";
import { isTextType } from "./content_type.ts";
import { nextCursor } from "./cursor.ts";
import { H } from "./headers.ts";
import { joinChunks, jsonArray, readAfter, type ReadBatch } from "./reader.ts";
import type { StreamState } from "./stream_state.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * An SSE read (PROTOCOL.md 5.8): a `data` event per batch read, each
 * followed by a `control` event with the next offset, then waiting for the
 * next commit. Closes at the end of a closed stream, or after `sseMs` so
 * CDNs can collapse reconnections.
 */
export function sseResponse(
  ctx: StreamContext,
  state: StreamState,
  start: number,
  cursor: string,
): Response {
  const base64 = !isTextType(state.config.type);
  const deadline = ctx.now() + ctx.sseMs;
  // The client going away cancels the body (request.signal would also abort once the
  // response starts, so it cannot tell).
  const stop = new AbortController();
  let position = start;
  let first = true;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller): Promise<void> {
      for (;;) {
        // Watched before the read, so a commit landing during it is not missed.
        const watch = ctx.registry.watch(state.own.path);
        try {
          const batch = await readAfter(ctx.ledger, state, position);
          const upToDate = batch.next >= state.tail();
          const closed = upToDate && state.closed;
          const text = batch.size > 0 ? dataEvent(state, batch, base64) : "";
          if (text || first || batch.next !== position || closed) {
            position = batch.next;
            first = false;
            controller.enqueue(
              encoder.encode(text + controlEvent(position, upToDate, closed, cursor)),
            );
            if (closed) return end(controller);
            return;
          }
          const left = deadline - ctx.now();
          if (left <= 0 || stop.signal.aborted) return end(controller);
          await watch.wait(left, stop.signal);
        } finally {
          watch.cancel();
        }
        cursor = nextCursor(ctx.now(), cursor);
      }
    },
    cancel(): void {
      stop.abort();
    },
  }, { highWaterMark: 0 });
  const end = (controller: ReadableStreamDefaultController<Uint8Array>) => controller.close();
  return new Response(body, {
    status: 200,
    headers: answerHeaders({
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      ...(base64 ? { [H.sseEncoding]: "base64" } : {}),
    }),
  });
}

function dataEvent(state: StreamState, batch: ReadBatch, base64: boolean): string {
  let text: string;
  if (state.json) text = jsonArray(batch.messages);
  else if (base64) text = joinChunks(batch.chunks).toBase64();
  else text = decoder.decode(joinChunks(batch.chunks));
  const lines = text.split(/\r\n|\r|\n/).map(dataLine).join("\n");
  return `event: data\n${lines}\n\n`;
}

// SSE readers drop one space after "data:", so only a line that starts with one gets another.
function dataLine(line: string): string {
  return line.startsWith(" ") ? `data: ${line}` : `data:${line}`;
}

function controlEvent(
  position: number,
  upToDate: boolean,
  closed: boolean,
  cursor: string,
): string {
  const control: Record<string, unknown> = { streamNextOffset: offsetText(position) };
  if (closed) control.streamClosed = true;
  else control.streamCursor = cursor;
  if (upToDate) control.upToDate = true;
  return `event: control\ndata:${JSON.stringify(control)}\n\n`;
}
