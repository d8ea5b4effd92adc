/**
 * Keeps one live link up for a feed: dials again with backoff when it ends,
 * replaces it before its credential expires, and follows a server's GOAWAY.
 * A replacement is subscribed before the link it replaces is closed.
 */
import { goawayRedirect, type ReceivedGroup } from "../moq/mod.ts";
import { sleep, type Timers } from "../timers/mod.ts";
import { retryBackoff } from "./backoff.ts";
import type { CertificateHash, Dialer } from "./dial.ts";
import { LiveLink } from "./live.ts";
import type { TokenKeeper } from "./token.ts";

/** How often the keeper looks at the credential's renewal time, ms. */
const RENEW_CHECK_MS = 1_000;
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
  /** Timers for backoff and checks. */
  readonly timers: Timers;
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
  /** Told when the current link went away. */
  readonly onLost: () => void;
  /** Ends the keeper. */
  readonly signal: AbortSignal;
}

/** The feed's live link, kept up; see the module doc. */
export class LinkKeeper {
  readonly #o: LinkKeeperOptions;
  #link: LiveLink | undefined;
  /** Where a GOAWAY sent us, until a link there fails. */
  #redirect: URL | undefined;
  /** Links whose GOAWAY was already followed. */
  readonly #left = new WeakSet<LiveLink>();
  #redirectFailures = 0;

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

  /** Keeps a link up until the signal aborts. */
  async run(): Promise<void> {
    const o = this.#o;
    const backoff = retryBackoff();
    while (!o.signal.aborted) {
      const link = this.#link ??= this.#open();
      const renewIn = o.tokens.renewAt - Date.now();
      const outcome = await Promise.race([
        link.settled,
        sleep(Math.max(0, Math.min(RENEW_CHECK_MS, renewIn)), o.signal, o.timers)
          .then(() => undefined),
      ]);
      if (o.signal.aborted) break;
      if (outcome && "goaway" in outcome && !this.#left.has(link)) {
        this.#left.add(link);
        await this.#move(link, goawayRedirect(outcome.goaway, o.url));
      } else if (outcome) {
        link.close();
        if (this.#link === link) this.#link = undefined;
        o.onLost();
        if (link.wasReady) backoff.reset();
        // A stand-in that went away, or that keeps failing: back to the URL we were given.
        if (this.#redirect && (link.wasReady || ++this.#redirectFailures >= REDIRECT_FAILURES)) {
          this.#redirect = undefined;
          this.#redirectFailures = 0;
        }
        await sleep(backoff.next(), o.signal, o.timers);
      } else if (link.ready && Date.now() >= o.tokens.renewAt) {
        try {
          await o.tokens.refresh();
        } catch {
          continue; // tried again at the next check; the current link lives until it ends
        }
        await this.#replace(link);
      }
    }
    this.#link?.close();
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
    link.close(); // gone at the next turn, then dialed again
  }

  /** Opens a new link and retires `old` once it is subscribed; false when it could not. */
  async #replace(old: LiveLink): Promise<boolean> {
    const next = this.#open();
    if (await next.opened && !this.#o.signal.aborted && this.#link === old) {
      this.#link = next;
      old.close();
      return true;
    }
    next.close();
    return false;
  }

  #open(): LiveLink {
    const o = this.#o;
    return new LiveLink({
      url: async () => {
        const url = new URL(this.#redirect ?? o.url);
        const token = await o.tokens.get();
        if (token !== undefined) url.searchParams.set("jwt", token);
        return url;
      },
      dial: o.dial,
      timers: o.timers,
      ...(o.serverCertificateHashes ? { serverCertificateHashes: o.serverCertificateHashes } : {}),
      ...(o.caCerts ? { caCerts: o.caCerts } : {}),
      broadcast: o.broadcast,
      name: o.name,
      start: o.start(),
      onGroup: o.onGroup,
      onReady: o.onReady,
    });
  }
}
