const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;

/**
 * Calls `fn` once the current event-loop turn is over: Deno's
 * `setImmediate`, which ends the turn without the millisecond or more a
 * zero timer waits there. A browser (which has no `setImmediate`) falls
 * back to a zero timer.
 */
export function afterTurn(fn: () => void): void {
  if (immediate) immediate(fn);
  else setTimeout(fn, 0);
}
