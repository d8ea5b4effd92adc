/// <reference lib="deno.worker" />
// Runs the healthy pair in a thread of its own (see startHealthyPair).
import { type HealthyPair, type HealthyTarget, runHealthyPair } from "./healthy.ts";

let pair: HealthyPair | undefined;
self.onmessage = async (
  e: MessageEvent<
    { type: "start" | "report" | "stop"; target?: HealthyTarget; intervalMs?: number }
  >,
) => {
  const m = e.data;
  if (m.type === "start") {
    try {
      pair = await runHealthyPair(m.target!, m.intervalMs);
      self.postMessage({ type: "started" });
    } catch (error) {
      self.postMessage({ type: "failed", error: String(error) });
    }
  } else if (m.type === "report" && pair) {
    self.postMessage({ type: "report", report: pair.report() });
  } else if (m.type === "stop" && pair) {
    self.postMessage({ type: "report", report: await pair.stop() });
  }
};
