/**
 * HTTP pieces shared by the funnel and the relay: problem+json errors, CORS,
 * WebTransport admission, WebSocket upgrades to QMux sessions, request
 * bodies read under a byte cap and a deadline, streamed response bodies, and
 * a server that starts on a known address and stops gracefully.
 *
 * @module
 */
export * from "./problem.ts";
export * from "./cors.ts";
export * from "./server.ts";
export * from "./stream_body.ts";
export * from "./request_body.ts";
