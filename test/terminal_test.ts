/**
 * At a real terminal (a pseudo-terminal from util-linux `script`): the progress line — what the
 * client waits for and for how long, fitted to the terminal's width, never drawn on a dumb
 * terminal or off a terminal, never over an answer's line, erased before what comes next — and
 * the prompts: `-i`'s `> ` after each turn and `-`'s hint. (Ctrl-C typed at a terminal is in
 * cancellation_test.ts; colour and control characters at a terminal in rendering_test.ts.)
 */

// Terminal control characters are what these tests are about.
// deno-lint-ignore-file no-control-regex

import assert from "./_assert.ts";
import {
  ANSWER_LINE,
  askingShellAgent,
  assertInOrder,
  assertTurn,
  clientCommand,
  goOn,
  MM_SIM,
  RESULT_LINE,
  ROGUE,
  runClient,
  sleep,
  tempFile,
  turnsOf,
  WAIT_MS,
} from "./_run.ts";
import { atPermissionQuestion, hasScript, inTerminal, visibleLines } from "./_pty.ts";
import { scratchDir, scratchFile } from "./_scratch.ts";

const SPINNER = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/;

/**
 * The client at a terminal against the misbehaving peer playing `scenario`, whose pauses last until
 * the test, having seen what they are there for, says go on.
 */
function rogueAtTerminal(scenario: string, args: string[] = [], env: Record<string, string> = {}) {
  const pidFile = tempFile("pid", "");
  const terminal = inTerminal(clientCommand(["--mm", ROGUE, ...args]), {
    env: {
      ROGUE_SCENARIO: scenario,
      ROGUE_PID_FILE: pidFile,
      ROGUE_PAUSE_MS: String(WAIT_MS),
      ...env,
    },
  });
  return { terminal, goOn: () => goOn(pidFile) };
}
const PROGRESS = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] waiting for the model … \d+ s/;

// ─── The progress line ───────────────────────────────────────────────────────

Deno.test({
  name:
    "terminal: the progress line shows what the client waits for and for how long, erased before the next line",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(clientCommand(["--mm", MM_SIM, "How much memory?"]), {
      env: { MM_SIM_THINK_MS: "2500" },
    });
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    assert.match(screen, PROGRESS);
    assert.match(screen, /waiting for the model … 2 s/, "the seconds are counted");
    const lines = visibleLines(screen);
    assert.deepEqual(lines.filter((l) => l.includes("waiting for")), [], lines.join("\n"));
    assertInOrder(lines, ["❓ How much memory?", "🛠️ client: host_info", RESULT_LINE.memory]);
    assert.ok(lines.includes("[end_turn]"), lines.join("\n"));
  },
});

Deno.test({
  name:
    "terminal: with -q the progress line is on stderr and erased, and stdout in a file is the answer alone",
  ignore: !hasScript,
  async fn() {
    const stdoutFile = scratchFile("answer-");
    const terminal = inTerminal(
      `${clientCommand(["--mm", MM_SIM, "-q", "How much memory?"])} > '${stdoutFile}'`,
      { env: { MM_SIM_THINK_MS: "500" } },
    );
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    assert.match(screen, PROGRESS);
    const lines = visibleLines(screen);
    assert.deepEqual(lines.filter((l) => l.includes("waiting for")), [], lines.join("\n"));
    const stdout = Deno.readTextFileSync(stdoutFile);
    assert.match(stdout, /\n$/);
    assert.equal(stdout.split("\n").length, 2, JSON.stringify(stdout));
    assert.match(stdout.trimEnd(), ANSWER_LINE.memory);
  },
});

Deno.test("terminal: off a terminal there is no progress line: no waiting line, no \\r, no escape code", async () => {
  const run = await runClient({ noTrace: true, env: { MM_SIM_THINK_MS: "500", NO_COLOR: "" } });
  assert.equal(run.code, 0, run.stderr);
  for (const [name, text] of [["stdout", run.stdout], ["stderr", run.stderr]]) {
    assert.ok(!text.includes("waiting for"), `${name}: ${JSON.stringify(text)}`);
    assert.ok(!text.includes("\r"), `${name}: ${JSON.stringify(text)}`);
    assert.ok(!text.includes("\x1b"), `${name}: ${JSON.stringify(text)}`);
  }
});

