// The child processes the bench spawns (this script again, with a --role): a JSON line
// protocol on stdout, commands on stdin.
import { SELF } from "./options.ts";

export interface Child {
  readonly proc: Deno.ChildProcess;
  /** Next JSON line from stdout. */
  line(): Promise<Record<string, unknown>>;
  send(cmd: string): Promise<void>;
  kill(): Promise<void>;
}

export const children = new Set<Child>();

export function spawn(args: string[]): Child {
  console.error(`  starting ${args.join(" ")}`);
  const proc = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SELF, ...args],
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
