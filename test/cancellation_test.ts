/**
 * Cancelling a turn, and every Ctrl-C — sent as a signal, or typed at a pseudo-terminal, where it
 * reaches the whole foreground process group: the first Ctrl-C or SIGTERM cancels the turn the ACP
 * way (`session/cancel`), a second one or the 5 s grace kills an mm that does not end it, before
 * the session exists or at the `-i` prompt it ends the client; a permission asked after the
 * cancel is answered cancelled. (`--turn-timeout`, which cancels a silent turn, is in
 * turn_timeout_test.ts.)
 */

import assert from "./_assert.ts";
import { DEFAULT_QUESTION } from "../client.ts";
import {
  agentFileWith,
  assertNoPeerLeft,
  assertTook,
  clientCommand,
  exitTime,
  idleRunMs,
  MM_SIM,
  OS_TEXT,
  ROGUE,
  rogue,
  seen,
  silentMm,
  sleep,
  startClient,
  tempFile,
} from "./_run.ts";
import { hasScript, inTerminal, visibleLines } from "./_pty.ts";

/** What the client says when the 5 s cancel grace ends with mm still there. */
const NO_ANSWER_IN_TIME = "[client] mm did not answer the cancellation in time; killing it";

/** The client at a terminal, with an mm that ignores session/cancel and writes its pids there. */
function ignoringCancelAtTerminal() {
  const pidFile = tempFile("pid", "");
  const terminal = inTerminal(clientCommand(["--mm", ROGUE]), {
    env: { ROGUE_SCENARIO: "ignore-cancel", ROGUE_PID_FILE: pidFile },
  });
  return { terminal, pidFile };
}

/** The lines a terminal shows, without the `^C` it echoes where the key was typed. */
const shownWithoutEcho = (screen: string) =>
  visibleLines(screen).map((line) => line.replace(/^(\^C)+/, ""));

// ─── A signal during a turn ──────────────────────────────────────────────────

for (
  const { what, signal, code, args, stdin } of [
    { what: "Ctrl-C during a turn", signal: "SIGINT", code: 130, args: [], stdin: undefined },
    { what: "SIGTERM during a turn", signal: "SIGTERM", code: 143, args: [], stdin: undefined },
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
      const client = startClient({ args: [...args], stdin, env: { MM_SIM_THINK_MS: "30000" } });
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
      assertTook("the end", (await exited) - sent, { most: 0, idle: await idle });
      assertNoPeerLeft(run.pidFile);
      assert.ok(!run.stderr.includes("\n> "), "no prompt after the cancelled turn");
    },
  );
}

Deno.test("cancellation: under a stepwise model Ctrl-C between two calls cancels the turn: the first result shown, the second call never made", async () => {
  // The stand-in pauses after each call's final update: the Ctrl-C comes in the middle of the
  // stepwise turn, after the first call's result and before the second call.
  const idle = idleRunMs(); // beside the run: how long the machine takes to do nothing
  const client = startClient({ env: { MM_SIM_MODEL: "stepwise", MM_SIM_STEP_MS: "30000" } });
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
  assert.ok(!run.stderr.includes('"topic":"memory"'), "the second call was never made");
  // mm answered the cancel at once: the client did not wait for the grace.
  assert.ok(!run.stderr.includes(NO_ANSWER_IN_TIME), run.stderr);
  assertTook("the end", (await exited) - pressed, { most: 0, idle: await idle });
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
  assertTook("the end", (await exited) - pressed, { most: 0, idle: await idle });
  assert.ok(!run.stderr.includes("session/cancel"), run.stderr);
  assertNoPeerLeft(pidFile);
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
  assertTook("mm was killed", (await exited) - pressed, { least: 4995, most: 5000, idle });
  assert.ok(run.log.includes(NO_ANSWER_IN_TIME), run.stderr);
  assertNoPeerLeft(run.pidFile);
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
  assertNoPeerLeft(run.pidFile);
});

Deno.test("cancellation: a second signal during the grace kills mm and ends with the first one's code", async () => {
  for (
    const [first, second, code] of [["SIGTERM", "SIGINT", 143], ["SIGINT", "SIGTERM", 130]] as const
  ) {
    const client = startClient(rogue("ignore-cancel"));
    await client.waitForStderr('"agent_thought_chunk"');
    client.child.kill(first);
    await client.waitForStderr("[client] cancelling…");
    await sleep(400); // a later signal, not the same keypress twice
    client.child.kill(second);
    const run = await client.done();
    assert.equal(run.code, code, `${first} then ${second}: ${run.stderr}`);
    assertNoPeerLeft(run.pidFile);
  }
});

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
  assert.equal(run.out.at(-1), "[cancelled]");
  assertNoPeerLeft(run.pidFile);
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
  await sleep(Math.max(0, 5000 + 2 * idle - thinkMs - (performance.now() - cancelledAt)));
  await client.write("Which CPU?\n");
  await client.waitForStdout("❓ Which CPU?");
  await client.closeStdin();
  const run = await client.done();
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out.filter((line) => line === "[end_turn]").length, 2, run.stdout);
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
        assert.ok(!screen.includes("second Ctrl-C"), `one press counted twice: ${screen}`);
        // mm answered the cancel at once: the client did not wait for the grace.
        assert.ok(!screen.includes(NO_ANSWER_IN_TIME), JSON.stringify(screen));
        assertTook("the end", performance.now() - pressed, { most: 0, idle: await idle });
        assertNoPeerLeft(pidFile);
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
    assertNoPeerLeft(pidFile);
  },
});

Deno.test({
  name:
    "cancellation: at a terminal, once Ctrl-C has cancelled the turn the progress line waits for mm to end it, not for the model",
  ignore: !hasScript,
  async fn() {
    const { terminal, pidFile } = ignoringCancelAtTerminal();
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
    assertNoPeerLeft(pidFile);
  },
});

Deno.test({
  name:
    "cancellation: -i at a terminal: Ctrl-C during a turn cancels it and returns to the prompt; Ctrl-C at the prompt exits 130",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(clientCommand(["--mm", MM_SIM, "-i", "How much memory?"]), {
      env: { MM_SIM_THINK_MS: "1500" },
    });
    await terminal.waitFor(/❓ How much memory\?/);
    await sleep(300);
    await terminal.type("\x03");
    await terminal.waitFor(/\[cancelled\][^]*> /);
    assert.ok(terminal.running(), "the client is still running after the cancelled turn");
    await terminal.type("How long is it up?\r");
    await terminal.waitFor(/❓ How long is it up\?[^]*\[end_turn\][^]*> /);
    await terminal.type("\x03");
    const { code, screen } = await terminal.done();
    assert.equal(code, 130, JSON.stringify(screen));
    const lines = visibleLines(screen);
    assert.equal(lines.filter((l) => l === "[cancelled]").length, 1, lines.join("\n"));
    assert.equal(lines.filter((l) => l === "[end_turn]").length, 1, lines.join("\n"));
  },
});

for (
  const [what, args, end] of [
    [
      "ends the prompt's line and says how to come back",
      ["-i", "How much RAM?"],
      /> \^C\r\n\[client\] continue with: --resume \d{8}-\d{6}-[0-9a-f]{8}\r\n$/,
    ],
    ["with -q still ends the prompt's line", ["-q", "-i", "RAM?"], /> \^C\r\n$/],
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
