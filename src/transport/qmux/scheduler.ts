/**
 * The send side of a QMux session: what goes into the WebSocket next.
 * Control frames first, then datagrams, then stream data by `sendOrder`
 * (higher first; equal orders in the order the streams were opened). On
 * qmux-01/02 several frames share one message (a record) up to the peer's
 * max_record_size. Nothing is handed to the socket while its
 * `bufferedAmount` is above the high-water mark, and a stream write
 * resolves at once only while the stream data waiting here stays within a
 * small budget (so a write and the FIN after it share a record); beyond
 * it, writes resolve once sent. A peer that reads slowly therefore holds
 * writes back instead of filling our memory.
 */
import { concatBytes } from "../../wire/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";

/** Where messages go: an open WebSocket, seen through what the scheduler needs. */
export interface MessageSink {
  /** True while messages can be sent. */
  readonly open: boolean;
  /** Bytes handed to the socket and not yet written to the network. */
  readonly bufferedAmount: number;
  /** Sends one binary message. */
  send(message: Uint8Array): void;
}

/** One frame waiting to be sent. */
interface Item {
  readonly parts: readonly Uint8Array[];
  readonly size: number;
  readonly resolve?: () => void;
  readonly reject?: (err: unknown) => void;
}

/** A stream's queue of STREAM frames; its `order` may change while frames wait. */
export class Lane {
  /** Higher is sent first. */
  order: number;
  /** Opening order, for ties. */
  readonly seq: number;
  /** Frames waiting. */
  readonly items: Item[] = [];

  /** Made by {@linkcode SendScheduler.lane}. */
  constructor(order: number, seq: number) {
    this.order = order;
    this.seq = seq;
  }
}

/** Options of a {@linkcode SendScheduler}. */
export interface SchedulerOptions {
  /** Several frames per message (qmux-01/02). */
  readonly records: boolean;
  /** Socket bytes in flight above which we wait. */
  readonly highWater: number;
  /** Stream bytes that may wait here with their writes already resolved. */
  readonly queueBudget: number;
  /** Control bytes allowed to wait before the peer counts as not reading (the session then ends). */
  readonly maxControlBytes: number;
  /** Datagrams allowed to wait; older ones are dropped. */
  readonly maxDatagrams: number;
  /** Timers of the back-off while the socket is full (default the system's). */
  readonly timers?: Timers;
  /** Called when control frames pile up beyond `maxControlBytes`. */
  readonly onOverflow: () => void;
  /** Called after each message sent (keep-alive bookkeeping). */
  readonly onSent?: () => void;
}

const MAX_RETRY_MS = 16;

/** Orders frames onto the socket with priorities, records and back-pressure. */
export class SendScheduler {
  readonly #sink: MessageSink;
  readonly #o: SchedulerOptions;
  #control: Item[] = [];
  #controlBytes = 0;
  #streamBytes = 0;
  #datagrams: Item[] = [];
  readonly #active = new Set<Lane>();
  #seq = 0;
  #maxMessage: number;
  #scheduled = false;
  #timer: unknown;
  #retryMs = 1;
  #closed = false;
  #sentAny = false;

  /** Sends into `sink`; records are capped at `maxMessage` until the peer says otherwise. */
  constructor(sink: MessageSink, maxMessage: number, options: SchedulerOptions) {
    this.#sink = sink;
    this.#maxMessage = maxMessage;
    this.#o = options;
  }

  /** Sets the largest message the peer accepts (its max_record_size). */
  set maxMessage(size: number) {
    this.#maxMessage = size;
  }

