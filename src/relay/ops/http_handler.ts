import { problemResponse, streamResponse } from "../../http/mod.ts";
import { isLoopbackAddress } from "../../transport/mod.ts";
import { PROMETHEUS_CONTENT_TYPE } from "../../metrics/mod.ts";
import { cpuProfile, heapSnapshot, MAX_PROFILE_SECONDS, ProfileBusyError } from "./pprof.ts";
import type { RelayCore } from "../routing/mod.ts";
import type { RelayMetrics } from "../metrics/mod.ts";

/** Options of {@link createRelayHandler}. */
export interface RelayHandlerOptions {
  /** The routing core, for /routes. */
  readonly core: RelayCore;
  /** The metrics, for /metrics. */
  readonly metrics: RelayMetrics;
  /** Wall clock in ms. */
  readonly now: () => number;
  /** When the relay started (ms). */
  readonly startedAt: number;
  /** Whether the relay is ready (listener up, key set loaded). */
  readonly ready: () => boolean;
  /** RELAY_PPROF. */
  readonly pprof: boolean;
  /** Smoothed RTT in ms of the publisher session at `remote`, when measured. */
  readonly rttOf?: (remote: string) => number | undefined;
  /**
   * Who is answered on /routes, /metrics and /debug/pprof/* (they name every
   * session's address, path and track): `loopback` only clients on a loopback
   * address (the public port without RELAY_METRICS_ADDR, the default), `all`
   * (the RELAY_METRICS_ADDR listener), `none` (the public port when
   * RELAY_METRICS_ADDR is set). /health is always answered.
   */
  readonly ops?: OpsAccess;
}

/** Who is answered on the relay's operations endpoints; see {@linkcode RelayHandlerOptions.ops}. */
export type OpsAccess = "loopback" | "all" | "none";

/** The paths that reveal sessions, routes and process state. */
function isOpsPath(path: string): boolean {
  return path === "/routes" || path === "/metrics" || path.startsWith("/debug/");
}

/** One entry of /routes `paths`. */
export interface RoutePathEntry {
  path: string;
  active: boolean;
  announced_at: string;
  hops: number;
  rtt_ms: number;
  bitrate_bps: number;
  source: string;
  last_updated: string;
}

/** The /routes document. */
export interface RoutesSnapshot {
  timestamp: string;
  uptime: string;
  live: boolean;
  ready: boolean;
  paths: RoutePathEntry[];
}

/** Formats a duration in ms like Go's time.Duration text (e.g. "1h2m3.5s"). */
export function formatDuration(ms: number): string {
  if (ms <= 0) return "0s";
  if (ms < 1000) return `${Math.round(ms)}ms`;
  let rest = ms / 1000;
  const h = Math.floor(rest / 3600);
  rest -= h * 3600;
  const m = Math.floor(rest / 60);
  rest -= m * 60;
  const s = Math.round(rest * 1000) / 1000;
  return `${h > 0 ? `${h}h` : ""}${h > 0 || m > 0 ? `${m}m` : ""}${s}s`;
}

/** Builds the /routes snapshot. */
export function routesSnapshot(options: RelayHandlerOptions): RoutesSnapshot {
  const now = options.now();
  return {
    timestamp: new Date(now).toISOString(),
    uptime: formatDuration(now - options.startedAt),
    live: true,
    ready: options.ready(),
    // One entry per path, its selected route (the spec's shape): retained alternates are not
    // listed. A selected route is inactive while its source is going away (ended, or draining
    // after GOAWAY with no live alternate to promote).
    paths: options.core.routes.routes().map((r) => ({
      path: `/${r.path}`,
      active: r.source.alive?.() ?? true,
      announced_at: new Date(r.announcedAt).toISOString(),
      hops: r.hops,
      rtt_ms: Math.round(r.source.rttMs?.() ?? options.rttOf?.(r.source.remote) ?? 0),
      bitrate_bps: r.rate.bitsPerSecond(),
      source: r.source.remote,
      last_updated: new Date(r.lastUpdated).toISOString(),
    })),
  };
}

/**
 * The relay's HTTP handler: /health, /routes, /metrics, and /debug/pprof/*
 * when RELAY_PPROF=1; the last three only to the clients `ops` allows
 * (`remote` is the client's address).
 */
export function createRelayHandler(
  options: RelayHandlerOptions,
): (request: Request, remote?: Deno.NetAddr) => Promise<Response> {
  const ops = options.ops ?? "loopback";
  return async (request, remote) => {
    const url = new URL(request.url);
    if (request.method !== "GET" && request.method !== "HEAD") {
      return problemResponse(405, `${request.method} is not served; use GET`);
    }
    if (isOpsPath(url.pathname)) {
      if (ops === "none") return problemResponse(404, `No resource at ${url.pathname}`);
      if (ops === "loopback" && !(remote && isLoopbackAddress(remote.hostname))) {
        return problemResponse(
          403,
          `${url.pathname} is served only to loopback clients; set RELAY_METRICS_ADDR to serve it elsewhere`,
        );
      }
    }
    switch (url.pathname) {
      case "/health": {
        const ready = options.ready();
        return new Response(ready ? "ok\n" : "starting\n", {
          status: ready ? 200 : 503,
          headers: { "content-type": "text/plain; charset=utf-8" },
        });
      }
      case "/routes":
        return Response.json(routesSnapshot(options), {
          headers: { "cache-control": "no-store" },
        });
      case "/metrics":
        return await streamResponse(options.metrics.registry.renderEach(), {
          headers: { "content-type": PROMETHEUS_CONTENT_TYPE },
        });
    }
    if (options.pprof && url.pathname === "/debug/pprof/profile") {
      const raw = url.searchParams.get("seconds") ?? "30";
      const seconds = /^\d+$/.test(raw) ? Number(raw) : NaN;
      if (!(seconds >= 1 && seconds <= MAX_PROFILE_SECONDS)) {
        return problemResponse(
          400,
          `seconds must be an integer from 1 to ${MAX_PROFILE_SECONDS}, got "${raw}"`,
        );
      }
      try {
        const body = await cpuProfile(seconds);
        return new Response(body, {
          headers: {
            "content-type": "application/json",
            "content-disposition": 'attachment; filename="relay.cpuprofile"',
          },
        });
      } catch (e) {
        if (e instanceof ProfileBusyError) {
          return problemResponse(409, e.message, {}, { code: e.code });
        }
        throw e;
      }
    }
    if (options.pprof && url.pathname === "/debug/pprof/heap") {
      return await streamResponse(heapSnapshot(), {
        headers: {
          "content-type": "application/json",
          "content-disposition": 'attachment; filename="relay.heapsnapshot"',
        },
      });
    }
    return problemResponse(404, `No resource at ${url.pathname}`);
  };
}
