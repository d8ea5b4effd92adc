// Funnel processes sharing one PostgreSQL ledger and publishing through one relay
// process: `deno run -A src/cli.ts funnel|relay` themselves (no task wrapper), so a
// SIGKILL reaches the server, at shipped defaults apart from addresses and files.
import assert from "node:assert/strict";
import { freeUdpTcpPort } from "../../src/transport/mod.ts";
import type { CertificateFiles } from "../support/certs.ts";
import { type RelayProcess, spawnRelay, spawnSluice } from "../support/relay_process.ts";
import { until } from "../support/wait.ts";

/** A running `sluice funnel` process. */
export interface FunnelProcess {
  readonly process: RelayProcess;
  /** `http://127.0.0.1:<port>` of its HTTP API. */
  readonly base: string;
  /** SIGKILLs the process itself and waits for it to be gone. */
  kill(): Promise<void>;
}

/** A running `sluice relay` process. */
export interface RelayUnderTest {
  readonly process: RelayProcess;
  readonly port: number;
  /** GETs an HTTPS path of the relay. */
  get(path: string): Promise<Response>;
  stop(): Promise<void>;
}

/** Starts a relay process on a free port with the test certificate. */
export async function startRelay(files: CertificateFiles): Promise<RelayUnderTest> {
  const port = freeUdpTcpPort();
  const process = spawnRelay({
    RELAY_ADDR: `127.0.0.1:${port}`,
    CERT_FILE: files.cert,
    KEY_FILE: files.key,
  });
  await until(() => process.lines.some((l) => l.includes("relay: listening")), "the relay");
  const http = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(files.cert)] });
  return {
    process,
    port,
    get: (path) => fetch(`https://localhost:${port}${path}`, { client: http }),
    stop: async () => {
      process.child.kill("SIGKILL");
      await process.child.status;
      await process.done;
      http.close();
    },
  };
}

/**
 * Starts a funnel process on `ledger` publishing through `relay` (RELAY_URL
 * set, so no own listener: the shipped default with a relay), on a free port.
 * Without a relay it serves its own MoQ listener (the shipped default then),
 * on a free port with the test certificate rather than :4433, so tests can run side by side.
 */
export async function startFunnelProcess(
  ledger: string,
  relay: RelayUnderTest | undefined,
  files: CertificateFiles,
  extra: Record<string, string> = {},
): Promise<FunnelProcess> {
  const live = relay
    ? { RELAY_URL: `moqt://localhost:${relay.port}/`, RELAY_CA_FILE: files.cert }
    : { FUNNEL_SERVE_ADDR: "127.0.0.1:0", CERT_FILE: files.cert, KEY_FILE: files.key };
  const process = spawnSluice("funnel", {
    FUNNEL_ADDR: "127.0.0.1:0",
    LEDGER_URI: ledger,
    ...live,
    ...extra,
  });
  let exited = false;
  process.child.status.then(() => (exited = true));
  const ingest = () => {
    for (const l of process.lines) {
      const m = /Ingest: http:\/\/[^\s]+:(\d+)/.exec(l);
      if (m) return Number(m[1]);
    }
    return undefined;
  };
  await until(() => ingest() !== undefined || exited, "the funnel to listen");
  assert.ok(!exited, `the funnel exited:\n${process.lines.join("\n")}`);
  return {
    process,
    base: `http://127.0.0.1:${ingest()}`,
    kill: async () => {
      try {
        process.child.kill("SIGKILL");
      } catch {
        // gone already
      }
      await process.child.status;
      await process.done;
    },
  };
}

/** Every record of a track, oldest first, read through `base`'s history in forward pages. */
export async function fullHistory(
  base: string,
  track: string,
): Promise<{ group: string; payload?: unknown }[]> {
  const out: { group: string; payload?: unknown }[] = [];
  let after = "e000000-g00000000";
  for (;;) {
    const r = await fetch(`${base}/tracks/${track}?limit=200&after=${after}`);
    assert.equal(r.status, 200, await r.clone().text());
    const page = await r.json() as {
      records: { group: string; payload?: unknown }[];
      after?: string;
    };
    out.push(...page.records);
    if (!page.after) return out;
    after = page.after;
  }
}
