/** Options of {@link LruCache}. */
export interface LruCacheOptions<K, V> {
  /** Told of each entry dropped to make room (not of `delete` or `clear`). */
  readonly onEvict?: (key: K, value: V) => void;
}

/** A Map bounded to `capacity` entries that drops the least recently used one. */
export class LruCache<K, V> {
  readonly #map = new Map<K, V>();
  readonly #capacity: number;
  readonly #onEvict: ((key: K, value: V) => void) | undefined;

  /** An empty cache holding at most `capacity` entries (at least 1). */
  constructor(capacity: number, options: LruCacheOptions<K, V> = {}) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) {
      throw new RangeError(`Cache capacity ${capacity} is not a positive integer`);
    }
    this.#capacity = capacity;
    this.#onEvict = options.onEvict;
  }

  /** The value for `key`, marking it most recently used. */
  get(key: K): V | undefined {
    const value = this.#map.get(key);
    if (value === undefined) return undefined;
    this.#map.delete(key);
    this.#map.set(key, value);
    return value;
  }

  /** Whether `key` is held, without marking it used. */
  has(key: K): boolean {
    return this.#map.has(key);
  }

  /** Stores `value` as the most recently used entry, dropping the oldest if full. */
  set(key: K, value: V): void {
    this.#map.delete(key);
    this.#map.set(key, value);
    if (this.#map.size > this.#capacity) {
      const oldest = this.#map.entries().next();
      if (oldest.done) return;
      this.#map.delete(oldest.value[0]);
      this.#onEvict?.(oldest.value[0], oldest.value[1]);
    }
  }

  /** Removes `key`. */
  delete(key: K): void {
    this.#map.delete(key);
  }

  /** How many entries are held. */
  get size(): number {
    return this.#map.size;
  }

  /** Removes every entry. */
  clear(): void {
    this.#map.clear();
  }
}
