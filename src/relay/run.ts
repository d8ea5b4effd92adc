import {
  createVerifier,
  keySourceFrom,
  readSigner,
  type Signer,
  type Verifier,
} from "../auth/mod.ts";
import { ConfigError, formatListenAddress, relayExposureWarning } from "../config/mod.ts";
import { errorText } from "../error_text/mod.ts";
import { loadServingCertificate } from "../certs/mod.ts";
import type { RelayConfig } from "../config/mod.ts";
import { parentGone, reexecWithV8Flags } from "./ops/mod.ts";
import { peerCredentials } from "./mesh/mod.ts";
import { startRelay } from "./server.ts";
import {
  readUdpReceiveBuffers,
  RECOMMENDED_UDP_RECEIVE_BUFFER,
  udpReceiveBufferAdvice,
} from "../transport/mod.ts";

/** How long a stopping relay waits for its sessions to leave after GOAWAY, ms. */
export const DRAIN_MS = 10_000;

/** I/O of {@link runRelay}. */
export interface RunRelayIo {
  /** Logs a line (default console.error). */
  readonly log?: (line: string) => void;
  /** Resolves when the relay should stop (default: SIGINT or SIGTERM). */
  readonly shutdown?: Promise<unknown>;
}

const PARENT_GONE = "parent gone";

function signals(reexecuted: boolean): { promise: Promise<string>; dispose: () => void } {
  let resolve!: (s: string) => void;
  const promise = new Promise<string>((r) => (resolve = r));
  // The relay that re-executed itself for V8 flags ends with the process it was started as,
  // even one SIGKILLed, which forwards no signal.
  if (reexecuted) parentGone().then(() => resolve(PARENT_GONE));
  const onInt = () => resolve("SIGINT");
  const onTerm = () => resolve("SIGTERM");
  Deno.addSignalListener("SIGINT", onInt);
  Deno.addSignalListener("SIGTERM", onTerm);
  return {
    promise,
    dispose: () => {
      Deno.removeSignalListener("SIGINT", onInt);
      Deno.removeSignalListener("SIGTERM", onTerm);
    },
  };
}

/**
 * Reads RELAY_PEER_KEY and PEER_CA_FILE; a file that cannot be used stops
 * the start with a {@link ConfigError} naming its variable.
 */
