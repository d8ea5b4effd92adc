/**
 * The MoQ session the funnel runs over its relay transport, in the dialect
 * RELAY_VERSION names: moq-lite (the default), or an IETF MoQ Transport
 * draft, offering only that draft's token. Over IETF the URL's `jwt` stays in
 * the URL and, on native QUIC, also goes in the setup PATH.
 */
import {
  connect,
  connectIetf,
  IETF_ALPN,
  type IetfDraft,
  type MoqPeer,
  VERSIONS,
} from "../../moq/mod.ts";
import { normalizePath, prefixCovers } from "../../path/mod.ts";
import type { Session } from "../../transport/mod.ts";
import type { RelayClientOptions } from "./relay_client.ts";

/** The protocols offered when dialing: moq-lite's versions, or the one IETF draft's token. */
export function relayProtocols(ietf: IetfDraft | undefined): readonly string[] {
  return ietf ? [IETF_ALPN[ietf]] : VERSIONS;
}

/** The session over `transport`: it announces and serves the publisher's tracks. */
export function connectRelayMoq(transport: Session, o: RelayClientOptions): Promise<MoqPeer> {
  const prefix = o.publishPrefix === undefined ? undefined : normalizePath(o.publishPrefix);
  const options = {
    announcer: o.publisher.announcer,
    serve: o.publisher.serve,
    ...(prefix === undefined
      ? {}
      : { announceFilter: (path: string) => prefixCovers(prefix, path) }),
    // The relay's announcements are of no use to a funnel.
    acceptAnnounce: () => false,
    // A relay continuing a track through this session asks from the record after its
    // latest: serve it everything the track still holds.
    maxGroupQueue: o.publisher.cacheSize,
    log: (line: string) => o.log.debug(line),
  };
  // Over IETF drafts 16 and 20 each open track is pushed (PUBLISH) too, so the relay has it
  // without a SUBSCRIBE; a relay that refuses PUBLISH still SUBSCRIBEs (docs/relay.md).
  return o.ietf
    ? connectIetf(transport, o.ietf, { ...options, push: o.publisher.tracks })
    : connect(transport, options);
}
