import { broadcastName, type TrackPath } from "../../path/mod.ts";
import type { Announcement, Announcer, OpenTrack, TrackProducer } from "../../moq/mod.ts";
import { MAX_PATH_BYTES, normalizePath, segmentProblem } from "../../path/mod.ts";

/**
 * Live tracks a publisher keeps open at most by default: past it, the least
 * recently used one without subscribers is closed. A closed track is opened
 * again at its next commit or subscription, from the ledger. As many
 * broadcasts whose tracks are all closed stay announced, so that a relay
 * still routes a subscription to them; past that, the one whose last track
 * closed longest ago is withdrawn.
 */
export const MAX_LIVE_TRACKS = 4096;

/**
 * How long a track opened again for a subscriber is kept from closing while
 * the subscriber's cursor has not attached, ms: the session hands the track
 * on a turn (moq-lite) or a SUBSCRIBE_OK write (IETF) later, and a commit to
 * another track in between would otherwise close it under the subscriber.
 * The cursor's attaching ends the pin; this bounds one whose cursor never
 * comes (a session gone meanwhile).
 */
export const SUBSCRIBER_PIN_MS = 5_000;

/**
 * One session (an `owner` of {@linkcode LiveTracks.ensurePinned}) holds at
 * most 1/this of the pins (1,024 of 4,096 at the default): a session that
 * subscribes to closed tracks and never lets its cursors attach (or is slow
 * to) cannot take every slot and have others' subscriptions to closed
 * tracks refused; a relay's one session for all its subscribers still
 * reopens hundreds of tracks at once.
 */
export const SESSION_PIN_SHARE = 4;

/** A track kept open for a subscriber: until when (ms), and for which session. */
interface Pin {
  readonly until: number;
  readonly owner: object | undefined;
}

/** One open track. */
interface LiveTrack {
  readonly key: string;
  readonly broadcast: LiveBroadcast;
  readonly name: string;
  readonly producer: TrackProducer;
  closed: boolean;
}

interface LiveBroadcast {
  readonly name: string;
  readonly tracks: Map<string, LiveTrack>;
  readonly announcement: Announcement;
}

/**
 * The open tracks of a publisher, by broadcast: at most `max` of them, least
 * recently used first out, except those a subscriber reads (a subscription
 * keeps its track open, so subscriptions, which sessions bound, may hold
 * more) and those opened again for a subscriber whose cursor has not
 * attached yet ({@linkcode ensurePinned}; at most `max` such pins, a
 * session's share of them at most for one session, so open tracks stay
 * within subscribed ones + `max` + 1). A broadcast is announced
 * from its first track on, and while its tracks are closed for as long as it
 * is among the `max` that became idle last.
 */
export class LiveTracks {
  readonly #announcer: Announcer;
  readonly #max: number;
  /** Every announced broadcast: those with open tracks, and those in `#idle`. */
  readonly #broadcasts = new Map<string, LiveBroadcast>();
  /** Announced broadcasts with no open track, the one idle longest first (at most `max`). */
  readonly #idle = new Map<string, LiveBroadcast>();
  /** Every open track, least recently used first. */
  readonly #tracks = new Map<string, LiveTrack>();
  // Hot path: the HTTP layer reuses one path object per track URL.
  readonly #byPath = new WeakMap<TrackPath, LiveTrack>();
  readonly #watchers = new Set<(track: OpenTrack, open: boolean) => void>();
  #closedCount = 0;
  /**
   * Tracks opened for a subscriber whose cursor has not attached, with when the pin
   * lapses (ms): the one lapsing first first, since every pin lasts as long.
   */
  readonly #pins = new Map<LiveTrack, Pin>();
  /** Pins held per owner (a session), none at 0: as many owners as pins at most. */
  readonly #owned = new Map<object, number>();
  readonly #maxOwned: number;
  readonly #now: () => number;
  readonly #pinMs: number;

  /**
   * Tracks announced on `announcer`, at most `max` open (at least 1); `now`
   * (ms) times the pins of {@linkcode ensurePinned}.
   */
  constructor(
    announcer: Announcer,
    max: number,
    now: () => number = Date.now,
    pinMs = SUBSCRIBER_PIN_MS,
  ) {
    if (!Number.isSafeInteger(max) || max < 1) {
      throw new RangeError(`The live track bound ${max} is not a positive integer`);
    }
    this.#announcer = announcer;
    this.#max = max;
    this.#maxOwned = Math.ceil(max / SESSION_PIN_SHARE);
    this.#now = now;
    this.#pinMs = pinMs;
  }