async function readMeshFiles(
  config: RelayConfig,
): Promise<{ signer?: Signer; caCerts?: string[] }> {
  const problems: { variable: string; message: string }[] = [];
  const out: { signer?: Signer; caCerts?: string[] } = {};
  const keyFile = config.mesh.peerKey.value;
  if (keyFile !== undefined) {
    try {
      out.signer = await readSigner(keyFile);
    } catch (e) {
      problems.push({ variable: "RELAY_PEER_KEY", message: errorText(e) });
    }
  }
  const caFile = config.mesh.peerCaFile.value;
  if (caFile !== undefined) {
    try {
      const pem = await Deno.readTextFile(caFile);
      if (!pem.includes("-----BEGIN CERTIFICATE-----")) {
        throw new TypeError(`"${caFile}" holds no PEM certificate`);
      }
      out.caCerts = [pem];
    } catch (e) {
      problems.push({ variable: "PEER_CA_FILE", message: errorText(e) });
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return out;
}

/**
 * `sluice relay`: applies the GC settings (re-executing with V8 flags when
 * RELAY_SEMI_SPACE_MB asks for it), loads the certificate and key set,
 * serves until SIGINT/SIGTERM, then drains (GOAWAY, up to 10 s) and stops.
 * Returns the exit code.
 */
export async function runRelay(config: RelayConfig, io: RunRelayIo = {}): Promise<number> {
  const log = io.log ?? ((l: string) => console.error(l));
  if (config.gc.apply.length > 0) return await reexecWithV8Flags(config.gc, log);
  const tls = await loadServingCertificate({
    certFile: config.certFile.value,
    keyFile: config.keyFile.value,
    defaultCertificate: config.certFile.source === "default" && config.keyFile.source === "default",
    server: "relay",
    log: (line) => log(`relay: ${line}`),
  });
  const exposed = relayExposureWarning(config);
  if (exposed !== undefined) log(`relay: ${exposed}`);
  let verifier: Verifier | undefined;
  const keys = config.authKeys.value;
  if (keys !== undefined) {
    const source = keySourceFrom(keys, {
      log,
      ...(config.authKeysCache.value !== undefined
        ? { cacheFile: config.authKeysCache.value }
        : {}),
      ...(config.relayToken.value !== undefined ? { bearerToken: config.relayToken.value } : {}),
    });
    verifier = await createVerifier(source, {
      ...(config.authAudience.value !== undefined ? { audience: config.authAudience.value } : {}),
      ...(config.authIssuer.value !== undefined ? { issuer: config.authIssuer.value } : {}),
    });
    log(`relay: credentials checked against ${source.location}`);
  }
  const mesh = await readMeshFiles(config);
  const sig = io.shutdown ? undefined : signals(config.gc.applied);
  try {
    const relay = await startRelay({
      hostname: config.addr.value.hostname,
      port: config.addr.value.port,
      tls,
      groupCacheSize: config.groupCacheSize.value,
      groupCacheMs: config.groupCacheMs.value,
      groupCacheBytes: config.groupCacheBytes.value,
      orphanMs: config.publisherGraceMs.value,
      pprof: config.pprof.value,
      ...(config.metricsAddr.value ? { metricsAddr: config.metricsAddr.value } : {}),
      corsAllowedOrigins: config.corsAllowedOrigins.value,
      datagramTracks: config.datagramTracks.value,
      deliveryTurnMs: config.deliveryTurnMs.value,
      incomingStreams: config.incomingStreams.value,
      verifier,
      log,
      peers: config.mesh.peers.value,
      name: config.mesh.name.value,
      ...(mesh.signer
        ? {
          peerCredential: peerCredentials(mesh.signer, config.mesh.name.value, Date.now, {
            ...(config.authAudience.value !== undefined
              ? { audience: config.authAudience.value }
              : {}),
            ...(config.authIssuer.value !== undefined ? { issuer: config.authIssuer.value } : {}),
          }),
        }
        : {}),
      ...(mesh.caCerts ? { peerCaCerts: mesh.caCerts } : {}),
      ...(config.mesh.goawayRedirectUri.value
        ? { goawayUri: config.mesh.goawayRedirectUri.value }
        : {}),
    });
    const gc = config.gc;
    log(
      `relay: listening on ${formatListenAddress(relay.addr)} (UDP: moq-lite over QUIC and ` +
        `WebTransport; TCP: HTTPS /health${
          relay.metricsAddr ? "" : ", /routes /metrics to loopback clients only,"
        } and WebSocket (QMux, wss://)); ` +
        `young generation ` +
        `${
          gc.semiSpace.mb === undefined ? "V8 default" : `${gc.semiSpace.mb} MiB`
        } [${gc.semiSpace.source}]`,
    );
    if (relay.metricsAddr) {
      log(
        `relay: /routes /metrics${config.pprof.value ? " /debug/pprof" : ""} on ` +
          `http://${formatListenAddress(relay.metricsAddr)} (RELAY_METRICS_ADDR)`,
      );
    }
    // The relay sizes its own socket up to net.core.rmem_max; only a socket left short is worth
    // a warning (the kernel reports twice the usable bytes).
    const socket = relay.udpReceiveBuffer;
    if (socket === undefined || socket / 2 < RECOMMENDED_UDP_RECEIVE_BUFFER) {
      const udp = readUdpReceiveBuffers();
      const advice = udp && udpReceiveBufferAdvice(udp);
      if (advice) log(`relay: warning: ${advice}`);
    } else {
      log(`relay: UDP receive buffer ${Math.round(socket / 2 / 1024)} KiB`);
    }
    log(
      `relay: mesh: name ${config.mesh.name.value}, hop id ${relay.hopId}, peers ` +
        `${config.mesh.peers.display}${mesh.signer ? " (signed peer credentials)" : ""}`,
    );
    const why = await (io.shutdown ?? sig!.promise);
    if (why === PARENT_GONE) {
      // Whoever ended the parent wanted the relay gone now (SIGKILL does not wait for a drain).
      log("relay: stopping: the process that started this one is gone");
      await relay.stop();
      return 1;
    }
    log(`relay: stopping (${typeof why === "string" ? why : "shutdown"}): GOAWAY sent, draining`);
    const left = await relay.drain(DRAIN_MS);
    if (!left) log(`relay: sessions still open after ${DRAIN_MS / 1000} s are closed`);
    await relay.stop();
    return 0;
  } finally {
    sig?.dispose();
    verifier?.close();
  }
}
