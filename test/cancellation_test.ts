/**
 * Cancelling a turn, and every Ctrl-C — sent as a signal, or typed at a pseudo-terminal, where it
 * reaches the whole foreground process group: the first Ctrl-C or SIGTERM cancels the turn the ACP
 * way (`session/cancel`), a second one or the 5 s grace kills an mm that does not end it, before
 * the session exists or at the `-i` prompt it ends the client; a permission asked after the
 * cancel is answered cancelled. At an interactive shell: Ctrl-C with the real deno on PATH as the
 * README puts it, and through Deno's npm wrapper, whose end at Ctrl-C takes the terminal from the
 * client. (`--turn-timeout`, which cancels a silent turn, is in turn_timeout_test.ts.)
 */

import assert from "./_assert.ts";
import { DEFAULT_QUESTION } from "../client.ts";
import {
  agentFileWith,
  assertInOrder,
  assertNoPeerLeft,
  assertTook,
  clientCommand,
  clientWithTools,
  exitTime,
  idleRunMs,
  MM_SIM,
  OS_TEXT,
  RESULT_LINE,
  ROGUE,
  rogue,
  ROOT,
  runShell,
  seen,
  silentMm,
  sleep,
  SLOW_TOOL,
  startClient,
  tempFile,
  traced,
  WAIT_MS,
} from "./_run.ts";
import {
  atPermissionQuestion,
  atShellPrompt,
  atShellQuestionWithPrompt,
  hasScript,
  inTerminal,
  type Terminal,
  visibleLines,
} from "./_pty.ts";
import { scratchDir } from "./_scratch.ts";

/** What the client says when the 5 s cancel grace ends with mm still there. */
const NO_ANSWER_IN_TIME = "[client] mm did not answer the cancellation in time; killing it";

/** The client at a terminal, with an mm that ignores session/cancel and writes its pids there. */
function ignoringCancelAtTerminal(args: string[] = []) {
  const pidFile = tempFile("pid", "");
  const terminal = inTerminal(clientCommand(["--mm", ROGUE, ...args]), {
    env: { ROGUE_SCENARIO: "ignore-cancel", ROGUE_PID_FILE: pidFile },
  });
  return { terminal, pidFile };
}

/** The `-i` client back at its prompt after a Ctrl-C at mm's shell question. */
async function cancelledAtShellQuestion(): Promise<Terminal> {
  const terminal = await atShellQuestionWithPrompt();
  await terminal.type("\x03");
  await terminal.waitFor(/\[cancelled\]\r\n> $/);
  return terminal;
}

/** The lines a terminal shows, without the `^C` it echoes where the key was typed. */
const shownWithoutEcho = (screen: string) =>
  visibleLines(screen).map((line) => line.replace(/^(\^C)+/, ""));

// ─── A signal during a turn ──────────────────────────────────────────────────

for (
  const { what, signal, code, args, stdin } of [
    {
      what: "Ctrl-C during a turn",
      signal: "SIGINT",
      code: 130,
      args: [],
      stdin: undefined,
    },
    {
      what: "SIGTERM during a turn",
      signal: "SIGTERM",
      code: 143,
      args: [],
      stdin: undefined,
    },
    {
      what: "SIGTERM during an -i turn",
      signal: "SIGTERM",
      code: 143,
      args: ["-i", "How much memory?"],
      stdin: "open",
    },
  ] as const
) {
  Deno.test(
    `cancellation: ${what} cancels it the ACP way, shows [cancelled], leaves no mm and exits ${code}${
      stdin ? ", with no prompt after" : ""
    }`,
    async () => {
      const idle = idleRunMs(); // beside the run: how long the machine takes to do nothing
      const client = startClient({
        args: [...args],
        stdin,
        env: { MM_SIM_THINK_MS: "30000" },
      });
      const exited = exitTime(client.child);
      await client.waitForStderr("agent_thought_chunk");
      const sent = performance.now();
      client.child.kill(signal);
      const run = await client.done();
      assert.equal(run.code, code, run.stderr);
      assert.ok(run.log.includes("[client] cancelling…"), run.stderr);
      assert.ok(run.stderr.includes('"method":"session/cancel"'), run.stderr);
      assert.equal(run.out.at(-1), "[cancelled]");
      // mm answered the cancel at once: the client neither waited for the model nor the grace.
      assert.ok(!run.stderr.includes(NO_ANSWER_IN_TIME), run.stderr);
      assertTook("the end", (await exited) - sent, {
        most: 0,
        idle: await idle,
      });
      await assertNoPeerLeft(run.pidFile);
      assert.ok(
        !run.stderr.includes("\n> "),
        "no prompt after the cancelled turn",
      );
    },
  );
}

