// Terminal control characters are what several of these tests are about.
// deno-lint-ignore-file no-control-regex

/**
 * What the user sees: the conversation on stdout and everything else on stderr, apart or in one
 * pipe; tool calls in every shape ACP gives them (announced or not, renamed, with content that
 * replaces earlier content, output only in `rawOutput`, `diff` and `terminal` blocks, text glued
 * across a call, a turn the agent cancels by itself); each line whole under a model that works
 * one step at a time; `--verbose` and `--trace`; colour; mm's control characters shown, not
 * obeyed; mm's own log passed through. The misbehaving peer (`test/rogue-mm`) plays real ACP
 * agents here, and its every update and permission request is first checked against the ACP v1
 * schema.
 */

import assert from "./_assert.ts";
import { DEFAULT_QUESTION, sameStream, showControls } from "../client.ts";
import {
  ANSWER_PREFIX,
  assertInOrder,
  assertNoPeerLeft,
  assertTook,
  clientCommand,
  type ClientResult,
  type ClientRun,
  discovery,
  idleRunMs,
  MM_SIM,
  OS_TEXT,
  RESULT_LINE,
  ROGUE,
  runClient,
  runRogue,
  runShell,
  tempFile,
  traced,
} from "./_run.ts";
import { checkReceivedFrames } from "./_schema.ts";
import { doneWithoutPrompt, hasScript, inTerminal, visibleLines } from "./_pty.ts";
import { HOSTILE } from "./rogue_mm.ts";

const QUESTION = `❓ ${DEFAULT_QUESTION}`;

/** Runs a scenario of the peer; its frames must be valid ACP v1. */
async function scenario(name: string, run: ClientRun = {}): Promise<ClientResult> {
  const result = await runRogue(name, run);
  if (!run.noTrace) {
    assert.deepEqual(checkReceivedFrames(result.stderr), [], "the peer sends ACP v1");
  }
  return result;
}

// ─── Tool calls as real agents send them ─────────────────────────────────────

Deno.test("rendering: a permission for a call nobody announced shows the call, and its refusal, on stdout", async () => {
  const run = await scenario("unannounced-permission");
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out, [
    QUESTION,
    "I will list / with the shell tool.",
    "🛠️ ls /",
    "✖ ls / refused",
    "The shell tool answered: nothing.",
    "[end_turn]",
  ]);
  assert.ok(run.log.includes('[client] permission for "ls /": refused'), run.stderr);
  assert.match(run.stderr, /\[rogue\] answer .*"optionId":"no"/);
});

Deno.test("rendering: a call renamed by an update shows its new title, so the command is visible, and a refused call is not said to fail too", async () => {
  const run = await scenario("renamed-call");
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out.slice(1, -1), [
    "🛠️ Terminal",
    "🛠️ Terminal → ls -la /",
    "✖ ls -la / refused", // and no "failed" for the same call when mm ends it so
    "🛠️ bash",
    "🛠️ bash → cat /etc/hostname",
    "│ vm",
  ]);
});

Deno.test("rendering: content that replaces earlier content shows only what was not shown yet", async () => {
  const run = await scenario("growing-content");
  assert.deepEqual(run.out.slice(1, -1), [
    "🛠️ npm test",
    "│ line 1",
    "│ line 2",
    "│ line 3",
    "│ line 3 done", // a last line that grew is shown again whole
    "│ all 3 passed", // content that does not extend what was shown: whole
    "🛠️ lint",
    "│ a",
    "│ b",
    "│ a changed", // a line before the last that grew: not an extension, all of it again
    "│ b",
    "│ c",
  ]);
});

Deno.test("rendering: a finished call without content shows its rawOutput, at most 20 lines", async () => {
  const run = await scenario("raw-output");
  const logLines = Array.from({ length: 20 }, (_, i) => `│ log ${i + 1}`);
  assert.deepEqual(run.out.slice(1, -1), [
    "🛠️ Read log",
    ...logLines,
    "│ … (5 more lines)",
    "🛠️ Exit code",
    '│ {"exitCode":0,"stdout":"ok"}',
    "🛠️ With content",
    "│ the content",
    "🛠️ Early raw",
    "│ read early",
    "🛠️ Twenty rows",
    ...Array.from({ length: 20 }, (_, i) => `│ row ${i + 1}`), // exactly 20: whole, no "0 more"
  ]);
});

