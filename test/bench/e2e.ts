/**
 * The end-to-end benchmark: `client.ts`, the SDK reference client
 * (`sdk_client.ts`) and a floor (`floor_client.ts`) each drive the same
 * benchmark agent (`bench_mm.ts`), alternating A B A B over several rounds
 * on one machine, so that only ratios between them are reported. Then the
 * framing cost series at 1, 2, 4, 8 and 16 MiB.
 *
 * Run with `deno task bench`. Prints; asserts nothing.
 *
 * @module
 */

import { LineReader } from "../../client.ts";

const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");
const AGENT = `${ROOT}/test/bench/bench-mm`;
const ROUNDS = Number(Deno.env.get("BENCH_ROUNDS") ?? 5);
const START_PERMISSIONS = String(JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`)).tasks.start)
  .split(/\s+/).filter((word) => word.startsWith("--allow-"));

type Client = "client" | "sdk" | "floor";
type Mode = "pipelined" | "sequential" | "big" | "startup";

function command(client: Client): string[] {
  const common = ["run", "--quiet", "--no-prompt", "--config", `${ROOT}/deno.json`];
  switch (client) {
    case "client":
      return [
        ...common,
        ...START_PERMISSIONS,
        `${ROOT}/client.ts`,
        "--mm",
        AGENT,
        "How much memory?",
      ];
    case "sdk":
      return [...common, "-A", `${ROOT}/test/bench/sdk_client.ts`, AGENT, "agent.yaml"];
    case "floor":
      return [...common, "-A", `${ROOT}/test/bench/floor_client.ts`, AGENT, "agent.yaml"];
  }
}

async function measure(client: Client, mode: Mode): Promise<Record<string, number>> {
  const out = Deno.makeTempFileSync({ prefix: "bench-" });
  const child = new Deno.Command(Deno.execPath(), {
    args: command(client),
    cwd: ROOT,
    env: {
      DENO_BIN: Deno.execPath(),
      BENCH_MODE: mode,
      BENCH_OUT: out,
      BENCH_T0: String(Date.now()),
      NO_COLOR: "1",
    },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const { code, stderr } = await child.output();
  const text = Deno.readTextFileSync(out);
  Deno.removeSync(out);
  if (code !== 0 || !text) {
    throw new Error(`${client} ${mode} failed (${code}):\n${new TextDecoder().decode(stderr)}`);
  }
  return JSON.parse(text);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

interface Row {
  what: string;
  client: number;
  reference: number;
  unit: string;
  goal: string;
  met: boolean;
}

const rows: Row[] = [];
function row(
  what: string,
  client: number,
  reference: number,
  unit: string,
  best: "high" | "low",
  goal: number,
) {
  const ratio = client / reference;
  rows.push({
    what,
    client,
    reference,
    unit,
    goal: `${best === "high" ? "≥" : "≤"} ${goal}`,
    met: best === "high" ? ratio >= goal : ratio <= goal,
  });
}

async function rounds(
  mode: Mode,
  clients: Client[],
): Promise<Record<Client, Record<string, number>[]>> {
  const results = { client: [], sdk: [], floor: [] } as Record<Client, Record<string, number>[]>;
  for (let round = 0; round < ROUNDS; round++) {
    for (const client of clients) results[client].push(await measure(client, mode));
  }
  return results;
}

const only = Deno.env.get("BENCH_ONLY");
const wanted = (mode: Mode | "scaling") => !only || only.split(",").includes(mode);
const of = (list: Record<string, number>[], key: string) => median(list.map((r) => r[key]));

console.log(`end-to-end, ${ROUNDS} rounds each, alternating client / SDK reference (medians)…`);
/** A measure: what it is, its key in the agent's report, its unit, which way is best, the goal. */
type Measure = [what: string, key: string, unit: string, best: "high" | "low", goal: number];

/** The parts of the end-to-end run: the agent's load, the clients measured, the measures. */
const PARTS: { mode: Mode; clients: Client[]; measures: Measure[] }[] = [
  {
    mode: "pipelined",
    clients: ["client", "sdk", "floor"],
    measures: [
      ["pipelined calls/s (20,000, 64 in flight)", "callsPerSecond", "calls/s", "high", 2.0],
      ["  peak RSS, pipelined", "peakRss", "B", "low", 0.8],
    ],
  },
  {
    mode: "sequential",
    clients: ["client", "sdk", "floor"],
    measures: [
      ["sequential round trip (2,000 calls)", "roundTripMs", "ms", "low", 0.8],
      ["  peak RSS, sequential", "peakRss", "B", "low", 0.8],
    ],
  },
  {
    mode: "big",
    clients: ["client", "sdk"],
    measures: [
      ["16 MiB streamed message", "seconds", "s", "low", 0.9],
      ["  peak RSS, 16 MiB message", "peakRss", "B", "low", 1.0],
    ],
  },
  {
    mode: "startup",
    clients: ["client", "sdk"],
    measures: [["start-up, until mm gets initialize", "initializeAfterMs", "ms", "low", 0.8]],
  },
];

let floorCalls = 0;
let floorRoundTrip = 0;
for (const { mode, clients, measures } of PARTS) {
  if (!wanted(mode)) continue;
  const runs = await rounds(mode, clients);
  for (const [what, key, unit, best, goal] of measures) {
    row(what, of(runs.client, key), of(runs.sdk, key), unit, best, goal);
  }
  if (mode === "pipelined") {
    floorCalls = of(runs.floor, "callsPerSecond") / of(runs.client, "callsPerSecond");
  }
  if (mode === "sequential") floorRoundTrip = of(runs.floor, "roundTripMs");
}

const format = (value: number, unit: string) =>
  unit === "B"
    ? `${(value / 2 ** 20).toFixed(1)} MiB`
    : `${value.toFixed(unit === "calls/s" ? 0 : 3)} ${unit}`;
console.log("\n| measure | client.ts | SDK reference | ratio | goal | met |");
console.log("|---|---|---|---|---|---|");
for (const r of rows) {
  console.log(
    `| ${r.what} | ${format(r.client, r.unit)} | ${format(r.reference, r.unit)} | ${
      (r.client / r.reference).toFixed(2)
    } | ${r.goal} | ${r.met ? "yes" : "NO"} |`,
  );
}
if (floorCalls) {
  console.log(
    `\nthe client answers ${(1 / floorCalls).toFixed(2)}× the pipelined calls/s of the floor ` +
      `(a line echo with canned answers; goal ≥ 0.6: ${1 / floorCalls >= 0.6 ? "yes" : "NO"})`,
  );
}
if (floorRoundTrip) {
  console.log(
    `floor sequential round trip: ${floorRoundTrip.toFixed(3)} ms ` +
      `(the agent's and the operating system's share of every round trip)`,
  );
}

// ─── Scaling of the framer ───────────────────────────────────────────────────

if (!wanted("scaling")) Deno.exit(0);

console.log(
  "\nframing cost by message size (LineReader: split and decode, 64 KiB chunks, fastest of 9, the least",
);
console.log(
  "disturbed by a noisy machine), beside one plain indexOf pass over the same bytes, which shows what",
);
console.log("the machine's memory makes of the size alone:");
console.log("| size | framer | × previous | plain pass | × previous | framer ÷ plain pass |");
console.log("|---|---|---|---|---|---|");
let previous = { framer: 0, plain: 0 };
for (const mib of [1, 2, 4, 8, 16]) {
  const bytes = new TextEncoder().encode(
    `{"text":"${"é".repeat(mib * 2 ** 18)}${"x".repeat(mib * 2 ** 19)}"}\n`,
  );
  const framer: number[] = [];
  const plain: number[] = [];
  let lines = 0;
  for (let i = 0; i < 9; i++) {
    let started = performance.now();
    for (let at = 0; at < bytes.length; at += 65536) bytes.subarray(at, at + 65536).indexOf(10);
    plain.push(performance.now() - started);
    const reader = new LineReader();
    started = performance.now();
    for (let at = 0; at < bytes.length; at += 65536) {
      for (const line of reader.push(bytes.subarray(at, at + 65536))) {
        lines += line.length > 0 ? 1 : 0;
      }
    }
    framer.push(performance.now() - started);
  }
  if (lines !== 9) throw new Error(`${mib} MiB: ${lines} lines read, not 9`);
  const time = { framer: Math.min(...framer), plain: Math.min(...plain) };
  const times = (now: number, before: number) => before ? (now / before).toFixed(2) : "–";
  console.log(
    `| ${mib} MiB | ${time.framer.toFixed(1)} ms | ${times(time.framer, previous.framer)} | ${
      time.plain.toFixed(1)
    } ms | ${times(time.plain, previous.plain)} | ${(time.framer / time.plain).toFixed(1)} |`,
  );
  previous = time;
}
