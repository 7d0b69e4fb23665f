/**
 * How a run ends: the exit code of each stop reason, an mm that refuses, exits or is killed at
 * any stage, `--timeout` (and what it does not bound), a quick end after the last line, mm given
 * 2 s to exit and then killed with its whole process group, session/close sent first when mm has
 * it (within the same grace), mm's last output read before its exit counts, and a conversation
 * that cannot be written. No process outlives the client: every run
 * checks it (`_run.ts`), and these tests check it by name.
 */

import assert from "./_assert.ts";
import { DEFAULT_QUESTION, killGroup } from "../client.ts";
import {
  alive,
  assertNoPeerLeft,
  assertTook,
  clientCommand,
  discovery,
  exitTime,
  idleRunMs,
  MM_SIM,
  rogue,
  runClient,
  runRogue,
  runShell,
  seen,
  sentWith,
  silentMm,
  sleep,
  startClient,
  tempFile,
  type Traced,
  traced,
  WAIT_MS,
  within,
} from "./_run.ts";

// ─── Stop reasons ────────────────────────────────────────────────────────────

for (const stopReason of ["end_turn", "max_tokens", "max_turn_requests"]) {
  Deno.test(`ending: a turn ending in ${stopReason} prints it and exits 0`, async () => {
    const run = await runRogue("stop", { env: { ROGUE_STOP_REASON: stopReason } });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.out.at(-1), `[${stopReason}]`);
  });
}

Deno.test("ending: a turn ending in refusal exits 1; one mm cancelled unasked exits 130, says the client did not ask, and can be continued", async () => {
  const [refusal, cancelled] = await Promise.all([
    runRogue("refusal"),
    runRogue("cancelled-unasked"),
  ]);
  assert.equal(refusal.code, 1);
  assert.equal(refusal.out.at(-1), "[refusal]");
  assert.ok(!refusal.stderr.includes("continue with"), "a refusal is not a way to go on");
  assert.equal(cancelled.code, 130);
  assert.equal(cancelled.out.at(-1), "[cancelled]");
  assert.ok(
    cancelled.log.includes("[client] mm ended the turn as cancelled; the client did not ask"),
    cancelled.stderr,
  );
  // A cancelled turn leaves the session as it was: it can be continued.
  assert.ok(cancelled.log.includes(`[client] continue with: --resume 20261130-120000-0badc0de`));
});

Deno.test("ending: with -q, where no [refusal] is shown, a refusal's exit 1 is said on stderr", async () => {
  const quiet = await runRogue("refusal", { args: ["-q"], noTrace: true });
  assert.equal(quiet.code, 1);
  assert.deepEqual(quiet.log, ["[client] mm refused to answer (stop reason refusal)"]);
  const shown = await runRogue("refusal");
  assert.ok(!shown.log.some((line) => line.includes("refused to answer")), shown.stderr);
});

// ─── mm that refuses, exits or is killed ─────────────────────────────────────

for (
  const [scenario, method, message, how] of [
    ["refuse-initialize", "initialize", "no model configured", ""],
    ["refuse-session", "session/new", "cwd must be absolute", ""],
    ["refuse-prompt", "session/prompt", "the model is not loaded", ""],
    [
      "refuse-session-details",
      "session/new",
      "Internal error (Claude Code process exited with code 1 (not logged in))",
      " whose data.details says why, on one line",
    ],
    [
      "refuse-prompt-data",
      "session/prompt",
      "Internal error (rate limited; retry in 20 s)",
      " whose data is the reason",
    ],
  ]
) {
  Deno.test(`ending: mm answering ${method} with an error${how} ends the run with exit 1`, async () => {
    const run = await runRogue(scenario);
    assert.equal(run.code, 1, run.stderr);
    assert.equal(run.log.at(-1), `error: mm refused ${method}: ${message}`);
    assert.ok(!run.stderr.includes("    at "), "no stack trace");
  });
}

Deno.test("ending: mm speaking another protocol version is refused, even 1 as a string", async () => {
  for (const [scenario, version] of [["version-2", "2"], ["version-text", '"1"']]) {
    const run = await runRogue(scenario);
    assert.equal(run.code, 1, scenario);
    const refused = `error: mm speaks ACP protocol version ${version}; this client speaks 1`;
    assert.equal(run.log.at(-1), refused);
  }
});

Deno.test("ending: an mm that exits before answering initialize is named that way", async () => {
  const run = await runClient({ noMm: true, args: ["--mm", "/bin/true"] });
  assert.equal(run.code, 1, run.stderr);
  assert.equal(run.log.at(-1), "error: mm exited with code 0 before answering initialize");
});