Deno.test({
  name:
    "terminal: in a 20-column terminal the progress line is one row, however long its label, and its seconds stay in sight",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(`stty cols 20; ${clientCommand(["--mm", MM_SIM])}`, {
      env: { MM_SIM_THINK_MS: "2000" },
    });
    await terminal.waitFor(/… [1-9]\d* s/); // some ten redraws
    const rows = visibleLines(terminal.screen(), 20);
    assert.equal(rows.filter((row) => SPINNER.test(row)).length, 1, JSON.stringify(rows));
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    const drawn = [...screen.matchAll(/\r\x1b\[[JK]([⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏][^\r\n]*)\r/g)].map((m) => m[1]);
    for (const line of drawn) {
      assert.ok([...line].length < 20, `a progress line of ${[...line].length} columns: ${line}`);
      assert.match(line, /^. waiting for.* … \d+ s$/);
    }
    assert.ok(drawn.some((line) => / [1-9]\d* s$/.test(line)), "the seconds count up");

    assert.ok(!visibleLines(screen, 20).some((row) => SPINNER.test(row)), "erased at the end");
  },
});

Deno.test({
  name:
    "terminal: at the top row the progress line erases its own row alone, never to the end of the screen",
  ignore: !hasScript,
  async fn() {
    // An erase to the end of the screen (CSI J, CSI 0J) with the cursor at row 0, column 0 is a
    // cleared screen to tmux (`scroll-on-clear`): each redraw would push the screen into its
    // scrollback. With -q and stdout in a file, the terminal has stderr alone: the progress line
    // is drawn at the top row, again and again, until mm's first log line comes.
    const cleared = "\x1b[H\x1b[2J";
    const answer = scratchFile("answer-");
    const terminal = inTerminal(
      `printf '\\033[H\\033[2J'; ${
        clientCommand(["--mm", MM_SIM, "-q", "How much RAM?"])
      } > '${answer}'`,
      { env: { MM_SIM_THINK_MS: "1500" } },
    );
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    const shown = screen.slice(screen.indexOf(cleared) + cleared.length);
    const topRow = shown.split("\n")[0];
    assert.match(topRow, /\r\x1b\[K[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] waiting for mm … \d+ s\r/, JSON.stringify(shown));
    assert.doesNotMatch(shown, /\x1b\[0?J/, `an erase to the end of the screen: ${shown}`);
    assert.match(shown, PROGRESS, "drawn while the model thinks too");
    const rows = visibleLines(shown);
    assert.ok(!rows.some((row) => SPINNER.test(row) || row.includes("waiting")), rows.join("\n"));
    assert.match(Deno.readTextFileSync(answer).trimEnd(), ANSWER_LINE.memory);
  },
});

Deno.test({
  name:
    "terminal: at a permission question the progress line waits for you, below the question, through mm's other updates, and is erased once answered",
  ignore: !hasScript,
  async fn() {
    // The batch model runs host_info for the OS while the shell's question is open.
    const { agent, permissions } = askingShellAgent();
    const args = ["--mm", MM_SIM, "--agent", agent, "What OS, and how big is my disk?"];
    const terminal = inTerminal(clientCommand(args, permissions));
    await atPermissionQuestion(terminal);
    const asked = terminal.screen().lastIndexOf("(Enter: ");
    await terminal.waitFor(/│ .*host name/); // host_info's result, shown during the question
    await sleep(1200); // some redraws
    const during = visibleLines(terminal.screen());
    assert.match(during.at(-1)!, /^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] waiting for you … \d+ s$/, during.join("\n"));
    assert.ok(during.includes("   [a] Allow  [A] Always allow  [r] Reject  (Enter: Reject)"));
    await terminal.type("r");
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    const answered = screen.indexOf('[client] permission for "bash');
    const waits = screen.slice(asked, answered).match(/waiting for [^…]*/g) ?? [];
    assert.deepEqual([...new Set(waits)], ["waiting for you "], "another wait drawn meanwhile");
    const lines = visibleLines(screen);
    assert.deepEqual(lines.filter((l) => l.includes("waiting for")), [], lines.join("\n"));
  },
});

Deno.test({
  name:
    "terminal: when mm exits during a permission question the client ends with its error line, and no progress line is left drawn",
  ignore: !hasScript,
  async fn() {
    const command = `${clientCommand(["--mm", ROGUE])}; echo "exit $?"`;
    const terminal = inTerminal(command, { env: { ROGUE_SCENARIO: "ask-then-exit" } });
    await terminal.waitFor("(Enter: ");
    const { screen } = await terminal.done();
    const lines = visibleLines(screen);
    assertInOrder(lines, ["error: mm exited with code 3 before the turn ended", "exit 1"]);
    assert.deepEqual(lines.filter((l) => l.includes("waiting for")), [], lines.join("\n"));
  },
});

/** What a terminal shows once it was narrowed to `width`, at `marker` in its output, and went on. */
function narrowedAt(screen: string, marker: string, before: number, width: number): string[] {
  const at = screen.indexOf(marker);
  assert.ok(at >= 0, `the terminal was never narrowed: ${JSON.stringify(screen)}`);
  // The rows so far are rewrapped to the new width, as a terminal that reflows does, and the
  // cursor stays where it was in its line: at the start of the progress line's first row.
  const shown = visibleLines(screen.slice(0, at), before);
  const last = shown.at(-1) ?? "";
  const rewrapped = [...shown.slice(0, -1), last].join("\n");
  const up = Math.max(0, Math.ceil([...last].length / width) - 1);
  const cursor = `\r${up > 0 ? `\x1b[${up}A` : ""}`;
  return visibleLines(rewrapped + cursor + screen.slice(at + marker.length), width);
}

Deno.test({
  name:
    "terminal: once the terminal is narrowed, the progress line is redrawn to the new width and no piece of the wider one stays",
  ignore: !hasScript,
  async fn() {
    const marker = "\x1b[?7h"; // autowrap on, as it already is: what the narrowing is known by
    // Narrowed once the progress line is drawn at 100 columns, when the test says so.
    const trigger = `${scratchDir("narrow-")}/now`;
    const narrow =
      `(until [ -e '${trigger}' ]; do sleep 0.05; done; stty cols 20 < /dev/tty; printf '\\033[?7h')`;
    const terminal = inTerminal(
      `stty cols 100; ${narrow} & ${clientCommand(["--mm", MM_SIM, "How much memory?"])}; wait`,
      { env: { MM_SIM_THINK_MS: "2000" } },
    );
    await terminal.waitFor(PROGRESS);
    Deno.writeTextFileSync(trigger, "");
    await terminal.waitFor(marker);
    await sleep(600); // some redraws at the new width
    const during = narrowedAt(terminal.screen(), marker, 100, 20);
    const progress = during.filter((row) => SPINNER.test(row) || /waiting|… \d+ s/.test(row));
    assert.equal(progress.length, 1, JSON.stringify(during));
    assert.ok([...progress[0]].length < 20, JSON.stringify(progress));
    assert.match(progress[0], /^. waiting for.* … \d+ s$/);
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    const after = narrowedAt(screen, marker, 100, 20);
    assert.ok(!after.some((row) => SPINNER.test(row) || row.includes("waiting")), after.join("\n"));
    assert.ok(after.includes("[end_turn]"), after.join("\n"));
  },
});

Deno.test({
  name:
    "terminal: while an agent's own tool call runs, the progress line waits for it by its title",
  ignore: !hasScript,
  async fn() {
    const { terminal, goOn } = rogueAtTerminal("running-call");
    await terminal.waitFor(/waiting for npm test … [1-9]\d* s/);
    goOn();
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    assert.ok(screen.includes("│ all passed"), JSON.stringify(screen));
  },
});

Deno.test({
  name: "terminal: with two calls running, the progress line waits for the latest",
  ignore: !hasScript,
  async fn() {
    const { terminal, goOn } = rogueAtTerminal("two-running-calls");
    await terminal.waitFor(/waiting for (first|second) call … 1 s/);
    const both = terminal.screen().slice(terminal.screen().indexOf("🛠️ second call"));
    assert.ok(!both.includes("waiting for first call"), terminal.screen());
    goOn();
    const { code } = await terminal.done();
    assert.equal(code, 0);
  },
});

Deno.test({
  name: "terminal: with TERM=dumb there is no progress line and no colour",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(clientCommand(["--mm", MM_SIM, "How big is my disk?"]), {
      env: { MM_SIM_THINK_MS: "300", TERM: "dumb" },
    });
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    assert.ok(screen.includes("✖ client: host_info failed"), JSON.stringify(screen));
    assert.ok(
      !screen.includes("\x1b"),
      `escape codes on a dumb terminal: ${JSON.stringify(screen)}`,
    );
    assert.ok(!SPINNER.test(screen) && !screen.includes("waiting for"), JSON.stringify(screen));
  },
});

Deno.test({
  name: "terminal: the progress line never wipes an answer's half-written line",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(clientCommand(["--mm", ROGUE]), {
      env: { ROGUE_SCENARIO: "pause-mid-answer" },
    });
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, screen);
    const lines = visibleLines(screen);
    assert.ok(lines.includes("Half an answer and the rest."), JSON.stringify(lines));
  },
});

