/**
 * Where a server's ports meet the transports: one UDP listener and one TCP
 * server bound to the same port number, WebSocket upgrades into QMux
 * sessions, and the origin and credential checks a WebTransport session
 * passes before it is accepted. Used by the relay and the funnel's listener.
 *
 * @module
 */

export * from "./same_port.ts";
export * from "./websocket_upgrade.ts";
export * from "./webtransport_origin.ts";
