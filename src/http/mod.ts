/**
 * HTTP pieces shared by the funnel and the relay: problem+json errors, CORS,
 * WebTransport admission, WebSocket upgrades to QMux sessions, streamed
 * response bodies, and a server that starts on a known address and stops
 * gracefully.
 *
 * @module
 */
export * from "./problem.ts";
export * from "./cors.ts";
export * from "./server.ts";
export * from "./same_port.ts";
export * from "./webtransport_admission.ts";
export * from "./stream_body.ts";
export * from "./websocket_upgrade.ts";
