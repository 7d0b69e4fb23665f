/**
 * At a real terminal (a pseudo-terminal from util-linux `script`): the progress line fits the
 * terminal's width, is not drawn on a dumb terminal, and leaves nothing behind when mm's own log
 * line is shorter; `-` says how to end the question.
 */

// Terminal control characters are what these tests are about.
// deno-lint-ignore-file no-control-regex

import assert from "node:assert/strict";
import { ROOT } from "./_run.ts";
import { clientCommand, hasScript, inTerminal, visibleLines } from "./_pty.ts";

const MM_SIM = `${ROOT}/test/mm-sim`;
const ROGUE = `${ROOT}/test/rogue-mm`;
const SPINNER = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test({
  name: "terminal: in a 20-column terminal the progress line is one row, however long its label",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(`stty cols 20; ${clientCommand(["--mm", MM_SIM])}`, {
      env: { MM_SIM_THINK_MS: "2500" },
      deadlineMs: 20_000,
    });
    await terminal.waitFor("waiting for", 10_000);
    await sleep(1500); // some fifteen redraws
    const rows = visibleLines(terminal.screen(), 20);
    assert.equal(rows.filter((row) => SPINNER.test(row)).length, 1, JSON.stringify(rows));
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    for (const [, drawn] of screen.matchAll(/\r\x1b\[K([⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏][^\r\n]*)\r/g)) {
      assert.ok(
        [...drawn].length < 20,
        `a progress line of ${[...drawn].length} columns: ${drawn}`,
      );
    }
    assert.ok(!visibleLines(screen, 20).some((row) => SPINNER.test(row)), "erased at the end");
  },
});

Deno.test({
  name: "terminal: with TERM=dumb there is no progress line and no colour",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(clientCommand(["--mm", MM_SIM, "How big is my disk?"]), {
      env: { MM_SIM_THINK_MS: "1200", TERM: "dumb" },
      deadlineMs: 20_000,
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
  name: "terminal: a short line of mm's log while the progress line is up leaves nothing of it",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(clientCommand(["--mm", ROGUE]), {
      env: { ROGUE_SCENARIO: "stderr-short" },
      deadlineMs: 20_000,
    });
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    const rows = visibleLines(screen);
    assert.ok(rows.includes("[mm] hi"), JSON.stringify(rows));
    assert.ok(!rows.some((row) => row.includes("waiting")), JSON.stringify(rows));
    assert.ok(SPINNER.test(screen), "the progress line was drawn before mm's line came");
  },
});

Deno.test({
  name: "terminal: - at a terminal says how to end the question, then reads it",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(clientCommand(["--mm", MM_SIM, "-"]), { deadlineMs: 20_000 });
    await terminal.waitFor("reading the question from stdin; end it with Ctrl-D", 10_000);
    await terminal.type("How much RAM?\n");
    await sleep(200);
    await terminal.type("\x04");
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    assert.ok(visibleLines(screen).includes("❓ How much RAM?"), JSON.stringify(screen));
  },
});
