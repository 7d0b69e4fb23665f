/**
 * The MCP road measured beside mm's road and beside the MCP SDK's own servers, in one run, the
 * servers alternating round after round so that a slow spell hits each alike: host_info called
 * one at a time (a call's cost) and 64 in flight (calls per second) —
 * - through mm's road: `client.ts` against the benchmark agent (`bench_mm.ts`);
 * - through the client's MCP server over HTTP, and through its relay (stdio): `client.ts -- <an
 *   agent that measures>` (`mcp_agent.ts`);
 * - through the MCP SDK's streamable HTTP server, stateful and stateless (`sdk_mcp_server.ts`),
 *   measured by the same few lines of MCP client.
 *
 * Run with `deno task bench`. Prints; asserts nothing.
 *
 * @module
 */

import { type McpMeasures, measureMcp, overRawHttp } from "./mcp_agent.ts";

const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");
const ROUNDS = Number(Deno.env.get("BENCH_ROUNDS") ?? 5);
const START_PERMISSIONS = String(JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`)).tasks.start)
  .split(/\s+/).filter((word) => word.startsWith("--allow-"));
const CLIENT = [
  "run",
  "--quiet",
  "--no-prompt",
  "--config",
  `${ROOT}/deno.json`,
  ...START_PERMISSIONS,
];

/** Runs `client.ts` with `args`, its agent writing what it measured to a file; returns that. */
async function viaClient(
  args: string[],
  env: Record<string, string>,
): Promise<Record<string, number>> {
  const out = Deno.makeTempFileSync({ prefix: "mcp-bench-" });
  const { code, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [...CLIENT, `${ROOT}/client.ts`, ...args],
    cwd: ROOT,
    env: {
      DENO_BIN: Deno.execPath(),
      BENCH_OUT: out,
      BENCH_T0: String(Date.now()),
      NO_COLOR: "1",
      ...env,
    },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  const text = Deno.readTextFileSync(out);
  Deno.removeSync(out);
  if (code !== 0 || !text) {
    throw new Error(`${args.join(" ")} failed (${code}):\n${new TextDecoder().decode(stderr)}`);
  }
  return JSON.parse(text);
}

/** mm's road: one call at a time, then pipelined, as `bench_mm.ts` measures them. */
async function mmRoad(): Promise<McpMeasures> {
  const mm = ["--mm", `${ROOT}/test/bench/bench-mm`, "How much memory?"];
  const sequential = await viaClient(mm, { BENCH_MODE: "sequential" });
  const pipelined = await viaClient(mm, { BENCH_MODE: "pipelined" });
  return { roundTripMs: sequential.roundTripMs, callsPerSecond: pipelined.callsPerSecond };
}

/** The client's MCP server, over `transport`, measured by the agent it lends to. */
async function mcpRoad(transport: "http" | "stdio"): Promise<McpMeasures> {
  const agent = [Deno.execPath(), "run", "-A", `${ROOT}/test/bench/mcp_agent.ts`];
  const measured = await viaClient(["Which OS?", "--", ...agent], { BENCH_TRANSPORT: transport });
  return { roundTripMs: measured.roundTripMs, callsPerSecond: measured.callsPerSecond };
}

/** The MCP SDK's own server, `stateful` or `stateless`, measured from here. */
async function sdkServer(mode: "stateful" | "stateless"): Promise<McpMeasures> {
  const server = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--config",
      `${ROOT}/test/deno.json`,
      `${ROOT}/test/bench/sdk_mcp_server.ts`,
      mode,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let said = "";
  while (!said.includes("\n")) {
    const read = await reader.read();
    if (read.done) throw new Error("the SDK's server did not start");
    said += read.value;
  }
  try {
    return await measureMcp(overRawHttp(said.trim().replace(/^listening /, ""), {}));
  } finally {
    server.kill("SIGKILL");
    await server.status;
    await reader.cancel().catch(() => {});
  }
}

const ROADS: Record<string, () => Promise<McpMeasures>> = {
  "mm's road (client tools)": mmRoad,
  "the client's MCP server, HTTP": () => mcpRoad("http"),
  "the client's MCP server, relay": () => mcpRoad("stdio"),
  "MCP SDK server, stateful HTTP": () => sdkServer("stateful"),
  "MCP SDK server, stateless HTTP": () => sdkServer("stateless"),
};

const runs: Record<string, McpMeasures[]> = {};
console.log(`MCP road, ${ROUNDS} rounds, the servers alternating (medians)…`);
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, measure] of Object.entries(ROADS)) (runs[name] ??= []).push(await measure());
}
const median = (values: number[]) => {
  const sorted = values.toSorted((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const of = (name: string, key: keyof McpMeasures) => median(runs[name].map((run) => run[key]));

console.log("\n| road | one call (round trip) | calls/s, 64 in flight |");
console.log("|---|---|---|");
for (const name of Object.keys(ROADS)) {
  const trip = of(name, "roundTripMs").toFixed(3);
  console.log(`| ${name} | ${trip} ms | ${of(name, "callsPerSecond").toFixed(0)} |`);
}
const mm = of("mm's road (client tools)", "roundTripMs");
const goals: [string, number, string, boolean][] = [
  [
    "HTTP calls/s ÷ the SDK's stateful server",
    of("the client's MCP server, HTTP", "callsPerSecond") /
    of("MCP SDK server, stateful HTTP", "callsPerSecond"),
    "≥ 2",
    true,
  ],
  [
    "relay calls/s ÷ the SDK's stateless server",
    of("the client's MCP server, relay", "callsPerSecond") /
    of("MCP SDK server, stateless HTTP", "callsPerSecond"),
    "≥ 1.5",
    true,
  ],
  [
    "a call over HTTP, beyond mm's road (ms)",
    of("the client's MCP server, HTTP", "roundTripMs") - mm,
    "≤ 0.3",
    false,
  ],
  [
    "a call through the relay, beyond mm's road (ms)",
    of("the client's MCP server, relay", "roundTripMs") - mm,
    "≤ 1",
    false,
  ],
];
console.log("\n| measure | figure | goal | met |");
console.log("|---|---|---|---|");
for (const [what, figure, goal, higher] of goals) {
  const bound = Number(goal.slice(2));
  const met = higher ? figure >= bound : figure <= bound;
  console.log(`| ${what} | ${figure.toFixed(2)} | ${goal} | ${met ? "yes" : "NO"} |`);
}
