/** Cursors count 20 s intervals from 2024-10-09T00:00:00Z (PROTOCOL.md 10.1). */
const CURSOR_EPOCH_MS = Date.UTC(2024, 9, 9);
const INTERVAL_MS = 20_000;

/**
 * The `Stream-Cursor` of a live response: the current interval, or, when
 * the client's cursor is not behind it, a later one (1 s to 1 h of jitter),
 * so cursors only ever move forward and CDN keys change.
 */
export function nextCursor(now: number, client: string | null, random = Math.random): string {
  const current = Math.floor((now - CURSOR_EPOCH_MS) / INTERVAL_MS);
  if (client !== null && /^\d{1,15}$/.test(client) && Number(client) >= current) {
    return String(Number(client) + 1 + Math.floor(random() * 180));
  }
  return String(current);
}