Deno.test("rendering: a diff shows its path and size, a terminal its id", async () => {
  const run = await scenario("diff-terminal");
  assert.deepEqual(run.out.slice(1, -1), [
    "🛠️ Edit files",
    "│ diff /p/a.txt (+2 −1 lines)",
    "│ diff /p/new.txt (+2 −0 lines)",
    "│ diff /p/twice.txt (+1 −0 lines)",
    "🛠️ Run tests",
    "│ [terminal term-1]",
  ]);
});

Deno.test("rendering: agent text after a tool call starts on a line of its own", async () => {
  const run = await scenario("glued-text");
  assert.deepEqual(run.out.slice(1, -1), [
    "🛠️ search",
    "Searching.",
    "Found it.",
    " Done.", // an empty chunk between is no output: the text goes on after it, as sent
  ]);
});

Deno.test("rendering: --quiet shows none of it, only the answer text byte for byte", async () => {
  const glued = await scenario("unannounced-permission", { args: ["-q"] });
  assert.equal(
    glued.stdout,
    "I will list / with the shell tool.The shell tool answered: nothing.\n",
  );
  const renamed = await scenario("renamed-call", { args: ["-q"] });
  assert.equal(renamed.stdout, "");
  const text = await scenario("glued-text", { args: ["-q"] });
  assert.equal(text.stdout, "Searching.Found it. Done.\n");
});

Deno.test("rendering: --verbose shows commands, mode, title, config and every usage update on stderr", async () => {
  const run = await scenario("session-extras", { args: ["--verbose"] });
  assert.deepEqual(run.out.slice(1), ["Settled.", "[end_turn]"]);
  const shown = run.log.filter((line) => !line.startsWith("[") && !line.startsWith("Task "));
  assert.deepEqual(shown, [
    "commands: /web, /test",
    "mode: code",
    "title: Host facts",
    "config: model = qwen",
    "config: fast = true",
    "usage: 100 of 1000 tokens",
    "usage: 200 of 1000 tokens",
    "usage: 300 of 1000 tokens, cost 0.01 USD",
  ]);
  const quiet = await scenario("session-extras");
  assert.ok(!/commands:|mode:|title:|config:|usage:/.test(quiet.stderr), quiet.stderr);
});

Deno.test("rendering: a turn mm cancels by itself after a refusal is [cancelled], 130, and says why", async () => {
  const run = await scenario("self-cancel");
  assert.equal(run.code, 130, run.stderr);
  assert.deepEqual(run.out.slice(1), [
    "🛠️ rm -rf /tmp/x",
    "✖ rm -rf /tmp/x refused",
    "[cancelled]",
  ]);
  assert.ok(
    run.log.includes(
      "[client] mm ended the turn as cancelled; the client did not ask after a refused permission",
    ),
    run.stderr,
  );
  const quiet = await scenario("self-cancel", { args: ["-q"] });
  assert.ok(quiet.log.some((line) => line.startsWith("[client] mm ended the turn as cancelled")));
});

Deno.test("rendering: with -i a refusal is the turn's own: a later turn mm cancels by itself is said plainly", async () => {
  const run = await runRogue("refused-then-cancelled", {
    args: ["-i", "List my files"],
    stdin: "Again\n",
  });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(run.out.includes("✖ bash: ls refused"), run.stdout);
  assert.deepEqual(
    run.log.filter((line) => line.startsWith("[client] mm ended the turn")),
    ["[client] mm ended the turn as cancelled; the client did not ask"],
  );
});

Deno.test("rendering: a non-text block of the answer is not part of its text (--json's result.text)", async () => {
  const run = await runRogue("render", { noTrace: true, args: ["--json"] });
  assert.equal(run.code, 0, run.stderr);
  const lines = run.stdout.trim().split("\n").map((line) => JSON.parse(line));
  assert.deepEqual(lines.at(-1).result.text, "An answerends here.");
});

