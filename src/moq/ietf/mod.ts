/**
 * IETF MoQ Transport (draft-ietf-moq-transport) beside moq-lite: the
 * version tokens, the wire codec and the server-side session that serves
 * the same surface as a moq-lite session.
 *
 * @module
 */
export { acceptIetf, IetfSession } from "./ietf_session.ts";
export { connectIetf, type IetfConnectOptions } from "./client.ts";
export { MAX_OUR_PUSHES, type OpenTrack, type OpenTracks } from "./push.ts";
export {
  IETF_ALPN,
  IETF_PROTOCOLS,
  IETF_VERSION,
  IETF_WEB_PROTOCOLS,
  IetfCode,
  type IetfDraft,
  ietfDraftOf,
} from "./version.ts";
/** The IETF MoQ Transport wire codec: control framing, messages, subgroup objects. */
export * as ietfCodec from "./codec.ts";