Deno.test("cancellation: under a stepwise model Ctrl-C between two calls cancels the turn: the first result shown, the second call never made", async () => {
  // The stand-in pauses after each call's final update: the Ctrl-C comes in the middle of the
  // stepwise turn, after the first call's result and before the second call.
  const idle = idleRunMs(); // beside the run: how long the machine takes to do nothing
  const client = startClient({
    env: { MM_SIM_MODEL: "stepwise", MM_SIM_STEP_MS: "30000" },
  });
  const exited = exitTime(client.child);
  await client.waitForStdout(`│ ${OS_TEXT}\n`);
  const pressed = performance.now();
  client.child.kill("SIGINT");
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  assert.ok(run.stderr.includes('"method":"session/cancel"'), run.stderr);
  assert.deepEqual(run.out, [
    `❓ ${DEFAULT_QUESTION}`,
    "Let me ask host_info about the operating system. ",
    "🛠️ client: host_info",
    `│ ${OS_TEXT}`,
    "[cancelled]",
  ]);
  assert.ok(
    !run.stderr.includes('"topic":"memory"'),
    "the second call was never made",
  );
  // mm answered the cancel at once: the client did not wait for the grace.
  assert.ok(!run.stderr.includes(NO_ANSWER_IN_TIME), run.stderr);
  assertTook("the end", (await exited) - pressed, {
    most: 0,
    idle: await idle,
  });
});

Deno.test("cancellation: Ctrl-C before the session exists ends the client at once with 130 and no session/cancel", async () => {
  const { mm, pidFile } = silentMm();
  const idle = idleRunMs(); // beside the run: how long the machine takes to do nothing
  const client = startClient({ noMm: true, args: ["--mm", mm] });
  const exited = exitTime(client.child);
  await client.waitForStderr('"method":"initialize"');
  const pressed = performance.now();
  client.child.kill("SIGINT");
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  // Not waiting for an answer that never comes, nor for the 5 s a turn's cancellation gets.
  assertTook("the end", (await exited) - pressed, {
    most: 0,
    idle: await idle,
  });
  assert.ok(!run.stderr.includes("session/cancel"), run.stderr);
  await assertNoPeerLeft(pidFile);
});

Deno.test("cancellation: with --json, Ctrl-C before the session exists ends with an error line that says the run was interrupted", async () => {
  const { mm, pidFile } = silentMm();
  const client = startClient({ noMm: true, args: ["--mm", mm, "--json"] });
  await client.waitForStderr('"method":"initialize"');
  client.child.kill("SIGINT");
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  assert.deepEqual(run.out.map((line) => JSON.parse(line)), [
    { error: { message: "interrupted", exitCode: 130 } },
  ]);
  await assertNoPeerLeft(pidFile);
});

Deno.test("cancellation: the cancel grace is 5 s: mm ignoring session/cancel is killed 5 s after Ctrl-C, not sooner, exit 130", async () => {
  const client = startClient(rogue("ignore-cancel"));
  const exited = exitTime(client.child);
  await client.waitForStderr("waiting");
  const pressed = performance.now(); // before the client can start its grace
  client.child.kill("SIGINT");
  // While the client waits for mm, how long the machine takes for a run that waits for nothing.
  const idle = await idleRunMs();
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  assertTook("mm was killed", (await exited) - pressed, {
    least: 4995,
    most: 5000,
    idle,
  });
  assert.ok(run.log.includes(NO_ANSWER_IN_TIME), run.stderr);
  await assertNoPeerLeft(run.pidFile);
});

Deno.test("cancellation: a second Ctrl-C kills mm that ignores session/cancel at once, exit 130", async () => {
  const idle = idleRunMs(); // beside the run: how long the machine takes to do nothing
  const client = startClient(rogue("ignore-cancel"));
  await client.waitForStderr("waiting");
  client.child.kill("SIGINT");
  const exited = exitTime(client.child);
  await client.waitForStderr("[client] cancelling…");
  // Copies of one press arrive within 300 ms of it, which the client has seen: a later press.
  await sleep(400);
  const second = performance.now();
  client.child.kill("SIGINT");
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  assert.ok(run.log.includes("[client] second Ctrl-C: killing mm"), run.stderr);
  // At once, not when the 5 s grace ends.
  assert.ok(!run.stderr.includes(NO_ANSWER_IN_TIME), run.stderr);
  assertTook("the end", (await exited) - second, { most: 0, idle: await idle });
  await assertNoPeerLeft(run.pidFile);
});

Deno.test("cancellation: a second signal during the grace kills mm and ends with the first one's code", async () => {
  for (
    const [first, second, code] of [["SIGTERM", "SIGINT", 143], [
      "SIGINT",
      "SIGTERM",
      130,
    ]] as const
  ) {
    const client = startClient(rogue("ignore-cancel"));
    await client.waitForStderr('"agent_thought_chunk"');
    client.child.kill(first);
    await client.waitForStderr("[client] cancelling…");
    await sleep(400); // a later signal, not the same keypress twice
    client.child.kill(second);
    const run = await client.done();
    assert.equal(run.code, code, `${first} then ${second}: ${run.stderr}`);
    await assertNoPeerLeft(run.pidFile);
  }
});

