/**
 * One MoQ session per server and credential, shared by every feed of the
 * application (and the FETCHes they make), counted by leases: the first
 * lease dials, the last release closes. The session's liveness probe runs
 * once for all of them.
 */
import { connect, MoqCode, MoqError, type MoqSession, VERSIONS } from "../moq/mod.ts";
import { errorText } from "../error_text/mod.ts";
import { sleep, timeoutSignal, type Timers } from "../timers/mod.ts";
import type { CertificateHash, Dialer } from "./dial.ts";

/**
 * How long a session may hear nothing before it asks the server for a
 * track's properties (lite-05 TRACK), and how long an answer may take: a
 * server that vanished without closing (killed, or the path died) is
 * noticed within about five seconds, on every transport, without waiting
 * for an idle timeout. A session that receives groups sends no probes.
 */
export const PROBE_INTERVAL_MS = 1_500;
/** How long a probe may go unanswered before the session is given up, ms. */
export const PROBE_TIMEOUT_MS = 3_000;
/** How long dialing and the MoQ setup may take before the attempt is given up, ms. */
export const SETUP_TIMEOUT_MS = 10_000;

/** What a session is opened with; sessions are shared when all of it is the same. */
export interface SessionTarget {
  /** The MoQ URL, with the credential in its `jwt` parameter. */
  readonly url: URL;
  /** Opens the transport session. */
  readonly dial: Dialer;
  /** Timers for the probe. */
  readonly timers: Timers;
  /** The clock of the probe, ms. */
  readonly now: () => number;
  /** Development certificates to accept by hash. */
  readonly serverCertificateHashes?: readonly CertificateHash[];
  /** Extra PEM roots to trust (Deno). */
  readonly caCerts?: readonly string[];
}

/** A track the probe may ask about. */
export interface ProbeTrack {
  /** Broadcast path. */
  readonly broadcast: string;
  /** Track name. */
  readonly name: string;
}

/** One shared MoQ session; use it through a {@linkcode SessionLease}. */
export class SharedSession {
  /** Resolves with the session once dialed and set up; rejects when that failed. */
  readonly moq: Promise<MoqSession>;
  /** Resolves (never rejects) with why the session ended. */
  readonly ended: Promise<string>;
  readonly #abort = new AbortController();
  readonly #target: SessionTarget;
  readonly #tracks = new Set<ProbeTrack>();
  #refs = 0;
  #heardAt: number;

