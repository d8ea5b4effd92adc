/**
 * WebTransport over HTTP/3 on Deno's raw QUIC (ALPN `h3`): server with
 * admission before accepting, client, and sessions implementing the
 * transport-neutral {@link Session}. Speaks what Chromium needs (draft-02
 * settings, Huffman QPACK, WT-Protocol, close capsules, datagrams).
 *
 * @module
 */
export {
  type Admission,
  admitAny,
  type AdmitWebTransport,
  chooseProtocol,
  serveWebTransport,
  type ServeWebTransportOptions,
  type WebTransportRequest,
} from "./server.ts";
export { connectWebTransport, type ConnectWebTransportOptions } from "./client.ts";
export { WebTransportSession } from "./wt_session.ts";
export { H3Connection } from "../h3/mod.ts";
export { type Timers } from "../../timers/mod.ts";
export { H3Code, H3ConnectionError } from "../h3/mod.ts";
export {
  WebTransportRefusedError,
  WebTransportStreamError,
  wtErrorFromHttp3,
  wtErrorToHttp3,
} from "./errors.ts";
export { asWebTransport, type WebTransportLike } from "./as_web_transport.ts";
export { fromWebTransportStreamError, streamErrorCode } from "./stream_error.ts";
export {
  connectWebTransportApi,
  type ConnectWebTransportApiOptions,
  hasWebTransportApi,
  type WebTransportApi,
  type WebTransportApiBidi,
  type WebTransportApiDatagrams,
  webTransportApiSession,
  type WebTransportApiWritable,
} from "./web_transport_api.ts";