Deno.test("rendering: failed calls, non-text content, and nothing of unknown kinds", async () => {
  const run = await runRogue("render", { noTrace: true });
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out, [
    QUESTION,
    "🛠️ client: host_info",
    "✖ client: host_info failed",
    "│ first line",
    "│ second line",
    "🛠️ renamed",
    "✖ renamed failed",
    "🛠️ c",
    "✖ c failed",
    "│ [image]",
    "│ diff /x (+0 −0 lines)",
    "An answer",
    "[image]",
    "ends here.",
    "[end_turn]",
  ]);
  assert.ok(!run.stderr.includes("thinking hard"), "no thoughts without --verbose");
  assert.ok(!run.stderr.includes("usage"), "no usage without --verbose");
});

Deno.test("rendering: tool text is split into lines at \\r\\n as well as \\n", async () => {
  const run = await runRogue("crlf-tool-text");
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out.slice(-4), ["🛠️ crlf", "│ a", "│ b", "[end_turn]"]);
  assert.ok(!run.stdout.includes("\r"), JSON.stringify(run.stdout));
});

Deno.test("rendering: a tool text's last line end adds no line, an open thought line is ended before the answer, and updates that are not objects are ignored", async () => {
  const run = await runRogue("odd-updates", { noTrace: true, args: ["--verbose"] });
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out.slice(1), [
    "🛠️ client: host_info",
    "│ one",
    "│ two",
    "Done.",
    "[end_turn]",
  ]);
  // The thought's open line is ended on stderr before the answer goes on.
  assert.ok(run.stderr.includes("a thought without its line end\n"), JSON.stringify(run.stderr));
});

// ─── A model that works one step at a time ───────────────────────────────────

Deno.test("rendering: under a stepwise model each sentence, tool line and result is a line of its own, one call after another", async () => {
  const run = await runClient({ env: { MM_SIM_MODEL: "stepwise" } });
  assert.equal(run.code, 0, run.stderr);
  const { session } = discovery(run.log);
  assert.deepEqual(run.out.slice(0, 7), [
    QUESTION,
    "Let me ask host_info about the operating system. ",
    "🛠️ client: host_info",
    `│ ${OS_TEXT}`,
    "Let me ask host_info about the memory. ",
    "🛠️ client: host_info",
    run.out[6],
  ]);
  assert.match(run.out[6], RESULT_LINE.memory);
  assert.ok(run.out[7].startsWith(`${ANSWER_PREFIX}operating system: `), run.out[7]);
  assert.equal(run.out[8], "[end_turn]");
  assert.equal(run.out.length, 9);
  // One call at a time: the second call reaches the client after the first result came back.
  const frames = traced(run.stderr);
  const secondCall = frames.find((t) => !t.sent && t.frame.params?.topic === "memory");
  const firstResult = frames.find((t) =>
    (t.frame.params?.update as { status?: string } | undefined)?.status === "completed"
  );
  assert.ok(firstResult && secondCall && firstResult.at < secondCall.at, "one after the other");
  assert.ok(run.log.includes(`[client] host_info {"topic":"memory"} (session ${session})`));
});

Deno.test("rendering: under a stepwise model a failed call's failure and text follow the sentence on lines of their own", async () => {
  const run = await runClient({ args: ["How big is my disk?"], env: { MM_SIM_MODEL: "stepwise" } });
  assert.equal(run.code, 0, run.stderr);
  const at = run.out.indexOf("✖ client: host_info failed");
  assert.ok(at > 0, run.stdout);
  assert.equal(
    run.out[at + 1],
    '│ [client tool error: host_info: "topic" must be one of os, cpu, memory, uptime, not "disk"]',
  );
  assert.equal(run.out[at - 1], "🛠️ client: host_info");
});

// ─── stdout and stderr ───────────────────────────────────────────────────────

Deno.test("rendering: stdout is exactly the conversation whatever stderr carries, --trace and --verbose change nothing on it, and there is no trace without --trace", async () => {
  const run = await runRogue("interleave", { args: ["--verbose"] });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, `${QUESTION}\nPart one, part two, part three. The end\n[end_turn]\n`);

  const question = "What operating system does my machine run?";
  const [loud, quiet] = await Promise.all([
    runClient({ args: ["--verbose", question] }),
    runClient({ noTrace: true, args: [question] }),
  ]);
  assert.equal(loud.code, 0, loud.stderr);
  assert.equal(quiet.code, 0, quiet.stderr);
  assert.equal(loud.stdout, quiet.stdout, "--trace and --verbose change nothing on stdout");
  assert.ok(!quiet.stdout.includes("[client]") && !quiet.stdout.includes("[acp]"), quiet.stdout);
  assert.ok(quiet.out.every((l) => !l.startsWith("→") && !l.startsWith("←")));
  assert.ok(!quiet.stderr.includes("→ "), "no trace without --trace");
});

