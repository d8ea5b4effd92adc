import { systemTimers, type Timers } from "../../timers/mod.ts";

/** Time between heartbeats on the LISTEN channel, ms. */
export const HEARTBEAT_MS = 10_000;
/** Longest wait to hear a heartbeat back before the LISTEN counts as dead, ms. */
export const HEARTBEAT_DEADLINE_MS = 5_000;

/** Options of {@link ListenHeartbeat}. */
export interface ListenHeartbeatOptions {
  /** NOTIFYs `payload` on the channel being listened to. */
  readonly send: (payload: string) => Promise<unknown>;
  /** Called once when a heartbeat was not heard back in time; the heartbeat stops. */
  readonly missed: () => void;
  /** Default {@link HEARTBEAT_MS}. */
  readonly everyMs?: number;
  /** Default {@link HEARTBEAT_DEADLINE_MS}. */
  readonly deadlineMs?: number;
  /** Timers (tests pass their own). */
  readonly timers?: Timers;
}

/**
 * Proves a LISTEN connection alive. A connection can die without closing
 * (a firewall dropping state, a peer that stopped answering): the driver then
 * waits forever and every notice is lost. So every `everyMs` a NOTIFY with a
 * fresh token goes to the channel, and unless the listener hears it back
 * within `deadlineMs`, `missed` is called to reconnect.
 */
export class ListenHeartbeat {
  readonly #options: ListenHeartbeatOptions;
  readonly #timers: Timers;
  #timer: unknown;
  #expected: string | undefined;
  #running = false;

  /** A heartbeat not yet started. */
  constructor(options: ListenHeartbeatOptions) {
    this.#options = options;
    this.#timers = options.timers ?? systemTimers;
  }

  /** (Re)starts beating: the first heartbeat goes out after `everyMs`. */
  start(): void {
    this.stop();
    this.#running = true;
    this.#schedule();
  }

  /** Stops beating. */
  stop(): void {
    this.#running = false;
    this.#expected = undefined;
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /**
   * Takes a notice payload heard on the channel: true when it is a heartbeat
   * (ours or another process's), which callers then ignore.
   */
  heard(payload: string): boolean {
    if (!payload.startsWith(PREFIX)) return false;
    if (this.#running && payload === this.#expected) {
      this.#expected = undefined;
      this.#timers.clearTimeout(this.#timer);
      this.#schedule();
    }
    return true;
  }

  #schedule(): void {
    this.#timer = this.#timers.setTimeout(
      () => this.#beat(),
      this.#options.everyMs ?? HEARTBEAT_MS,
    );
    this.#unref();
  }

  #beat(): void {
    if (!this.#running) return;
    const token = `${PREFIX}"${crypto.randomUUID()}"}`;
    this.#expected = token;
    // A failed NOTIFY is a missed heartbeat too: the deadline below decides.
    this.#options.send(token).catch(() => {});
    this.#timer = this.#timers.setTimeout(() => {
      if (!this.#running || this.#expected !== token) return;
      this.stop();
      this.#options.missed();
    }, this.#options.deadlineMs ?? HEARTBEAT_DEADLINE_MS);
    this.#unref();
  }

  // A heartbeat alone must not keep the process alive.
  #unref(): void {
    if (this.#timers === systemTimers) Deno.unrefTimer(this.#timer as number);
  }
}

// Notices of commits and tracks carry "t"; a heartbeat carries only "h", so versions that
// do not know it ignore it.
const PREFIX = '{"h":';
