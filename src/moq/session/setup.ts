/** The lite-05 SETUP exchange: ours out on a uni stream, the peer's in (with its Path). */
import { concatBytes, encodeVarint, type StreamReader } from "../../wire/mod.ts";
import {
  decodeSetup,
  encodeSetup,
  MAX_CONTROL_MESSAGE,
  type Setup,
  UniType,
} from "../codec/mod.ts";
import { Sender } from "../sender.ts";
import { errorText } from "../../error_text/mod.ts";
import { sleep } from "../../timers/mod.ts";
import type { SessionCore } from "./core.ts";
import { CONTROL_SEND_ORDER } from "./send_order.ts";

/** Sends our SETUP (lite-05); on lite-04 there is none, so setup is done at once. */
export function startSetup(core: SessionCore): void {
  if (core.version === "moq-lite-05") {
    const setup: { origin: bigint; path?: string } = { origin: core.origin };
    // The Path parameter exists only on URI-less bindings (native QUIC), client side.
    if (core.role === "client" && core.transport.transport === "quic" && core.url) {
      setup.path = (core.url.pathname || "/") + core.url.search;
    }
    core.spawn("setup", sendSetup(core, setup));
  } else {
    core.resolveSetup();
  }
}

/** Waits for the peer's SETUP (lite-05) up to `ms`; false on timeout. */
export async function awaitSetup(core: SessionCore, ms: number): Promise<boolean> {
  const late = new AbortController();
  const timeout = sleep(ms, late.signal, core.timers).then(() => false);
  try {
    return await Promise.race([core.setupReceived.then(() => true), timeout]);
  } finally {
    late.abort();
  }
}

async function sendSetup(core: SessionCore, setup: Setup): Promise<void> {
  const stream = await core.transport.openUni({ sendOrder: CONTROL_SEND_ORDER });
  const out = new Sender(stream.writable, core.stats);
  try {
    await out.write(concatBytes([encodeVarint(UniType.Setup), encodeSetup(setup)]));
  } finally {
    await out.close();
  }
}

/** Reads the peer's Setup stream (after its type); a second one or a bad one ends the session. */
export async function receiveSetup(core: SessionCore, r: StreamReader): Promise<void> {
  if (core.setupSeen) return core.violation("second Setup stream");
  core.setupSeen = true;
  let setup: Setup;
  try {
    setup = decodeSetup(await r.message("SETUP", MAX_CONTROL_MESSAGE));
  } catch (err) {
    return core.violation(`bad SETUP: ${errorText(err)}`);
  }
  if (setup.path === undefined) core.session.peerSetup = setup;
  else {
    // Kept without its Path: the session's URL holds it, and with it the credential, once.
    const { path: _, ...rest } = setup;
    core.session.peerSetup = rest;
  }
  if (setup.path !== undefined) {
    if (core.role === "client") return core.violation("SETUP Path sent by a server");
    if (core.transport.transport !== "quic") {
      // Path belongs to URI-less bindings; on WebTransport the CONNECT URL wins.
      core.log("setup-path", "ignoring SETUP Path on a transport with a URL");
    } else {
      try {
        const path = setup.path.startsWith("/") ? setup.path : `/${setup.path}`;
        core.url = new URL(path, "moqt://localhost");
      } catch {
        return core.violation("SETUP Path is not a URL path");
      }
    }
  }
  core.resolveSetup();
}