Deno.test("ending: an mm that exits right after answering initialize is named before answering session/new", async () => {
  const run = await runRogue("exit-after-initialize");
  assert.equal(run.code, 1, run.stderr);
  assert.equal(run.log.at(-1), "error: mm exited with code 0 before answering session/new");
});

Deno.test("ending: mm exiting after a turn, while -i waits for the next question, is named that way", async () => {
  const run = await runRogue("exit-at-prompt", { args: ["-i", "Which OS?"], stdin: "open" });
  assert.equal(run.code, 1, run.stderr);
  assert.equal(run.out.at(-1), "[end_turn]");
  assert.equal(run.log.at(-1), "error: mm exited with code 4 before the next question");
});

Deno.test("ending: mm exiting in the middle of the turn ends the run with its exit code, no stack trace", async () => {
  const run = await runClient({ env: { MM_SIM_EXIT_IN_TURN: "3" } });
  assert.equal(run.code, 1);
  assert.equal(run.log.at(-1), "error: mm exited with code 3 before the turn ended");
  assert.ok(!run.stderr.includes("    at "), "no stack trace");
  await assertNoPeerLeft(run.pidFile);
});

Deno.test("ending: mm exiting while a call is answered ends the run with its exit code", async () => {
  const run = await runRogue("exit-mid-call");
  assert.equal(run.code, 1, run.stderr);
  assert.equal(run.log.at(-1), "error: mm exited with code 0 before the turn ended");
});

Deno.test("ending: mm killed by a signal mid-turn is reported with the signal's name", async () => {
  const run = await runRogue("killed");
  assert.equal(run.code, 1, run.stderr);
  assert.equal(run.log.at(-1), "error: mm exited with signal SIGKILL before the turn ended");
});

// ─── mm's last output ────────────────────────────────────────────────────────

Deno.test("ending: everything mm wrote before exiting is shown before its exit counts", async () => {
  const run = await runRogue("burst-then-exit");
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out, [
    `❓ ${DEFAULT_QUESTION}`,
    "🛠️ burst",
    "│ one",
    "│ two",
    ...Array.from({ length: 2000 }, (_, i) => `│ line ${i + 1}`),
    "All shown.",
    "[end_turn]",
  ]);
});

Deno.test("ending: a final answer that is mm's last bytes, without a line end, still ends the turn", async () => {
  const run = await runRogue("end-no-newline");
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out.slice(-2), ["last words", "[end_turn]"]);
});

Deno.test("ending: mm's last output is read even when its exit is seen first", async () => {
  // mm exits at once, while a process it started still holds its stdout and
  // writes the end of the turn 300 ms later: the client sees the exit before
  // the last output, and must read that output before it counts the exit.
  const pidFile = tempFile("pid", "");
  const frame = (message: object) => JSON.stringify({ jsonrpc: "2.0", ...message });
  const chunk = frame({
    method: "session/update",
    params: {
      sessionId: "s-1",
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "late" } },
    },
  });
  const idOf = `sed -n 's/.*"id":\\([0-9][0-9]*\\).*/\\1/p'`;
  const mm = tempFile(
    "mm",
    `#!/bin/sh
echo $$ > ${pidFile}
read -r line
printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1}}\\n' "$(echo "$line" | ${idOf})"
read -r line
printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s-1"}}\\n' "$(echo "$line" | ${idOf})"
read -r line
id=$(echo "$line" | ${idOf})
(sleep 0.3; printf '%s\\n' '${chunk}'; printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}\\n' "$id") &
exit 0
`,
    0o755,
  );
  const run = await runClient({ noMm: true, args: ["--mm", mm] });
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out.slice(-2), ["late", "[end_turn]"]);
});

// ─── --timeout ───────────────────────────────────────────────────────────────

Deno.test("ending: --timeout 1: an mm that never answers initialize is named after 1 s and killed, and the client exits soon after its one error line", async () => {
  const { mm, pidFile } = silentMm();
  const idle = idleRunMs(); // beside the run: how long the machine takes to do nothing
  const started = performance.now(); // before the client exists, let alone its timer
  const client = startClient({
    noMm: true,
    args: ["--mm", mm, "--timeout", "1"],
  });
  const exited = exitTime(client.child);
  await client.waitForStderr("error: mm did not answer initialize within 1 s");
  const errorAt = performance.now() - started;
  const run = await client.done();
  assert.equal(run.code, 1, run.stderr);
  assert.deepEqual(run.log.filter((l) => l.startsWith("error:")), [
    "error: mm did not answer initialize within 1 s",
  ]);
  assert.equal(run.log.at(-1), "error: mm did not answer initialize within 1 s");
  // From before the client started: its start-up is within the room a run that waits for nothing
  // takes.
  assertTook("the timeout fired", errorAt, { least: 995, most: 1000, idle: await idle });
  const after = (await exited) - started - errorAt;
  assertTook("the client exited", after, { most: 2500, idle: await idle });
  await assertNoPeerLeft(pidFile);
});

