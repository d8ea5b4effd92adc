// The child processes the bench spawns (this script again, with a --role): a JSON line
// protocol on stdout, commands on stdin.

// Not imported from options.ts: that parses the fanout command line, and other
// benches (media/main.ts) spawn their children through this module too.
const SELF = new URL("./main.ts", import.meta.url).pathname;

export interface Child {
  readonly proc: Deno.ChildProcess;
  /** Next JSON line from stdout. */
  line(): Promise<Record<string, unknown>>;
  send(cmd: string): Promise<void>;
  kill(): Promise<void>;
}

export const children = new Set<Child>();

/** Starts `script` (by default bench/fanout/main.ts) with `args` as a child speaking the line protocol. */
export function spawn(args: string[], script: string = SELF): Child {
  console.error(`  starting ${args.join(" ")}`);
  const proc = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script, ...args],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = proc.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const writer = proc.stdin.getWriter();
  const child: Child = {
    proc,
    async line() {
      for (;;) {
        const nl = buffered.indexOf("\n");
        if (nl >= 0) {
          const l = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          if (l.startsWith("{")) return JSON.parse(l);
          continue;
        }
        const { value, done } = await lines.read();
        if (done) throw new Error(`child ${args.join(" ")} ended`);
        buffered += value;
      }
    },
    async send(cmd) {
      await writer.write(new TextEncoder().encode(cmd + "\n"));
    },
    async kill() {
      try {
        proc.kill("SIGKILL");
      } catch {
        // gone
      }
      await proc.status;
      children.delete(child);
    },
  };
  children.add(child);
  return child;
}
