/**
 * Why a request is refused, and the code each draft gives that reason. Draft
 * 14 numbers each request kind's errors on their own (SUBSCRIBE_ERROR,
 * ANNOUNCE_ERROR, SUBSCRIBE_NAMESPACE_ERROR...); drafts 16 and 20 share one
 * REQUEST_ERROR registry, draft 20 adding EXCESSIVE_LOAD for a responder
 * over its limits. Drafts 14 and 16 have nothing better there than
 * INTERNAL_ERROR.
 */
import type { IetfDraft } from "./version.ts";

/** A reason sluice refuses a request for. */
export type Refusal =
  /** The credential does not allow it. */
  | "unauthorized"
  /** The track or namespace is not there (or its name is not a path sluice can hold). */
  | "does-not-exist"
  /** The session holds as many of these requests as it may. */
  | "too-many"
  /** The filter cannot be satisfied (an end before the start, or an end group already past). */
  | "invalid-range"
  /** Draft 16: a second subscription to a track in the same role. */
  | "duplicate"
  /** A SUBSCRIBE_NAMESPACE for a prefix the session already watches. */
  | "prefix-overlap"
  /** A PUBLISH or PUBLISH_NAMESPACE sluice will not take (a name it cannot hold, a track twice). */
  | "uninterested";

// Draft 14: SUBSCRIBE_ERROR (and FETCH_ERROR, TRACK_STATUS_ERROR, SUBSCRIBE_NAMESPACE_ERROR),
// where "does not exist" is TRACK_DOES_NOT_EXIST / NAMESPACE_PREFIX_UNKNOWN (0x4), INVALID_RANGE
// and NAMESPACE_PREFIX_OVERLAP 0x5; it has no duplicate-subscription code.
const DRAFT_14: Readonly<Record<Refusal, number>> = {
  "unauthorized": 0x1,
  "does-not-exist": 0x4,
  "too-many": 0x0,
  "invalid-range": 0x5,
  "duplicate": 0x0,
  "prefix-overlap": 0x5,
  "uninterested": 0x4, // ANNOUNCE_ERROR's and PUBLISH_ERROR's UNINTERESTED
};

// Draft 16's REQUEST_ERROR registry.
const DRAFT_16: Readonly<Record<Refusal, number>> = {
  "unauthorized": 0x1,
  "does-not-exist": 0x10,
  "too-many": 0x0,
  "invalid-range": 0x11,
  "duplicate": 0x19,
  "prefix-overlap": 0x30,
  "uninterested": 0x20,
};

// Draft 20's: EXCESSIVE_LOAD (0x9) is new; DUPLICATE_SUBSCRIPTION is gone (a session may hold
// several subscriptions to one track).
const DRAFT_20: Readonly<Record<Refusal, number>> = {
  ...DRAFT_16,
  "too-many": 0x9,
  "duplicate": 0x0,
};

/** The code `draft` refuses a request with for `why`. */
export function refusalCode(why: Refusal, draft: IetfDraft): number {
  return (draft < 16 ? DRAFT_14 : draft < 17 ? DRAFT_16 : DRAFT_20)[why];
}

/**
 * The code and reason a request the application did not serve a track for
 * (its serve decision) is refused with.
 */
export function decisionRefusal(
  decision: "not_found" | "unauthorized" | "too_many" | undefined,
  draft: IetfDraft,
): { readonly code: number; readonly reason: string } {
  if (decision === "unauthorized") {
    return { code: refusalCode("unauthorized", draft), reason: "unauthorized" };
  }
  if (decision === "too_many") {
    return { code: refusalCode("too-many", draft), reason: "too many track lookups, retry later" };
  }
  return { code: refusalCode("does-not-exist", draft), reason: "not found" };
}
