// OpenTelemetry traces from real `sluice funnel` and `sluice relay` processes
// started with OTEL_DENO=true, received by a small OTLP/HTTP receiver: the
// POST's server span with validation, commit and publish children, and the
// relay's spans for the subscription, its upstream request and the record's
// group, joined to the funnel's by the record id (moq-lite has no headers).
import assert from "node:assert/strict";
import { testCertificateFiles } from "../support/certs.ts";
import { dialOurs, seeAnnounced } from "../support/moq.ts";
import { take } from "../support/live_funnel.ts";
import { type ServerProcess, spawnServer } from "../support/processes.ts";
import { until } from "../support/wait.ts";
import { freeUdpTcpPort } from "../../src/transport/mod.ts";
import { type ReceivedSpan, startOtlpReceiver } from "./_otlp_receiver.ts";

function otel(endpoint: string, service: string): Record<string, string> {
  return {
    OTEL_DENO: "true",
    OTEL_SERVICE_NAME: service,
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  };
}

/** A span's duration, or (given `at`) how long after its start `at` is. */
function ms(s: ReceivedSpan, at?: bigint): string {
  const ns = at === undefined ? s.endNs - s.startNs : at - s.startNs;
  const text = `${(Number(ns) / 1e6).toFixed(3)} ms`;
  return at === undefined || ns < 0n ? text : `+${text}`;
}

Deno.test("OTEL_DENO=true: a POST's spans (validation, commit, publish) and the relay's spans of the same record reach an OTLP receiver", async () => {
  await using receiver = startOtlpReceiver();
  const files = await testCertificateFiles();
  const port = freeUdpTcpPort();
  const relay = spawnServer("relay", {
    env: {
      ...otel(receiver.endpoint, "sluice-relay"),
      RELAY_ADDR: `127.0.0.1:${port}`,
      CERT_FILE: files.cert,
      KEY_FILE: files.key,
    },
  });
  let funnel: ServerProcess | undefined;
  try {
    await relay.ready();
    funnel = spawnServer("funnel", {
      env: {
        ...otel(receiver.endpoint, "sluice-funnel"),
        FUNNEL_ADDR: "127.0.0.1:0",
        FUNNEL_SERVE_ADDR: "none",
        RELAY_URL: `moqt://localhost:${port}/`,
        RELAY_CA_FILE: files.cert,
      },
    });
    const ingest = /Ingest: (http:\/\/\S+)/.exec(await funnel.waitForLine(/^Ingest: /))![1]!;
    const put = await fetch(`${ingest}/tracks/room/1/chat`, { method: "PUT" });
    assert.equal(put.status, 201);
    await put.body?.cancel();

    const moq = await dialOurs(port);
    try {
      await seeAnnounced(moq, "room/1");
      const sub = moq.subscribe("room/1", "chat");
      await sub.ready;
      // The first record makes the path live end to end; the second is the one traced.
      for (const [text, group] of [["first", 0], ["traced", 1]] as const) {
        const posted = await fetch(`${ingest}/tracks/room/1/chat`, {
          method: "POST",
          body: JSON.stringify({ text }),
        });
        assert.equal(posted.status, 201);
        assert.equal((await posted.json()).group, `e000001-g0000000${group}`);
        const [got] = await take(sub, 1);
        assert.deepEqual(got, { seq: group + 1, frame: `{"payload":{"text":"${text}"}}` });
      }
    } finally {
      moq.close(0, "");
    }
  } finally {
    // Both processes export what they still hold as they exit.
    await funnel?.stop();
    await relay.stop();
    await Deno.remove(files.dir, { recursive: true });
  }

  const spans = receiver.spans;
  const find = (service: string, name: string) =>
    spans.filter((s) => s.service === service && s.name === name);
  await until(
    () =>
      find("sluice-funnel", "publish").length > 0 && find("sluice-relay", "relay.group").length > 0,
    "the spans to arrive",
  );

  // The funnel: the POST's server span and its three children, in one trace.
  const posts = find("sluice-funnel", "POST /tracks/*");
  assert.equal(posts.length, 2, spans.map((s) => `${s.service} ${s.name}`).join("\n"));
  const root = posts.find((s) => s.attributes["sluice.record.id"] === "e000001-g00000001");
  assert.ok(root, "the second record's POST span");
  assert.equal(root.attributes["http.route"], "/tracks/*");
  const children = spans.filter((s) => s.parentSpanId === root.spanId);
  assert.deepEqual(children.map((s) => s.name).sort(), ["commit", "publish", "validation"]);
  for (const c of children) assert.equal(c.traceId, root.traceId);
  const commit = children.find((s) => s.name === "commit")!;
  assert.equal(commit.attributes["sluice.ledger.backend"], "memory");
  assert.equal(commit.attributes["sluice.commit.batch_size"], 1);
  const publish = children.find((s) => s.name === "publish")!;
  assert.ok(commit.endNs <= publish.startNs + 1000n, "publish follows the commit");
  for (const key of ["sluice.record.id", "moq.broadcast", "moq.track", "moq.group.sequence"]) {
    assert.equal(publish.attributes[key], root.attributes[key], key);
  }

  // The relay: the subscription, the upstream SUBSCRIBE it made, and the record's group.
  const subscribe = find("sluice-relay", "relay.subscribe");
  assert.equal(subscribe.length, 1);
  assert.equal(subscribe[0]!.attributes["moq.broadcast"], "room/1");
  const upstream = find("sluice-relay", "relay.upstream.subscribe");
  assert.equal(upstream.length, 1);
  assert.equal(upstream[0]!.parentSpanId, subscribe[0]!.spanId);
  const group = find("sluice-relay", "relay.group").find((s) =>
    s.attributes["sluice.record.id"] === publish.attributes["sluice.record.id"]
  );
  assert.ok(group, "the relay's span of the record");
  assert.equal(group.attributes["moq.track"], "chat");
  assert.equal(group.attributes["moq.group.sequence"], 2);
  assert.equal(group.attributes["moq.subscribers"], 1);
  assert.ok(group.startNs >= publish.startNs, "the relay receives the group after it is published");
  assert.ok(!spans.some((s) => s.name === "sluice.probe"), "the probe span is never exported");

  if (Deno.env.get("SLUICE_PRINT_TRACE") === "1") {
    // Start offsets are from the POST's start; the two processes share this host's clock.
    const line = (s: ReceivedSpan) =>
      `${s.service.padEnd(14)} ${s.name.padEnd(25)} span ${s.spanId} parent ${
        s.parentSpanId || "-".padEnd(16)
      } trace ${s.traceId.slice(0, 8)} ${ms(root, s.startNs).padStart(11)} ${ms(s).padStart(10)}  ${
        JSON.stringify(s.attributes)
      }`;
    const ordered = [root, ...children, subscribe[0]!, upstream[0]!, group]
      .sort((a, b) => Number(a.startNs - b.startNs));
    console.log(ordered.map(line).join("\n"));
  }
});