  /** Tracks open now. */
  get size(): number {
    return this.#tracks.size;
  }

  /** Tracks closed so far to keep within the bound. */
  get closedCount(): number {
    return this.#closedCount;
  }

  /** The open track `track` of broadcast `name` (any spelling), marked used. */
  get(name: string, track: string): TrackProducer | undefined {
    const live = this.#broadcasts.get(normalizePath(name))?.tracks.get(track);
    if (!live) return undefined;
    this.#touch(live);
    return live.producer;
  }

  /**
   * The open track at `path`, marked used; `make` opens it when it is not,
   * and its producer calls `attached` whenever a cursor attaches.
   */
  ensure(path: TrackPath, make: (attached: () => void) => TrackProducer): TrackProducer {
    return this.#ensure(path, make).producer;
  }

  /**
   * As {@linkcode ensure}, for a subscriber whose cursor attaches later: the
   * track is kept from closing until a cursor attaches or the pin lapses.
   * Undefined, opening nothing, when `max` tracks are pinned so already, or
   * `owner` (the subscriber's session, when known) holds its share of them
   * ({@linkcode SESSION_PIN_SHARE}): the subscription is refused rather than
   * the open tracks growing.
   */
  ensurePinned(
    path: TrackPath,
    make: (attached: () => void) => TrackProducer,
    owner?: object,
  ): TrackProducer | undefined {
    if (!this.canPin(owner)) return undefined;
    const live = this.#ensure(path, make);
    this.#unpin(live);
    if (live.producer.subscribers === 0) {
      this.#pins.set(live, { until: this.#now() + this.#pinMs, owner });
      if (owner) this.#owned.set(owner, (this.#owned.get(owner) ?? 0) + 1);
    }
    return live.producer;
  }

