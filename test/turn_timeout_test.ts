/**
 * A long turn: `--turn-timeout` cancels a turn mm has gone silent in, the ACP way, and exits 124;
 * its silence is counted from mm's last frame, mm waiting for the client's own answer (a tool, or
 * the person at a permission question) is not silence, and the timer ends with its turn.
 */

import assert from "./_assert.ts";
import {
  assertNoPeerLeft,
  assertTook,
  clientCommand,
  clientWithTools,
  idleRunMs,
  ROGUE,
  rogue,
  seen,
  sentWith,
  sleep,
  SLOW_TOOL,
  startClient,
  tempFile,
} from "./_run.ts";
import { atPermissionQuestion, hasScript, inTerminal, visibleLines } from "./_pty.ts";

Deno.test("--turn-timeout: a turn mm is silent in is cancelled after that long, not before, and ends 124", async () => {
  const idle = idleRunMs(); // beside the run: how long the machine takes to do nothing
  const run = await startClient(
    rogue("silent", { args: ["--turn-timeout", "1"] }),
  ).done();
  // The peer times its silence from its last write, which the client heard before the turn began.
  const silence = Number(
    seen(run.log).join("\n").match(/after (\d+) ms of silence/)?.[1],
  );
  assertTook("cancelled", silence, {
    least: 998,
    most: 1000,
    idle: await idle,
  });
  assert.equal(run.code, 124, run.stderr);
  assert.equal(run.out.at(-1), "[cancelled]");
  assert.ok(run.log.includes("[client] cancelling…"), run.stderr);
  assert.equal(
    run.log.filter((l) => l.startsWith("error: ")).join("\n"),
    "error: mm sent nothing for 1 s; turn cancelled",
  );
  assert.ok(
    run.log.includes(
      "[client] continue with: --resume 20261130-120000-0badc0de",
    ),
  );
  await assertNoPeerLeft(run.pidFile);
});

Deno.test("--turn-timeout: the silence is counted from mm's last frame, also when it began before the timer was set again", async () => {
  const idle = idleRunMs(); // beside the run: how long the machine takes to do nothing
  // mm speaks once 100 ms into the turn, then says nothing: the first check, 1.5 s in, finds 1.4 s
  // of silence, and the timer must fire 0.1 s later, not a whole 1.5 s later (at 2.9 s of it).
  const run = await startClient(rogue("silent", {
    args: ["--turn-timeout", "1.5"],
    env: { ROGUE_SPEAK_AFTER_MS: "100" },
  })).done();
  const silence = Number(
    seen(run.log).join("\n").match(/after (\d+) ms of silence/)?.[1],
  );
  // A timer set again for a whole 1.5 s would fire at 2.9 s of silence: beyond this bound unless
  // the machine is crowded.
  assertTook("cancelled", silence, {
    least: 1498,
    most: 1500,
    idle: await idle,
  });
  assert.equal(run.code, 124, run.stderr);
});

/**
 * A first turn under a 1 s `--turn-timeout` (with the stand-in's `env`), then at the `-i` prompt
 * for longer than the timeout, with room for the machine (twice a run that waits for nothing), then
 * a second question; the run, and how long the first turn took.
 */
async function idleAtThePrompt(env: Record<string, string>) {
  const client = startClient({
    args: ["-i", "--turn-timeout", "1", "How much memory?"],
    env,
    stdin: "open",
  });
  await client.waitForStdout("❓ How much memory?");
  const asked = performance.now();
  await client.waitForStdout("[end_turn]");
  const firstTurnMs = performance.now() - asked;
  const idle = await idleRunMs();
  await sleep(
    Math.max(0, 1000 + 2 * idle - (performance.now() - asked - firstTurnMs)),
  );
  await client.write("And since when is it up?\n");
  await client.waitForStdout("❓ And since when is it up?");
  await client.closeStdin();
  return { run: await client.done(), firstTurnMs };
}

Deno.test("--turn-timeout: the timer ends with its turn: nothing fires at the -i prompt or in the next turn", async () => {
  const { run } = await idleAtThePrompt({});
  assert.equal(run.code, 0, run.stderr);
  assert.equal(
    run.out.filter((line) => line === "[end_turn]").length,
    2,
    run.stdout,
  );
  assert.ok(!run.stderr.includes("mm sent nothing"), run.stderr);
  assert.ok(!run.stderr.includes("session/cancel"), run.stderr);
});

