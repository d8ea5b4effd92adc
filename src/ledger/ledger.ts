import type { LedgerBackend, LedgerEvents } from "./backend.ts";
import { STORAGE_DEADLINE_MS, withDeadline } from "./deadline.ts";
import { CommitFeed } from "./commit_feed.ts";
import { type NanoClock, systemNanoClock, TrackLedger } from "./track_ledger.ts";
import { trackKey, type TrackPath } from "../record/mod.ts";
import { retryUntilDone } from "../timers/mod.ts";

/** Options of {@link Ledger}. */
export interface LedgerOptions {
  /** Commit-time clock in Unix nanoseconds; the system clock by default. */
  readonly clock?: NanoClock;
  /** Most entries committed in one batch. */
  readonly maxBatch?: number;
  /**
   * Longest wait for one storage call before it counts as unavailable, ms
   * (default {@link STORAGE_DEADLINE_MS}; 0 waits as long as the backend does).
   */
  readonly deadlineMs?: number;
  /**
   * Most tracks kept in the open-track map on a single-writer backend
   * (default {@link MAX_OPEN_TRACK_LEDGERS}); past it the least recently used
   * idle ones leave it (see {@link Ledger}).
   */
  readonly openTracks?: number;
}

/** Tracks the ledger keeps open by default; idle ones beyond it are reopened when used. */
export const MAX_OPEN_TRACK_LEDGERS = 10_000;

/**
 * The funnel's view of storage: one {@link TrackLedger} per track over any
 * {@link LedgerBackend}. The funnel never knows which backend it has.
 *
 * The open-track map is bounded ({@link LedgerOptions.openTracks}): past the
 * bound, the least recently used tracks with nothing in flight
 * ({@link TrackLedger.idle}) leave it. One that someone still holds (a
 * Durable Stream's state, a request in progress) stays usable and is taken
 * back when its track is asked for, through a weak reference: there is never
 * a second ledger of one track, so never two writers numbering it. One that
 * nobody holds is collected, and its track is opened again (its newest entry
 * read once) the next time it is used. Not on a shared backend (PostgreSQL)
 * yet: there every track followed stays open, since one reopened would
 * publish others' commits only from its newest on.
 *
 * No track is opened at startup ({@link restore} only lists them): a track
 * is opened the first time something uses it, so the map holds the tracks in
 * use, not every stored one.
 */