/** What starts a line the client or mm writes; none may start in the middle of another line. */
const LINE_STARTS = ["→ ", "← ", "[client]", "[acp] ", "usage:", "thinking hard", "🛠️ ", "│ "];

/** Lines that start in the middle of another, in a run whose streams share one pipe. */
function glued(output: string): string[] {
  return output.split("\n").filter((line) =>
    !line.startsWith("→ ") && !line.startsWith("← ") &&
    LINE_STARTS.some((start) => line.includes(start) && !line.startsWith(start))
  );
}

Deno.test("rendering: with stdout and stderr in one pipe no line starts in the middle of another, and the stand-in's runs have no empty line", async () => {
  const pidFile = tempFile("pid", "");
  const runs: [string, string[], Record<string, string>][] = [
    ["the peer's interleaved turn", ["--mm", ROGUE, "--trace", "--verbose"], {
      ROGUE_SCENARIO: "interleave",
      ROGUE_PID_FILE: pidFile,
    }],
    ["the stand-in", ["--mm", MM_SIM, "--trace", "--verbose"], {}],
    ["the stand-in, stepwise", ["--mm", MM_SIM, "--trace", "--verbose"], {
      MM_SIM_MODEL: "stepwise",
    }],
    ["the stand-in, -q", ["--mm", MM_SIM, "-q", "--verbose"], {}],
    ["an open thought line", ["--mm", ROGUE, "--verbose"], { ROGUE_SCENARIO: "odd-updates" }],
  ];
  const [interleaved, standIn, stepwise, quiet, thought] = await Promise.all(
    runs.map(([, args, env]) => runShell(`exec ${clientCommand(args)} 2>&1`, env)),
  );
  // A line open on stderr (a thought) is ended before the answer goes on, on stdout.
  assert.ok(thought.stdout.includes("a thought without its line end\nDone."), thought.stdout);
  for (const [i, run] of [interleaved, standIn, stepwise, quiet, thought].entries()) {
    assert.equal(run.code, 0, `${runs[i][0]}: ${run.stdout}`);
    assert.deepEqual(glued(run.stdout), [], `${runs[i][0]}: ${run.stdout}`);
  }
  for (const piece of ["Part one,", " part two,", " part three.", " The end"]) {
    assert.ok(interleaved.stdout.includes(piece), `${piece} is shown`);
  }
  assert.ok(interleaved.stdout.includes("\n[client] bad frame from mm: not json\n"));
  await assertNoPeerLeft(pidFile);
  for (const run of [standIn, stepwise]) {
    assert.match(run.stdout, /\nusage: /);
    assert.ok(!run.stdout.includes("\n\n"), `an empty line in one pipe: ${run.stdout}`);
    assert.match(run.stdout, /\n\[end_turn\]\n/);
  }
  assert.ok(
    !quiet.stdout.includes("\n\n") && quiet.stdout.endsWith("\n"),
    JSON.stringify(quiet.stdout),
  );
});

Deno.test("rendering: mm's log lines come through the client whole, and the last ones arrive when mm exits at once, an unended one too", async () => {
  const run = await runRogue("stderr-burst-exit");
  assert.equal(run.code, 1, run.stderr.slice(-500));
  const lines = run.log.filter((l) => l.startsWith("[mm] line "));
  assert.deepEqual(lines, Array.from({ length: 3000 }, (_, i) => `[mm] line ${i + 1}`));
  assert.deepEqual(run.log.slice(-2), [
    "[mm] last words, no line end",
    "error: mm exited with code 3 before the turn ended",
  ]);
});

