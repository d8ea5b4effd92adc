// The topologies and backends a chaos run can stand up, and which fault kinds
// apply to each. A scenario names its processes and links, so a schedule can
// be drawn (and printed, and replayed) before anything is started.

/** Where the ledger lives. */
export type Backend = "directory" | "postgres" | "s3";

/** How records reach subscribers. */
export type Topology = "listener" | "relay" | "mesh" | "pg-pair";

/** One topology on one backend, with the faults that may hit it. */
export interface Scenario {
  readonly name: string;
  readonly topology: Topology;
  readonly backend: Backend;
  /** Processes by name: `funnel-<i>` and `relay-<name>`. */
  readonly processes: readonly string[];
  /** UDP links through the proxy, by name (see cluster.ts for what each carries). */
  readonly links: readonly string[];
  /** Whether the funnels reach their storage (PostgreSQL, S3) through a TCP proxy faults can cut. */
  readonly storageLink: boolean;
  /** The fault kinds drawn for this scenario (names in faults.ts). */
  readonly faults: readonly string[];
}

const PROCESS_FAULTS = ["sigkill", "sigstop"] as const;
const LINK_FAULTS = ["loss", "partition"] as const;
const STORAGE_FAULTS = ["storage-cut", "storage-stall"] as const;

/** Every scenario, by name. */
export const SCENARIOS: readonly Scenario[] = [
  {
    // The funnel's own MoQ listener; subscribers dial it through the proxy.
    name: "listener-directory",
    topology: "listener",
    backend: "directory",
    processes: ["funnel-0"],
    links: ["subscribers"],
    storageLink: false,
    faults: [...PROCESS_FAULTS, ...LINK_FAULTS],
  },
  {
    // Funnel → relay over a proxied link; subscribers on the relay through another.
    name: "relay-s3",
    topology: "relay",
    backend: "s3",
    processes: ["funnel-0", "relay-a"],
    links: ["upstream", "subscribers"],
    storageLink: true,
    faults: [...PROCESS_FAULTS, ...LINK_FAULTS, ...STORAGE_FAULTS],
  },
  {
    // Funnel → relay a; b peers with a and c with b over proxied links; subscribers on c.
    name: "mesh-directory",
    topology: "mesh",
    backend: "directory",
    processes: ["funnel-0", "relay-a", "relay-b", "relay-c"],
    links: ["mesh-ab", "mesh-bc"],
    storageLink: false,
    faults: [...PROCESS_FAULTS, ...LINK_FAULTS],
  },
  {
    // Two funnels on one PostgreSQL table, both publishing through one relay.
    name: "pg-pair",
    topology: "pg-pair",
    backend: "postgres",
    processes: ["funnel-0", "funnel-1", "relay-a"],
    links: ["subscribers"],
    storageLink: true,
    faults: [...PROCESS_FAULTS, ...LINK_FAULTS, ...STORAGE_FAULTS],
  },
];

/** The scenario named `name`; throws naming the known ones otherwise. */
export function scenarioNamed(name: string): Scenario {
  const found = SCENARIOS.find((s) => s.name === name);
  if (!found) {
    throw new RangeError(
      `Unknown scenario "${name}": one of ${SCENARIOS.map((s) => s.name).join(", ")}`,
    );
  }
  return found;
}
