/**
 * Keeps one live link up for a feed: subscribes again with backoff when it
 * ends, replaces it before its credential expires, and follows a server's
 * GOAWAY. A replacement is subscribed before the link it replaces is
 * closed. A refusal the application must act on (the credential, after a
 * fresh one was refused too, or whose own scopes do not allow subscribing,
 * which is known before dialing) ends the keeper with a
 * {@linkcode RefusedError}.
 *
 * The keeper sleeps until something happens: each link tells it once when
 * it settles, and one timer waits for the credential's renewal, so a feed
 * that stays open for days holds no more than a feed just opened.
 */
import { goawayRedirect, type ReceivedGroup } from "../moq/mod.ts";
import { sleep, type Timers } from "../timers/mod.ts";
import { retryBackoff } from "./backoff.ts";
import type { CertificateHash, Dialer } from "./dial.ts";
import { type RefusedError, TokenError } from "./errors.ts";
import { foreseeRefusal } from "./foresight.ts";
import { type LinkEnd, LiveLink } from "./live.ts";
import type { SessionPool } from "./session_pool.ts";
import type { TokenKeeper } from "./token.ts";

/** Longest single wait of the keeper, ms (timers cannot wait for ever). */
const MAX_WAIT_MS = 3_600_000;
/** Tries at moving to a GOAWAY's redirect before the draining link is left anyway. */
const MOVE_TRIES = 4;
/** Links to a redirect that fail to open before the keeper goes back to the URL it was given. */
const REDIRECT_FAILURES = 3;

/** What the keeper needs. */
export interface LinkKeeperOptions {
  /** The MoQ URL the application gave. */
  readonly url: URL;
  /** The credential, put in each new link's `jwt` parameter. */
  readonly tokens: TokenKeeper;
  /** Opens transport sessions. */
  readonly dial: Dialer;
  /** The sessions links share. */
  readonly pool: SessionPool;
  /** Timers for backoff and renewals. */
  readonly timers: Timers;
  /** The clock, ms. */
  readonly now: () => number;
  /** Development certificates to accept. */
  readonly serverCertificateHashes?: readonly CertificateHash[];
  /** Extra PEM roots to trust (Deno). */
  readonly caCerts?: readonly string[];
  /** Broadcast path of the track. */
  readonly broadcast: string;
  /** Track name. */
  readonly name: string;
  /** The first MoQ group a new link asks for. */
  readonly start: () => number;
  /** Told of every group a link receives. */
  readonly onGroup: (group: ReceivedGroup, link: LiveLink) => void;
  /** Told when a link's subscription is accepted. */
  readonly onReady: (link: LiveLink) => void;
  /** Told when the current link went away; `refused` when the server refused it. */
  readonly onLost: (refused: RefusedError | undefined) => void;
  /** Ends the keeper. */
  readonly signal: AbortSignal;
}

type Outcome = LinkEnd | { readonly goaway: string };

/** The feed's live link, kept up; see the module doc. */
export class LinkKeeper {
  readonly #o: LinkKeeperOptions;
  #link: LiveLink | undefined;
  /** Where a GOAWAY sent us, until a link there fails. */
  #redirect: URL | undefined;
  #redirectFailures = 0;
  /** What the current link settled with, once it has. */
  #outcome: Outcome | undefined;
  /** The token each link was opened with. */
  readonly #tokenOf = new WeakMap<LiveLink, string | undefined>();
  #wake: (() => void) | undefined;

  /** Keeps links with `options` once {@linkcode run} is called. */
  constructor(options: LinkKeeperOptions) {
    this.#o = options;
  }

  /** The current link, if any. */
  get current(): LiveLink | undefined {
    return this.#link;
  }

  /** True while the current link's subscription is up. */
  get ready(): boolean {
    return this.#link?.ready ?? false;
  }

