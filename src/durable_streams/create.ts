import { clientInput } from "../errors/mod.ts";
import { HttpProblem } from "../http/mod.ts";
import { CommitRefused } from "../ledger/mod.ts";
import type { TrackPath } from "../path/mod.ts";
import { answer, offsetText, type StreamContext } from "./context.ts";
import { DEFAULT_TYPE, isJsonType, sameType } from "./content_type.ts";
import { closedHeader, expiresAtHeader, H, ttlHeader } from "./headers.ts";
import { ownPosition, positionOf } from "./lineage.ts";
import { segmentsOf } from "./load_state.ts";
import { type EntryMeta, formatMeta, type StreamConfig } from "./meta.ts";
import { forkSourceName, STREAMS_PREFIX } from "./names.ts";
import { type AppendData, appendData } from "./payload.ts";
import type { Refused } from "./rules.ts";
import { createSeal } from "./seal.ts";
import { StreamState } from "./stream_state.ts";
import { forkPoint, type ForkRequest } from "./fork.ts";

/**
 * The source stream's name a PUT forks from (`Stream-Forked-From`), or
 * undefined for a PUT that forks nothing: 400 for a value that does not parse.
 */
export function forkSource(headers: Headers): string | undefined {
  const from = headers.get(H.forkedFrom);
  if (from === null) return undefined;
  return clientInput(() => forkSourceName(from));
}

/** What a PUT asks for. */
interface CreateRequest {
  readonly type: string | undefined;
  readonly ttl: number | undefined;
  readonly expiresAt: string | undefined;
  readonly closed: boolean;
  readonly fork: ForkRequest | undefined;
  readonly body: Uint8Array;
  /**
   * The stream's path for Location (after the configured origin, if any),
   * never built from the Host header, which the client (or anyone in
   * between) chooses.
   */
  readonly location: string;
}

/** Reads a PUT's headers for stream `name` (raw, as in the path): 400 for invalid ones. */
export function createRequest(headers: Headers, name: string, body: Uint8Array): CreateRequest {
  const ttl = ttlHeader(headers);
  const expiresAt = expiresAtHeader(headers);
  if (ttl !== undefined && expiresAt !== undefined) {
    throw new HttpProblem(400, "Give Stream-TTL or Stream-Expires-At, not both");
  }
  const from = headers.get(H.forkedFrom);
  const offset = headers.get(H.forkOffset);
  const subText = headers.get(H.forkSubOffset);
  if (from === null && (offset !== null || subText !== null)) {
    throw new HttpProblem(400, "Stream-Fork-Offset and -Sub-Offset need Stream-Forked-From");
  }
  let sub = 0;
  if (subText !== null) {
    if (!/^\d{1,15}$/.test(subText.trim())) {
      throw new HttpProblem(400, `Stream-Fork-Sub-Offset must be a whole number, got "${subText}"`);
    }
    sub = Number(subText.trim());
  }
  const type = headers.get("content-type") ?? undefined;
  return {
    type,
    ttl,
    expiresAt,
    closed: closedHeader(headers),
    fork: from === null ? undefined : { from: forkSource(headers)!, offset, sub },
    body,
    location: STREAMS_PREFIX + name,
  };
}

/**
 * PUT: creates the stream (one ledger entry holding its configuration and
 * any initial data), or answers 200 when it exists with the same
 * configuration and 409 when it differs. The stream's gate admits the
 * creating entry only if no stream holds the name when it commits, so two
 * funnels creating one stream at once create it once.
 */
export function createStream(
  ctx: StreamContext,
  path: TrackPath,
  name: string,
  req: CreateRequest,
  sender: string | undefined,
): Promise<Response> {
  return ctx.registry.lock(path, async () => {
    if (ctx.registry.softDeleted(path)) {
      throw new HttpProblem(409, "The stream was deleted while forks still read it");
    }
    const loaded = await ctx.registry.load(path, name, true);
    const now = ctx.now();
    const existing = loaded.state;
    if (existing && !existing.expired(now)) {
      return existsAnswer(existing.config, existing.closed, existing.tail(), req);
    }
    const { config, prefix } = await configOf(ctx, req, now);
    const json = isJsonType(config.type);
    const data = join(json, prefix, appendData(json, req.body));
    const meta: EntryMeta = {
      create: config,
      ...(req.closed ? { closed: true as const } : {}),
      ...(data.n !== undefined ? { n: data.n } : {}),
    };
    const track = (await ctx.ledger.track(path, true))!;
    const gate = await ctx.registry.gate(track);
    let entry;
    try {
      ({ entry } = await gate.commit(track, {
        ...(sender !== undefined ? { sender } : {}),
        ...(data.payload !== undefined ? { payload: data.payload } : {}),
        ...(data.bytes !== undefined ? { bytes: data.bytes } : {}),
        meta: formatMeta(meta)!,
        seal: createSeal(config, req.closed),
      }, { kind: "create", replaces: existing?.created }));
    } catch (error) {
      const refused = error instanceof CommitRefused ? error.reason as Refused : undefined;
      if (refused?.kind !== "exists") throw error;
      // Another funnel (or request) created it first.
      const tail = ownPosition(refused.created, refused.config, refused.tail);
      return existsAnswer(refused.config, refused.closed, tail, req);
    }
    const segments = await segmentsOf(ctx.ledger, track, entry.seq, config);
    const state = new StreamState({
      path,
      name,
      track,
      config,
      created: entry.seq,
      segments,
      gate,
    });
    ctx.registry.set(state);
    return answer(201, {
      "content-type": config.type,
      location: ctx.publicOrigin + req.location,
      [H.nextOffset]: offsetText(positionOf(state.own, entry.seq)),
      ...(req.closed ? { [H.closed]: "true" } : {}),
    });
  });
}

