/**
 * Process memory: giving freed native memory back to the system after a
 * burst of sessions.
 *
 * @module
 */
export {
  glibcTrim,
  type MemoryTrimmer,
  type MemoryTrimOptions,
  startMemoryTrimmer,
  type TrimFunction,
} from "./trim.ts";