Deno.test("rendering: mm's last log lines, an unended one too, come before the client's line about its exit while a helper of mm holds its stderr", async () => {
  const idle = idleRunMs(); // beside the run: how long the machine takes to do nothing
  const run = await runRogue("stderr-helper-exit");
  assert.equal(run.code, 1, run.stderr);
  assert.deepEqual(run.log.slice(-3), [
    "[mm] a whole line",
    "[mm] last words, no line end",
    "error: mm exited with code 3 before the turn ended",
  ]);
  // Not waiting for the helper, which holds mm's stderr for 30 s: ending is quick.
  assertTook("the client ended", run.ms, { most: 2500, idle: await idle });
});

Deno.test("rendering: a line of mm's log written in two pieces comes out whole, also after a line over 64 KiB", async () => {
  const pidFile = tempFile("pid", "");
  const run = await runShell(`${clientCommand(["--mm", ROGUE])} 2>&1`, {
    ROGUE_SCENARIO: "stderr-split",
    ROGUE_PID_FILE: pidFile,
  });
  assert.equal(run.code, 0, run.stdout.slice(-500));
  const lines = run.stdout.split("\n");
  assert.ok(lines.includes("[mm] a line in two writes"), run.stdout.slice(-500));
  assert.ok(lines.includes("Hello."), run.stdout.slice(-500));
  // Lines of one write go out together, not each behind the next write.
  assert.ok(
    lines.indexOf("[mm] two") < lines.indexOf("After two lines."),
    run.stdout.slice(0, 300),
  );
  await assertNoPeerLeft(pidFile);
});

Deno.test("rendering: stdout and stderr are taken for one stream only when the system says so", () => {
  const file = (dev: number, ino: number | null) => ({ terminal: false, dev, ino });
  assert.equal(sameStream(file(1, 42), file(1, 42)), true, "one pipe or file");
  assert.equal(sameStream(file(1, 42), file(1, 43)), false, "two files");
  assert.equal(sameStream(file(1, 42), file(2, 42)), false, "two devices");
  // Where the system gives no inode (Windows), two files are two, not one glued line.
  assert.equal(sameStream(file(1, null), file(1, null)), false);
  assert.equal(sameStream(file(0, 0), file(0, 0)), false);
  assert.equal(sameStream({ terminal: true }, { terminal: true }), true, "one terminal");
  assert.equal(sameStream({ terminal: true }, file(1, 42)), false);
  assert.equal(sameStream(file(1, 42), { terminal: true }), false);
});

Deno.test("rendering: kinds of update the client does not know show nothing, with --verbose too, whatever their name", async () => {
  for (const args of [[], ["--verbose"]]) {
    const run = await runRogue("unknown-kinds", { noTrace: true, args });
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(run.out, [QUESTION, "Still here.", "[end_turn]"]);
    assert.deepEqual(run.log.filter((line) => !line.startsWith("[")), [], run.stderr);
  }
});

// ─── --verbose and --trace ───────────────────────────────────────────────────

Deno.test("rendering: --verbose shows thoughts, plans and usage on stderr, never on stdout", async () => {
  const run = await runRogue("render", { noTrace: true, args: ["--verbose"] });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(run.log.includes("thinking hard"));
  assert.ok(run.log.includes("plan:"));
  assert.ok(run.log.includes("  [completed] look"));
  assert.ok(run.log.includes("  [pending] answer"));
  assert.ok(run.log.includes("usage: 1234 of 32768 tokens, cost 0.02 USD"));
  assert.ok(!run.stdout.includes("thinking hard") && !run.stdout.includes("usage"));
  assert.ok(!run.stderr.includes("\x1b["), "no colour when stderr is not a terminal");
});

Deno.test("rendering: --trace shows every frame in order, → sent and ← received", async () => {
  const run = await runClient({});
  const methods = traced(run.stderr).map(({ sent, frame }) =>
    `${sent ? "→" : "←"} ${frame.method ?? `answer ${frame.id}`}`
  );
  assert.deepEqual(methods.slice(0, 5), [
    "→ initialize",
    "← answer 0",
    "→ session/new",
    "← answer 1",
    "→ session/prompt",
  ]);
  // The prompt's answer, then the session closed (the stand-in advertises session/close).
  assert.deepEqual(methods.slice(-3), ["← answer 2", "→ session/close", "← answer 3"]);
  assert.equal(methods.filter((m) => m === "← _demo.minime/host_info").length, 2);
});

