/**
 * A small HTTP/1.1 keep-alive load generator over raw TCP: `connections`
 * clients each send one POST, read the whole response, and repeat until
 * `seconds` pass. Much lighter than fetch, so the server under test gets
 * most of the CPU.
 */
export interface LoadOptions {
  readonly port: number;
  readonly connections: number;
  readonly seconds: number;
  /** Builds the request bytes for request number `n` on a connection. */
  readonly request: (n: number) => Uint8Array;
  /** The status every response must have. */
  readonly expectStatus: number;
}

/** Throughput and latency of one load run. */
export interface LoadResult {
  readonly requests: number;
  readonly errors: number;
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

const CRLFCRLF = [13, 10, 13, 10];

/** Runs the load and returns what it measured. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const deadline = performance.now() + options.seconds * 1000;
  const latencies: number[] = [];
  let errors = 0;
  const worker = async (): Promise<void> => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: options.port });
    conn.setNoDelay(true);
    const buf = new Uint8Array(64 * 1024);
    let n = 0;
    try {
      while (performance.now() < deadline) {
        const started = performance.now();
        await writeAll(conn, options.request(n++));
        const status = await readResponse(conn, buf);
        latencies.push(performance.now() - started);
        if (status !== options.expectStatus) errors++;
      }
    } finally {
      conn.close();
    }
  };
  const began = performance.now();
  await Promise.all(Array.from({ length: options.connections }, worker));
  const elapsed = (performance.now() - began) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number): number =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return {
    requests: latencies.length,
    errors,
    perSecond: latencies.length / elapsed,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
  };
}

async function writeAll(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < data.length) offset += await conn.write(data.subarray(offset));
}

// Reads one response (headers + Content-Length body) and returns its status.
async function readResponse(conn: Deno.Conn, buf: Uint8Array): Promise<number> {
  let filled = 0;
  let headerEnd = -1;
  while (headerEnd < 0) {
    const n = await conn.read(buf.subarray(filled));
    if (n === null) throw new Error("Connection closed mid-response");
    filled += n;
    headerEnd = indexOf(buf, filled);
  }
  const head = new TextDecoder().decode(buf.subarray(0, headerEnd));
  const status = Number(head.slice(9, 12));
  const length = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
  let have = filled - (headerEnd + 4);
  while (have < length) {
    const n = await conn.read(buf);
    if (n === null) throw new Error("Connection closed mid-body");
    have += n;
  }
  return status;
}

function indexOf(buf: Uint8Array, end: number): number {
  outer: for (let i = 0; i + 3 < end; i++) {
    for (let j = 0; j < 4; j++) if (buf[i + j] !== CRLFCRLF[j]) continue outer;
    return i;
  }
  return -1;
}

/** Encodes a POST with a JSON body and optional extra headers. */
export function postRequest(
  path: string,
  body: string,
  headers: Record<string, string> = {},
): Uint8Array {
  const bytes = new TextEncoder().encode(body);
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  const head = `POST ${path} HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n` +
    `content-length: ${bytes.length}\r\n${extra}\r\n`;
  const head8 = new TextEncoder().encode(head);
  const out = new Uint8Array(head8.length + bytes.length);
  out.set(head8);
  out.set(bytes, head8.length);
  return out;
}
