/**
 * The funnel's own MoQ listener: in a worker thread by default
 * (`worker_listener_host.ts` on the main thread, `worker_main.ts` in the
 * worker, `worker_messages.ts` between them), or in the main thread
 * (`inline_listener.ts`).
 *
 * @module
 */

export {
  startWorkerListener,
  type WorkerListener,
  type WorkerListenerOptions,
} from "./worker_listener_host.ts";
export { type LiveListener } from "./inline_listener.ts";
