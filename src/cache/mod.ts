/**
 * Bounded in-memory caches shared by the folders that keep state keyed by
 * outside input (credentials seen, tracks opened).
 *
 * @module
 */

export { LruCache, type LruCacheOptions } from "./lru_cache.ts";
