/**
 * Tools the client lends: the registry, tools that answer later, tools mm cancels, tools that
 * fail. The real client, or a copy of it with tools added to `TOOLS` exactly as the README says,
 * as a process against a peer that calls them directly (`test/rogue-mm`).
 */

import assert from "node:assert/strict";
import { clientWithTools, rogue, runClient } from "./_run.ts";
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