  /** Keeps a link up until the signal aborts; rejects with a refusal the application must see. */
  async run(): Promise<void> {
    const o = this.#o;
    const backoff = retryBackoff();
    const onAbort = () => this.#poke();
    o.signal.addEventListener("abort", onAbort, { once: true });
    let unauthorized = 0;
    try {
      while (!o.signal.aborted) {
        if (!this.#link) await this.#foresee();
        const link = this.#link ?? this.#adopt(this.#open());
        const outcome = this.#outcome;
        if (!outcome) {
          const renewIn = o.tokens.renewAt - o.now();
          // A link made with an older token than the current one (renewed for HTTP) is replaced too.
          const stale = this.#tokenOf.get(link) !== o.tokens.current;
          if (link.ready && (renewIn <= 0 || stale)) {
            if (!(await this.#renew(link, renewIn <= 0))) await this.#waitFor(backoff.next());
            continue;
          }
          await this.#waitFor(link.ready ? renewIn : Infinity);
          continue;
        }
        if ("goaway" in outcome) {
          this.#outcome = { ended: "left after GOAWAY" };
          await this.#move(link, goawayRedirect(outcome.goaway, o.url));
          continue;
        }
        link.close();
        this.#link = undefined;
        this.#outcome = undefined;
        if (outcome.error instanceof TokenError && outcome.error.final) throw outcome.error;
        o.onLost(outcome.refused);
        if (link.wasReady) backoff.reset();
        if (outcome.refused?.reason === "unauthorized") {
          // A fresh credential may be allowed what the last one was not; a second refusal is final.
          if (++unauthorized > 1 || !o.tokens.refreshable) throw outcome.refused;
          await o.tokens.refresh().catch(() => {});
        } else if (link.wasReady) unauthorized = 0;
        // A stand-in that went away, or that keeps failing: back to the URL we were given.
        if (this.#redirect && (link.wasReady || ++this.#redirectFailures >= REDIRECT_FAILURES)) {
          this.#redirect = undefined;
          this.#redirectFailures = 0;
        }
        await sleep(backoff.next(), o.signal, o.timers);
      }
    } finally {
      o.signal.removeEventListener("abort", onAbort);
      this.#link?.close();
    }
  }

  /**
   * Throws the refusal a new link's credential would meet, read from its
   * own scopes before dialing; a fresh token is asked for once first.
   */
  async #foresee(): Promise<void> {
    const o = this.#o;
    const held = await o.tokens.get().catch(() => undefined);
    let refusal = foreseeRefusal(held, o.broadcast, o.name);
    if (refusal && o.tokens.refreshable) {
      const fresh = await o.tokens.refresh().catch(() => undefined);
      refusal = foreseeRefusal(fresh, o.broadcast, o.name);
    }
    if (refusal) throw refusal;
  }

  /** Makes `link` the current one; it pokes the keeper when it is subscribed and when it settles. */
  #adopt(link: LiveLink): LiveLink {
    this.#link = link;
    this.#outcome = undefined;
    // Once subscribed it waits for the renewal; once settled it is replaced.
    link.opened.then(() => this.#link === link && this.#poke());
    link.settled.then((outcome) => {
      if (this.#link !== link) return;
      this.#outcome = outcome;
      this.#poke();
    });
    return link;
  }

  #poke(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** Waits for a poke (the link settled, the end) or `ms`. */
  #waitFor(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.#o.signal.aborted) return resolve();
      const wait = Math.max(0, Math.min(ms, MAX_WAIT_MS));
      const timer = this.#o.timers.setTimeout(() => this.#poke(), wait);
      this.#wake = () => {
        this.#o.timers.clearTimeout(timer);
        resolve();
      };
    });
  }

  /** A fresh credential, then a link with it; false when either could not be had. */
  async #renew(link: LiveLink, due: boolean): Promise<boolean> {
    try {
      if (due) await this.#o.tokens.refresh();
    } catch (err) {
      if (err instanceof TokenError && err.final) throw err;
      return false; // asked again once the token keeper's backoff allows
    }
    if (due && this.#o.tokens.failures > 0) return false; // still the old token, while valid
    return await this.#replace(link);
  }

  /**
   * Follows GOAWAY: to the redirect, subscribed before the draining link is
   * left (the publisher may need a moment to arrive there, so a few tries);
   * without one, or when it does not answer, by leaving and dialing again.
   */
  async #move(link: LiveLink, target: URL | undefined): Promise<void> {
    if (target) {
      this.#redirect = target;
      const backoff = retryBackoff();
      for (let i = 0; i < MOVE_TRIES && link.ready && !this.#o.signal.aborted; i++) {
        if (await this.#replace(link)) {
          this.#redirectFailures = 0;
          return;
        }
        await sleep(backoff.next(), this.#o.signal, this.#o.timers);
      }
    }
    link.close(); // settles, and is then dialed again
  }

  /** Opens a new link and retires `old` once it is subscribed; false when it could not. */
  async #replace(old: LiveLink): Promise<boolean> {
    const next = this.#open();
    if (await next.opened && !this.#o.signal.aborted && this.#link === old) {
      this.#adopt(next);
      old.close();
      return true;
    }
    next.close();
    return false;
  }

  #open(): LiveLink {
    const o = this.#o;
    const link: LiveLink = new LiveLink({
      target: async () => {
        const url = new URL(this.#redirect ?? o.url);
        const token = await o.tokens.get();
        this.#tokenOf.set(link, token);
        if (token !== undefined) url.searchParams.set("jwt", token);
        return {
          url,
          dial: o.dial,
          timers: o.timers,
          now: o.now,
          ...(o.serverCertificateHashes
            ? { serverCertificateHashes: o.serverCertificateHashes }
            : {}),
          ...(o.caCerts ? { caCerts: o.caCerts } : {}),
        };
      },
      pool: o.pool,
      broadcast: o.broadcast,
      name: o.name,
      start: o.start(),
      onGroup: o.onGroup,
      onReady: o.onReady,
    });
    return link;
  }
}
