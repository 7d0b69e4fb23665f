/**
 * Tools the client lends: the registry, tools that answer later, tools mm cancels, tools that
 * fail. The real client, or a copy of it with tools added to `TOOLS` exactly as the README says,
 * as a process against a peer that calls them directly (`test/rogue-mm`).
 */

import assert from "node:assert/strict";
import {
  agentFileWith,
  type ClientResult,
  clientWithTools,
  rogue,
  ROOT,
  runClient,
} from "./_run.ts";
import { TOOL_DESCRIPTIONS, TOOLS } from "../client.ts";

/** Three tools a copier might write: one that takes its time, one that throws, one that rejects. */
const LENT = `  {
    name: "slow",
    description: "Answers after a while.",
    method: "_test/slow",
    inputSchema: { type: "object", properties: { ms: { type: "number" } } },
    call: ({ ms }, signal) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => resolve(toolText(\`slow done after \${ms} ms\`)), Number(ms));
        signal.addEventListener("abort", () => {
          clearTimeout(timer);
          console.error("[tool] slow saw its signal abort");
          reject(signal.reason);
        });
      }),
  },
  {
    name: "throws",
    description: "Fails at once.",
    method: "_test/throws",
    inputSchema: { type: "object" },
    call: () => {
      throw new Error("boom");
    },
  },
  {
    name: "rejects",
    description: "Fails later.",
    method: "_test/rejects",
    inputSchema: { type: "object" },
    call: async () => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      throw new Error("later boom");
    },
  },
`;

type Answer = { id: number; result?: { content: { text: string }[]; isError?: boolean } } & {
  error?: { code: number; message: string };
  result?: { outcome?: { optionId?: string; outcome: string } };
};

/** The peer's reports of the answers it got, in the order they came. */
function answers(stderr: string): Answer[] {
  return stderr.split("\n").filter((l) => l.startsWith("[rogue] answer "))
    .map((l) => JSON.parse(l.slice("[rogue] answer ".length)));
}

async function lentToolsRun() {
  const run = await runClient({ ...rogue("lent-tools"), client: clientWithTools(LENT) });
  assert.equal(run.code, 0, run.stderr);
  return { run, answers: answers(run.stderr) };
}

Deno.test("tools: every entry of TOOLS is offered as its description alone, the function left out", () => {
  assert.deepEqual(TOOLS.map((t) => t.name), TOOL_DESCRIPTIONS.map((t) => t.name));
  for (const [i, description] of TOOL_DESCRIPTIONS.entries()) {
    const { call: _, ...rest } = TOOLS[i];
    assert.deepEqual(description, rest);
    assert.equal(JSON.stringify(description), JSON.stringify(rest), "it crosses the wire whole");
  }
});

Deno.test("tools: a tool that answers later lets the client answer other calls meanwhile", async () => {
  const { run, answers: got } = await lentToolsRun();
  // The host_info call came second and was answered first: JSON-RPC allows any order.
  assert.deepEqual(got.slice(0, 2).map((a) => a.id), [2, 1], run.stderr);
  assert.match(got[0].result!.content[0].text, /host name/);
  assert.deepEqual(got[1].result, { content: [{ type: "text", text: "slow done after 400 ms" }] });
  assert.ok(run.log.includes('[client] slow {"ms":400} (session 20261130-120000-0badc0de)'));
});

Deno.test("tools: a call mm cancels while it runs aborts the tool's signal and is answered -32800 once", async () => {
  const { run, answers: got } = await lentToolsRun();
  const cancelled = got.filter((a) => a.id === 3);
  assert.deepEqual(cancelled, [{
    jsonrpc: "2.0",
    id: 3,
    error: { code: -32800, message: "Request cancelled" },
  } as unknown as Answer]);
  assert.ok(run.stderr.includes("[tool] slow saw its signal abort"), run.stderr);
  assert.ok(!run.stderr.includes("slow failed"), "an aborted call is not a failure to report");
});

