/**
 * The funnel's live side: committed records as MoQ groups, served on the
 * funnel's own MoQ listener and through a relay session.
 *
 * Choices where the spec leaves room:
 * - Each track keeps its 32 most recent groups; a subscriber more than 32
 *   groups (or its session's queue) behind skips to the latest record, so a
 *   slow subscriber never holds back commits or other subscribers. History
 *   (HTTP GET) has everything it skipped.
 * - Own listener: it runs in a Worker fed with every created track and
 *   committed batch in commit order, so delivering to many subscribers
 *   never takes the main thread from HTTP and commits. Credentials are
 *   still checked by the main thread's one verifier. A fault inside the
 *   worker ends the listener (logged), never the funnel.
 * - Own listener admission: with a key set, a session needs a credential (`jwt` query
 *   parameter) holding a fetch or subscribe scope somewhere; each
 *   subscription and announcement is then checked against those scopes
 *   (either action reads). The session URL's path is not a root: broadcast
 *   paths are absolute. Native QUIC lite-04 carries no URL, so it is only
 *   admitted with auth off.
 * - WebTransport Origin: a browser's Origin must be listed in
 *   CORS_ALLOWED_ORIGINS (`*` allows any) or equal the listener's own origin;
 *   a client that sends no Origin is not a browser and is admitted.
 * - Relay session: the funnel ends the session itself when its credential
 *   expires (signed ones after their lifetime, a `jwt` from RELAY_URL at its
 *   `exp`) and redials with a fresh one, rather than relying on the relay.
 *   A dial gives up after 10 s; a vanished relay or a silent link is
 *   noticed 1.25 s after its last packet (1 s idle timeout, keep-alives
 *   every 250 ms), native QUIC and WebTransport alike, then redialed 2 s
 *   later. Only broadcasts under
 *   RELAY_PUBLISH are announced when signing. RELAY_TLS_INSECURE works only
 *   when the process runs with `--unsafely-ignore-certificate-errors`
 *   (Deno's QUIC has no per-connection switch); use RELAY_CA_FILE instead.
 *
 * @module
 */
export { type LiveConfig, type LiveOptions, type LiveSide, startLive } from "./start.ts";
export {
  type EntryFetch,
  LivePublisher,
  type LivePublisherOptions,
  RECORD_LAG_MS,
  RECORD_TIMESCALE,
  type TrackLookup,
} from "./publisher.ts";
export { MAX_LIVE_TRACKS, SESSION_PIN_SHARE, SUBSCRIBER_PIN_MS } from "./live_tracks.ts";
export {
  type RedialTimers,
  RELAY_REDIAL_MS,
  RelayClient,
  type RelayClientOptions,
  type RelayCredential,
  type RelayState,
} from "./relay_client.ts";
export {
  startWorkerListener,
  type WorkerListener,
  type WorkerListenerOptions,
} from "./listener/mod.ts";
export { type LiveListener } from "./listener/mod.ts";
export { RecordFetcher, type RecordFetcherOptions } from "./record_fetcher.ts";
export {
  LISTENER_LOOKUP_LIMIT,
  MAX_MISSING_TRACKS,
  MAX_PENDING_LOOKUPS,
  MISSING_TRACK_MS,
  RELAY_ASKER,
  RELAY_LOOKUP_LIMIT,
  SESSION_LOOKUP_LIMIT,
  TrackLookups,
  type TrackLookupsOptions,
} from "./track_lookups.ts";
