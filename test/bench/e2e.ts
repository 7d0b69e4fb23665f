/**
 * The end-to-end benchmark: `client.ts`, the SDK reference client
 * (`sdk_client.ts`) and a floor (`floor_client.ts`) each drive the same
 * benchmark agent (`bench_mm.ts`), alternating A B A B over several rounds
 * on one machine, so that only ratios between them are reported. Then the
 * framing cost series at 1, 2, 4, 8 and 16 MiB.
 *
 * Peak memory is read by the agent from `/proc` and exists only on Linux:
 * elsewhere those rows print "n/a".
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
type Mode = "pipelined" | "sequential" | "big" | "startup" | "notool" | "help";
/** What a run reports: the agent's measures, and `exitAfterMs`; `null` where there is no figure. */
type Report = Record<string, number | null>;

function command(client: Client): string[] {
  const common = ["run", "--quiet", "--no-prompt", "--config", `${ROOT}/deno.json`];
  const tests = ["run", "--quiet", "--no-prompt", "--config", `${ROOT}/test/deno.json`];
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
      return [...tests, "-A", `${ROOT}/test/bench/sdk_client.ts`, AGENT, "agent.yaml"];
    case "floor":
      return [...tests, "-A", `${ROOT}/test/bench/floor_client.ts`, AGENT, "agent.yaml"];
  }
}

/**
 * `help`: how soon each client has done its first work — `client.ts --help` printed its usage and
 * exited; the SDK client, which has no `--help`, sent mm `initialize` (`readyAfterMs`).
 */
