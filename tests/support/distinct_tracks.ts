// One record to each of many distinct tracks: what runs a per-track resource out (files, memory).

/** How the funnel answered {@link postDistinctTracks}: counts by status, and failed fetches. */
export interface DistinctTracksOutcome {
  readonly statuses: Map<number, number>;
  /** Requests with no answer (connection refused or reset: the process is gone). */
  readonly unanswered: number;
  /** The first answer that was not 201, with its body, for a failure message. */
  readonly firstRefusal: string | undefined;
}

/** The path of distinct track `i`: `distinct/t<i>` (broadcast `distinct`, track `t<i>`). */
export function distinctTrack(i: number): string {
  return `distinct/t${i}`;
}

/**
 * POSTs `{"i":i}` to tracks `from` to `from + count - 1` over `concurrency` connections;
 * stops a connection at its first request without an answer.
 */
export async function postDistinctTracks(
  base: string,
  from: number,
  count: number,
  concurrency: number,
): Promise<DistinctTracksOutcome> {
  const statuses = new Map<number, number>();
  let unanswered = 0;
  let firstRefusal: string | undefined;
  let next = from;
  const worker = async (): Promise<void> => {
    const client = Deno.createHttpClient({ poolMaxIdlePerHost: 1 });
    try {
      while (next < from + count) {
        const i = next++;
        let response: Response;
        try {
          response = await fetch(`${base}/tracks/${distinctTrack(i)}`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ i }),
            client,
          });
        } catch {
          unanswered++;
          return;
        }
        const body = await response.text();
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        if (response.status !== 201) firstRefusal ??= `${response.status} ${body}`;
      }
    } finally {
      client.close();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { statuses, unanswered, firstRefusal };
}