/** The answer to a PUT for a stream that exists: 200 with the same configuration, else 409. */
function existsAnswer(
  config: StreamConfig,
  closed: boolean,
  tail: number,
  req: CreateRequest,
): Response {
  if (!sameConfig(config, closed, req)) {
    throw new HttpProblem(409, "The stream exists with a different configuration");
  }
  return answer(200, {
    "content-type": config.type,
    [H.nextOffset]: offsetText(tail),
    ...(closed ? { [H.closed]: "true" } : {}),
  });
}

/** The configuration a PUT asks for, and for a fork, the data it copies from its source. */
async function configOf(
  ctx: StreamContext,
  req: CreateRequest,
  now: number,
): Promise<{ config: StreamConfig; prefix: AppendData }> {
  const own: StreamConfig = {
    type: req.type ?? DEFAULT_TYPE,
    ...(req.ttl !== undefined ? { ttl: req.ttl } : {}),
    ...(req.expiresAt !== undefined ? { expiresAt: req.expiresAt } : {}),
  };
  if (!req.fork) return { config: own, prefix: { count: 0 } };
  const point = await forkPoint(ctx, req.fork, now);
  if (req.type !== undefined && !sameType(req.type, point.source.config.type)) {
    throw new HttpProblem(409, "A fork's content type must be its source's");
  }
  const inherit = req.ttl === undefined && req.expiresAt === undefined;
  const source = point.source.config;
  const config: StreamConfig = {
    type: req.type ?? source.type,
    ...(inherit && source.ttl !== undefined ? { ttl: source.ttl } : {}),
    ...(inherit && source.expiresAt !== undefined ? { expiresAt: source.expiresAt } : {}),
    ...(req.ttl !== undefined ? { ttl: req.ttl } : {}),
    ...(req.expiresAt !== undefined ? { expiresAt: req.expiresAt } : {}),
    fork: {
      from: req.fork.from,
      start: point.source.created,
      at: point.at,
      sub: req.fork.sub,
      ...(req.fork.offset !== null ? { offset: req.fork.offset } : {}),
    },
  };
  return { config, prefix: point.prefix };
}

// An initial body after a sub-offset prefix: one entry holding both.
function join(json: boolean, prefix: AppendData, body: AppendData): AppendData {
  if (prefix.count === 0) return body;
  if (body.count === 0) return prefix;
  if (json) {
    const messages = [...messagesOf(prefix), ...messagesOf(body)];
    return { payload: `[${messages.join(",")}]`, n: messages.length, count: messages.length };
  }
  const bytes = new Uint8Array(prefix.bytes!.length + body.bytes!.length);
  bytes.set(prefix.bytes!);
  bytes.set(body.bytes!, prefix.bytes!.length);
  return { bytes, count: bytes.length };
}

function messagesOf(data: AppendData): string[] {
  if (data.payload === undefined) return [];
  return data.n === undefined ? [data.payload] : [data.payload.slice(1, -1)];
}

function sameConfig(config: StreamConfig, closed: boolean, req: CreateRequest): boolean {
  if (req.type !== undefined && !sameType(req.type, config.type)) return false;
  if (req.type === undefined && !req.fork && !sameType(DEFAULT_TYPE, config.type)) return false;
  if (req.closed !== closed) return false;
  if (req.fork) {
    const fork = config.fork;
    if (!fork || fork.from !== req.fork.from || fork.sub !== req.fork.sub) return false;
    if (req.fork.offset !== null && req.fork.offset !== (fork.offset ?? offsetText(fork.at))) {
      return false;
    }
    if (req.ttl === undefined && req.expiresAt === undefined) return true;
  } else if (config.fork) return false;
  if (req.ttl !== config.ttl) return false;
  return sameTime(req.expiresAt, config.expiresAt);
}

function sameTime(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return Date.parse(a) === Date.parse(b);
}
