// A peer chooses how many broadcasts it announces: one announce stream follows at most
// `maxAnnounced` at once (default MAX_ANNOUNCED); more are refused and counted, and a
// withdrawal makes room again.
import assert from "node:assert/strict";
import { accept, Announcer, connect, MAX_ANNOUNCED } from "../../../src/moq/mod.ts";
import { MAX_PATH_BYTES } from "../../../src/path/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { until } from "../../support/wait.ts";

/** The server follows the client's announcements under `""` and counts the active ones. */
async function announceMany(count: number, maxAnnounced?: number) {
  const pair = await quicPair("moq-lite-05");
  const serverP = accept(pair.server, {
    ...(maxAnnounced !== undefined ? { maxAnnounced } : {}),
    log: () => {},
  });
  const announcer = new Announcer();
  await connect(pair.client, { announcer });
  const server = await serverP;
  for (let i = 0; i < count; i++) announcer.announce(`b/${i}`);
  const active = new Set<string>();
  const ac = new AbortController();
  const watching = (async () => {
    for await (const e of server.announced("", { signal: ac.signal })) {
      if (e.active) active.add(e.path);
      else active.delete(e.path);
    }
  })();
  // Every announcement is accepted or refused; a refused one yields no event.
  await until(
    () => active.size + server.stats.announcementsRefused === count,
    "every announcement read",
  );
  ac.abort();
  await watching;
  return { active, server, stop: pair.stop };
}

Deno.test("a peer announcing one broadcast more than maxAnnounced leaves the bound followed", async () => {
  // Lowered to 3 (shipped MAX_ANNOUNCED, 65,536) so that four announcements pass it; the twin
  // below runs at the default.
  const { active, server, stop } = await announceMany(4, 3);
  assert.equal(active.size, 3);
  assert.equal(server.stats.announcementsRefused, 1);
  await stop();
});

Deno.test("at the shipped default, MAX_ANNOUNCED + 1 announcements leave MAX_ANNOUNCED followed", async () => {
  const { active, server, stop } = await announceMany(MAX_ANNOUNCED + 1);
  assert.equal(active.size, MAX_ANNOUNCED);
  assert.equal(server.stats.announcementsRefused, 1);
  await stop();
});

Deno.test("a broadcast path longer than MAX_PATH_BYTES is refused, not followed", async () => {
  // The wire lets a suffix be 4096 bytes: 65,536 of them held 326 MiB of one session's heap
  // (measured), four times what paths every other part of sluice takes (1024 bytes) allow.
  const pair = await quicPair("moq-lite-05");
  const serverP = accept(pair.server, { log: () => {} });
  const announcer = new Announcer();
  await connect(pair.client, { announcer });
  const server = await serverP;
  const long = `b/${"x".repeat(MAX_PATH_BYTES)}`;
  const fits = `b/${"y".repeat(MAX_PATH_BYTES - 2)}`;
  announcer.announce(long);
  announcer.announce(fits);
  const active = new Set<string>();
  const ac = new AbortController();
  const watching = (async () => {
    for await (const e of server.announced("", { signal: ac.signal })) {
      if (e.active) active.add(e.path);
    }
  })();
  await until(
    () => active.size + server.stats.announcementsRefused === 2,
    "both announcements read",
  );
  ac.abort();
  await watching;
  assert.deepEqual([...active], [fits]);
  assert.equal(server.stats.announcementsRefused, 1);
  await pair.stop();
});
