/** Runs async tasks one at a time, in call order; a failed task does not block later ones. */
export class Serial {
  #tail: Promise<unknown> = Promise.resolve();

  /** Runs `task` after every task queued before it has settled. */
  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(task, task);
    this.#tail = result.then(() => undefined, () => undefined);
    return result;
  }
}