  /** Starts dialing at once. */
  constructor(target: SessionTarget) {
    this.#target = target;
    this.#heardAt = target.now();
    this.moq = this.#open();
    this.moq.catch(() => {});
    this.ended = this.moq.then(
      async (moq) => {
        const probing = this.#probe(moq);
        const info = await moq.closed;
        this.#abort.abort();
        await probing;
        return info.reason || `closed with code ${info.code}`;
      },
      (err) => errorText(err),
    ).finally(() => this.#abort.abort());
  }

  /** True once the session has ended or is ending. */
  get over(): boolean {
    return this.#abort.signal.aborted;
  }

  /** The timers the session was opened with (its probe's, and its links' deadlines). */
  get timers(): Timers {
    return this.#target.timers;
  }

  /** Leases held now. */
  get refs(): number {
    return this.#refs;
  }

  /** Something arrived on the session: it needs no probe for a while. */
  heard(): void {
    this.#heardAt = this.#target.now();
  }

  /** Ends the session for every lease (idempotent). */
  close(reason = "closed"): void {
    this.#abort.abort();
    this.moq.then((moq) => moq.close(MoqCode.None, reason), () => {});
  }

  /** @internal Counts a lease; `track` is one the probe may ask about. */
  _hold(track: ProbeTrack): () => void {
    this.#refs++;
    this.#tracks.add(track);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#tracks.delete(track);
      if (--this.#refs === 0) this.close();
    };
  }

  async #open(): Promise<MoqSession> {
    const t = this.#target;
    const setup = AbortSignal.any([this.#abort.signal, timeoutSignal(SETUP_TIMEOUT_MS, t.timers)]);
    const session = await t.dial(t.url, {
      protocols: VERSIONS,
      ...(t.serverCertificateHashes ? { serverCertificateHashes: t.serverCertificateHashes } : {}),
      ...(t.caCerts ? { caCerts: t.caCerts } : {}),
      signal: setup,
    });
    if (this.#abort.signal.aborted) {
      session.close(MoqCode.None, "closed");
      throw new MoqError("closed", "Session closed before it was set up");
    }
    return await connect(session, { signal: this.#abort.signal });
  }

  // A TRACK request after each quiet interval: any answer, even a refusal,
  // proves that the server and the path still work.
  async #probe(moq: MoqSession): Promise<void> {
    if (moq.version !== "moq-lite-05") return;
    const { timers, now } = this.#target;
    const signal = this.#abort.signal;
    this.#heardAt = now();
    while (!signal.aborted) {
      await sleep(this.#heardAt + PROBE_INTERVAL_MS - now(), signal, timers);
      if (signal.aborted) return;
      const track = this.#tracks.values().next().value;
      if (now() - this.#heardAt < PROBE_INTERVAL_MS || !track) {
        if (!track) this.#heardAt = now();
        continue; // groups arrived meanwhile, or nothing to ask about
      }
      let timer: unknown;
      const answered = await Promise.race([
        moq.trackInfo(track.broadcast, track.name).then(
          () => true,
          (err) => err instanceof MoqError && err.code !== "closed" && err.code !== "timeout",
        ),
        new Promise<false>((resolve) => {
          timer = timers.setTimeout(() => resolve(false), PROBE_TIMEOUT_MS);
        }),
      ]);
      timers.clearTimeout(timer);
      if (!answered && !signal.aborted) {
        moq.close(MoqCode.Transport, "no answer from the server");
        return;
      }
      this.#heardAt = now();
    }
  }
}

/** A feed's hold on a shared session; release it once (idempotent). */
export interface SessionLease {
  /** The shared session. */
  readonly session: SharedSession;
  /** Gives the hold up; the last release closes the session. */
  release(): void;
}

/**
 * Shared sessions by target. Feeds share a session when they dial the same
 * URL with the same credential, dialer, timers and certificate options.
 */
export class SessionPool {
  readonly #sessions = new Map<string, SharedSession>();
  readonly #ids = new WeakMap<object, number>();
  #nextId = 1;

  /** Sessions open now (for tests and figures). */
  get size(): number {
    return this.#sessions.size;
  }

  /** A lease on the session to `target`, dialing it when none is open. */
  lease(target: SessionTarget, track: ProbeTrack): SessionLease {
    const key = this.#key(target);
    let session = this.#sessions.get(key);
    if (!session || session.over) {
      const fresh = new SharedSession(target);
      this.#sessions.set(key, fresh);
      fresh.ended.then(() => {
        if (this.#sessions.get(key) === fresh) this.#sessions.delete(key);
      });
      session = fresh;
    }
    return { session, release: session._hold({ ...track }) };
  }

  #key(t: SessionTarget): string {
    return [
      t.url.href,
      this.#id(t.dial),
      this.#id(t.timers),
      this.#id(t.now),
      (t.serverCertificateHashes ?? []).map((h) => hex(h.value)).join(","),
      (t.caCerts ?? []).join(","),
    ].join(" ");
  }

  #id(o: object): number {
    let id = this.#ids.get(o);
    if (id === undefined) this.#ids.set(o, id = this.#nextId++);
    return id;
  }
}

function hex(value: ArrayBuffer | ArrayBufferView): string {
  const bytes = value instanceof ArrayBuffer
    ? new Uint8Array(value)
    : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The pool feeds use unless given their own. */
export const sharedSessions: SessionPool = new SessionPool();
