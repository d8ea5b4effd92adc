// Crash safety through the real funnel: concurrent HTTP senders POST records to a
// `sluice funnel` child process, which is killed with SIGKILL at a random moment and
// restarted; every record answered 201 must be in the ledger exactly once, in order.
import { parseGroupId, type StoreCredentials } from "../../src/ledger/mod.ts";
import { type Ack, crashTestsPerBackend, WORKERS } from "../support/crash.ts";
import { ingestBase, startServer } from "../support/processes.ts";

const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

function childEnv(uri: string, credentials?: StoreCredentials): Record<string, string> {
  const env: Record<string, string> = {
    FUNNEL_ADDR: "127.0.0.1:0",
    FUNNEL_SERVE_ADDR: "none",
    LEDGER_URI: uri,
  };
  // Only what Deno itself needs from this environment; no stray funnel settings.
  for (const name of ["PATH", "HOME", "DENO_DIR", "TMPDIR"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  if (credentials) {
    env.AWS_ACCESS_KEY_ID = credentials.accessKeyId;
    env.AWS_SECRET_ACCESS_KEY = credentials.secretAccessKey;
  }
  return env;
}

// Acknowledged records of the previous round, keyed by the ledger they went to.
const previous = new Map<string, Ack[]>();

async function post(
  url: string,
  payload: string,
  key: string,
  client: Deno.HttpClient,
): Promise<Response> {
  return await fetch(url, {
    method: "POST",
    body: payload,
    headers: { "content-type": "application/json", "idempotency-key": key },
    client,
  });
}

/** The Idempotency-Key a sender used for a payload `{"r","w","i"}`. */
function keyOf(payload: string): string {
  const { r, w, i } = JSON.parse(payload) as { r: number; w: number; i: number };
  return `${r}-${w}-${i}`;
}

async function postAndKill(
  uri: string,
  run: number,
  killAfter: number,
  credentials?: StoreCredentials,
): Promise<Ack[]> {
  // Started with the test's config and every permission, as before it used the process helper.
  const funnel = await startServer("funnel", {
    flags: "all",
    denoArgs: ["--quiet", `--config=${CONFIG}`],
    env: childEnv(uri, credentials),
    clearEnv: true,
  });
  const url = `${ingestBase(funnel)}/tracks/crash/test`;

  const client = Deno.createHttpClient({});
  const acks: Ack[] = [];
  let killed = false;
  // Retries of records acknowledged before the last kill reach a restarted funnel: they are
  // answered with their first group and stored nothing (checked by crashLoop's count).
  for (const ack of (previous.get(uri) ?? []).slice(-8)) {
    const response = await post(url, ack.payload, keyOf(ack.payload), client);
    const body = await response.text();
    if (response.status !== 201 || parseGroupId(JSON.parse(body).group).seq !== ack.seq) {
      await funnel.kill();
      client.close();
      throw new Error(
        `A retry after restart answered ${response.status} ${body}, not seq ${ack.seq}`,
      );
    }
  }
  const sender = async (w: number): Promise<void> => {
    for (let i = 0; !killed; i++) {
      const payload = JSON.stringify({ r: run, w, i });
      let response: Response;
      try {
        response = await post(url, payload, keyOf(payload), client);
      } catch (error) {
        if (killed) return;
        throw error;
      }
      if (response.status !== 201) {
        const body = await response.text();
        if (killed) return;
        throw new Error(`POST answered ${response.status}: ${body}`);
      }
      let group: string;
      try {
        group = ((await response.json()) as { group: string }).group;
      } catch (error) {
        if (killed) return; // The 201 never fully arrived: not an acknowledgement.
        throw error;
      }
      acks.push({ seq: parseGroupId(group).seq, payload });
      if (!killed && acks.length >= killAfter) {
        killed = true;
        funnel.signal("SIGKILL");
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: WORKERS }, (_, w) => sender(w)));
  } finally {
    await funnel.kill();
    client.close();
  }
  previous.set(uri, acks);
  return acks;
}

await crashTestsPerBackend({
  directory: "funnel on a directory ledger: kill -9 while POSTing loses no 201",
  postgres: "funnel on a PostgreSQL ledger: kill -9 while POSTing loses no 201",
  s3: "funnel on an S3 ledger: kill -9 while POSTing loses no 201",
}, postAndKill);
