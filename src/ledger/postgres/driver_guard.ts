/*
 * postgres.js (3.4.9, the newest) can end the process when PostgreSQL goes
 * away, in two ways no caller can catch:
 *
 * - A statement sent on a pinned connection (a transaction's, or a reserved
 *   one) after that connection closed, such as the driver's own ROLLBACK
 *   after a statement of a transaction failed: its deferred write runs on a
 *   socket it has set to null and throws from a timer callback (porsager/
 *   postgres issues 1154 and 1208). The connection is left unusable as well:
 *   its write buffer is never flushed again. Where the socket is not null
 *   yet but the server already ended it, the same deferred write rejects with
 *   "This socket has been ended by the other party" (Deno's node:net), which
 *   nobody awaits either.
 * - A promise of its own that nobody awaits (the array-type lookup each new
 *   connection makes, for one) rejected by the connection's failure: an
 *   unhandled rejection.
 *
 * The guard takes exactly those: the first is stopped from ending the
 * process and every open backend replaces its pool, so the broken connection
 * is destroyed (which also fails the statement stuck on it); the second is
 * dropped, since no caller waits for it (the callers that do wait got the
 * same failure). Every other uncaught error or rejection is left alone.
 */

const resets = new Set<() => void>();
// The ports of the servers guarded backends reach (a rejection names the one it failed on).
const ports = new Map<number, number>();

/** The driver's own connection failures, and the socket failures it passes on as they are. */
const DRIVER_CODES = new Set([
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "CONNECTION_ENDED",
  "CONNECT_TIMEOUT",
]);
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);

/** True for a connection failure of the driver on a connection to one of `servers` (ports). */
export function isDriverConnectionError(error: unknown, servers: ReadonlySet<number>): boolean {
  if (!(error instanceof Error)) return false;
  const e = error as Error & { code?: unknown; port?: unknown };
  if (typeof e.code !== "string") return false;
  const port = Array.isArray(e.port) ? e.port[0] : e.port;
  if (!servers.has(Number(port))) return false;
  if (DRIVER_CODES.has(e.code)) return /^write [A-Z_]+ /.test(e.message);
  return SOCKET_CODES.has(e.code);
}

/** True for the driver's write on a closed or ended connection (see above), and nothing else. */
export function isDriverWriteFault(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const nullSocket = error instanceof TypeError &&
    /null \(reading 'write'\)|null is not an object \(evaluating 'socket\.write'\)/.test(
      error.message,
    );
  const ended = /^This socket has been ended by the other party$/.test(error.message);
  if (!nullSocket && !ended) return false;
  const stack = error.stack ?? "";
  return /nextWrite/.test(stack) && /postgres[^\n]*[\\/]connection\.js/.test(stack);
}

function onError(event: ErrorEvent): void {
  if (!isDriverWriteFault(event.error)) return;
  event.preventDefault();
  writeFault();
}

function writeFault(): void {
  console.warn(
    "PostgreSQL driver: a statement was sent on a connection that had closed; " +
      "its pool is replaced (the process goes on)",
  );
  for (const reset of [...resets]) reset();
}

function onRejection(event: PromiseRejectionEvent): void {
  if (isDriverWriteFault(event.reason)) {
    event.preventDefault();
    writeFault();
    return;
  }
  if (isDriverConnectionError(event.reason, new Set(ports.keys()))) event.preventDefault();
}

/**
 * Guards the process against the driver faults above while the returned
 * function is not called: `reset` (replace the pool) runs at each write on a
 * closed connection; `port` is the server's, whose connection failures no
 * one awaits are dropped.
 */
export function guardDriver(reset: () => void, port: number): () => void {
  if (resets.size === 0) {
    globalThis.addEventListener("error", onError);
    globalThis.addEventListener("unhandledrejection", onRejection);
  }
  resets.add(reset);
  ports.set(port, (ports.get(port) ?? 0) + 1);
  return () => {
    if (!resets.delete(reset)) return;
    const left = ports.get(port)! - 1;
    if (left > 0) ports.set(port, left);
    else ports.delete(port);
    if (resets.size > 0) return;
    globalThis.removeEventListener("error", onError);
    globalThis.removeEventListener("unhandledrejection", onRejection);
  };
}
