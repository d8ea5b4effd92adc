/**
 * Sessions live no longer than the key that signed their credential: when
 * the verifier's key set changes (a key removed, or the set treated as
 * empty because it could not be refreshed for too long), every session's
 * credential is verified again and those no longer valid are closed.
 *
 * @module
 */
import { errorText } from "../../error_text/mod.ts";
import { MoqCode, type MoqPeer } from "../../moq/mod.ts";
import type { Verifier } from "../../auth/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";

/** How often the key set in force is compared with the one the sessions were checked against, ms. */
export const KEY_SET_CHECK_MS = 1000;

/** One session whose credential is checked again when the keys change. */
export interface CheckedSession {
  /** The moq session, closed when its credential is no longer valid. */
  readonly moq: MoqPeer;
  /** The credential it was admitted with. */
  readonly token: string;
  /** Set once the session was closed because its credential was no longer valid. */
  revoked: boolean;
}

/** Options of {@linkcode CredentialRecheck}. */
export interface CredentialRecheckOptions {
  /** The verifier whose key set is watched. */
  readonly verifier: Verifier;
  /** Logs a line. */
  readonly log: (line: string) => void;
  /** Timers (default the global ones). */
  readonly timers?: Timers;
  /** How often to look at the key set, ms (default {@linkcode KEY_SET_CHECK_MS}). */
  readonly everyMs?: number;
}

/** Watches the key set and closes sessions whose credential it no longer accepts. */
export class CredentialRecheck {
  readonly #opts: CredentialRecheckOptions;
  readonly #timers: Timers;
  readonly #sessions = new Set<CheckedSession>();
  #checked: unknown;
  #timer: unknown;
  #stopped = false;

  /** Starts watching the verifier's key set. */
  constructor(options: CredentialRecheckOptions) {
    this.#opts = options;
    this.#timers = options.timers ?? systemTimers;
    this.#checked = this.#currentSet();
    this.#schedule();
  }

  /** Checks `session` again whenever the keys change, until `forget`. */
  watch(session: CheckedSession): void {
    this.#sessions.add(session);
  }

  /** The session ended. */
  forget(session: CheckedSession): void {
    this.#sessions.delete(session);
  }

  /** Stops watching. */
  stop(): void {
    this.#stopped = true;
    this.#timers.clearTimeout(this.#timer);
    this.#sessions.clear();
  }

  #currentSet(): unknown {
    try {
      return this.#opts.verifier.source.current();
    } catch {
      return undefined; // not started yet
    }
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = this.#timers.setTimeout(() => {
      const set = this.#currentSet();
      if (set !== this.#checked) {
        this.#checked = set;
        void this.recheck();
      }
      this.#schedule();
    }, this.#opts.everyMs ?? KEY_SET_CHECK_MS);
  }

  /** Verifies every watched session's credential now; closes those refused. */
  async recheck(): Promise<void> {
    await Promise.all([...this.#sessions].map(async (s) => {
      try {
        await this.#opts.verifier.verify(s.token);
      } catch (e) {
        if (s.moq.isClosed || !this.#sessions.has(s)) return;
        s.revoked = true;
        this.#sessions.delete(s);
        this.#opts.log(
          `relay: session ${s.moq.remote} ended: its credential is no longer valid (${
            errorText(e)
          })`,
        );
        s.moq.close(MoqCode.Unauthorized, "credential no longer valid");
      }
    }));
  }
}
