// A funnel (file: ledger) and optionally a relay as real child processes,
// on fixed ports so either can be killed and started again in place.
import assert from "node:assert/strict";
import { signToken } from "../../src/auth/mod.ts";
import type { CertificateHash } from "../../src/client/mod.ts";
import { freeUdpTcpPort } from "../../src/transport/mod.ts";
import { keySetText, makeKey, type TestKey } from "../support/credentials.ts";
import { testCertificate, testCertificateFiles } from "../support/certs.ts";
import { type ServerProcess, spawnServer } from "../support/processes.ts";

/** One server process that can be killed and started again with the same environment. */
export class RestartableServer {
  readonly #command: "funnel" | "relay";
  readonly #env: Record<string, string>;
  readonly #ready: string;
  #process: ServerProcess | undefined;

  constructor(command: "funnel" | "relay", env: Record<string, string>, ready: string) {
    this.#command = command;
    this.#env = env;
    this.#ready = ready;
  }

  /** Everything the current process printed. */
  get lines(): readonly string[] {
    return this.#process?.lines ?? [];
  }

  /** Starts the process and waits until it serves. */
  async start(): Promise<void> {
    const p = spawnServer(this.#command, { env: this.#env });
    this.#process = p;
    await p.waitForLine(this.#ready);
  }

  /** Signals the server's own process and waits for it to end. */
  async kill(signal: Deno.Signal = "SIGTERM"): Promise<void> {
    const p = this.#process;
    if (!p) return;
    this.#process = undefined;
    await p.stop(signal);
  }
}

/** Options of {@linkcode startServers}. */
export interface ServersOptions {
  /** Publish through a relay process (dialed over `relayScheme`), with no listener of the funnel's own. */
  readonly relay?: boolean;
  /** How the funnel dials the relay (default moqt). */
  readonly relayScheme?: "moqt" | "https";
  /** Turn credentials on (a key set for both servers). */
  readonly auth?: boolean;
  /** More environment for the relay process (e.g. RELAY_DATAGRAM_TRACKS). */
  readonly relayEnv?: Record<string, string>;
  /** More environment for the funnel process (e.g. CORS_ALLOWED_ORIGINS for a browser page). */
  readonly funnelEnv?: Record<string, string>;
}

/** The running servers of one test file. */
export interface Servers extends AsyncDisposable {
  readonly funnel: RestartableServer;
  readonly relay: RestartableServer | undefined;
  /** The funnel's HTTP base URL. */
  readonly http: string;
  /** Where subscribers dial MoQ over native QUIC (the relay, or the funnel's listener). */
  readonly moqt: string;
  /** The same over WebTransport. */
  readonly https: string;
  /** The same over QMux on WebSocket (the TCP port of the same number). */
  readonly wss: string;
  /** The test certificate (PEM), for `caCerts`. */
  readonly certPem: string;
  /** The test certificate's hash, for `serverCertificateHashes`. */
  readonly hashes: CertificateHash[];
  /** The signing key when auth is on. */
  readonly key: TestKey | undefined;
  /** The key set file both servers read (re-read every second) when auth is on. */
  readonly keysFile: string;
  /** The HTTP URL of track `name` of broadcast `room/1`. */
  track(name: string): string;
  /** A credential (auth on) with `actions` on every broadcast under `room`. */
  token(actions: string[], ttlSeconds?: number, sub?: string): Promise<string>;
}

/** Starts a funnel with a fresh file: ledger (and a relay), waiting until both serve. */
export async function startServers(options: ServersOptions = {}): Promise<Servers> {
  const files = await testCertificateFiles();
  const cert = await testCertificate();
  const key = options.auth ? await makeKey() : undefined;
  const keysFile = `${files.dir}/keys.json`;
  const signingKey = `${files.dir}/funnel.jwk`;
  if (key) {
    await Deno.writeTextFile(keysFile, keySetText(key));
    await Deno.writeTextFile(signingKey, JSON.stringify(key.privateJwk));
  }
  const auth: Record<string, string> = key ? { SLUICE_AUTH_KEYS: keysFile } : {};
  const tls = { CERT_FILE: files.cert, KEY_FILE: files.key };
  const httpPort = freeUdpTcpPort();
  const moqPort = freeUdpTcpPort();
  const relay = options.relay
    ? new RestartableServer(
      "relay",
      { RELAY_ADDR: `127.0.0.1:${moqPort}`, ...tls, ...auth, ...options.relayEnv },
      "relay: listening",
    )
    : undefined;
  const live: Record<string, string> = relay
    ? {
      FUNNEL_SERVE_ADDR: "none",
      RELAY_URL: `${options.relayScheme ?? "moqt"}://localhost:${moqPort}/`,
      RELAY_CA_FILE: files.cert,
      ...(key ? { RELAY_SIGNING_KEY: signingKey, RELAY_PUBLISH: "room" } : {}),
    }
    : { FUNNEL_SERVE_ADDR: `127.0.0.1:${moqPort}` };
  const funnel = new RestartableServer("funnel", {
    FUNNEL_ADDR: `127.0.0.1:${httpPort}`,
    LEDGER_URI: `file://${files.dir}/ledger`,
    ...tls,
    ...auth,
    ...live,
    ...options.funnelEnv,
  }, "Auth:");
  await relay?.start();
  await funnel.start();
  const http = `http://127.0.0.1:${httpPort}`;
  return {
    funnel,
    relay,
    http,
    moqt: `moqt://localhost:${moqPort}/`,
    https: `https://localhost:${moqPort}/`,
    wss: `wss://localhost:${moqPort}/`,
    certPem: cert.certPem,
    hashes: [{ algorithm: "sha-256", value: cert.sha256 }],
    key,
    keysFile,
    track: (name) => `${http}/tracks/room/1/${name}`,
    token: (actions, ttlSeconds = 600, sub) => {
      assert.ok(key, "auth is off");
      return signToken(key.privateJwk, {
        ...(sub ? { sub } : {}),
        scopes: [{
          actions: actions as ("post" | "fetch" | "redact" | "subscribe")[],
          broadcast: { prefix: "room" },
        }],
      }, { ttlSeconds });
    },
    [Symbol.asyncDispose]: async () => {
      await funnel.kill();
      await relay?.kill();
      await Deno.remove(files.dir, { recursive: true });
    },
  };
}