Deno.test("ending: --timeout 2: an mm that never answers session/new is named after 2 s, not before", async () => {
  // 2 s, not less: the peer must start and answer initialize within it on a busy machine.
  const idle = idleRunMs(); // beside the run: how long the machine takes to do nothing
  const client = startClient(rogue("silent-session", { args: ["--timeout", "2"] }));
  const exited = exitTime(client.child);
  await client.waitForStderr("error: mm did not answer session/new within 2 s");
  const errorAt = Date.now();
  const errorSeen = performance.now();
  const run = await client.done();
  assert.equal(run.code, 1);
  assert.equal(run.log.at(-1), "error: mm did not answer session/new within 2 s");
  // Timed from the peer's answer to initialize: the client asked session/new only after it.
  const answered = Number(seen(run.log).join("\n").match(/answered initialize at (\d+)/)?.[1]);
  assertTook("the timeout fired", errorAt - answered, {
    least: 1998,
    most: 2000,
    idle: await idle,
  });
  assertTook("the client exited", (await exited) - errorSeen, { most: 2500, idle: await idle });
  await assertNoPeerLeft(run.pidFile);
});

Deno.test("ending: --timeout does not bound the prompt: a model thinking 5 s with --timeout 4 ends the turn", async () => {
  // 4 s leaves the stand-in time to start on a busy machine; the turn outlasts it by a second.
  const run = await runClient({
    args: ["--timeout", "4"],
    env: { MM_SIM_THINK_MS: "5000" },
  });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out.at(-1), "[end_turn]");
  assert.ok(run.ms >= 5000, `the model thought for 5 s, the run took ${run.ms} ms`);
});

Deno.test("ending: --timeout beyond the timer's range never fires early", async () => {
  const { mm, pidFile } = silentMm();
  const client = startClient({
    noMm: true,
    args: ["--mm", mm, "--timeout", "3000000"],
  });
  // A timer out of range fires at once (Node's rule: after 1 ms): a second is long past that.
  await client.waitForStderr('"method":"initialize"');
  const early = await Promise.race([client.child.status.then(() => true), sleep(1000)]);
  if (early) {
    const run = await client.done();
    assert.fail(`the client ended at once (exit ${run.code}):\n${run.stderr}`);
  }
  client.child.kill("SIGINT");
  const run = await client.done();
  assert.ok(!run.stderr.includes("TimeoutOverflowWarning"), run.stderr);
  assert.ok(!/^error:/m.test(run.stderr), run.stderr);
  assert.equal(run.code, 130, run.stderr);
  await assertNoPeerLeft(pidFile);
});

// ─── Ending quickly, and leaving nothing behind ──────────────────────────────

Deno.test("ending: after [end_turn] the client exits at once when mm exits at the end of its input, and leaves no mm behind", async () => {
  const idle = idleRunMs(); // beside the run: how long the machine takes to do nothing
  const client = startClient();
  const exited = exitTime(client.child);
  await client.waitForStdout("[end_turn]");
  const shownAt = performance.now();
  const run = await client.done();
  assert.equal(run.code, 0, run.stderr);
  assertTook("the client exited", (await exited) - shownAt, { most: 2500, idle: await idle });
  await assertNoPeerLeft(run.pidFile);
});

/**
 * Runs a rogue scenario whose turn ends at once and whose peer then never exits by itself, and
 * checks that the client ended it exactly one 2 s exit grace after the end of the turn, as the
 * peer timed it (it logs `ended the turn at <ms>` when it writes the turn's end), saying so.
 */
async function endedAfterOneGrace(scenario: string, what: string) {
  const idle = idleRunMs(); // beside the run: how long the machine takes to do nothing
  const client = startClient(rogue(scenario));
  await client.child.status;
  const exitedAt = Date.now();
  const run = await client.done();
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out.at(-1), "[end_turn]");
  assert.ok(
    run.log.includes("[client] mm did not exit within 2 s of the end; killing it"),
    run.stderr,
  );
  const ended = Number(seen(run.log).join("\n").match(/ended the turn at (\d+)/)?.[1]);
  assertTook(what, exitedAt - ended, {
    least: 1998,
    most: 2000, // the grace: the 2.5 s any ending is allowed would let a 3 s grace by
    idle: await idle,
  });
  return run;
}

