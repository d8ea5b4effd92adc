// The independent peer libraries (@moq/net, @moq/lite) log every request with
// console.debug, which buries a failing test's output.

/** Silences console.debug until disposed (`using _q = quiet()`). */
export function quiet(): Disposable {
  const debug = console.debug;
  console.debug = () => {};
  return { [Symbol.dispose]: () => void (console.debug = debug) };
}