for (const quiet of [false, true]) {
  Deno.test(
    `cancellation: Ctrl-C while a lent tool runs: mm cancels the call, its signal aborts, and ${
      quiet ? "with -q the client's [client] line is left out" : "the client says so on stderr"
    }`,
    async () => {
      const client = startClient({
        client: clientWithTools(SLOW_TOOL),
        args: [...(quiet ? ["-q"] : []), "What does slow say?"],
        env: { MM_SIM_ARGS: JSON.stringify({ slow: { ms: 60_000 } }) },
      });
      await client.waitForStderr('"method":"_test/slow","params"'); // the call, as it came
      client.child.kill("SIGINT");
      const run = await client.done();
      assert.equal(run.code, 130, run.stderr);
      const received = traced(run.stderr).filter((t) => !t.sent).map((t) => t.frame.method);
      assert.ok(received.includes("$/cancel_request"), "mm cancelled the call");
      assert.ok(
        run.log.includes("[tool] slow saw its signal abort"),
        run.stderr,
      );
      const said = run.log.filter((line) => line.includes("cancelled by mm"));
      assert.deepEqual(
        said,
        quiet ? [] : ["[client] slow cancelled by mm"],
        run.stderr,
      );
      if (!quiet) {
        assertInOrder(run.log, [
          "[client] cancelling…",
          "[client] slow cancelled by mm",
        ]);
      }
      // Then mm ends the call failed, as the README shows (stdout: the conversation, not with -q).
      if (!quiet) {
        assertInOrder(run.out, ["✖ client: slow failed", "[cancelled]"]);
      }
      assert.ok(
        run.ms < 20_000,
        `ended in ${run.ms} ms, not when the tool's minute was up`,
      );
    },
  );
}

