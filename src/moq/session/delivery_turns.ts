import { afterTurn } from "../../timers/mod.ts";

/**
 * Delivery in turns, shared by every serving loop of a process (or worker)
 * through the sessions' `deliveryTurns` option.
 *
 * Under overload each loop always has a group ready, and which loop sends
 * next follows the order in which Deno resolves their stream operations:
 * some connections then get most of the sending and others almost none.
 * So once `budgetMs` of delivery has run without the event loop coming
 * round, a loop that wants to send waits for the next turn, and the
 * waiting loops resume in the order they stopped, one after another while
 * that turn's budget lasts; the rest keep their place for the turn after.
 * Every subscriber gets its share, and the rest of the event loop (accepts,
 * handshakes, control streams, reading the socket) gets its turn between:
 * resuming every waiter at once made a turn as long as there were sessions,
 * and one group's fan-out to a few thousand held the event loop for hundreds
 * of ms.
 *
 * The turn boundary is {@linkcode afterTurn} (`setImmediate` on Deno): a
 * zero timer would wait a millisecond or more there, leaving the sender idle
 * between turns.
 */
/** Longest stretch of delivery in one turn, ms: measured fair at 2, and cheaper than shorter. */
export const DELIVERY_TURN_MS = 2;

/**
 * Share of the UDP receive buffer in use past which no delivery turn starts (see
 * {@linkcode DeliveryTurns.watchBacklog}): a quarter leaves the rest for what arrives until the
 * next look, a turn later.
 */
export const BACKLOG_LIMIT = 0.25;

/** How long a turn waits for the socket to be read when it is past {@linkcode BACKLOG_LIMIT}, ms. */
export const BACKLOG_PAUSE_MS = 1;

/**
 * Pauses in a row after which a turn runs whatever the socket: a flood of datagrams that keeps
 * the buffer full (more than the relay can read) slows delivery down, but cannot stop it.
 */
export const MAX_BACKLOG_PAUSES = 20;

/**
 * Most of each second turns may spend waiting for the socket, ms. The socket's fill cannot tell
 * the fan-out's own ACKs from datagrams anyone may send to the port, so a flood that keeps it
 * filling would otherwise take twenty pauses from every turn: this leaves delivery at least four
 * fifths of every second, whatever arrives.
 */
export const MAX_BACKLOG_PAUSE_MS_PER_S = 200;

/** Options of {@linkcode DeliveryTurns}; the defaults are the process's clock and turn boundary. */
export interface DeliveryTurnsOptions {
  /** Delivery allowed per turn, ms (default {@linkcode DELIVERY_TURN_MS}). */
  readonly budgetMs?: number;
  /** Current time, ms (default performance.now). */
  readonly now?: () => number;
  /** Calls `fn` once the current event-loop turn is over (default setImmediate). */
  readonly afterTurn?: (fn: () => void) => void;
  /** Calls `fn` after a pause in which the process's sockets are read (default a 1 ms timer). */
  readonly pause?: (fn: () => void) => void;
}

/** Turns of bounded delivery; see the module comment. */
export class DeliveryTurns {
  readonly #budgetMs: number;
  readonly #now: () => number;
  readonly #afterTurn: (fn: () => void) => void;
  readonly #pause: (fn: () => void) => void;
  #backlog: (() => number) | undefined;
  #pauses = 0;
  // Time paused in the current second, and when that second began.
  #pausedMs = 0;
  #pauseSecond = -Infinity;
  // When the pause under way began.
  #pauseStart = 0;
  // When the current turn began; -1 when none is running (a boundary is pending while one runs).
  #start = -1;
  // Resumers of the waiting loops, oldest first from #head.
  #waiting: Array<(() => void) | undefined> = [];
  #head = 0;

  /** Turns of `budgetMs` (default {@linkcode DELIVERY_TURN_MS}). */
  constructor(options: DeliveryTurnsOptions = {}) {
    this.#budgetMs = options.budgetMs ?? DELIVERY_TURN_MS;
    this.#now = options.now ?? (() => performance.now());
    this.#afterTurn = options.afterTurn ?? afterTurn;
    this.#pause = options.pause ?? ((fn) => void setTimeout(fn, BACKLOG_PAUSE_MS));
  }

  /**
   * Holds turns back while the socket the deliveries' ACKs come back to is filling: `backlog`
   * gives the share of its receive buffer in use (0..1). Deno reads the QUIC socket on the
   * same thread, only between turns, and a group's fan-out to many thousands brings their ACKs
   * faster than that: the buffer overflowed, the kernel dropped datagrams, and each drop cost
   * a retransmission, or a handshake, SETUP or SUBSCRIBE caught in the burst waited out QUIC's
   * backed-off timer for seconds (docs/relay.md, "Sessions per node"). Past
   * {@linkcode BACKLOG_LIMIT} the next turn waits {@linkcode BACKLOG_PAUSE_MS} while the socket
   * is read, and looks again (at most {@linkcode MAX_BACKLOG_PAUSES} times in a row, and for at
   * most {@linkcode MAX_BACKLOG_PAUSE_MS_PER_S} of each second).
   */
  watchBacklog(backlog: () => number): void {
    this.#backlog = backlog;
  }

  /** Loops waiting for the next turn. */
  get waiting(): number {
    return this.#waiting.length - this.#head;
  }

  /**
   * Called before each group is sent: undefined to send now, or a promise
   * that resolves when this loop's turn comes.
   */
  wait(): Promise<void> | undefined {
    if (this.waiting === 0) {
      const now = this.#now();
      if (this.#start < 0) {
        this.#start = now;
        this.#afterTurn(this.#nextTurn);
        return undefined;
      }
      if (now - this.#start < this.#budgetMs) return undefined;
    }
    return new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  readonly #nextTurn = (): void => {
    this.#start = -1;
    if (this.waiting === 0) {
      this.#waiting = [];
      this.#head = 0;
      return;
    }
    if (this.#mayPause()) {
      this.#pauses++;
      this.#pauseStart = this.#now();
      this.#pause(this.#afterPause);
      return;
    }
    this.#pauses = 0;
    // Drop the resumed front once it is most of the array.
    if (this.#head > 1024 && this.#head * 2 > this.#waiting.length) {
      this.#waiting = this.#waiting.slice(this.#head);
      this.#head = 0;
    }
    this.#start = this.#now();
    this.#afterTurn(this.#nextTurn);
    this.#resumeNext();
  };

  // Whether the next turn waits for the socket: it is past the limit, and neither this run of
  // pauses nor this second's pause time is used up.
  #mayPause(): boolean {
    if (this.#backlog === undefined || this.#pauses >= MAX_BACKLOG_PAUSES) return false;
    const now = this.#now();
    if (now - this.#pauseSecond >= 1000) {
      this.#pauseSecond = now;
      this.#pausedMs = 0;
    }
    return this.#pausedMs < MAX_BACKLOG_PAUSE_MS_PER_S && this.#backlog() > BACKLOG_LIMIT;
  }

  readonly #afterPause = (): void => {
    this.#pausedMs += this.#now() - this.#pauseStart;
    this.#nextTurn();
  };

  // Resumes the oldest waiter, then (a microtask later, once it has started its send) the next,
  // while the turn's budget lasts; the first always goes, so every turn makes progress.
  readonly #resumeNext = (): void => {
    if (this.waiting === 0) return;
    if (this.#start < 0 || this.#now() - this.#start >= this.#budgetMs) return;
    const resume = this.#waiting[this.#head]!;
    this.#waiting[this.#head++] = undefined;
    resume();
    queueMicrotask(this.#resumeNext);
  };
}