Deno.test("tools: a tool that throws or rejects is an error result naming it, logged, and the turn goes on", async () => {
  const { run, answers: got } = await lentToolsRun();
  const result = (id: number) => got.find((a) => a.id === id)?.result;
  assert.deepEqual(result(4), {
    content: [{ type: "text", text: "throws failed: boom" }],
    isError: true,
  });
  assert.deepEqual(result(5), {
    content: [{ type: "text", text: "rejects failed: later boom" }],
    isError: true,
  });
  assert.ok(run.log.includes("[client] throws failed: boom"), run.stderr);
  assert.ok(run.log.includes("[client] rejects failed: later boom"), run.stderr);
  assert.ok(got.every((a) => a.error === undefined || Number.isInteger(a.error.code)));
  assert.equal(run.out.at(-1), "[end_turn]");
});

Deno.test("tools: the permission policy follows TOOLS: a lent tool is allowed, in the copy only", async () => {
  const { answers: got } = await lentToolsRun();
  const chosen = (id: number) => got.find((a) => a.id === id)?.result?.outcome?.optionId;
  assert.deepEqual([chosen(6), chosen(7)], ["yes", "yes"]);
  const original = await runClient(rogue("lent-tools"));
  const refused = answers(original.stderr);
  assert.equal(refused.find((a) => a.id === 6)?.result?.outcome?.optionId, "no");
  assert.deepEqual(refused.find((a) => a.id === 1)?.error?.code, -32601, "not lent: not found");
});

/** The second tool of the README's "Things to try", as the README shows it. */
function readmeSecondTool(): string {
  const readme = Deno.readTextFileSync(`${ROOT}/README.md`);
  const item = readme.slice(readme.indexOf("**Add a second tool**"));
  const block = item.match(/\n {2}```ts\n([\s\S]*?)\n {2}```\n/)?.[1];
  if (!block) throw new Error("the README's second tool has no ts block");
  return `${block.split("\n").map((line) => line.replace(/^ {2}/, "")).join("\n")}\n`;
}

/** Runs a copy of client.ts with the README's second tool, asking about the clock. */
function copierRun(args: string[] = [], agent?: string) {
  return runClient({
    client: clientWithTools(readmeSecondTool()),
    args: [...(agent ? ["--agent", agent] : []), ...args, "What does the clock say?"],
    readAlso: agent ? [agent] : undefined,
  });
}

function assertClockShown(run: ClientResult): void {
  assert.equal(run.code, 0, run.stderr);
  assert.ok(run.out.includes("🛠️ client: clock"), run.stdout);
  const shown = run.out.find((line) => line.startsWith("│ "));
  assert.match(shown ?? "", /^│ \w{3} \w{3} \d\d \d{4} \d\d:\d\d:\d\d GMT/, run.stdout);
  assert.ok(
    run.log.some((line) => /^\[client\] clock \{\} \(session \d{8}-/.test(line)),
    run.stderr,
  );
  assert.equal(run.out.at(-1), "[end_turn]");
}

Deno.test("tools: the README's second tool, added as it says, is listed and called (meta discovery)", async () => {
  const run = await copierRun();
  assert.ok(
    run.log.includes("[acp] client tools (meta): client_clock, client_host_info"),
    run.stderr,
  );
  assertClockShown(run);
});

Deno.test("tools: the README's second tool is given in the list request too (request discovery)", async () => {
  const run = await copierRun(["--request"]);
  assert.match(
    run.stderr,
    /\[acp\] session \S+ client tools \(request\): client_clock, client_host_info/,
  );
  assertClockShown(run);
});

Deno.test("tools: with yolo false the README's second tool is allowed, the policy following TOOLS", async () => {
  const run = await copierRun([], agentFileWith({ "yolo: true": "yolo: false" }));
  assert.ok(run.log.includes('[client] permission for "client: clock": allowed'), run.stderr);
  assertClockShown(run);
});