Deno.test("cancellation: after Ctrl-C a permission request is answered cancelled whatever its title", async () => {
  const client = startClient(rogue("permission-after-cancel"));
  await client.waitForStderr("waiting");
  client.child.kill("SIGINT");
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  assert.deepEqual(seen(run.log), [
    `got {"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"20261130-120000-0badc0de"}}`,
    'answer {"jsonrpc":"2.0","id":500,"result":{"outcome":{"outcome":"cancelled"}}}',
  ]);
  const said = run.log.filter((line) => line.startsWith("[client] permission for "));
  assert.deepEqual(said.map((line) => line.replace(/^.*": /, "")), [
    "refused (the turn is cancelled)",
  ]);
  assert.equal(run.out.at(-1), "[cancelled]");
  await assertNoPeerLeft(run.pidFile);
});

Deno.test("cancellation: with -i a turn cancelled and ended in time leaves no cancel behind: no kill 5 s later, a later permission answered by the policy", async () => {
  const agent = agentFileWith({ "yolo: true": "yolo: false" });
  const thinkMs = 1000; // each turn's
  const client = startClient({
    args: ["--agent", agent, "-i", "How much memory?"],
    readAlso: [agent],
    env: { MM_SIM_THINK_MS: String(thinkMs) },
    stdin: "open",
  });
  await client.waitForStderr('"method":"session/prompt"');
  await sleep(300);
  client.child.kill("SIGINT"); // the turn thinks for a second: the client is there
  const cancelledAt = performance.now();
  await client.waitForStdout("[cancelled]");
  await client.write("And since when is it up?\n");
  await client.waitForStdout("❓ And since when is it up?");
  await client.waitForStdout("[end_turn]");
  // A cancel timer left behind would kill mm 5 s after the cancel: the third turn, which thinks
  // for a second, runs past that, with room for the machine.
  const idle = await idleRunMs();
  await sleep(
    Math.max(0, 5000 + 2 * idle - thinkMs - (performance.now() - cancelledAt)),
  );
  await client.write("Which CPU?\n");
  await client.waitForStdout("❓ Which CPU?");
  await client.closeStdin();
  const run = await client.done();
  assert.equal(run.code, 0, run.stderr);
  assert.equal(
    run.out.filter((line) => line === "[end_turn]").length,
    2,
    run.stdout,
  );
  const decisions = run.log.filter((line) => line.startsWith("[client] permission for "));
  assert.deepEqual(decisions, [
    '[client] permission for "client: host_info": allowed',
    '[client] permission for "client: host_info": allowed',
  ]);
  assert.ok(!run.stderr.includes(NO_ANSWER_IN_TIME), run.stderr);
});

// ─── Ctrl-C typed at a terminal ──────────────────────────────────────────────

for (
  const [how, commandLine] of [
    ["under deno task", () => "deno task demo"],
    ["to the client run directly", () => clientCommand(["--mm", MM_SIM])],
  ] as const
) {
  Deno.test({
    name:
      `cancellation: one Ctrl-C typed ${how} cancels the turn and shows [cancelled], every time`,
    ignore: !hasScript,
    async fn() {
      const idle = idleRunMs(); // beside the first run: how long the machine takes to do nothing
      for (let i = 0; i < 3; i++) {
        const pidFile = tempFile("pid", "");
        const terminal = inTerminal(commandLine(), {
          env: { MM_SIM_THINK_MS: "10000", MM_SIM_PID_FILE: pidFile },
        });
        await terminal.waitFor("❓");
        await sleep(100); // the prompt is on its way to mm
        const pressed = performance.now();
        await terminal.type("\x03");
        const { code, screen } = await terminal.done();
        const lines = shownWithoutEcho(screen);
        assert.equal(code, 130, JSON.stringify(screen));
        assert.ok(lines.includes("[cancelled]"), JSON.stringify(screen));
        assert.equal(
          lines.filter((l) => l === "[client] cancelling…").length,
          1,
          JSON.stringify(screen),
        );
        assert.ok(
          !screen.includes("second Ctrl-C"),
          `one press counted twice: ${screen}`,
        );
        // mm answered the cancel at once: the client did not wait for the grace.
        assert.ok(!screen.includes(NO_ANSWER_IN_TIME), JSON.stringify(screen));
        assertTook("the end", performance.now() - pressed, {
          most: 0,
          idle: await idle,
        });
        await assertNoPeerLeft(pidFile);
      }
    },
  });
}

Deno.test({
  name:
    "cancellation: a second Ctrl-C typed later kills mm that ignores session/cancel at once, not at the end of the 5 s grace",
  ignore: !hasScript,
  async fn() {
    const idle = idleRunMs(); // beside the run: how long the machine takes to do nothing
    const { terminal, pidFile } = ignoringCancelAtTerminal();
    await terminal.waitFor("❓");
    await sleep(100);
    await terminal.type("\x03");
    await terminal.waitFor("[client] cancelling…");
    // Copies of one press arrive within 300 ms of it, which the client has seen: a later press.
    await sleep(400);
    const second = performance.now();
    await terminal.type("\x03");
    const { code, screen } = await terminal.done();
    const took = performance.now() - second;
    assert.equal(code, 130, JSON.stringify(screen));
    assert.ok(
      shownWithoutEcho(screen).includes("[client] second Ctrl-C: killing mm"),
      JSON.stringify(screen),
    );
    assert.ok(!screen.includes(NO_ANSWER_IN_TIME), JSON.stringify(screen));
    assertTook("the end", took, { most: 0, idle: await idle });
    await assertNoPeerLeft(pidFile);
  },
});

Deno.test({
  name:
    "cancellation: -i at a terminal, once Ctrl-C has cancelled the turn the progress line waits for mm to end it, not for the model",
  ignore: !hasScript,
  async fn() {
    const { terminal, pidFile } = ignoringCancelAtTerminal([
      "-i",
      "How much memory?",
    ]);
    await terminal.waitFor(/waiting for the model … \d+ s/);
    await terminal.type("\x03");
    await terminal.waitFor("[client] cancelling…");
    const cancelled = terminal.screen().length;
    await terminal.waitFor(/waiting for mm to end the turn … [1-9]\d* s/);
    await terminal.type("\x03"); // the second Ctrl-C, not the 5 s grace, ends it
    const { code, screen } = await terminal.done();
    assert.equal(code, 130, JSON.stringify(screen));
    const after = screen.slice(cancelled);
    assert.ok(!after.includes("waiting for the model"), JSON.stringify(after));
    await assertNoPeerLeft(pidFile);
  },
});

Deno.test({
  name:
    "cancellation: a one-shot run at a terminal draws no progress line after Ctrl-C while mm ends the turn: the shell may have the terminal back",
  ignore: !hasScript,
  async fn() {
    const { terminal, pidFile } = ignoringCancelAtTerminal();
    await terminal.waitFor(/waiting for the model … \d+ s/);
    await terminal.type("\x03");
    await terminal.waitFor("[client] cancelling…", 60_000);
    const cancelled = terminal.screen().indexOf("[client] cancelling…");
    await sleep(1500); // the line would be drawn at once, and again every 100 ms
    const after = terminal.screen().slice(cancelled);
    assert.ok(!after.includes("waiting for"), JSON.stringify(after));
    assert.ok(
      !after.includes("\x1b[J"),
      `the line was erased again: ${JSON.stringify(after)}`,
    );
    await terminal.type("\x03");
    const { code, screen } = await terminal.done();
    assert.equal(code, 130, JSON.stringify(screen));
    await assertNoPeerLeft(pidFile);
  },
});

Deno.test({
  name:
    "cancellation: -i at a terminal: Ctrl-C during a turn cancels it and returns to the prompt; Ctrl-C at the prompt exits 130",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(
      clientCommand(["--mm", MM_SIM, "-i", "How much memory?"]),
      {
        env: { MM_SIM_THINK_MS: "1500" },
      },
    );
    await terminal.waitFor(/❓ How much memory\?/);
    await sleep(300);
    await terminal.type("\x03");
    await terminal.waitFor(/\[cancelled\][^]*> /);
    assert.ok(
      terminal.running(),
      "the client is still running after the cancelled turn",
    );
    await terminal.type("How long is it up?\r");
    await terminal.waitFor(/❓ How long is it up\?[^]*\[end_turn\][^]*> /);
    await terminal.type("\x03");
    const { code, screen } = await terminal.done();
    assert.equal(code, 130, JSON.stringify(screen));
    const lines = visibleLines(screen);
    assert.equal(
      lines.filter((l) => l === "[cancelled]").length,
      1,
      lines.join("\n"),
    );
    assert.equal(
      lines.filter((l) => l === "[end_turn]").length,
      1,
      lines.join("\n"),
    );
  },
});