Deno.test("ending: an mm that ignores the end of its input is killed, group and all, 2 s after [end_turn]", async () => {
  const run = await endedAfterOneGrace("helpers", "the client killed mm and exited");
  const pids = Deno.readTextFileSync(run.pidFile).trim().split(" ");
  assert.equal(pids.length, 2, "mm and its helper wrote their pids");
  await assertNoPeerLeft(run.pidFile); // mm and its helper
});

Deno.test("ending: what mm left running in its process group is ended too when mm exits by itself at the end", async () => {
  const run = await runClient(rogue("helpers-then-exit"));
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out.at(-1), "[end_turn]");
  const pids = Deno.readTextFileSync(run.pidFile).trim().split(" ");
  assert.equal(pids.length, 2, "mm and its helper wrote their pids");
  const killed = "[client] mm did not exit within 2 s of the end; killing it";
  assert.ok(!run.log.includes(killed), "mm exited by itself");
  await assertNoPeerLeft(run.pidFile); // its helper too
});

// ─── session/close ───────────────────────────────────────────────────────────

Deno.test("ending: after a lending that failed, the client sends no session/close and waits for none: mm is ended at once", async () => {
  const idle = idleRunMs(); // beside the run: how long the machine takes to do nothing
  const client = startClient(rogue("close-then-refuse"));
  await client.child.status;
  const exitedAt = Date.now();
  const run = await client.done();
  assert.equal(run.code, 1, run.stderr);
  assert.ok(run.log.includes("error: mm refused session/prompt: the model is gone"), run.stderr);
  assert.deepEqual(sentWith(run.stderr, "session/close"), []);
  assert.ok(!seen(run.log).some((l) => l.startsWith("got session/close")), run.stderr);
  const refused = Number(seen(run.log).join("\n").match(/refused the prompt at (\d+)/)?.[1]);
  // Not the 2 s exit grace: mm, which ignores the end of its stdin, is killed without waiting.
  assertTook("the client ended mm and exited", exitedAt - refused, {
    most: 1000,
    idle: await idle,
  });
  await assertNoPeerLeft(run.pidFile);
});

Deno.test("ending: when mm advertises session/close, the client closes the session after the last turn, and mm answers", async () => {
  const run = await runClient({ args: ["Which CPU?"] });
  assert.equal(run.code, 0, run.stderr);
  const frames = traced(run.stderr);
  const prompted = frames.findIndex((t) => !t.sent && isAnswerTo(frames, t, "session/prompt"));
  const close = frames.findIndex((t) => t.sent && t.frame.method === "session/close");
  assert.ok(prompted >= 0 && close > prompted, "session/close comes after the turn's answer");
  const { session } = discovery(run.log);
  assert.deepEqual(frames[close].frame.params, { sessionId: session });
  assert.ok(frames.some((t) => !t.sent && isAnswerTo(frames, t, "session/close")), run.stderr);
  assert.equal(sentWith(run.stderr, "session/close").length, 1);
});

Deno.test("ending: an mm that does not advertise session/close is not sent one", async () => {
  const run = await runClient({ args: ["Which CPU?"], env: { MM_SIM_SESSIONS: "none" } });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out.at(-1), "[end_turn]");
  assert.deepEqual(sentWith(run.stderr, "session/close"), []);
});

Deno.test("ending: session/close never answered delays the end no more than the 2 s exit grace; mm is killed", async () => {
  // One grace for the close and the exit: a close with a grace of its own would take longer.
  const run = await endedAfterOneGrace("close-unanswered", "exited after [end_turn]");
  await assertNoPeerLeft(run.pidFile);
  assert.ok(seen(run.log).some((l) => l.startsWith('got session/close {"sessionId":')), run.stderr);
});

Deno.test("ending: session/close answered with an error ends the run as usual, exit 0", async () => {
  const run = await runRogue("close-refused");
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out.at(-1), "[end_turn]");
  assert.ok(!/^error:/m.test(run.stderr), run.stderr);
  assert.equal(sentWith(run.stderr, "session/close").length, 1);
});