Deno.test({
  name: "terminal: a short line of mm's log while the progress line is up leaves nothing of it",
  ignore: !hasScript,
  async fn() {
    const { terminal, goOn } = rogueAtTerminal("stderr-short");
    await terminal.waitFor(/waiting for the model … \d+ s/);
    goOn();
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    const rows = visibleLines(screen);
    assert.ok(rows.includes("[mm] hi"), JSON.stringify(rows));
    assert.ok(!rows.some((row) => row.includes("waiting")), JSON.stringify(rows));
    assert.ok(SPINNER.test(screen), "the progress line was drawn before mm's line came");
  },
});

// ─── Prompts ─────────────────────────────────────────────────────────────────

Deno.test({
  name:
    "terminal: -i shows a > prompt on stderr after each turn; a blank line asks again, a typed line runs a turn, Ctrl-D ends with exit 0",
  ignore: !hasScript,
  async fn() {
    // stdout goes to a file: what the terminal shows is stderr alone.
    const stdoutFile = scratchFile("conversation-");
    const terminal = inTerminal(
      `${clientCommand(["--mm", MM_SIM, "-i", "How much memory?"])} > '${stdoutFile}'`,
    );
    const prompts = () => terminal.screen().split("> ").length - 1;
    await terminal.waitFor("> ");
    await terminal.type("\r");
    await terminal.waitFor(/> [^]*> /);
    assert.equal(prompts(), 2, JSON.stringify(terminal.screen()));
    await terminal.type("How long is it up?\r");
    await terminal.waitFor(/> How long is it up\?\r\n[^]*> /);
    await terminal.type("\x04");
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    const out = Deno.readTextFileSync(stdoutFile).split("\n").filter((l) => l !== "");
    const turns = turnsOf(out);
    assert.equal(turns.length, 2, out.join("\n"));
    assertTurn(turns[0], "How much memory?", RESULT_LINE.memory, "memory");
    assertTurn(turns[1], "How long is it up?", RESULT_LINE.uptime, "uptime");
    assert.ok(!out.some((l) => l.includes("> ")), "the prompt is not on stdout");
  },
});