Deno.test({
  name:
    "cancellation: Ctrl-C at a permission question cancels the turn the ACP way: session/cancel, the permission answered cancelled, [cancelled], exit 130",
  ignore: !hasScript,
  async fn() {
    const pidFile = tempFile("pid", "");
    const terminal = inTerminal(clientCommand(["--mm", ROGUE, "--trace"]), {
      env: { ROGUE_SCENARIO: "ask-shell", ROGUE_PID_FILE: pidFile },
    });
    await atPermissionQuestion(terminal);
    await terminal.type("\x03");
    const { code, screen } = await terminal.done();
    assert.equal(code, 130, JSON.stringify(screen));
    const lines = shownWithoutEcho(screen);
    assertInOrder(lines, [
      "   [a] Allow  [A] Always  [r] Reject  [R] Never  (Enter: Reject)",
      "[client] cancelling…",
      /^→ \{"jsonrpc":"2\.0","method":"session\/cancel"/,
      '[client] permission for "ls -la /srv": refused (the turn is cancelled)',
      '[rogue] answer {"outcome":{"outcome":"cancelled"}}',
      "[cancelled]",
    ]);
    await assertNoPeerLeft(pidFile);
  },
});

Deno.test({
  name:
    "cancellation: -i at a terminal: Ctrl-C at a permission question returns to the prompt, and the next question is read whole",
  ignore: !hasScript,
  async fn() {
    const terminal = await atShellQuestionWithPrompt();
    await terminal.type("\x03");
    await terminal.waitFor(/\[cancelled\][^]*> /);
    // The next question and the end of input, typed at once: the end must not come first.
    await terminal.type("How much memory?\r"); // echoed: the terminal is out of raw mode
    await terminal.type("\x04");
    // The exit code is the shell's that `script` runs, which took the Ctrl-C too: not the client's.
    const { screen } = await terminal.done();
    const lines = shownWithoutEcho(screen);
    const last = lines.filter((line) => line !== "").at(-1) ?? "";
    assert.match(
      last,
      /^\[client\] continue with: --resume /,
      "ended at the end of input",
    );
    assertInOrder(lines, [
      "> How big is my disk?",
      "   command: df -h .",
      "[client] cancelling…",
      '[client] permission for "bash: df -h .": refused (the turn is cancelled)',
      "[cancelled]",
      "> How much memory?",
      "❓ How much memory?",
      RESULT_LINE.memory,
      "[end_turn]",
    ]);
  },
});

Deno.test({
  name:
    "cancellation: -i at a terminal: after a Ctrl-C at a permission question, Ctrl-D at the empty prompt ends the conversation at once, exit 0",
  ignore: !hasScript,
  async fn() {
    const terminal = await cancelledAtShellQuestion();
    await terminal.type("\x04");
    // At once: by the time the client has drawn its prompt for 10 s, it must have ended.
    const { code, screen } = await terminal.done(WAIT_MS);
    assert.equal(code, 0, JSON.stringify(screen));
    const lines = shownWithoutEcho(screen).filter((line) => line !== "");
    assert.match(
      lines.at(-1) ?? "",
      /^\[client\] continue with: --resume /,
      lines.join("\n"),
    );
  },
});

Deno.test({
  name:
    "cancellation: -i at a terminal: after a Ctrl-C at a permission question, the next line is typed as line mode has it: Backspace erases (never the prompt), a Ctrl-D within the line does not end the input; the lines after it are the terminal's own again",
  ignore: !hasScript,
  async fn() {
    const terminal = await atShellPrompt();
    // Twice: a Backspace first, on the empty line, then one within the line, and a Ctrl-D in it.
    const lines = [["\x7f", "How much RAM?", "\r"], ["How muchh", "\x7f", " RAM?", "\x04", "\r"]];
    for (const keys of lines) {
      await terminal.type("How big is my disk?\r");
      await atPermissionQuestion(terminal, lines.indexOf(keys) + 1);
      await terminal.type("\x03");
      await terminal.waitFor(/\[cancelled\]\r\n> $/);
      for (const key of keys) {
        await terminal.type(key);
        await sleep(100);
      }
      await terminal.waitFor(/\[end_turn\]\r\n> $/);
    }
    // Then the terminal's line mode again: it echoes, and its Backspace erases.
    await terminal.type("What is my OS?x");
    await sleep(100);
    await terminal.type("\x7f\r");
    await terminal.waitFor(/\[end_turn\]\r\n> $/);
    await terminal.type("\x04");
    const { code, screen } = await terminal.done(WAIT_MS);
    assert.equal(code, 0, JSON.stringify(screen));
    const turn = ["[cancelled]", "> How much RAM?", "❓ How much RAM?", RESULT_LINE.memory];
    const after = ["> What is my OS?", "❓ What is my OS?"];
    const shown = visibleLines(screen).map((line) => line.trimEnd());
    assertInOrder(shown, [...turn, ...turn, ...after]);
    // The terminal echoed that line, and only the terminal: the client took it as the line it is.
    const echoes = shown.filter((line) => line.endsWith("What is my OS?"));
    assert.deepEqual(echoes, after, shown.join("\n"));
  },
});

Deno.test({
  name:
    "cancellation: -i at a terminal: the turn after one cancelled at its permission question asks its own question, waits for the person, and can be cancelled in turn",
  ignore: !hasScript,
  async fn() {
    const terminal = await cancelledAtShellQuestion();
    await terminal.type("How big is my disk, then?\r");
    await atPermissionQuestion(terminal, 2);
    await sleep(1500); // the earlier turn's cancel does not answer this one: the person does
    assert.equal(
      terminal.screen().split("refused (the turn is cancelled)").length,
      2,
    );
    await terminal.type("a");
    await terminal.waitFor(/\[end_turn\]\r\n> $/);
    await terminal.type("And the disk, how big is it now?\r");
    await atPermissionQuestion(terminal, 3);
    await terminal.type("\x03");
    await terminal.waitFor(/\[cancelled\]\r\n> $/);
    await terminal.type("\x04");
    const { code, screen } = await terminal.done(WAIT_MS);
    assert.equal(code, 0, JSON.stringify(screen));
    assertInOrder(shownWithoutEcho(screen), [
      "> How big is my disk?",
      '[client] permission for "bash: df -h .": refused (the turn is cancelled)',
      "[cancelled]",
      "> How big is my disk, then?",
      "   [a] Allow  [A] Always allow  [r] Reject  (Enter: Reject)",
      '[client] permission for "bash: df -h .": allowed (asked)',
      "[end_turn]",
      "> And the disk, how big is it now?",
      "   [a] Allow  [A] Always allow  [r] Reject  (Enter: Reject)",
      "[client] cancelling…",
      '[client] permission for "bash: df -h .": refused (the turn is cancelled)',
      "[cancelled]",
    ]);
  },
});

for (
  const [what, args, end] of [
    [
      "ends the prompt's line and says how to come back",
      ["-i", "How much RAM?"],
      /> \^C\r\n\[client\] continue with: --resume \d{8}-\d{6}-[0-9a-f]{8}\r\n$/,
    ],
    [
      "with -q still ends the prompt's line",
      ["-q", "-i", "RAM?"],
      /> \^C\r\n$/,
    ],
  ] as const
) {
  Deno.test({
    name: `cancellation: Ctrl-C at the -i prompt of a terminal ${what}, exit 130`,
    ignore: !hasScript,
    async fn() {
      const terminal = inTerminal(clientCommand(["--mm", MM_SIM, ...args]));
      await terminal.waitFor("> ");
      await terminal.type("\x03");
      const { code, screen } = await terminal.done();
      assert.equal(code, 130, screen);
      assert.match(screen, end);
    },
  });
}

// ─── Ctrl-C through the user's own deno ──────────────────────────────────────

/**
 * Deno's npm wrapper, `bin.cjs` (a Node process that runs the real binary beside it and dies at
 * the first Ctrl-C), when the deno running the tests came from npm: the binary is in the `deno`
 * package's folder, or in its platform package `node_modules/@deno/<platform>/`, next to the
 * `deno` package (npx) or inside it (an install whose script did not run). Undefined without one,
 * or without `node` to run it.
 */
const NPM_WRAPPER: string | undefined = (() => {
  const folder = Deno.execPath().replace(/\/[^/]*$/, "");
  const candidates = [
    `${folder}/bin.cjs`,
    `${folder}/../../deno/bin.cjs`,
    `${folder}/../../../bin.cjs`,
  ];
  const isDenoPackage = (wrapper: string) => {
    try {
      const manifest = wrapper.replace(/bin\.cjs$/, "package.json");
      return JSON.parse(Deno.readTextFileSync(manifest)).name === "deno";
    } catch {
      return false;
    }
  };
  const wrapper = candidates.find(isDenoPackage);
  if (wrapper === undefined) return undefined;
  try {
    new Deno.Command("node", {
      args: ["--version"],
      stdout: "null",
      stderr: "null",
    }).outputSync();
  } catch {
    return undefined; // no node
  }
  return Deno.realPathSync(wrapper);
})();
const NO_WRAPPER = NPM_WRAPPER
  ? ""
  : " (ignored: the deno running the tests has no npm wrapper beside it, or there is no node)";

/** The README's line that puts the real deno binary first on `PATH`. */
const README_PATH_LINE = Deno.readTextFileSync(`${ROOT}/README.md`).split("\n")
  .find((line) => line.includes("Deno.execPath()") && line.includes("export PATH="));

Deno.test("README: its line that puts the real deno on PATH changes nothing, and says why, where no deno is found", async () => {
  assert.ok(
    README_PATH_LINE,
    "the README has no line that asks Deno.execPath() for PATH",
  );
  // A shell profile run before npm's global bin folder is on PATH: no deno at all.
  const empty = scratchDir("no-deno-");
  const line = `PATH=${empty}; ${README_PATH_LINE}; echo "PATH=$PATH"`;
  const { stdout, stderr } = await runShell(line, { PATH: "/usr/bin:/bin" });
  assert.match(stderr, /deno: (command )?not found/);
  assert.equal(stdout, `PATH=${empty}\n`, "PATH changed");
});

/** The prompt of the interactive shell below. */
const SHELL_PROMPT = "shell$ ";

/**
 * Runs `session` in an interactive shell at a pseudo-terminal, as a person has one: `sh -i`, with
 * job control, so that each command line is a job the shell puts in the foreground and takes the
 * terminal back from when the job's first process ends. Then the shell is left with `exit`;
 * returns what the terminal showed. A failed session kills the shell.
 */
async function inInteractiveShell(
  env: Record<string, string>,
  session: (terminal: Terminal) => Promise<void>,
): Promise<{ code: number; screen: string }> {
  const terminal = inTerminal("exec sh -i", {
    env: { PS1: SHELL_PROMPT, ...env },
    deadlineMs: 180_000,
  });
  try {
    await terminal.waitFor(SHELL_PROMPT, 60_000);
    await session(terminal);
    await terminal.type("exit\r");
    return await terminal.done();
  } finally {
    if (terminal.running()) {
      terminal.kill();
      await terminal.done().catch(() => {});
    }
  }
}

/** Waits, 60 s at most, until no process has `token` on its command line. */
async function noProcessWith(token: string): Promise<void> {
  const deadline = performance.now() + 60_000;
  for (;;) {
    const ps = new Deno.Command("ps", {
      args: ["-A", "-o", "args="],
      stdout: "piped",
    });
    const lines = new TextDecoder().decode((await ps.output()).stdout).split(
      "\n",
    );
    const left = lines.filter((line) => line.includes(token));
    if (left.length === 0) return;
    if (performance.now() > deadline) {
      throw new Error(`still running:\n${left.join("\n")}`);
    }
    await sleep(200);
  }
}

/** A word no other process has on its command line (hexadecimal: no topic of the stand-in). */
const uniqueWord = () => crypto.randomUUID().replaceAll("-", "").slice(0, 12);

Deno.test({
  name:
    "cancellation: -i at an interactive shell, with the real deno put on PATH as the README says: Ctrl-C cancels the turn and comes back to >, the next question is answered, Ctrl-D exits 0",
  ignore: !hasScript,
  async fn() {
    assert.ok(
      README_PATH_LINE,
      "the README has no line starting with `export PATH=`",
    );
    // Where npm's wrapper is at hand, `deno` on PATH is the wrapper first, as after an npm
    // install whose script did not run: the README's line puts the real binary before it.
    const wrapped = scratchDir("wrapped-");
    if (NPM_WRAPPER) Deno.symlinkSync(NPM_WRAPPER, `${wrapped}/deno`);
    const real = Deno.execPath().replace(/\/[^/]*$/, "");
    const pidFile = tempFile("pid", "");
    const env = {
      PATH: `${wrapped}:${real}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
      MM_SIM_THINK_MS: "4000",
      MM_SIM_PID_FILE: pidFile,
    };
    const { screen } = await inInteractiveShell(env, async (terminal) => {
      await terminal.type(`${README_PATH_LINE}\r`);
      await terminal.type(`echo "deno is $(command -v deno)"\r`);
      const found = /deno is (\/[^\r\n]*)\r\n/;
      await terminal.waitFor(found, 60_000);
      const deno = found.exec(terminal.screen())?.[1] ?? "";
      assert.ok(!deno.startsWith(wrapped), `still the wrapper: ${deno}`);
      assert.ok(!Deno.realPathSync(deno).endsWith(".cjs"), deno);
      await terminal.type(`deno task -q demo -- -i "How much memory?"\r`);
      await terminal.waitFor("❓ How much memory?", 60_000);
      const started = terminal.screen().length;
      await sleep(300); // the prompt is on its way to mm
      await terminal.type("\x03");
      await terminal.waitFor(/\[cancelled\]\r\n> /, 60_000);
      const cancelled = terminal.screen().slice(started);
      assert.ok(
        !cancelled.includes(SHELL_PROMPT),
        `the shell took the terminal: ${cancelled}`,
      );
      await terminal.type("And since when is it up?\r");
      await terminal.waitFor(
        /❓ And since when is it up\?[^]*\[end_turn\]\r\n> /,
        60_000,
      );
      await terminal.type("\x04");
      await terminal.waitFor(
        /continue with: --resume [\w-]+\r\n[^]*shell\$ /,
        60_000,
      );
      await terminal.type(`echo "exit $?"\r`);
      await terminal.waitFor(/exit \d+\r\n/, 60_000);
      assert.match(terminal.screen(), /exit 0\r\n/);
    });
    await assertNoPeerLeft(pidFile);
    assert.ok(!screen.includes("error:"), JSON.stringify(screen));
  },
});

Deno.test({
  name:
    `cancellation: -i through Deno's npm wrapper at an interactive shell: Ctrl-C cancels the turn, and the client, without its terminal, ends in one error line saying so, mm and itself gone${NO_WRAPPER}`,
  ignore: !hasScript || !NPM_WRAPPER,
  async fn() {
    const pidFile = tempFile("pid", "");
    const word = uniqueWord();
    const env = { MM_SIM_THINK_MS: "30000", MM_SIM_PID_FILE: pidFile };
    const { screen } = await inInteractiveShell(env, async (terminal) => {
      await terminal.type(
        `node '${NPM_WRAPPER}' task -q demo -- -i "How much memory? ${word}"\r`,
      );
      await terminal.waitFor("❓ How much memory?", 60_000);
      await sleep(300); // the prompt is on its way to mm
      await terminal.type("\x03");
      await terminal.waitFor(/error: [^\r\n]*\r\n/, 60_000);
      await noProcessWith(word);
    });
    await assertNoPeerLeft(pidFile);
    assert.ok(screen.includes("[cancelled]"), JSON.stringify(screen));
    const errors = visibleLines(screen).filter((line) => line.includes("error"));
    assert.equal(errors.length, 1, errors.join("\n"));
    // Said when a read fails (EIO), or, where the read began before the shell took the terminal
    // back (it would then wait for the person, racing the shell), when it is seen in the background.
    const why = /\((stdin: Input\/output error|the shell has it back)\)/.source;
    const lost = "error: cannot read the terminal any more " + why +
      ": most likely the shell " +
      "took it back when npm's Node wrapper around deno ended at Ctrl-C; put the real deno binary " +
      `first on PATH \\(the README's "Two commands" says how\\)`;
    assert.match(errors[0], new RegExp(`^${lost}$`));
    assert.ok(!screen.includes("os error"), JSON.stringify(screen));
  },
});

Deno.test({
  name:
    `cancellation: a one-shot run through Deno's npm wrapper at an interactive shell: after Ctrl-C the shell has its prompt back, the client draws no progress line over it, and mm is ended${NO_WRAPPER}`,
  ignore: !hasScript || !NPM_WRAPPER,
  async fn() {
    const pidFile = tempFile("pid", "");
    const word = uniqueWord();
    const env = { ROGUE_SCENARIO: "ignore-cancel", ROGUE_PID_FILE: pidFile };
    const { screen } = await inInteractiveShell(env, async (terminal) => {
      const args = `--mm test/rogue-mm "How much memory? ${word}"`;
      await terminal.type(`node '${NPM_WRAPPER}' task -q demo -- ${args}\r`);
      await terminal.waitFor(/waiting for the model … \d+ s/, 60_000);
      await terminal.type("\x03");
      await terminal.waitFor(/\^C[^]*shell\$ /, 60_000); // the shell is back
      // mm ignores the cancel: the client goes on after the shell's prompt, for the 5 s grace.
      await noProcessWith(word);
    });
    await assertNoPeerLeft(pidFile);
    const afterPrompt = screen.slice(screen.lastIndexOf(SHELL_PROMPT)); // the one after Ctrl-C
    assert.ok(afterPrompt.includes("killing it"), JSON.stringify(afterPrompt));
    // Once the client has seen the Ctrl-C, no progress line. One drawn in the instant before (the
    // shell, woken by the same keypress, may be quicker on a crowded machine) is not its to avoid.
    const seenAt = afterPrompt.indexOf("cancelling…");
    const afterSeen = seenAt < 0 ? afterPrompt : afterPrompt.slice(seenAt);
    assert.ok(!afterSeen.includes("waiting for"), JSON.stringify(afterPrompt));
  },
});

Deno.test({
  name:
    "cancellation: -i at a terminal: when another process takes the terminal while the client waits at its prompt, the client ends in one error line saying so, mm gone",
  ignore: !hasScript,
  async fn() {
    // The read at the prompt began while the client had the terminal, so it does not fail: the
    // client must see that it is no longer in the foreground. A python process takes the terminal
    // in a process group of its own, as a shell does when the program it started ended.
    const pidFile = tempFile("pid", "");
    const flag = `${scratchDir("flag-")}/take`;
    const take = "import os, signal, time; signal.signal(signal.SIGTTOU, signal.SIG_IGN); " +
      'os.setpgid(0, 0); os.tcsetpgrp(os.open("/dev/tty", os.O_RDWR), os.getpgrp()); ' +
      "time.sleep(60)";
    const client = clientCommand(["--mm", MM_SIM, "-i"]);
    const terminal = inTerminal(
      `${client} < /dev/tty & c=$!; until [ -e '${flag}' ]; do sleep 0.1; done; python3 -c '${take}' & ` +
        `p=$!; wait $c; echo "client exit $?"; kill $p`,
      { env: { MM_SIM_PID_FILE: pidFile } },
    );
    await terminal.waitFor(/discovery: [^]*> $/, 60_000);
    Deno.writeTextFileSync(flag, "");
    const { screen } = await terminal.done();
    await assertNoPeerLeft(pidFile);
    const lines = visibleLines(screen).filter((line) =>
      line.includes("error") || /exit/.test(line)
    );
    assert.deepEqual(lines, [
      "error: cannot read the terminal any more (the shell has it back): most likely the shell " +
      "took it back when npm's Node wrapper around deno ended at Ctrl-C; put the real deno binary " +
      `first on PATH (the README's "Two commands" says how)`,
      "client exit 1",
    ]);
  },
});
