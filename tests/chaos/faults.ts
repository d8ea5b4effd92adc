// The fault kinds a schedule draws from. Each is one entry of FAULTS: the
// targets it can hit in a scenario, and how to apply it for a while and heal
// it. A new kind (a slow S3 behind a latency proxy, a full disk) is one more
// entry; schedules name kinds by text, so old schedules keep replaying.
import { sleep } from "../../src/timers/mod.ts";
import type { Cluster } from "./cluster.ts";
import type { FaultEvent } from "./schedule.ts";
import type { Scenario } from "./scenarios.ts";

/** One kind of fault. */
export interface FaultKind {
  /** What it does, for the report. */
  readonly description: string;
  /** The names it can hit in `scenario` (processes or links). */
  targets(scenario: Scenario): readonly string[];
  /** Applies `fault` now, holds it for `fault.forMs`, heals it; resolves once healed. */
  inject(cluster: Cluster, fault: FaultEvent): Promise<void>;
}

function memberOf(cluster: Cluster, name: string) {
  const m = cluster.members.get(name);
  if (!m) throw new RangeError(`No process "${name}" in scenario ${cluster.scenario.name}`);
  return m;
}

function linkOf(cluster: Cluster, name: string) {
  const l = cluster.links.get(name);
  if (!l) throw new RangeError(`No link "${name}" in scenario ${cluster.scenario.name}`);
  return l;
}

/** Every fault kind, by the name schedules use. */
export const FAULTS: Readonly<Record<string, FaultKind>> = {
  sigkill: {
    description: "SIGKILL a process, restart it (same ports, same ledger) after the hold",
    targets: (s) => s.processes,
    async inject(cluster, fault) {
      const m = memberOf(cluster, fault.target);
      await m.kill();
      cluster.killed(fault.target);
      await sleep(fault.forMs);
      await m.restart();
    },
  },
  sigstop: {
    description: "SIGSTOP a process, SIGCONT it after the hold",
    targets: (s) => s.processes,
    async inject(cluster, fault) {
      const m = memberOf(cluster, fault.target);
      m.signal("SIGSTOP");
      await sleep(fault.forMs);
      m.signal("SIGCONT");
    },
  },
  loss: {
    description: "drop a share of the datagrams of a UDP link, both ways",
    targets: (s) => s.links,
    async inject(cluster, fault) {
      const l = linkOf(cluster, fault.target);
      const shape = { loss: fault.loss ?? 0.1 };
      l.reshape("toTarget", shape);
      l.reshape("toClient", shape);
      await sleep(fault.forMs);
      l.reshape("toTarget", {});
      l.reshape("toClient", {});
    },
  },
  partition: {
    description: "drop every datagram of a UDP link, both ways",
    targets: (s) => s.links,
    async inject(cluster, fault) {
      const l = linkOf(cluster, fault.target);
      l.reshape("toTarget", { silent: true });
      l.reshape("toClient", { silent: true });
      await sleep(fault.forMs);
      l.reshape("toTarget", {});
      l.reshape("toClient", {});
    },
  },
  "storage-cut": {
    description: "cut every connection to the storage (PostgreSQL, S3) and refuse new ones",
    targets: (s) => (s.storageLink ? ["storage"] : []),
    async inject(cluster, fault) {
      cluster.storage?.cut();
      await sleep(fault.forMs);
      cluster.storage?.restore();
    },
  },
  "storage-stall": {
    description: "the storage (PostgreSQL, S3) accepts connections and never answers",
    targets: (s) => (s.storageLink ? ["storage"] : []),
    async inject(cluster, fault) {
      cluster.storage?.stall();
      await sleep(fault.forMs);
      cluster.storage?.restore();
    },
  },
  // The names of the first campaigns' schedules, before S3 had the same faults.
  "pg-cut": {
    description: "storage-cut, by its first name",
    targets: () => [],
    inject: (cluster, fault) => FAULTS["storage-cut"]!.inject(cluster, fault),
  },
  "pg-stall": {
    description: "storage-stall, by its first name",
    targets: () => [],
    inject: (cluster, fault) => FAULTS["storage-stall"]!.inject(cluster, fault),
  },
};

/** The targets `kind` can hit in `scenario` (none for an unknown kind). */
export function targetsOf(kind: string, scenario: Scenario): readonly string[] {
  return FAULTS[kind]?.targets(scenario) ?? [];
}

/** Applies `fault` to `cluster` and heals it; throws for a kind no entry names. */
export function inject(cluster: Cluster, fault: FaultEvent): Promise<void> {
  const kind = FAULTS[fault.kind];
  if (!kind) throw new RangeError(`Unknown fault kind "${fault.kind}"`);
  return kind.inject(cluster, fault);
}
