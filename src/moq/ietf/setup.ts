/**
 * The IETF setup exchange, server side: the client's first bidirectional
 * stream becomes the control stream, opened by CLIENT_SETUP and answered
 * with SERVER_SETUP (draft 14 picks the version there; from draft 15 the
 * ALPN did).
 */
import { StreamReader } from "../../wire/mod.ts";
import { errorText } from "../../error_text/mod.ts";
import { sleep } from "../../timers/mod.ts";
import { Sender } from "../sender.ts";
import type { IetfCore } from "./core.ts";
import { frameControl, Msg, readControl } from "./control.ts";
import * as m from "./messages.ts";
import { IETF_VERSION, IetfCode } from "./version.ts";

/**
 * Runs the setup; the control stream's reader once set up (from draft 17,
 * the client's setup stream, which then carries only GOAWAY), undefined
 * when it failed (the session is then closed).
 */
export async function acceptSetup(
  core: IetfCore,
  timeoutMs: number,
): Promise<StreamReader | undefined> {
  const late = new AbortController();
  const timeout = sleep(timeoutMs, late.signal, core.options.timers).then(() => "timeout" as const);
  try {
    if (core.draft >= 17) return await exchangeSetup(core, timeout);
    const stream = await Promise.race([core.transport.acceptBidi(), timeout]);
    if (stream === "timeout") {
      core.violation(IetfCode.ControlMessageTimeout, "no CLIENT_SETUP");
      return undefined;
    }
    if (!stream) return undefined;
    const r = new StreamReader(stream.readable, core.count);
    core.control = new Sender(stream.writable, core.stats);
    const first = await Promise.race([readControl(r), timeout]);
    if (first === "timeout") {
      core.violation(IetfCode.ControlMessageTimeout, "no CLIENT_SETUP");
      return undefined;
    }
    if (first?.type !== Msg.ClientSetup) {
      core.violation(
        IetfCode.ProtocolViolation,
        "the control stream did not open with CLIENT_SETUP",
      );
      return undefined;
    }
    const setup = m.decodeClientSetup(first.body, core.draft);
    // Draft 14 negotiates inside the setup; from draft 15 the ALPN already did.
    if (!setup.versions.includes(IETF_VERSION[core.draft])) {
      core.violation(IetfCode.VersionNegotiationFailed, "no common version");
      return undefined;
    }
    const grant = setup.params.get(m.SetupParam.MaxRequestId);
    core.peerGrant = typeof grant === "bigint" ? grant : 0n;
    if (!takePath(core, setup.params)) return undefined;
    const params: m.Parameters = new Map([[m.SetupParam.MaxRequestId, core.grantedToPeer]]);
    await core.control.write(
      frameControl(
        Msg.ServerSetup,
        m.encodeServerSetup({ version: IETF_VERSION[core.draft], params }, core.draft),
      ),
    );
    return r;
  } catch (err) {
    core.violation(IetfCode.ProtocolViolation, `bad setup: ${errorText(err)}`);
    return undefined;
  } finally {
    late.abort();
  }
}

// PATH belongs to URI-less bindings (native QUIC); elsewhere the transport's URL wins.
function takePath(core: IetfCore, params: m.Parameters): boolean {
  const path = params.get(m.SetupParam.Path);
  if (!(path instanceof Uint8Array) || core.transport.transport !== "quic") return true;
  const text = new TextDecoder().decode(path);
  try {
    core.url = new URL(text.startsWith("/") ? text : `/${text}`, "moqt://localhost");
    return true;
  } catch {
    // The path may carry a credential: neither the log nor the close reason repeats it.
    core.violation(IetfCode.ProtocolViolation, "setup PATH is not a URL path");
    return false;
  }
}

// Draft 17 on: each side sends SETUP on a unidirectional stream of its own; ours then carries
// GOAWAY, theirs is read for it. There are no request id grants any more.
async function exchangeSetup(
  core: IetfCore,
  timeout: Promise<"timeout">,
): Promise<StreamReader | undefined> {
  const d = core.draft;
  const stream = await Promise.race([core.transport.acceptUni(), timeout]);
  if (stream === "timeout") {
    core.violation(IetfCode.ControlMessageTimeout, "no SETUP");
    return undefined;
  }
  if (!stream) return undefined;
  const r = new StreamReader(stream.readable, core.count);
  const first = await Promise.race([readControl(r, d), timeout]);
  if (first === "timeout") {
    core.violation(IetfCode.ControlMessageTimeout, "no SETUP");
    return undefined;
  }
  if (first?.type !== Msg.Setup) {
    core.violation(IetfCode.ProtocolViolation, "the first stream did not open with SETUP");
    return undefined;
  }
  if (!takePath(core, m.decodeSetupOptions(first.body, d))) return undefined;
  core.peerGrant = 1n << 62n;
  const ours = await core.transport.openUni();
  core.control = new Sender(ours.writable, core.stats);
  const options: m.Parameters = new Map([[IMPLEMENTATION, new TextEncoder().encode("sluice")]]);
  await core.control.write(frameControl(Msg.Setup, m.encodeSetupOptions(options, d), d));
  return r;
}

/** The IMPLEMENTATION setup option (draft 17 on). */
const IMPLEMENTATION = 7n;