  /** Whether another track may be pinned now (fewer than `max` are, and fewer than `owner`'s share by it). */
  canPin(owner?: object): boolean {
    const now = this.#now();
    for (const [live, pin] of this.#pins) {
      if (pin.until > now) break;
      this.#unpin(live);
    }
    return this.#pins.size < this.#max &&
      (owner === undefined || (this.#owned.get(owner) ?? 0) < this.#maxOwned);
  }

  // Ends the track's pin, if it has one, and its owner's count of it.
  #unpin(live: LiveTrack): void {
    const pin = this.#pins.get(live);
    if (!pin) return;
    this.#pins.delete(live);
    if (!pin.owner) return;
    const held = this.#owned.get(pin.owner)! - 1;
    if (held > 0) this.#owned.set(pin.owner, held);
    else this.#owned.delete(pin.owner);
  }

  #ensure(path: TrackPath, make: (attached: () => void) => TrackProducer): LiveTrack {
    const known = this.#byPath.get(path);
    if (known && !known.closed) {
      this.#touch(known);
      return known;
    }
    const name = normalizePath(broadcastName(path));
    let broadcast = this.#broadcasts.get(name);
    let live = broadcast?.tracks.get(path.track);
    if (live) {
      this.#touch(live);
    } else {
      if (!broadcast) {
        broadcast = { name, tracks: new Map(), announcement: this.#announcer.announce(name) };
        this.#broadcasts.set(name, broadcast);
      }
      this.#idle.delete(name);
      const key = `${name}\u0000${path.track}`;
      // A cursor attaching ends the track's pin: its subscription keeps it open from then on.
      const made: { live?: LiveTrack } = {};
      const producer = make(() => made.live && this.#unpin(made.live));
      live = made.live = { key, broadcast, name: path.track, producer, closed: false };
      broadcast.tracks.set(path.track, live);
      this.#tracks.set(key, live);
      this.#trim(live);
      this.#tell(live, true);
    }
    this.#byPath.set(path, live);
    return live;
  }

  /**
   * Tells `listener` of every open track now, then of each one opened or
   * closed (a session pushing them to an IETF relay); returns the unwatch.
   */
  watch(listener: (track: OpenTrack, open: boolean) => void): () => void {
    this.#watchers.add(listener);
    for (const live of [...this.#tracks.values()]) listener(openTrack(live), true);
    return () => void this.#watchers.delete(listener);
  }

  #tell(live: LiveTrack, open: boolean): void {
    for (const w of this.#watchers) w(openTrack(live), open);
  }

  /**
   * Announces broadcasts whose tracks are stored but not open (a restart's
   * listing), as idle ones: a subscription then reaches them and opens its
   * track. Idle broadcasts stay bounded as ever: past the bound, those idle
   * longest are withdrawn, and of more names than the bound only the last
   * ones given are announced.
   */
  announceStored(names: Iterable<string>): void {
    const fresh = new Set<string>();
    for (const name of names) {
      const canonical = normalizePath(name);
      if (!this.#broadcasts.has(canonical)) fresh.add(canonical);
    }
    // Announcing more than may stay idle would only withdraw them again at once.
    for (const name of [...fresh].slice(-this.#max)) {
      const broadcast = { name, tracks: new Map(), announcement: this.#announcer.announce(name) };
      this.#broadcasts.set(name, broadcast);
      this.#idle.set(name, broadcast);
    }
    this.#trimIdle();
  }

  /** Canonical paths of every announced broadcast. */
  broadcasts(): string[] {
    return [...this.#broadcasts.keys()];
  }

  /** Ends every track and announcement. */
  close(): void {
    for (const live of this.#tracks.values()) {
      live.closed = true;
      live.producer.close();
      this.#tell(live, false);
    }
    for (const b of this.#broadcasts.values()) b.announcement.withdraw();
    this.#tracks.clear();
    this.#broadcasts.clear();
    this.#idle.clear();
    this.#pins.clear();
    this.#owned.clear();
  }

  /** The most recently used track (the map's last), so a run of commits to one track costs no map writes. */
  #newest: LiveTrack | undefined;

  #touch(live: LiveTrack): void {
    // Moving a track that is the newest already would cost two map writes per commit.
    if (this.#newest === live) return;
    this.#tracks.delete(live.key);
    this.#tracks.set(live.key, live);
    this.#newest = live;
  }

  // Past the bound, closes the least recently used tracks nobody reads; one with a
  // subscriber (or pinned for one) is moved to the recent end, so each pass looks at every
  // track at most once.
  #trim(added: LiveTrack): void {
    this.#newest = added;
    let looked = 0;
    const total = this.#tracks.size;
    while (this.#tracks.size > this.#max && looked < total) {
      const oldest = this.#tracks.values().next().value!;
      looked++;
      if (oldest === added) break;
      if (oldest.producer.subscribers > 0 || this.#isPinned(oldest)) {
        this.#tracks.delete(oldest.key);
        this.#tracks.set(oldest.key, oldest);
        this.#newest = oldest;
        continue;
      }
      this.#drop(oldest);
    }
  }

  // A lapsed pin is let go here.
  #isPinned(live: LiveTrack): boolean {
    const pin = this.#pins.get(live);
    if (pin === undefined) return false;
    if (pin.until > this.#now()) return true;
    this.#unpin(live);
    return false;
  }

  #drop(live: LiveTrack): void {
    live.closed = true;
    this.#unpin(live);
    this.#closedCount++;
    this.#tracks.delete(live.key);
    live.broadcast.tracks.delete(live.name);
    live.producer.close();
    this.#tell(live, false);
    if (live.broadcast.tracks.size > 0) return;
    // Still announced, so a relay routes a subscription here (which reopens the track).
    this.#idle.set(live.broadcast.name, live.broadcast);
    this.#trimIdle();
  }

  // Past the bound, withdraws the broadcasts idle longest.
  #trimIdle(): void {
    while (this.#idle.size > this.#max) {
      const [name, oldest] = this.#idle.entries().next().value!;
      this.#idle.delete(name);
      this.#broadcasts.delete(name);
      oldest.announcement.withdraw();
    }
  }
}

function openTrack(live: LiveTrack): OpenTrack {
  return { path: live.broadcast.name, track: live.name, producer: live.producer };
}

/**
 * The track path a subscriber names (a broadcast path in any spelling and a
 * track name), or undefined when it names none the ledger could hold.
 */
export function subscribedTrackPath(path: string, track: string): TrackPath | undefined {
  const broadcast = normalizePath(path).split("/");
  if (broadcast.some((s) => segmentProblem(s) !== undefined)) return undefined;
  if (segmentProblem(track) !== undefined) return undefined;
  if (new TextEncoder().encode(`${broadcast.join("/")}/${track}`).length > MAX_PATH_BYTES) {
    return undefined;
  }
  return { broadcast, track };
}
