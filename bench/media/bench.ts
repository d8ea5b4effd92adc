// The bench itself: for each N, the raw ceiling, then one relay and a chain of two
// for each `--cli`, each against fresh receivers; a publisher in this process writes
// the track frame by frame.
import { BROADCAST, fps, frameSize, gop, OWN_CLI, SELF, TRACK, values } from "./options.ts";
import { stampedFrame } from "./frames.ts";
import { measure, type Result } from "./measure.ts";
import { formatResult, heading } from "./report.ts";
import { children, spawn } from "../fanout/children.ts";
import { pace } from "../fanout/pace.ts";
import { type BenchMesh, benchMesh, type BenchRelay } from "../support/relay_processes.ts";
import { LiveFrames, TrackProducer } from "../../src/moq/mod.ts";

/** The parent process: runs every configuration and prints its report. */
export async function benchRole(): Promise<void> {
  const ns = values.n.split(",").map(Number);
  const only = new Set(values.only.split(","));
  const clis = values.cli ? values.cli.split(",") : [OWN_CLI];
  const mesh = await benchMesh();
  const hash = btoa(String.fromCharCode(...mesh.cert.sha256));
  console.log(`command: deno run -A bench/media/main.ts ${Deno.args.join(" ")}`);
  try {
    for (const n of ns) {
      console.log(heading(n, frameSize, gop));
      const raw = only.has("raw") ? await runRaw(mesh, n, hash) : undefined;
      if (raw) console.log(formatResult("raw QUIC sender (ceiling)", n, raw));
      for (const cli of clis) {
        const label = cli === OWN_CLI ? "this checkout" : cli;
        if (only.has("relay")) {
          const r = await runRelays(mesh, n, hash, cli, 1);
          console.log(formatResult(`one relay [${label}]`, n, r, raw));
        }
        if (only.has("chain")) {
          const r = await runRelays(mesh, n, hash, cli, 2);
          console.log(formatResult(`two-relay chain [${label}]`, n, r, raw));
        }
      }
    }
  } finally {
    for (const c of [...children]) await c.kill();
    await mesh.close();
  }
  // The publisher's QUIC endpoint would keep the process alive.
  Deno.exit(0);
}

function receivers(n: number, port: number, kind: "raw" | "moq", hash: string) {
  return spawn(
    ["--role=receivers", `--n=${n}`, `--port=${port}`, `--kind=${kind}`, `--hash=${hash}`],
    SELF,
  );
}

// The bare sender against N raw receivers.
async function runRaw(mesh: BenchMesh, n: number, hash: string): Promise<Result> {
  const sender = spawn(
    [
      "--role=raw-sender",
      `--dir=${mesh.dir}`,
      `--fps=${fps}`,
      `--gop=${gop}`,
      `--frame=${frameSize}`,
    ],
    SELF,
  );
  const { port } = await sender.line();
  const rcv = receivers(n, Number(port), "raw", hash);
  const r = await measure([sender.proc.pid], rcv, () => rcv.send("go"));
  await rcv.kill();
  await sender.kill();
  return r;
}

// `hops` relays in a chain (the publisher on the first, the subscribers on the last).
async function runRelays(
  mesh: BenchMesh,
  n: number,
  hash: string,
  cli: string,
  hops: number,
): Promise<Result> {
  const relays: BenchRelay[] = [];
  for (let i = 0; i < hops; i++) {
    const peers = i === 0 ? [] : [relays[i - 1]!.port];
    relays.push(await mesh.relay(`media-${hops}-${i}`, peers, {}, cli));
  }
  const stop = await publish(relays[0]!);
  const rcv = receivers(n, relays.at(-1)!.port, "moq", hash);
  const r = await measure(relays.map((x) => x.process.serverPid()), rcv, () => {});
  await rcv.kill();
  await stop();
  for (const relay of relays) await relay.stop();
  return r;
}

// Publishes the track on `relay` frame by frame: a group of `gop` frames at a time,
// each frame handed to the session as it is written. Returns what stops it.
async function publish(relay: BenchRelay): Promise<() => Promise<void>> {
  const track = new TrackProducer();
  const session = await relay.dial({
    serve: (r) => (r.path === BROADCAST && r.track === TRACK ? track : "not_found"),
  });
  session.announce(BROADCAST);
  let group: LiveFrames | undefined;
  let index = 0;
  const stopPace = pace(fps, 1, () => {
    const k = index++;
    if (k % gop === 0) {
      group?.finish();
      group = new LiveFrames(BigInt(Date.now()));
      track.writeGroup(k / gop, group);
    }
    group!.push(stampedFrame(frameSize));
  });
  return async () => {
    stopPace();
    group?.finish();
    session.close();
    await session.closed?.catch(() => {});
  };
}
