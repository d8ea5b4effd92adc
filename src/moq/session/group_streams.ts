/** Sending a served subscription's groups, one uni stream each, a bounded number at once. */
import type { StreamOptions } from "../../transport/mod.ts";
import type { CachedGroup } from "../track/mod.ts";
import { errorText } from "../../error_text/mod.ts";
import type { SessionCore } from "./core.ts";
import type { DeliveryTurns } from "./delivery_turns.ts";

/**
 * The group streams of one served subscription: at most `maxGroupsInFlight`
 * being sent, each started in a delivery turn when the session shares them.
 * A counter and one waiter instead of racing a set of promises for every
 * group.
 */
export class GroupStreams {
  readonly #core: SessionCore;
  readonly #id: bigint;
  readonly #max: number;
  readonly #turns: DeliveryTurns | undefined;
  #order: StreamOptions;
  #inflight = 0;
  #slotFree: (() => void) | undefined;

  /** Streams for subscription `id`, sent at `priority`. */
  constructor(core: SessionCore, id: bigint, priority: number) {
    this.#core = core;
    this.#id = id;
    this.#max = Math.max(1, core.options.maxGroupsInFlight ?? 16);
    this.#turns = core.options.deliveryTurns;
    this.#order = { sendOrder: priority };
  }

  /** The send order of streams started from now on. */
  set priority(priority: number) {
    this.#order = { sendOrder: priority };
  }

  readonly #sent = (): void => {
    this.#inflight--;
    const free = this.#slotFree;
    this.#slotFree = undefined;
    free?.();
  };

  /**
   * Starts a group's stream; a promise only when the caller must first wait
   * for a slot or a turn (most groups need neither: no promise, no await).
   */
  send(group: CachedGroup): Promise<void> | undefined {
    if (this.#inflight >= this.#max) return this.#sendAfterWaiting(group);
    const turn = this.#turns?.wait();
    if (turn) return this.#sendAfterWaiting(group, turn);
    this.#start(group);
    return undefined;
  }

  /** Resolves once every stream started is finished or failed. */
  async drained(): Promise<void> {
    while (this.#inflight > 0) await this.#slot();
  }

  // Waits for `turn` (already asked for), or else for a slot and then a turn.
  async #sendAfterWaiting(group: CachedGroup, turn?: Promise<void>): Promise<void> {
    if (turn) await turn;
    else {
      while (this.#inflight >= this.#max) await this.#slot();
      const next = this.#turns?.wait();
      if (next) await next;
    }
    // Only one loop sends, so a slot free before the turn is free after it.
    this.#start(group);
  }

  #slot(): Promise<void> {
    return new Promise<void>((resolve) => (this.#slotFree = resolve));
  }

  #start(group: CachedGroup): void {
    this.#inflight++;
    void sendGroup(this.#core, this.#id, group, this.#order, this.#sent);
  }
}

// Never rejects: a failed group stream is logged and counted as not sent.
// `done` runs once the stream is finished or failed.
async function sendGroup(
  core: SessionCore,
  id: bigint,
  group: CachedGroup,
  order: StreamOptions,
  done: () => void,
): Promise<void> {
  try {
    const stream = await core.transport.openUni(order);
    const bytes = group.stream(core.version, id);
    const writer = stream.writable.getWriter();
    // One write and the FIN queued together; close settles after the write.
    const written = writer.write(bytes);
    written.catch(() => {}); // reported through close
    await writer.close();
    core.stats.bytesSent += bytes.length;
    core.stats.groupsSent++;
  } catch (err) {
    if (!core.isClosed) core.log("group-send", `group stream failed: ${errorText(err)}`);
  } finally {
    done();
  }
}
