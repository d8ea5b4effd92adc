// One more thread of the bare ceiling: the same handler on the shared port.
import { bareHandler } from "./bare_handler.ts";

const scope = self as unknown as {
  postMessage(message: unknown): void;
  onmessage: ((event: MessageEvent<number>) => void) | null;
};
scope.onmessage = (event) => {
  Deno.serve(
    { hostname: "127.0.0.1", port: event.data, reusePort: true, onListen: () => {} },
    bareHandler,
  );
  scope.postMessage("listening");
};
