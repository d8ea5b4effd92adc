import type { Timers } from "../timers/mod.ts";
import type { CertificateHash, Dialer } from "./dial.ts";
import type { SessionPool } from "./session_pool.ts";
import type { FeedStart } from "./start.ts";
import type { TokenSource } from "./token.ts";

/** Options of {@linkcode openFeed}. */
export interface FeedOptions {
  /** The track's HTTP URL on the funnel: `http(s)://host/tracks/<broadcast path>/<track>`. */
  readonly track: string | URL;
  /**
   * Where to subscribe: a relay or the funnel's own listener. `https://` is
   * WebTransport (the browser's own, or sluice's client in Deno), falling
   * back to QMux over WebSocket on the same host and port; `wss://` is that
   * WebSocket directly; `moqt://` is native QUIC (Deno only).
   */
  readonly moq: string | URL;
  /** Where to start (default "latest"). */
  readonly from?: FeedStart;
  /**
   * Credential for HTTP (bearer) and MoQ (the URL's `jwt`): a token, or a
   * function returning a fresh one, which is called again before the
   * current one expires (the MoQ session is then replaced without a gap).
   * Feeds given the same function share its tokens and their MoQ session.
   */
  readonly token?: TokenSource;
  /** Development certificates to accept by SHA-256 (self-signed, at most 14 days). */
  readonly serverCertificateHashes?: readonly CertificateHash[];
  /**
   * Extra PEM root certificates to trust, for every transport (Deno only: a
   * browser trusts what it trusts; a WebSocket cannot pin a hash).
   */
  readonly caCerts?: readonly string[];
  /** Closes the feed when aborted. */
  readonly signal?: AbortSignal;
  /** The fetch to use for HTTP (default the global one). */
  readonly fetch?: typeof fetch;
  /** Opens the transport session (default: chosen by the URL's scheme and the runtime). */
  readonly dial?: Dialer;
  /** How long a missing record is waited for before it is read from the ledger, ms (default 500). */
  readonly reorderWaitMs?: number;
  /** The timers for waits, backoff, probes and renewals (default the global ones). */
  readonly timers?: Timers;
  /** The clock those timers run on, ms since the epoch (default `Date.now`). */
  readonly now?: () => number;
  /** The MoQ sessions to share (default one pool for the whole application). */
  readonly sessions?: SessionPool;
}
