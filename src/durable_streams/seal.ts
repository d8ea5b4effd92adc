import { HttpProblem } from "../http/mod.ts";
import { isJsonType } from "./content_type.ts";
import { H } from "./headers.ts";
import type { StreamConfig } from "./meta.ts";

/*
 * A stream seals its ledger track against writers that bypass the protocol
 * (records POSTed under /tracks/): when it is closed, and from its creation
 * when its content type is not JSON (a record's JSON text would land in the
 * stream's bytes). The seal is the ledger's, so it holds on every funnel of
 * a shared ledger and across restarts; the protocol's own writes pass it
 * through the stream's gate.
 */

/** The seal of a closed stream's track. */
export const CLOSED_SEAL = "closed";

const TYPE_SEAL = "content-type ";

/** The seal the entry creating a stream leaves: closed, its content type, or none (""). */
export function createSeal(config: StreamConfig, closed: boolean): string {
  if (closed) return CLOSED_SEAL;
  return isJsonType(config.type) ? "" : `${TYPE_SEAL}${config.type}`;
}

/** The answer to a record posted to a sealed stream track: 409, with Stream-Closed when closed. */
export function sealRefusal(seal: string): HttpProblem {
  if (seal === CLOSED_SEAL) {
    return new HttpProblem(409, "The stream is closed: it takes no more records", {
      [H.closed]: "true",
    });
  }
  if (seal.startsWith(TYPE_SEAL)) {
    return new HttpProblem(
      409,
      `The track is a Durable Stream of content type ${
        seal.slice(TYPE_SEAL.length)
      }: append to it through /v1/stream/ with that content type`,
    );
  }
  return new HttpProblem(409, `The track takes no records here: ${seal}`);
}