Deno.test("--turn-timeout: a timer set again in a long turn ends with it too: nothing fires at the -i prompt", async () => {
  // The answer streams in four pieces 600 ms apart: the 1 s check finds mm talking and sets the
  // timer again, and that timer, not only the first, must end with the turn.
  const { run, firstTurnMs } = await idleAtThePrompt({
    MM_SIM_STREAM_MS: "600",
  });
  assert.ok(
    firstTurnMs > 1200,
    `a turn of ${firstTurnMs} ms did not outlast the timeout`,
  );
  assert.equal(run.code, 0, run.stderr);
  assert.equal(
    run.out.filter((line) => line === "[end_turn]").length,
    2,
    run.stdout,
  );
  assert.ok(!run.stderr.includes("cancelling"), run.stderr);
  assert.ok(!run.stderr.includes("session/cancel"), run.stderr);
});

Deno.test("--turn-timeout: mm that keeps sending updates for longer than the timeout is not cut, each gap shorter than it", async () => {
  // Under a 4 s timeout, gaps of 1 s and 3 s, for 5 s: the silence is counted from the last update
  // (a client that cut after half the timeout, or timed the whole turn, would cut at 4 s).
  const run = await startClient(rogue("chatty", {
    args: ["--turn-timeout", "4"],
    env: { ROGUE_CHATTY_MS: "4000", ROGUE_CHATTY_GAPS_MS: "1000,3000" },
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
  assert.match(run.stderr, /\[rogue\] answer .*"slow done after 1500 ms"/);
  assert.ok(!run.stderr.includes("session/cancel"), run.stderr);
});

Deno.test("--turn-timeout: mm that ignores the cancel is killed after the grace, and the run still ends 124", async () => {
  const run = await startClient(
    rogue("ignore-cancel", { args: ["--turn-timeout", "0.5"] }),
  ).done();
  assert.equal(run.code, 124, run.stderr);
  assert.ok(
    run.log.includes(
      "[client] mm did not answer the cancellation in time; killing it",
    ),
  );
  assert.ok(
    run.log.includes("error: mm sent nothing for 0.5 s; turn cancelled"),
    run.stderr,
  );
  await assertNoPeerLeft(run.pidFile);
});

Deno.test("--turn-timeout: after Ctrl-C, a silence past the timeout does not cancel the turn again", async () => {
  // mm ignores the cancel: the turn timeout passes during the grace, and must leave it be.
  const idle = idleRunMs(); // beside the run: how long the machine takes to do nothing
  const client = startClient(
    rogue("ignore-cancel", { args: ["--turn-timeout", "1"] }),
  );
  await client.waitForStderr('"agent_thought_chunk"');
  client.child.kill("SIGINT");
  // Past the timeout since mm's last frame, with room for the machine; within the 5 s grace.
  await sleep(Math.min(1000 + 2 * await idle, 4000));
  try {
    client.child.kill("SIGINT"); // a second Ctrl-C, a person's: mm is killed
  } catch {
    /* on a machine so slow that the grace ran out first: the client ended mm itself */
  }
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  assert.equal(sentWith(run.stderr, "session/cancel").length, 1, run.stderr);
  assert.ok(!run.stderr.includes("mm sent nothing"), run.stderr);
  await assertNoPeerLeft(run.pidFile);
});

Deno.test("--turn-timeout: once the silence has cancelled the turn, a person's Ctrl-C ends it as theirs: mm killed, exit 130, not 124", async () => {
  // The other order of the test above, as a crowded machine may deliver them: the timer first.
  const client = startClient(
    rogue("ignore-cancel", { args: ["--turn-timeout", "1"] }),
  );
  await client.waitForStderr("[client] cancelling…");
  await sleep(400); // a later press, not a copy of one
  client.child.kill("SIGINT");
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  assert.ok(run.log.includes("[client] second Ctrl-C: killing mm"), run.stderr);
  assert.equal(sentWith(run.stderr, "session/cancel").length, 1, run.stderr);
  assert.ok(!run.stderr.includes("mm sent nothing"), run.stderr);
  await assertNoPeerLeft(run.pidFile);
});

Deno.test({
  name:
    "--turn-timeout: a person thinking over a permission question is not mm's silence: the turn goes on",
  ignore: !hasScript,
  async fn() {
    const pidFile = tempFile("pid", "");
    const terminal = inTerminal(
      clientCommand(["--mm", ROGUE, "--turn-timeout", "1"]),
      {
        env: { ROGUE_SCENARIO: "ask-shell", ROGUE_PID_FILE: pidFile },
      },
    );
    await atPermissionQuestion(terminal);
    await sleep(2500); // more than twice the timeout
    assert.ok(!terminal.screen().includes("cancelling"), terminal.screen());
    await terminal.type("a");
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    const lines = visibleLines(screen);
    assert.ok(
      lines.includes('[client] permission for "ls -la /srv": allowed (asked)'),
      screen,
    );
    assert.ok(lines.includes("[end_turn]"), lines.join("\n"));
    assert.ok(!screen.includes("mm sent nothing"), screen);
    await assertNoPeerLeft(pidFile);
  },
});
