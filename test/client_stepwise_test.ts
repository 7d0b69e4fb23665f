/**
 * The main exchanges again, against a model as untidy as a real one
 * (`MM_SIM_MODEL=stepwise`): a sentence before each tool call, an
 * `in_progress` update before the final one, one call at a time. What the
 * user sees must stay whole lines: a tool line never glued to the sentence
 * before it, a `[client]` line never in the middle of the answer.
 */

import assert from "node:assert/strict";
import { hostInfo } from "../client.ts";
import {
  agentFileWith,
  type ClientResult,
  type ClientRun,
  ROOT,
  runClient,
  sessionOf,
  startClient,
} from "./_run.ts";
import { shellWords } from "./_pty.ts";

const STEPWISE = { MM_SIM_MODEL: "stepwise" };
const OS_TEXT = hostInfo("os").content[0].text;
const MEMORY_LINE = /^│ \d+\.\d GiB free of \d+\.\d GiB$/;

function stepwise(run: ClientRun = {}): Promise<ClientResult> {
  return runClient({ ...run, env: { ...STEPWISE, ...run.env } });
}

Deno.test("stepwise, meta mode: each sentence, tool line and result is a line of its own", async () => {
  const run = await stepwise();
  assert.equal(run.code, 0, run.stderr);
  const session = sessionOf(run.log);
  assert.deepEqual(run.out.slice(0, 7), [
    "❓ What operating system does my machine run, and how much memory does it have?",
    "Let me ask host_info about the operating system. ",
    "🛠️ client: host_info",
    `│ ${OS_TEXT}`,
    "Let me ask host_info about the memory. ",
    "🛠️ client: host_info",
    run.out[6],
  ]);
  assert.match(run.out[6], MEMORY_LINE);
  assert.match(
    run.out[7],
    /^Here is what host_info reports about your machine — operating system: /,
  );
  assert.equal(run.out[8], "[end_turn]");
  assert.equal(run.out.length, 9);
  // One call at a time: the second call reaches the client after the first result came back.
  const trace = run.stderr.split("\n");
  const secondCall = trace.findIndex((l) => l.startsWith("← ") && l.includes('"topic":"memory"'));
  const firstResult = trace.findIndex((l) => l.includes('"status":"completed"'));
  assert.ok(firstResult >= 0 && firstResult < secondCall, "the calls are one after the other");
  assert.ok(run.log.includes(`[client] host_info {"topic":"memory"} (session ${session})`));
});

Deno.test("stepwise, request mode: the list is answered and the calls go one at a time", async () => {
  const run = await stepwise({
    args: ["--request", "Which CPU do I have, and since when is it up?"],
  });
  assert.equal(run.code, 0, run.stderr);
  const session = sessionOf(run.log);
  assert.ok(run.log.includes(`[client] list requested for session ${session}`));
  assert.deepEqual(run.out.filter((l) => l.startsWith("🛠️") || l.startsWith("Let me")), [
    "Let me ask host_info about the CPU. ",
    "🛠️ client: host_info",
    "Let me ask host_info about the uptime. ",
    "🛠️ client: host_info",
  ]);
  assert.equal(run.out.at(-1), "[end_turn]");
});

Deno.test("stepwise with permissions: each call is allowed just before it runs", async () => {
  const agent = agentFileWith({ "yolo: true": "yolo: false" });
  const run = await stepwise({ args: ["--agent", agent], readAlso: [agent] });
  assert.equal(run.code, 0, run.stderr);
  const decisions = run.log.filter((l) =>
    l.startsWith("[client] permission") || l.startsWith("[client] host_info")
  );
  assert.deepEqual(decisions.map((l) => l.split(" ").slice(0, 2).join(" ")), [
    "[client] permission",
    "[client] host_info",
    "[client] permission",
    "[client] host_info",
  ]);
  assert.ok(run.out.includes(`│ ${OS_TEXT}`));
});

Deno.test("stepwise, a failed call: the failure and its text follow the sentence on lines of their own", async () => {
  const run = await stepwise({ args: ["How big is my disk?"] });
  assert.equal(run.code, 0, run.stderr);
  const at = run.out.indexOf("✖ client: host_info failed");
  assert.ok(at > 0, run.stdout);
  assert.equal(
    run.out[at + 1],
    '│ [client tool error: unknown topic "disk"; use one of: os, cpu, memory, uptime]',
  );
  assert.equal(run.out[at - 1], "🛠️ client: host_info");
});

Deno.test("stepwise, Ctrl-C in the middle of the turn cancels it the ACP way", async () => {
  const client = startClient({ env: { ...STEPWISE, MM_SIM_THINK_MS: "20000" } });
  await client.waitForStdout("❓", 20_000);
  await client.waitForStderr("agent_thought_chunk", 20_000);
  client.child.kill("SIGINT");
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  assert.ok(run.stderr.includes('"method":"session/cancel"'));
  assert.equal(run.out.at(-1), "[cancelled]");
});

Deno.test("stepwise, one pipe for both streams: no diagnostic line starts inside the answer", async () => {
  const command = shellWords([
    Deno.execPath(),
    "run",
    "--quiet",
    "--allow-all",
    `${ROOT}/client.ts`,
    "--mm",
    `${ROOT}/test/mm-sim`,
    "--verbose",
    "--trace",
  ]);
  const output = await new Deno.Command("sh", {
    args: ["-c", `${command} 2>&1`],
    cwd: ROOT,
    env: { ...STEPWISE, DENO_BIN: Deno.execPath(), NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  assert.equal(output.code, 0, text);
  for (const marker of ["[client] ", "[acp] ", "→ ", "← ", "usage: ", "🛠️ ", "│ "]) {
    for (const line of text.split("\n").filter((l) => l.includes(marker))) {
      assert.ok(line.startsWith(marker), `glued: ${JSON.stringify(line)}`);
    }
  }
});
