// Child role "raw-sender": the bare sender, the ceiling the others are measured against.
import { IN_FLIGHT, PROTOCOL, size, values } from "./options.ts";
import { DeliveryTurns } from "../../src/moq/mod.ts";
import { listen } from "../../src/transport/mod.ts";
import type { Session } from "../../src/transport/mod.ts";
import { encodeGroupStreamHeader } from "../../src/moq/mod.ts";

import { cpuProfile } from "../../src/relay/mod.ts";

/** Child: accepts connections and sends one uni stream per group to each, as fast as it can. */
export async function rawSenderRole(): Promise<void> {
  // With --turns the bare sender takes turns the way the serving loops do.
  const turns = values.turns ? new DeliveryTurns() : undefined;
  const dir = values.dir;
  const server = await listen({
    protocols: [PROTOCOL],
    certPem: await Deno.readTextFile(`${dir}/cert.pem`),
    keyPem: await Deno.readTextFile(`${dir}/key.pem`),
    onSession: (session) => void feed(session),
  });
  const body = new Uint8Array(size).fill(7);
  async function feed(session: Session): Promise<void> {
    const start = await session.acceptBidi();
    if (!start) return;
    const r = start.readable.getReader();
    await r.read();
    let closed = false;
    let seq = 0;
    session.closed.then(() => (closed = true), () => (closed = true));
    // IN_FLIGHT loops of open, write, finish: at most that many streams in flight.
    const loop = async (): Promise<void> => {
      while (!closed) {
        // Same bytes as a moq group stream: type, subscribe id, sequence, then the payload.
        const header = encodeGroupStreamHeader({ subscribeId: 0n, sequence: seq++ });
        const bytes = new Uint8Array(header.length + size);
        bytes.set(header);
        bytes.set(body, header.length);
        try {
          const turn = turns?.wait();
          if (turn) await turn;
          const s = await session.openUni();
          const w = s.writable.getWriter();
          await w.write(bytes);
          await w.close();
        } catch {
          closed = true;
        }
      }
    };
    for (let k = 0; k < IN_FLIGHT; k++) void loop();
  }
  console.log(JSON.stringify({ port: server.addr.port }));
  // "profile S FILE": a CPU profile of S seconds, for comparing with the relay's.
  for await (const line of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    for (const cmd of line.split("\n")) {
      const [verb, secs, file] = cmd.split(" ");
      if (verb !== "profile") continue;
      await Deno.writeTextFile(file!, await cpuProfile(Number(secs)));
      console.log(JSON.stringify({ profile: file }));
    }
  }
  await new Promise(() => {});
}