Deno.test({
  name: "terminal: -i without a question: the first prompt is not covered by a progress line",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(clientCommand(["--mm", MM_SIM, "-i"]));
    await terminal.waitFor("> ");
    await sleep(600);
    const afterPrompt = terminal.screen().slice(terminal.screen().lastIndexOf("> "));
    await terminal.type("\x04");
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, screen);
    assert.ok(!afterPrompt.includes("waiting for"), JSON.stringify(afterPrompt));
  },
});

Deno.test({
  name: "terminal: - at a terminal says how to end the question, then reads it",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(clientCommand(["--mm", MM_SIM, "-"]));
    await terminal.waitFor("reading the question from stdin; end it with Ctrl-D");
    await terminal.type("How much RAM?\n");
    await sleep(200);
    await terminal.type("\x04");
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    assert.ok(visibleLines(screen).includes("❓ How much RAM?"), JSON.stringify(screen));
  },
});

Deno.test({
  name:
    "terminal: -'s hint depends on stdin being the terminal: shown with stdout in a file, not with stdin a pipe",
  ignore: !hasScript,
  async fn() {
    const hint = "reading the question from stdin; end it with Ctrl-D";
    const answer = scratchFile("answer-");
    const filed = inTerminal(`${clientCommand(["--mm", MM_SIM, "-"])} > '${answer}'`);
    await sleep(500); // typed ahead, as a person may: the terminal holds it for the client
    await filed.type("How much RAM?\n");
    await sleep(200);
    await filed.type("\x04");
    const done = await filed.done();
    assert.equal(done.code, 0);
    assert.ok(done.screen.includes(hint), JSON.stringify(done.screen));
    assert.ok(Deno.readTextFileSync(answer).includes("❓ How much RAM?"));
    const piped = inTerminal(`echo 'How much RAM?' | ${clientCommand(["--mm", MM_SIM, "-"])}`);
    const { code, screen } = await piped.done();
    assert.equal(code, 0, JSON.stringify(screen));
    assert.ok(!screen.includes(hint), JSON.stringify(screen));
    assert.ok(visibleLines(screen).includes("❓ How much RAM?"), JSON.stringify(screen));
  },
});