async function measureHelp(client: Client): Promise<Report> {
  if (client !== "client") {
    const report = await measure(client, "startup");
    return { readyAfterMs: report.initializeAfterMs };
  }
  const started = performance.now();
  const args = command("client").filter((arg) => arg !== "How much memory?");
  const { code } = await new Deno.Command(Deno.execPath(), {
    args: [...args, "--help"],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).output();
  if (code !== 0) throw new Error(`client.ts --help failed (${code})`);
  return { readyAfterMs: performance.now() - started };
}

/** One run of a client against the agent in a mode; `exitAfterMs`: from its spawn to its exit. */
async function measure(client: Client, mode: Mode): Promise<Report> {
  if (mode === "help") return await measureHelp(client);
  const out = Deno.makeTempFileSync({ prefix: "bench-" });
  const started = performance.now();
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
  const exited = child.status.then(() => performance.now() - started);
  const { code, stderr } = await child.output();
  const text = Deno.readTextFileSync(out);
  Deno.removeSync(out);
  if (code !== 0 || !text) {
    throw new Error(`${client} ${mode} failed (${code}):\n${new TextDecoder().decode(stderr)}`);
  }
  return { ...JSON.parse(text), exitAfterMs: await exited };
}

/** The median; `NaN` for none, or if any is missing (peak memory where there is no `/proc`). */
function median(values: (number | null | undefined)[]): number {
  if (values.length === 0 || values.some((value) => typeof value !== "number")) return NaN;
  const sorted = (values as number[]).toSorted((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** A line of the table: the three clients' medians (`NaN`: not run, or no figure), the ratio. */
interface Row {
  what: string;
  client: number;
  sdk: number;
  floor: number;
  ratio: number;
  unit: string;
  goal: string;
  met: string;
}

const rows: Row[] = [];

/** Each client's reports, in the order of the runs. */
type Runs = Record<Client, Report[]>;
/** `rounds` rounds of the clients in turn, A B C A B C…, so that a slow spell hits each alike. */
async function runRounds(mode: Mode, clients: Client[], rounds: number): Promise<Runs> {
  const results: Runs = { client: [], sdk: [], floor: [] };
  for (let round = 0; round < rounds; round++) {
    for (const client of clients) results[client].push(await measure(client, mode));
  }
  return results;
}

const only = Deno.env.get("BENCH_ONLY");
const wanted = (mode: Mode | "scaling") => !only || only.split(",").includes(mode);
const of = (list: Report[], key: string) => median(list.map((r) => r[key]));

/**
 * A measure: what it is, its key in the report, its unit, which way is best, the goal for the
 * client's figure divided by the reference's — the SDK's, or the floor's (`null`: no goal, the
 * ratio is shown for information).
 */
type Measure = [
  what: string,
  key: string,
  unit: string,
  best: "high" | "low",
  goal: number | null,
  against: "sdk" | "floor",
];

/**
 * The parts of the end-to-end run: the agent's load, the clients measured, the measures, and how
 * many times `BENCH_ROUNDS` rounds it runs (a start is short, so its noise is larger).
 */
const PARTS: { mode: Mode; clients: Client[]; measures: Measure[]; times?: number }[] = [
  {
    mode: "pipelined",
    clients: ["client", "sdk", "floor"],
    measures: [
      ["pipelined calls/s (20,000, 64 in flight)", "callsPerSecond", "calls/s", "high", 2.0, "sdk"],
      ["  the same, ÷ the floor", "callsPerSecond", "calls/s", "high", 0.6, "floor"],
      ["  peak RSS, pipelined", "peakRss", "B", "low", 0.8, "sdk"],
    ],
  },
  {
    mode: "sequential",
    clients: ["client", "sdk", "floor"],
    measures: [
      ["sequential round trip (2,000 calls)", "roundTripMs", "ms", "low", 0.8, "sdk"],
      ["  peak RSS, sequential", "peakRss", "B", "low", 0.8, "sdk"],
    ],
  },
  {
    mode: "big",
    clients: ["client", "sdk"],
    measures: [
      ["16 MiB streamed message", "seconds", "s", "low", 0.9, "sdk"],
      ["  peak RSS, 16 MiB message", "peakRss", "B", "low", 1.0, "sdk"],
    ],
  },
  {
    mode: "startup",
    clients: ["client", "sdk", "floor"],
    measures: [
      ["start-up, until mm gets initialize", "initializeAfterMs", "ms", "low", 0.8, "sdk"],
    ],
  },
  {
    mode: "help",
    clients: ["client", "sdk"],
    measures: [
      ["--help printed (SDK: until mm gets initialize)", "readyAfterMs", "ms", "low", 0.8, "sdk"],
    ],
  },
  {
    mode: "notool",
    clients: ["client", "sdk", "floor"],
    times: 3,
    measures: [
      ["no-tool turn, spawn to exit", "exitAfterMs", "ms", "low", 0.8, "sdk"],
      ["  the same, ÷ the floor", "exitAfterMs", "ms", "low", null, "floor"],
      ["  peak RSS, no-tool turn", "peakRss", "B", "low", 0.8, "sdk"],
    ],
  },
];

console.log(`end-to-end, ${ROUNDS} rounds, the clients alternating (medians)…`);
for (const { mode, clients, measures, times } of PARTS) {
  if (!wanted(mode)) continue;
  const runs = await runRounds(mode, clients, ROUNDS * (times ?? 1));
  for (const [what, key, unit, best, goal, against] of measures) {
    const client = of(runs.client, key);
    const ratio = client / of(runs[against], key);
    let met = "–"; // no goal: the ratio is for information
    if (goal !== null) met = (best === "high" ? ratio >= goal : ratio <= goal) ? "yes" : "NO";
    if (Number.isNaN(ratio)) met = "n/a"; // no figure: peak memory where there is no `/proc`
    const bound = `${best === "high" ? "≥" : "≤"} ${goal} × ${against === "sdk" ? "SDK" : "floor"}`;
    rows.push({
      what,
      client,
      sdk: of(runs.sdk, key),
      floor: of(runs.floor, key),
      ratio,
      unit,
      goal: goal === null ? "–" : bound,
      met,
    });
  }
}

/** A figure with its unit; "–" where the client was not run, or there is no figure. */
function format(value: number, unit: string): string {
  if (Number.isNaN(value)) return "–";
  if (unit === "B") return `${(value / 2 ** 20).toFixed(1)} MiB`;
  let decimals = 3; // a round trip is a fraction of a millisecond
  if (unit === "calls/s") decimals = 0;
  else if (value >= 10) decimals = 1;
  return `${value.toFixed(decimals)} ${unit}`;
}
console.log("\n| measure | client.ts | SDK reference | floor | ratio | goal | met |");
console.log("|---|---|---|---|---|---|---|");
for (const r of rows) {
  const ratio = Number.isNaN(r.ratio) ? "n/a" : r.ratio.toFixed(2);
  const figures = [r.client, r.sdk, r.floor].map((value) => format(value, r.unit)).join(" | ");
  console.log(`| ${r.what} | ${figures} | ${ratio} | ${r.goal} | ${r.met} |`);
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
