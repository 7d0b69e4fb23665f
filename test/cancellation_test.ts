/**
 * Cancelling a turn: `--turn-timeout` cancels a turn mm has gone silent in, the ACP way, and the
 * run ends with 124; a turn in which mm keeps sending, or waits for the client, is not cut.
 */

import assert from "node:assert/strict";
import { assertNoPeerLeft, clientWithTools, rogue, startClient } from "./_run.ts";

const SLOW_TOOL = `  {
    name: "slow",
    description: "Answers after a while.",
    method: "_test/slow",
    inputSchema: { type: "object", properties: { ms: { type: "number" } } },
    call: ({ ms }) =>
      new Promise((resolve) => setTimeout(() => resolve(toolText("slow done")), Number(ms))),
  },
`;

Deno.test("--turn-timeout: a turn mm is silent in is cancelled after that long, not before, and ends 124", async () => {
  const options = rogue("silent", { args: ["--turn-timeout", "1"], deadlineMs: 20_000 });
  const client = startClient(options);
  await client.waitForStderr('"method":"session/prompt"', 10_000);
  const prompted = performance.now();
  await client.waitForStderr('"method":"session/cancel"', 10_000);
  const silence = performance.now() - prompted;
  const run = await client.done();
  assert.ok(silence >= 950, `cancelled after ${silence} ms of silence: before 1 s`);
  assert.ok(silence < 3000, `cancelled after ${silence} ms of silence`);
  assert.equal(run.code, 124, run.stderr);
  assert.equal(run.out.at(-1), "[cancelled]");
  assert.ok(run.log.includes("[client] cancelling…"), run.stderr);
  assert.equal(
    run.log.filter((l) => l.startsWith("error: ")).join("\n"),
    "error: mm sent nothing for 1 s; turn cancelled",
  );
  assert.ok(run.log.includes("[client] continue with: --resume 20261130-120000-0badc0de"));
  assertNoPeerLeft(options.env!.ROGUE_PID_FILE);
});

Deno.test("--turn-timeout: mm that keeps sending updates for longer than the timeout is not cut", async () => {
  const run = await startClient(rogue("chatty", {
    args: ["--turn-timeout", "0.8"],
    env: { ROGUE_CHATTY_MS: "2400" },
  })).done();
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out.slice(-2), ["Done talking.", "[end_turn]"]);
  assert.ok(!run.stderr.includes("session/cancel"), run.stderr);
});

Deno.test("--turn-timeout: mm waiting for the client's answer is not silent", async () => {
  const run = await startClient({
    ...rogue("slow-client-call", { args: ["--turn-timeout", "0.5"] }),
    client: clientWithTools(SLOW_TOOL),
  }).done();
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /\[rogue\] answer .*"slow done"/);
  assert.ok(!run.stderr.includes("session/cancel"), run.stderr);
});

Deno.test("--turn-timeout: mm that ignores the cancel is killed after the grace, and the run still ends 124", async () => {
  const options = rogue("ignore-cancel", { args: ["--turn-timeout", "0.5"], deadlineMs: 20_000 });
  const run = await startClient(options).done();
  assert.equal(run.code, 124, run.stderr);
  assert.ok(run.log.includes("[client] mm did not answer the cancellation in time; killing it"));
  assert.ok(run.log.includes("error: mm sent nothing for 0.5 s; turn cancelled"), run.stderr);
  assertNoPeerLeft(options.env!.ROGUE_PID_FILE);
});