export class Ledger {
  /** The backend underneath (every call bounded by the deadline), for its name and lifecycle. */
  readonly backend: LedgerBackend;
  readonly #clock: NanoClock;
  readonly #maxBatch: number;
  /**
   * Every track that comes to exist and every committed batch, this
   * process's and (shared backends) others', in each track's order: what
   * publishes, serves and counts commits subscribes here.
   */
  readonly commits: CommitFeed;
  #unfollow: (() => Promise<void>) | undefined;
  #resyncing: AbortController | undefined;
  #closed = false;
  // Least recently used first (a use moves a track to the end).
  readonly #open = new Map<string, Promise<TrackLedger>>();
  // The settled ones, for the idle check at eviction.
  readonly #settled = new Map<string, TrackLedger>();
  readonly #maxOpen: number;
  // Tracks out of the map that may still be held somewhere: taken back rather than opened twice.
  readonly #retired = new Map<string, WeakRef<TrackLedger>>();
  readonly #collected = new FinalizationRegistry<string>((key) => {
    if (this.#retired.get(key)?.deref() === undefined) this.#retired.delete(key);
  });
  readonly #opening = new Map<string, number>();
  // Shared backends only: every track listed or heard of (a key each), so that a resync tells
  // as stored only the tracks created while not listening.
  readonly #known = new Set<string>();
  // The same, settled, by path object: the HTTP layer reuses one path per
  // track URL, so the hot path finds its ledger without a key or an await.
  readonly #ready = new WeakMap<TrackPath, TrackLedger>();

  /** Wraps a backend. */
  constructor(backend: LedgerBackend, options: LedgerOptions = {}) {
    const deadline = options.deadlineMs ?? STORAGE_DEADLINE_MS;
    this.backend = deadline > 0 ? withDeadline(backend, deadline) : backend;
    this.#clock = options.clock ?? systemNanoClock();
    this.#maxBatch = options.maxBatch ?? 1024;
    this.commits = new CommitFeed(async (path, after, limit) => {
      const track = await this.track(path, false);
      return track ? await track.backend.readAfter(after, limit) : [];
    });
    this.#maxOpen = options.openTracks ?? MAX_OPEN_TRACK_LEDGERS;
    if (!Number.isSafeInteger(this.#maxOpen) || this.#maxOpen < 1) {
      throw new RangeError(`Cannot keep "${options.openTracks}" tracks open: must be at least 1`);
    }
  }

  /** True when several processes may write this ledger at once (PostgreSQL). */
  get shared(): boolean {
    return this.backend.follow !== undefined;
  }

  /**
   * On a shared backend, starts following what other processes create and
   * commit: their new tracks are opened here and told to {@link commits},
   * and so are their commits, in each track's order. Resolves once
   * listening; a no-op for single-process backends.
   */
  async follow(): Promise<void> {
    if (!this.backend.follow || this.#unfollow) return;
    const events: LedgerEvents = {
      created: (path) => void this.#learnTrack(path).catch(this.#followError),
      committed: (path, last) => void this.#learnTrack(path, last).catch(this.#followError),
      resync: () => this.#resync(),
    };
    this.#unfollow = await this.backend.follow(events);
  }

  readonly #followError = (error: unknown): void => this.commits.followFailed(error);

  async #learnTrack(path: TrackPath, last?: number): Promise<void> {
    const key = trackKey(path);
    this.#known.add(key);
    const known = this.#open.has(key) || this.#opening.has(key) || this.#retired.has(key);
    const track = await this.track(path, false);
    if (!track) return;
    if (!known) this.commits.trackCreated(path, track.newest);
    if (last !== undefined) track.learn(last);
  }

  // Notices may have been missed while not listening: every open track reads its newest
  // entry again, and tracks created meanwhile are told as stored (opened when used, as after a
  // restart). Each track on its own, retried with backoff until it succeeds, so one failed read
  // holds up no other track; a newer resync (or close) takes over from one still retrying.
  #resync(): void {
    if (this.#closed) return;
    this.commits.resynced();
    this.#resyncing?.abort();
    const { signal } = this.#resyncing = new AbortController();
    const options = { signal, onError: this.#followError };
    const retired = [...this.#retired.values()].flatMap((r) => r.deref() ?? []);
    for (const opening of [...this.#open.values(), ...retired.map((t) => Promise.resolve(t))]) {
      opening.then((track) =>
        retryUntilDone(async () => {
          const newest = await track.backend.latest();
          if (newest) track.learn(newest.seq);
        }, options), () => {});
    }
    void retryUntilDone(() => this.#list(), options);
  }

  /**
   * The ledger of a track. With `create` the track is made to exist
   * durably; without it an absent track resolves undefined.
   */
  async track(path: TrackPath, create: boolean): Promise<TrackLedger | undefined> {
    const ready = this.#ready.get(path);
    if (ready && !ready.retired) return ready;
    const key = trackKey(path);
    const cached = this.#open.get(key);
    if (cached) {
      // A use moves the track to the most recently used end.
      this.#open.delete(key);
      this.#open.set(key, cached);
      const settled = this.#settled.get(key);
      if (settled) {
        this.#settled.delete(key);
        this.#settled.set(key, settled);
      }
      const ledger = await cached;
      this.#ready.set(path, ledger);
      return ledger;
    }
    const held = this.#retired.get(key)?.deref();
    if (held) {
      this.#retired.delete(key);
      held.retired = false;
      this.#admit(key, Promise.resolve(held), held);
      this.#ready.set(path, held);
      return held;
    }
    // Counted while opening, so a notice of this very track is not taken for another's.
    this.#opening.set(key, (this.#opening.get(key) ?? 0) + 1);
    let backend;
    try {
      backend = await this.backend.openTrack(path, create);
    } finally {
      const left = this.#opening.get(key)! - 1;
      if (left > 0) this.#opening.set(key, left);
      else this.#opening.delete(key);
    }
    if (!backend) return undefined;
    // Another caller may have opened (or taken back) it while we awaited; keep the first.
    const again = this.#open.get(key);
    if (again) return await again;
    if (this.#retired.get(key)?.deref()) return await this.track(path, create);
    // A catch-up read stuck on a dead connection: fresh connections for the retry.
    const opening = TrackLedger.open(
      path,
      backend,
      this.#clock,
      this.#maxBatch,
      this.commits,
      () => this.backend.abandon?.(),
    );
    this.#admit(key, opening);
    opening.then((ledger) => {
      if (this.#open.get(key) === opening) this.#settled.set(key, ledger);
    }, () => {
      if (this.#open.get(key) === opening) this.#open.delete(key);
    });
    return await opening;
  }

  // Puts a track in the map, then lets the least recently used idle ones out past the bound.
  #admit(key: string, opening: Promise<TrackLedger>, settled?: TrackLedger): void {
    this.#open.set(key, opening);
    if (settled) this.#settled.set(key, settled);
    // On a shared backend a track reopened learns others' commits only from its newest on,
    // so one that left the map (and was collected) would not publish a batch landed meanwhile.
    if (this.#open.size <= this.#maxOpen || this.shared) return;
    for (const [k, ledger] of this.#settled) {
      if (this.#open.size <= this.#maxOpen) break;
      if (k === key || !ledger.idle) continue;
      this.#open.delete(k);
      this.#settled.delete(k);
      ledger.retired = true;
      this.#retired.set(k, new WeakRef(ledger));
      this.#collected.register(ledger, k);
    }
  }

  /** Tracks opened (or opening) in this process. */
  get openTracks(): number {
    return this.#open.size;
  }

  /** Tracks out of the open-track map still held somewhere (not yet collected). */
  get retiredTracks(): number {
    return this.#retired.size;
  }

  /** The ledger of a track already opened through this path object, without waiting. */
  opened(path: TrackPath): TrackLedger | undefined {
    const ready = this.#ready.get(path);
    return ready && !ready.retired ? ready : undefined;
  }

  /**
   * Whether the track is open in this process, or out of the open-track map
   * but still held: it exists, and opening it costs no storage call.
   */
  isOpen(path: TrackPath): boolean {
    const key = trackKey(path);
    return this.#open.has(key) || this.#retired.get(key)?.deref() !== undefined;
  }

  /** Every track recorded in the backend (one pass). */
  tracks(): Promise<TrackPath[]> {
    return this.backend.listTracks();
  }

  /**
   * Creates a track ahead of its first entry and tells {@link commits};
   * true when it did not exist before. (A track created by its first entry
   * reaches the feed with that entry.)
   */
  async create(path: TrackPath): Promise<boolean> {
    if (await this.track(path, false)) return false;
    await this.track(path, true);
    this.commits.trackCreated(path, undefined);
    return true;
  }

  /**
   * The spec's restore, lazily: lists the store once and tells {@link commits}
   * of every track in it as stored ({@link CommitFeed.tracksStored}), opening
   * none. A track is opened, and its newest entry read, when something first
   * uses it: a subscriber (the live side asks for its newest), a FETCH, a
   * request. So a start costs one listing however many tracks there are, and
   * holds no track open.
   */
  async restore(): Promise<void> {
    await this.#list();
  }

  // Tells the stored tracks not told yet as stored. On a shared backend the listing is
  // remembered, so a resync tells only those created meanwhile (telling one twice is harmless,
  // but would announce again broadcasts the live side let go of).
  async #list(): Promise<void> {
    const listed = await this.tracks();
    if (!this.shared) return this.commits.tracksStored(listed);
    const fresh = listed.filter((path) => {
      const key = trackKey(path);
      if (this.#known.has(key)) return false;
      this.#known.add(key);
      return !this.#open.has(key) && !this.#opening.has(key);
    });
    this.commits.tracksStored(fresh);
  }

  /** Stops following and closes the backend. */
  async close(): Promise<void> {
    const unfollow = this.#unfollow;
    this.#unfollow = undefined;
    this.#closed = true;
    this.#resyncing?.abort();
    this.commits.close();
    await unfollow?.().catch(() => {});
    for (const opening of this.#open.values()) opening.then((t) => t.stopFollowing(), () => {});
    for (const retired of this.#retired.values()) retired.deref()?.stopFollowing();
    await this.backend.close();
  }
}