/** Whether a received frame answers the client's request of `method`. */
function isAnswerTo(frames: Traced[], answer: Traced, method: string): boolean {
  if (answer.frame.method !== undefined) return false;
  return frames.some((t) => t.sent && t.frame.method === method && t.frame.id === answer.frame.id);
}

// ─── Writing the conversation can fail ───────────────────────────────────────

Deno.test("ending: a reader that goes away (| head -1) is not an error: a quiet finish, exit 0, mm gone", async () => {
  const pidFile = tempFile("pid", "");
  const codeFile = tempFile("code", "");
  // The stand-in thinks a little, so the client writes again after head has gone.
  const run = await runShell(
    `${clientCommand(["--mm", MM_SIM])} | head -1; echo "\${PIPESTATUS[0]}" > ${codeFile}`,
    { MM_SIM_THINK_MS: "500", MM_SIM_PID_FILE: pidFile },
  );
  assert.equal(run.stdout, `❓ ${DEFAULT_QUESTION}\n`);
  assert.equal(Deno.readTextFileSync(codeFile).trim(), "0", run.stderr);
  assert.ok(!/^error:/m.test(run.stderr), run.stderr);
  assert.ok(!/broken pipe|EPIPE| {4}at /i.test(run.stderr), run.stderr);
  await assertNoPeerLeft(pidFile);
});

/** Whether this system has `/dev/full`, a disk that is always full (Linux has; macOS has not). */
const HAS_DEV_FULL = (() => {
  try {
    return Deno.statSync("/dev/full").isCharDevice === true;
  } catch {
    return false;
  }
})();

Deno.test({
  name:
    "ending: a conversation that cannot be written (> /dev/full) is one error line, exit 1, mm gone" +
    (HAS_DEV_FULL ? "" : " (skipped: this system has no /dev/full)"),
  ignore: !HAS_DEV_FULL,
}, async () => {
  const pidFile = tempFile("pid", "");
  const run = await runShell(`exec ${clientCommand(["--mm", MM_SIM])} > /dev/full`, {
    MM_SIM_PID_FILE: pidFile,
  });
  assert.equal(run.code, 1, run.stderr);
  const errors = run.stderr.split("\n").filter((l) => l.startsWith("error:"));
  assert.equal(errors.length, 1, run.stderr);
  assert.match(errors[0], /^error: cannot write the conversation: \S.*$/);
  assert.ok(!run.stderr.includes("    at "), "no stack trace");
  await assertNoPeerLeft(pidFile);
});

Deno.test("ending: where mm's process group cannot be signalled (a child that leads no group), mm itself is killed", async () => {
  // Not detached: the child is in the test's own process group and leads none, as where Deno
  // cannot make or signal a group (Windows refuses a negative pid).
  const child = new Deno.Command("sleep", { args: ["30"], stdout: "null", stderr: "null" }).spawn();
  await killGroup(child);
  const status = await within(WAIT_MS, "the child to be killed", child.status);
  assert.equal(status.signal, "SIGKILL");
  assert.ok(!alive(child.pid), `process ${child.pid} outlived killGroup()`);
});

Deno.test("ending: killGroup returns as soon as mm is gone, gone already or killed now: no run waits out its second", async () => {
  // As the client starts mm: leading a group of its own. One has exited, as mm does at the end of
  // its input (every run's end); one is alive until killGroup kills it.
  const start = (args: string[]) =>
    new Deno.Command("sh", { args, stdout: "null", stderr: "null", detached: true }).spawn();
  const gone = start(["-c", "exit 0"]);
  await within(WAIT_MS, "the child that exits at once to exit", gone.status);
  const children = [
    { which: "gone already", child: gone },
    { which: "killed now", child: start(["-c", "sleep 30"]) },
  ];
  for (const { which, child } of children) {
    const returned = killGroup(child).then(() => "killGroup returned");
    // Once mm's exit is known, killGroup has nothing left to wait for: it returns before any timer
    // set at that moment fires, whatever the machine's speed (its second is for a child that
    // outlives SIGKILL).
    const timerAtExit = child.status.then(() =>
      new Promise<string>((done) => setTimeout(() => done("a timer set at its exit fired"), 0))
    );
    const either = Promise.race([returned, timerAtExit]);
    const first = await within(WAIT_MS, `killGroup or the timer (${which})`, either);
    await within(WAIT_MS, `killGroup to return (${which})`, returned);
    assert.equal(
      first,
      "killGroup returned",
      `a child ${which}: killGroup waited on after its exit`,
    );
    assert.ok(!alive(child.pid), `process ${child.pid} outlived killGroup()`);
  }
});
