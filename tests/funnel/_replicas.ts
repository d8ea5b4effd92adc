// Funnel processes sharing one PostgreSQL ledger and publishing through one relay process
// (tests/support/processes.ts: the servers themselves, so a SIGKILL reaches them, with the
// shipped permissions unless `flags` say otherwise), at shipped defaults apart from addresses
// and files.
import assert from "node:assert/strict";
import { freeUdpTcpPort } from "../../src/transport/mod.ts";
import type { CertificateFiles } from "../support/certs.ts";
import {
  ingestBase,
  type ServerOptions,
  type ServerProcess,
  startServer,
} from "../support/processes.ts";

/** A running `sluice funnel` process. */
export interface FunnelProcess {
  readonly process: ServerProcess;
  /** `http://127.0.0.1:<port>` of its HTTP API. */
  readonly base: string;
  /** SIGKILLs the process itself and waits for it to be gone. */
  kill(): Promise<void>;
}

/** A running `sluice relay` process. */
export interface RelayUnderTest {
  readonly process: ServerProcess;
  readonly port: number;
  /** GETs an HTTPS path of the relay. */
  get(path: string): Promise<Response>;
  stop(): Promise<void>;
}

/** Starts a relay process on a free port with the test certificate. */
export async function startRelay(files: CertificateFiles): Promise<RelayUnderTest> {
  const port = freeUdpTcpPort();
  const process = await startServer("relay", {
    env: { RELAY_ADDR: `127.0.0.1:${port}`, CERT_FILE: files.cert, KEY_FILE: files.key },
  });
  const http = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(files.cert)] });
  return {
    process,
    port,
    get: (path) => fetch(`https://localhost:${port}${path}`, { client: http }),
    stop: async () => {
      await process.kill();
      http.close();
    },
  };
}

/**
 * Starts a funnel process on `ledger` publishing through `relay` (RELAY_URL
 * set, so no own listener: the shipped default with a relay), on a free port.
 * Without a relay it serves its own MoQ listener (the shipped default then),
 * on a free port with the test certificate rather than :4433, so tests can run side by side.
 * `flags` are the permission flags (default the shipped ones).
 */
export async function startFunnelProcess(
  ledger: string,
  relay: RelayUnderTest | undefined,
  files: CertificateFiles,
  extra: Record<string, string> = {},
  flags?: ServerOptions["flags"],
): Promise<FunnelProcess> {
  const live = relay
    ? { RELAY_URL: `moqt://localhost:${relay.port}/`, RELAY_CA_FILE: files.cert }
    : { FUNNEL_SERVE_ADDR: "127.0.0.1:0", CERT_FILE: files.cert, KEY_FILE: files.key };
  const process = await startServer("funnel", {
    env: { FUNNEL_ADDR: "127.0.0.1:0", LEDGER_URI: ledger, ...live, ...extra },
    ...(flags ? { flags } : {}),
  });
  assert.ok(!process.exited(), `the funnel exited:\n${process.lines.join("\n")}`);
  return {
    process,
    base: ingestBase(process),
    kill: () => process.kill().then(() => {}),
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