// ─── Colour ──────────────────────────────────────────────────────────────────

Deno.test({
  name:
    "rendering: at a terminal failed calls are red and thoughts dim; NO_COLOR set but empty leaves colour on, NO_COLOR=1 turns it off",
  ignore: !hasScript,
  async fn() {
    const onTerminal = async (env: Record<string, string>) => {
      const args = ["--mm", MM_SIM, "--verbose", "How big is my disk?"];
      const terminal = inTerminal(clientCommand(args), { env });
      const { code, screen } = await doneWithoutPrompt(terminal, "[end_turn]");
      assert.equal(code, 0, JSON.stringify(screen));
      return screen;
    };
    const envs: Record<string, string>[] = [{}, { NO_COLOR: "" }, { NO_COLOR: "1" }];
    const [unset, empty, one] = await Promise.all(envs.map(onTerminal));
    for (const coloured of [unset, empty]) {
      assert.ok(
        coloured.includes("\x1b[31m✖ client: host_info failed\x1b[0m"),
        JSON.stringify(coloured),
      );
      assert.ok(coloured.includes("\x1b[2mThe user asks about the machine"), coloured);
    }
    // NO_COLOR is about colour: the progress line may still erase itself.
    assert.ok(!/\x1b\[[\d;]*m/.test(one), JSON.stringify(one));
    assert.ok(visibleLines(one).includes("✖ client: host_info failed"), JSON.stringify(one));
  },
});

// ─── Control characters ──────────────────────────────────────────────────────

Deno.test("rendering: control characters from mm are shown as their pictures, not obeyed", () => {
  assert.equal(showControls("\x1b[2J\x1b]0;pwned\x07"), "␛[2J␛]0;pwned␇");
  assert.equal(showControls("over\rwrite\bx\x00"), "over␍write␈x␀");
  assert.equal(showControls("line\r\nnext\ttab\n"), "line\nnext\ttab\n");
  assert.equal(showControls("\x7f\x9b2J é 日本"), "␡�2J é 日本");
});

/** The frames of the newest agents, sent by the misbehaving peer: the line `shape` of its data. */
const newest = (shape: number, env: Record<string, string> = {}, args: string[] = []) =>
  runRogue("newest", { env: { ROGUE_SHAPE: String(shape), ...env }, args: [...args, "Hi"] });

Deno.test("rendering: two messages told apart by their messageId alone are two paragraphs, in the conversation, with -q and in --json's text", async () => {
  const first = "INTEROP-OK: I will list / with the shell tool.";
  const second = 'INTEROP-FINAL: the shell tool answered: "Chunk ID:';
  const shown = await newest(0);
  assert.equal(shown.code, 0, shown.stderr);
  assert.ok(shown.stdout.includes(`${first}\n\n${second}`), JSON.stringify(shown.stdout));
  const quiet = await newest(0, {}, ["-q"]);
  assert.ok(quiet.stdout.startsWith(`${first}\n\n${second}`), JSON.stringify(quiet.stdout));
  const json = await newest(0, {}, ["--json"]);
  const result = JSON.parse(json.stdout.trimEnd().split("\n").at(-1)!).result;
  assert.ok(result.text.startsWith(`${first}\n\n${second}`), JSON.stringify(result));
});

Deno.test("rendering: output the agent reports in _meta for a terminal the client never lent is shown as │ lines, 20 at most, with its exit code when not 0", async () => {
  const run = await newest(2);
  assert.equal(run.code, 0, run.stderr);
  const listing = ["bin", "boot", "container_info.json", "dev", "etc", "farm", "home", "lib"];
  assertInOrder(run.out, [
    "🛠️ touch /tmp/marker-ae8e6e0d08d0 && ls /",
    "│ [terminal call_interop_3574b9de]",
    ...listing.map((name) => `│ ${name}`),
    "│ srv",
    "│ … (5 more lines)",
    "[end_turn]",
  ]);
  assert.ok(!run.out.some((line) => line.includes("exit code")), run.stdout);
  const failed = await newest(2, { ROGUE_EXIT_CODE: "2" });
  assertInOrder(failed.out, ["│ … (5 more lines)", "│ [exit code 2]", "[end_turn]"]);
});

Deno.test("rendering: a terminal's output sent in pieces, a failed call's rawOutput and a content block not wrapped in content are shown whole; a message after a call starts on the next line, no blank one", async () => {
  const run = await runRogue("call-shapes");
  assert.equal(run.code, 0, run.stderr);
  const from = run.out.indexOf("Let me look.");
  assert.deepEqual(run.out.slice(from, run.out.indexOf("[end_turn]") + 1), [
    "Let me look.",
    "🛠️ make test",
    "✖ make test failed",
    "│ line 1",
    "│ line 2",
    "│ [exit code 2]",
    "🛠️ Fetch page",
    "✖ Fetch page failed",
    "│ 404 not found",
    "🛠️ Bare block",
    "│ bare text",
    "Done.",
    "[end_turn]",
  ]);
  assert.ok(run.stdout.includes("│ bare text\nDone.\n"), JSON.stringify(run.stdout)); // no blank line
});

/** HOSTILE as a terminal must show it: control characters as their pictures. */
const HOSTILE_SHOWN = HOSTILE
  .replace(/[\x00-\x08\x0b-\x1f]/g, (c) => String.fromCodePoint(0x2400 + c.codePointAt(0)!))
  .replace(/\x7f/g, "␡")
  .replace(/[\x80-\x9f]/g, "\ufffd");

Deno.test({
  name:
    "rendering: at a terminal mm's control characters are shown, not obeyed, in its log too; the client's colours stay",
  ignore: !hasScript,
  async fn() {
    const pidFile = tempFile("pid", "");
    const terminal = inTerminal(clientCommand(["--mm", ROGUE, "How big is my disk?"]), {
      env: { ROGUE_SCENARIO: "hostile-text", ROGUE_PID_FILE: pidFile },
    });
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    // Drop what the client itself may write (colours, its progress line and
    // erasing it) and the terminal's own line ends: nothing else may obey.
    const rest = screen.replace(/\x1b\[[0-9;]*m/g, "")
      .replace(/(\r*\x1b\[[JK])?[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] waiting for [^\r\n\x1b]* \d+ s\r*/g, "")
      .replace(/\r*\x1b\[[JK]/g, "")
      .replaceAll("\r\n", "\n");
    for (const [name, c] of Object.entries({ ESC: "\x1b", CR: "\r", BEL: "\x07", BS: "\b" })) {
      assert.ok(!rest.includes(c), `a raw ${name} reached the terminal: ${JSON.stringify(screen)}`);
    }
    assert.ok(!/[\x7f-\x9f]/.test(rest), `a raw DEL or C1 control: ${JSON.stringify(screen)}`);
    const lines = visibleLines(screen);
    for (
      const wanted of [
        `🛠️ ti␍tle${HOSTILE_SHOWN}`,
        `│ result${HOSTILE_SHOWN}`,
        "[client] bad frame from mm: ␛[2Jbad frame␇",
        `[mm] log${HOSTILE_SHOWN}`,
      ]
    ) {
      assert.ok(lines.includes(wanted), `${JSON.stringify(wanted)} in ${JSON.stringify(screen)}`);
    }
    assert.ok(rest.includes(`answer${HOSTILE_SHOWN}␍end`), JSON.stringify(screen));
    assert.ok(rest.includes("␛[2J"));
    await assertNoPeerLeft(pidFile);
  },
});

Deno.test("rendering: in a pipe mm's text reaches stdout, and its log stderr, byte for byte", async () => {
  const run = await runRogue("hostile-text");
  assert.ok(run.stderr.includes(`[mm] log${HOSTILE}\n`), JSON.stringify(run.stderr));
  assert.equal(run.code, 0, run.stderr);
  assert.ok(run.out.includes(`🛠️ ti\rtle${HOSTILE}`), JSON.stringify(run.stdout));
  assert.ok(run.out.includes(`│ result${HOSTILE}`), JSON.stringify(run.stdout));
  assert.ok(run.stdout.includes(`answer${HOSTILE}\rend`), JSON.stringify(run.stdout));
  assert.ok(!run.stdout.includes("␛"));
});