Deno.test({
  name:
    "terminal: the progress line's seconds run on while mm's updates keep coming for the same wait",
  ignore: !hasScript,
  async fn() {
    // Thoughts every 200 ms for 3 s (not shown without --verbose): still the model it waits for.
    const { terminal, goOn } = rogueAtTerminal("chatty", [], { ROGUE_CHATTY_MS: String(WAIT_MS) });
    await terminal.waitFor(/waiting for the model … 2 s/);
    goOn();
    const { code } = await terminal.done();
    assert.equal(code, 0);
  },
});

Deno.test({
  name:
    "terminal: the progress line's seconds for a call run on through updates that name the same call again",
  ignore: !hasScript,
  async fn() {
    // mm reports on its own call every 200 ms, with the same title: the wait goes on, not anew.
    const { terminal, goOn } = rogueAtTerminal("same-call-updates");
    const drawnAfter = /\[rogue\] updates for 3 s[\s\S]*?waiting for npm test … (\d+) s/;
    await terminal.waitFor(drawnAfter);
    const drawn = terminal.screen().match(drawnAfter)!;
    // A second at least, however late a crowded machine let the client see the call's start.
    assert.ok(Number(drawn[1]) >= 1, drawn[0]);
    goOn();
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    assert.ok(screen.includes("│ all passed"), JSON.stringify(screen));
  },
});

Deno.test({
  name:
    "terminal: the progress line of a turn never names a call of an earlier turn that never ended",
  ignore: !hasScript,
  async fn() {
    const { terminal, goOn } = rogueAtTerminal("unfinished-call", ["-i", "First?"]);
    await terminal.waitFor("> ");
    const firstTurn = terminal.screen().length;
    await terminal.type("Second?\n");
    // After mm's thought (not shown), the wait is the model's again, for a second and more.
    await terminal.waitFor(/waiting for (the model|never finished) … 1 s/);
    assert.ok(!terminal.screen().slice(firstTurn).includes("never finished"), terminal.screen());
    goOn();
    await terminal.waitFor("Thought about it.");
    await terminal.type("\x04");
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    assert.ok(
      !screen.slice(firstTurn).includes("waiting for never finished"),
      JSON.stringify(screen),
    );
  },
});