  /** A new stream's lane. */
  lane(order: number): Lane {
    return new Lane(order, this.#seq++);
  }

  /** Queues a control frame (never dropped while the session lives). */
  control(frame: Uint8Array): void {
    if (this.#closed) return;
    this.#control.push({ parts: [frame], size: frame.length });
    this.#controlBytes += frame.length;
    if (this.#controlBytes > this.#o.maxControlBytes) {
      this.#o.onOverflow();
      return;
    }
    this.kick();
  }

  /** Queues a datagram frame; the oldest waiting one is dropped when too many wait. */
  datagram(frame: Uint8Array): void {
    if (this.#closed) return;
    this.#datagrams.push({ parts: [frame], size: frame.length });
    if (this.#datagrams.length > this.#o.maxDatagrams) this.#datagrams.shift();
    this.kick();
  }

  /**
   * Queues a STREAM frame on `lane`; resolves at once while the stream data
   * waiting stays within the budget, else once this frame was handed to the socket.
   */
  stream(lane: Lane, header: Uint8Array, data: Uint8Array): Promise<void> {
    if (this.#closed) return Promise.reject(new Error("The session is closed"));
    const parts = data.length > 0 ? [header, data] : [header];
    const size = header.length + data.length;
    this.#streamBytes += size;
    this.#active.add(lane);
    this.kick();
    if (this.#streamBytes <= this.#o.queueBudget) {
      lane.items.push({ parts, size });
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      lane.items.push({ parts, size, resolve, reject });
    });
  }

  /** Drops a lane's waiting frames (reset or stopped stream); their writes reject with `err`. */
  drop(lane: Lane, err: unknown): void {
    for (const item of lane.items.splice(0)) {
      this.#streamBytes -= item.size;
      item.reject?.(err);
    }
    this.#active.delete(lane);
  }

  /** True once any message went out. */
  get sentAny(): boolean {
    return this.#sentAny;
  }

  /** Sends one message now, ahead of everything (the final close frame). */
  sendNow(frame: Uint8Array): void {
    if (!this.#sink.open) return;
    this.#sink.send(frame);
    this.#sentAny = true;
  }

  /** Stops: every waiting stream write rejects with `err`; nothing more is sent. */
  close(err: unknown): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== undefined) (this.#o.timers ?? systemTimers).clearTimeout(this.#timer);
    for (const lane of this.#active) this.drop(lane, err);
    this.#control = [];
    this.#datagrams = [];
  }

  /** Schedules a send pass (batched to the end of the current task, so frames share records). */
  kick(): void {
    if (this.#scheduled || this.#timer !== undefined || this.#closed) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      this.#pump();
    });
  }

  #hasWork(): boolean {
    return this.#control.length > 0 || this.#datagrams.length > 0 || this.#active.size > 0;
  }

  #pump(): void {
    while (!this.#closed && this.#sink.open && this.#hasWork()) {
      if (this.#sink.bufferedAmount >= this.#o.highWater) {
        // Deno's WebSocket has no "drained" event: look again shortly, backing off.
        this.#timer = (this.#o.timers ?? systemTimers).setTimeout(() => {
          this.#timer = undefined;
          this.#pump();
        }, this.#retryMs);
        this.#retryMs = Math.min(MAX_RETRY_MS, this.#retryMs * 2);
        return;
      }
      this.#retryMs = 1;
      this.#sendOne();
    }
  }

  #sendOne(): void {
    const parts: Uint8Array[] = [];
    const sent: Item[] = [];
    let size = 0;
    for (;;) {
      const next = this.#peek();
      if (!next) break;
      if (sent.length > 0 && (!this.#o.records || size + next.size > this.#maxMessage)) break;
      this.#take(next);
      parts.push(...next.parts);
      size += next.size;
      sent.push(next);
      if (!this.#o.records) break;
    }
    this.#sink.send(parts.length === 1 ? parts[0]! : concatBytes(parts));
    this.#sentAny = true;
    for (const item of sent) item.resolve?.();
    this.#o.onSent?.();
  }

  #best(): Lane | undefined {
    let best: Lane | undefined;
    for (const lane of this.#active) {
      if (!best || lane.order > best.order || (lane.order === best.order && lane.seq < best.seq)) {
        best = lane;
      }
    }
    return best;
  }

  #peek(): Item | undefined {
    return this.#control[0] ?? this.#datagrams[0] ?? this.#best()?.items[0];
  }

  #take(item: Item): void {
    if (this.#control[0] === item) {
      this.#control.shift();
      this.#controlBytes -= item.size;
    } else if (this.#datagrams[0] === item) {
      this.#datagrams.shift();
    } else {
      const lane = this.#best()!;
      lane.items.shift();
      this.#streamBytes -= item.size;
      if (lane.items.length === 0) this.#active.delete(lane);
    }
  }
}
