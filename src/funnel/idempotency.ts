/** The answer a POST gave, replayed for a retry with the same key. */
export interface PostAnswer {
  readonly group: string;
  readonly wallclock: bigint;
}

/** Most keys a track remembers (spec: the 1024 most recent). */
export const IDEMPOTENCY_KEYS_PER_TRACK = 1024;

/**
 * Remembers the most recent Idempotency-Keys of one track, scoped per
 * sender. A key whose first request is still being committed maps to that
 * request's promise, so a concurrent retry waits for the same answer.
 */
export class IdempotencyCache {
  readonly #capacity: number;
  // Map iteration order is insertion order, which makes it an LRU of first use.
  readonly #answers = new Map<string, Promise<PostAnswer>>();

  /** Creates a cache holding `capacity` keys. */
  constructor(capacity = IDEMPOTENCY_KEYS_PER_TRACK) {
    this.#capacity = capacity;
  }

  /** The answer (or pending answer) recorded for this sender and key. */
  get(sender: string | undefined, key: string): Promise<PostAnswer> | undefined {
    return this.#answers.get(cacheKey(sender, key));
  }

  /**
   * Records the pending answer of a first request. When it fails, the key
   * is forgotten so a retry is stored.
   */
  remember(sender: string | undefined, key: string, answer: Promise<PostAnswer>): void {
    const k = cacheKey(sender, key);
    this.#answers.set(k, answer);
    answer.catch(() => {
      if (this.#answers.get(k) === answer) this.#answers.delete(k);
    });
    while (this.#answers.size > this.#capacity) {
      const oldest = this.#answers.keys().next().value as string;
      this.#answers.delete(oldest);
    }
  }

  /** Number of keys held. */
  get size(): number {
    return this.#answers.size;
  }

  /** Resolves once every answer held now has settled (its commit is durable or failed). */
  async settled(): Promise<void> {
    await Promise.allSettled(this.#answers.values());
  }
}

/**
 * Tracks whose Idempotency-Keys stay in memory, most recently used (about
 * 119 kB per track with 1024 keys); a track dropped is read back from the
 * ledger at its next keyed POST.
 */
export const IDEMPOTENCY_TRACKS = 1024;

function cacheKey(sender: string | undefined, key: string): string {
  // NUL cannot occur in a valid key, so sender/key pairs never collide.
  return `${sender ?? ""}\u0000${key}`;
}

/** Checks an Idempotency-Key header: 1 to 255 visible ASCII characters. */
export function idempotencyKeyProblem(key: string): string | undefined {
  if (key.length === 0) return "Idempotency-Key is empty";
  if (key.length > 255) return "Idempotency-Key is longer than 255 characters";
  if (!/^[\x21-\x7e]+$/.test(key)) {
    return "Idempotency-Key may contain only visible ASCII characters";
  }
  return undefined;
}
