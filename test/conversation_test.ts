/**
 * A conversation, not a one-shot: more questions in one session (`-i`), the question from stdin
 * (`-`), the answer alone (`-q`), every update as JSON (`--json`), an earlier session continued
 * (`--resume`, `--continue`) or listed (`--sessions`). The real client against the stand-in — for
 * an mm that can only load a session, or neither, the stand-in with `MM_SIM_SESSIONS=load` or
 * `none`.
 */

import assert from "./_assert.ts";
import { DEFAULT_QUESTION, usage } from "../client.ts";
import {
  agentFileWith,
  ANSWER_LINE,
  ANSWER_PREFIX,
  assertInOrder,
  assertNoPeerLeft,
  assertTurn,
  clientCommand,
  discovery,
  MM_SIM,
  RESULT_LINE,
  ROOT,
  runClient,
  runRogue,
  runShell,
  seen,
  sentWith,
  sleep,
  startClient,
  tempFile,
  TOOL_NAMES,
  traced,
  turnsOf,
} from "./_run.ts";
import { atShellQuestionWithPrompt, hasScript, inTerminal, visibleLines } from "./_pty.ts";
import { scratchDir, scratchFile } from "./_scratch.ts";

const NO_TOOL_ANSWER =
  "I cannot see your machine: no client tool was offered to me, and I have no shell.";

/** How many requests or notifications of `method` the client sent. */
function countSent(stderr: string, method: string): number {
  return sentWith(stderr, method).length;
}

/** The `[client] host_info …` lines. */
function hostInfoLines(log: string[]): string[] {
  return log.filter((l) => l.startsWith("[client] host_info "));
}

/** A fresh folder for the stand-in's sessions, so runs of a test share only theirs. */
function stateDir(): Record<string, string> {
  return { MM_SIM_STATE_DIR: scratchDir("mm-sim-state-") };
}

/** The question of the earlier session a loading mm replays. */
const EARLIER_QUESTION = "What operating system does my machine run?";

/** An earlier session, and what a first run showed of it. */
interface Earlier {
  /** A stand-in that can only load sessions (`MM_SIM_SESSIONS=load`), with that session. */
  env: Record<string, string>;
  /** The session id. */
  session: string;
  /** The answer line the first run showed. */
  answer: string;
  /** The text of its `host_info` result. */
  result: string;
}

/**
 * Runs the client once against the stand-in to leave a session in a fresh state folder (its
 * question: {@linkcode EARLIER_QUESTION}); a later run with `env` can only load it.
 */
async function loadableSession(args: string[] = []): Promise<Earlier> {
  const env = stateDir();
  const first = await runClient({ env, noTrace: true, args: [...args, EARLIER_QUESTION] });
  assert.equal(first.code, 0, first.stderr);
  const answer = first.out.find((l) => l.startsWith(`${ANSWER_PREFIX}operating system: `));
  const result = first.out.find((l) => RESULT_LINE.os.test(l))?.slice("│ ".length);
  assert.ok(answer && result, first.stdout);
  const session = discovery(first.log).session;
  return { env: { ...env, MM_SIM_SESSIONS: "load" }, session, answer, result };
}

/** `text` matched literally in a regular expression. */
function literally(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

/** Runs the client once to open a session in `env`'s state folder; returns its id. */
async function earlierSession(env: Record<string, string>, args: string[] = []): Promise<string> {
  const first = await runClient({ env, noTrace: true, args: [...args, "How much memory?"] });
  assert.equal(first.code, 0, first.stderr);
  return discovery(first.log).session;
}

// ─── -i ──────────────────────────────────────────────────────────────────────

Deno.test({
  name:
    "-i: at a terminal the key that answers a permission is not part of the next question, typed after it",
  ignore: !hasScript,
  async fn() {
    const terminal = await atShellQuestionWithPrompt();
    await terminal.type("a");
    await terminal.waitFor(/\[end_turn\][^]*> /);
    await terminal.type("How much memory?");
    await sleep(500);
    const echoed = visibleLines(terminal.screen()).includes("> How much memory?");
    assert.ok(echoed, "not echoed: the terminal was left in raw mode");
    await terminal.type("\r");
    await terminal.waitFor(/❓ How much memory\?[^]*\[end_turn\][^]*> /);
    await terminal.type("\x04");
    const { code, screen } = await terminal.done(10_000);
    assert.equal(code, 0, JSON.stringify(screen));
    const shown = visibleLines(screen).filter((line) => /^[^[>]/.test(line)); // no log, no prompt
    const turns = turnsOf(shown);
    assert.deepEqual(turns.map((turn) => turn[0]), [
      "❓ How big is my disk?",
      "❓ How much memory?",
    ]);
    assert.ok(screen.includes('[client] permission for "bash: df -h .": allowed (asked)'));
    assert.ok(turns[0].some((line) => line.startsWith("│ Filesystem")), turns[0].join("\n"));
    assertTurn([...turns[1], "[end_turn]"], "How much memory?", RESULT_LINE.memory, "memory");
  },
});

Deno.test("-i: a question line is trimmed, as shown and as sent", async () => {
  const run = await runClient({ args: ["-i"], stdin: "   How much memory?  \t\n" });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out[0], "❓ How much memory?");
  const [prompt] = sentWith(run.stderr, "session/prompt");
  assert.deepEqual(prompt.params?.prompt, [{ type: "text", text: "How much memory?" }]);
});

Deno.test("-i: from a pipe the argument and each non-blank line are turns of one session, exit 0 at end of input", async () => {
  const run = await runClient({
    args: ["-i", "What operating system does my machine run?"],
    stdin: "How much memory?\n\nAnd since when is it up?\n",
  });
  assert.equal(run.code, 0, run.stderr);
  const turns = turnsOf(run.out);
  assert.equal(turns.length, 3, run.stdout);
  assertTurn(
    turns[0],
    "What operating system does my machine run?",
    RESULT_LINE.os,
    "operating system",
  );
  assertTurn(turns[1], "How much memory?", RESULT_LINE.memory, "memory");
  assertTurn(turns[2], "And since when is it up?", RESULT_LINE.uptime, "uptime");
  const { session } = discovery(run.log);
  assert.deepEqual(hostInfoLines(run.log), [
    `[client] host_info {"topic":"os"} (session ${session})`,
    `[client] host_info {"topic":"memory"} (session ${session})`,
    `[client] host_info {"topic":"uptime"} (session ${session})`,
  ]);
  assert.equal(countSent(run.stderr, "session/new"), 1);
  const prompts = sentWith(run.stderr, "session/prompt");
  assert.deepEqual(prompts.map((m) => m.params?.sessionId), [session, session, session]);
  assert.ok(!run.log.some((l) => l.includes("> ")), "no prompt when stdin is a pipe");
  assert.equal(run.log.at(-1), `[client] continue with: --resume ${session}`);
});

Deno.test("-i: without a question argument it reads the first question from stdin too, not the default one", async () => {
  const run = await runClient({
    args: ["-i"],
    stdin: "How much memory?\nAnd since when is it up?\n",
  });
  assert.equal(run.code, 0, run.stderr);
  const turns = turnsOf(run.out);
  assert.equal(turns.length, 2, run.stdout);
  assertTurn(turns[0], "How much memory?", RESULT_LINE.memory, "memory");
  assertTurn(turns[1], "And since when is it up?", RESULT_LINE.uptime, "uptime");
  assert.ok(!run.stdout.includes(DEFAULT_QUESTION));
  assert.equal(countSent(run.stderr, "session/new"), 1);
});

Deno.test("-i: only blank lines on stdin end with exit 0 and no turn", async () => {
  const run = await runClient({ args: ["-i"], stdin: "\n   \n\t\n" });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(!run.stdout.includes("❓"), run.stdout);
  assert.ok(!run.stdout.includes("[end_turn]"), run.stdout);
  assert.equal(countSent(run.stderr, "session/prompt"), 0);
});

Deno.test("-i: a last question without a line end is read", async () => {
  const run = await runClient({ args: ["-i"], stdin: "How much memory?" });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out[0], "❓ How much memory?");
  assert.equal(run.out.at(-1), "[end_turn]");
});

Deno.test("-i: stdin that cannot be read (a folder) ends the run in one error line naming it, exit 1, no mm left", async () => {
  const pidFile = tempFile("pid", "");
  const run = await runShell(`exec ${clientCommand(["--mm", MM_SIM, "-i", "How much RAM?"])} < /`, {
    MM_SIM_PID_FILE: pidFile,
  });
  assert.equal(run.code, 1, run.stderr);
  assert.equal(run.stdout.split("\n").at(-2), "[end_turn]", run.stdout); // the first turn ran
  const errors = run.stderr.split("\n").filter((line) => line.startsWith("error:"));
  assert.deepEqual(errors, ["error: cannot read stdin: Is a directory"], run.stderr);
  assert.ok(!run.stderr.includes("os error"), run.stderr);
  await assertNoPeerLeft(pidFile);
});

// ─── - ───────────────────────────────────────────────────────────────────────

Deno.test("-: reads the question from stdin, trimmed", async () => {
  const run = await runClient({ args: ["-"], stdin: "  How much RAM do I have?\n" });
  assert.equal(run.code, 0, run.stderr);
  const turns = turnsOf(run.out);
  assert.equal(turns.length, 1, run.stdout);
  assertTurn(turns[0], "How much RAM do I have?", RESULT_LINE.memory, "memory");
  const { session } = discovery(run.log);
  assert.deepEqual(hostInfoLines(run.log), [
    `[client] host_info {"topic":"memory"} (session ${session})`,
  ]);
});

Deno.test("-: a question of several lines reaches mm as it was written, its lines kept", async () => {
  const run = await runClient({ args: ["-"], stdin: "How much RAM?\r\nAnd which CPU?\n\n" });
  assert.equal(run.code, 0, run.stderr);
  const [prompt] = sentWith(run.stderr, "session/prompt");
  assert.deepEqual(prompt.params?.prompt, [{
    type: "text",
    text: "How much RAM?\nAnd which CPU?",
  }]);
});

Deno.test("-: stdin that cannot be read (a folder) is one error line naming it, exit 1, before mm starts", async () => {
  const pidFile = tempFile("pid", "");
  const run = await runShell(`exec ${clientCommand(["--mm", MM_SIM, "-"])} < /`, {
    MM_SIM_PID_FILE: pidFile,
  });
  assert.equal(run.code, 1, run.stderr);
  assert.equal(run.stderr, "error: cannot read stdin: Is a directory\n");
  assert.equal(run.stdout, "");
  assert.equal(Deno.readTextFileSync(pidFile), "", "mm was started");
});

Deno.test("-: an empty stdin asks the default question", async () => {
  const run = await runClient({ args: ["-"], stdin: "" });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out[0], `❓ ${DEFAULT_QUESTION}`);
  assert.equal(run.out.at(-1), "[end_turn]");
});

Deno.test("-: without - or -i stdin is never read: an open pipe that never closes does not hold the run", async () => {
  const client = startClient({ args: ["How much memory?"], stdin: "open" });
  try {
    const run = await client.done();
    assert.equal(run.code, 0, run.stderr);
    assertTurn(turnsOf(run.out)[0], "How much memory?", RESULT_LINE.memory, "memory");
  } finally {
    await client.closeStdin();
  }
});

// ─── -q ──────────────────────────────────────────────────────────────────────

Deno.test("-q: stdout is the answer text alone with a newline, and stderr has no [client] lines", async () => {
  const run = await runClient({ noTrace: true, args: ["-q", "How much memory?"] });
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /\n$/);
  assert.equal(run.out.length, 1, run.stdout);
  assert.match(run.out[0], ANSWER_LINE.memory);
  for (const mark of ["❓", "🛠️", "│", "[end_turn]"]) {
    assert.ok(!run.stdout.includes(mark), `${mark} in ${run.stdout}`);
  }
  assert.deepEqual(run.log.filter((l) => l.startsWith("[client]")), []);
});

Deno.test("-q: warnings stay on stderr", async () => {
  const run = await runClient({
    noTrace: true,
    args: ["-q", "--request", "--agent", "agent.yaml"],
  });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(
    run.log.includes(
      `[client] warning: agent.yaml sets acp.clientTools.discovery: meta, but the client announces request; mm will not see ${TOOL_NAMES}`,
    ),
    run.stderr,
  );
  assert.deepEqual(
    run.log.filter((l) => l.startsWith("[client]") && !l.startsWith("[client] warning: ")),
    [],
  );
  assert.equal(run.stdout, `${NO_TOOL_ANSWER}\n`);
});

Deno.test("-q: errors and exit codes stay: mm not found is still 127", async () => {
  const run = await runClient({
    noMm: true,
    noTrace: true,
    args: ["-q", "--mm", "/nonexistent/mm"],
  });
  assert.equal(run.code, 127);
  assert.deepEqual(run.log, [
    "error: cannot start mm (/nonexistent/mm): not found. --mm names it: check that path.",
  ]);
  assert.equal(run.stdout, "");
});

Deno.test("-q: in a shell script $(client -q …) holds the one line of the answer", async () => {
  const client = clientCommand(["--mm", MM_SIM, "-q", "How much memory is free?"]);
  const { stdout, stderr } = await runShell(
    `free=$(${client}); code=$?; printf '[%s] %s\\n' "$free" "$code"`,
  );
  const line = stdout.match(/^\[(.*)\] (\d+)\n$/);
  assert.ok(line, `${JSON.stringify(stdout)}\n${stderr}`);
  assert.equal(line[2], "0", stderr);
  assert.match(line[1], ANSWER_LINE.memory);
});

Deno.test("-q: with --trace the trace is on stderr and stdout is still the answer alone", async () => {
  const run = await runClient({ args: ["-q", "How much memory?"] });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out.length, 1, run.stdout);
  assert.match(run.out[0], ANSWER_LINE.memory);
  assert.equal(countSent(run.stderr, "session/prompt"), 1);
  assert.ok(run.stderr.includes("← "), "frames received are traced too");
});

Deno.test("-q: with -i only the answers, each ending with a newline", async () => {
  const run = await runClient({
    noTrace: true,
    args: ["-q", "-i"],
    stdin: "How much memory?\nHow long is it up?\n",
  });
  assert.equal(run.code, 0, run.stderr);
  const lines = run.stdout.split("\n");
  assert.equal(lines.length, 3, run.stdout);
  assert.match(lines[0], ANSWER_LINE.memory);
  assert.match(lines[1], ANSWER_LINE.uptime);
  assert.equal(lines[2], "");
  assert.deepEqual(run.log.filter((l) => l.startsWith("[client]")), []);
});

Deno.test("-q: an answer with a non-text block is its text alone, as --json's result.text: no [image], no line break", async () => {
  // The peer's answer: "An answer", an image, an empty text, "ends here.".
  const [quiet, json] = await Promise.all([
    runRogue("render", { noTrace: true, args: ["-q"] }),
    runRogue("render", { noTrace: true, args: ["--json"] }),
  ]);
  assert.equal(quiet.code, 0, quiet.stderr);
  assert.equal(json.code, 0, json.stderr);
  const result = JSON.parse(json.stdout.trim().split("\n").at(-1)!).result;
  assert.equal(result.text, "An answerends here.");
  assert.equal(quiet.stdout, `${result.text}\n`);
});

// ─── --resume ────────────────────────────────────────────────────────────────

Deno.test("--resume: a run says how to continue, and --resume continues that session with session/resume", async () => {
  const env = stateDir();
  const first = await runClient({ env, args: ["How much memory?"] });
  assert.equal(first.code, 0, first.stderr);
  const { session } = discovery(first.log);
  assert.equal(first.log.at(-1), `[client] continue with: --resume ${session}`);

  const second = await runClient({ env, args: ["--resume", session, "And since when is it up?"] });
  assert.equal(second.code, 0, second.stderr);
  assert.equal(countSent(second.stderr, "session/resume"), 1);
  assert.equal(countSent(second.stderr, "session/new"), 0);
  assert.equal(countSent(second.stderr, "session/load"), 0);
  const resume = sentWith(second.stderr, "session/resume")[0];
  assert.deepEqual(resume.params, { sessionId: session, cwd: ROOT, mcpServers: [] });
  assert.equal(
    discovery(second.log).line,
    `[client] discovery: meta, session ${session} (resumed)`,
  );
  assert.deepEqual(hostInfoLines(second.log), [
    `[client] host_info {"topic":"uptime"} (session ${session})`,
  ]);
  const turns = turnsOf(second.out);
  assert.equal(turns.length, 1, second.stdout);
  assertTurn(turns[0], "And since when is it up?", RESULT_LINE.uptime, "uptime");
  assert.equal(second.log.at(-1), `[client] continue with: --resume ${session}`);
});

Deno.test("--resume: with an mm that can only load, session/load, its replay on stderr and not on stdout", async () => {
  const earlier = await loadableSession();
  const run = await runClient({
    env: earlier.env,
    args: ["--resume", earlier.session, "How much memory?"],
  });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(countSent(run.stderr, "session/load"), 1);
  assert.equal(countSent(run.stderr, "session/resume"), 0);
  assert.equal(countSent(run.stderr, "session/new"), 0);
  const load = sentWith(run.stderr, "session/load")[0];
  assert.deepEqual(load.params, { sessionId: earlier.session, cwd: ROOT, mcpServers: [] });
  const { line } = discovery(run.log);
  assert.equal(line, `[client] discovery: meta, session ${earlier.session} (loaded)`);
  const openAt = run.log.indexOf(line);
  for (const replayed of [`❓ ${EARLIER_QUESTION}`, `│ ${earlier.result}`, earlier.answer]) {
    const replayAt = run.log.findIndex((l) => l.includes(replayed));
    assert.ok(replayAt >= 0, `${replayed} is not on stderr:\n${run.log.join("\n")}`);
    assert.ok(replayAt < openAt, "the replay comes before the session is open");
  }
  for (const replayed of [earlier.answer, EARLIER_QUESTION, earlier.result]) {
    assert.ok(!run.stdout.includes(replayed), run.stdout);
  }
  assert.deepEqual(hostInfoLines(run.log), [
    `[client] host_info {"topic":"memory"} (session ${earlier.session})`,
  ]);
  assertInOrder(run.out, [
    "❓ How much memory?",
    "🛠️ client: host_info",
    RESULT_LINE.memory,
    ANSWER_LINE.memory,
    "[end_turn]",
  ]);
  assert.equal(run.out[0], "❓ How much memory?");
});

Deno.test("--resume: a loaded session's replayed answer is not part of the turn's answer (--json's result.text)", async () => {
  const earlier = await loadableSession();
  const run = await runClient({
    env: earlier.env,
    args: ["--json", "--resume", earlier.session, "How much memory?"],
  });
  assert.equal(run.code, 0, run.stderr);
  const results = lines(run.stdout).filter((l) => "result" in l);
  assert.equal(results.length, 1, run.stdout);
  assert.match(String(results[0].result.text), ANSWER_LINE.memory);
  assert.ok(!String(results[0].result.text).includes(earlier.answer), run.stdout);
});

Deno.test("--resume: with --quiet a loaded session's replay is skipped entirely", async () => {
  const earlier = await loadableSession();
  const run = await runClient({
    env: earlier.env,
    noTrace: true,
    args: ["-q", "--resume", earlier.session, "How much memory?"],
  });
  assert.equal(run.code, 0, run.stderr);
  for (const replayed of [earlier.answer, EARLIER_QUESTION, earlier.result]) {
    assert.ok(!run.stdout.includes(replayed), run.stdout);
    assert.ok(!run.stderr.includes(replayed), run.stderr);
  }
  assert.equal(run.out.length, 1, run.stdout);
  assert.match(run.out[0], ANSWER_LINE.memory);
  assert.equal(run.stdout, `${run.out[0]}\n`);
});

Deno.test({
  name: "--resume: with an mm that can only load, at a terminal the replay is dimmed on stderr",
  ignore: !hasScript,
  async fn() {
    const earlier = await loadableSession();
    // stdout goes to a file: what the terminal shows is stderr alone.
    const stdoutFile = scratchFile("conversation-");
    const args = ["--mm", MM_SIM, "--resume", earlier.session, "How much memory?"];
    const terminal = inTerminal(`${clientCommand(args)} > '${stdoutFile}'`, { env: earlier.env });
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    const dim = `${String.fromCharCode(0x1b)}\\[(?:[0-9;]*;)?2(?:;[0-9;]*)?m`;
    for (const replayed of [`❓ ${EARLIER_QUESTION}`, earlier.answer]) {
      assert.match(screen, new RegExp(`${dim}[^\\n]*${literally(replayed)}`));
    }
    const stdout = Deno.readTextFileSync(stdoutFile);
    assert.ok(!stdout.includes(earlier.answer), stdout);
    assert.ok(stdout.startsWith("❓ How much memory?\n"), stdout);
  },
});

Deno.test("--resume: in request mode mm asks for the list of that session before the session is open", async () => {
  const env = stateDir();
  const session = await earlierSession(env, ["--request"]);
  const resumed = await runClient({
    env,
    args: ["--request", "--resume", session, "And since when is it up?"],
  });
  assert.equal(resumed.code, 0, resumed.stderr);
  assertInOrder(resumed.log, [
    `[client] list requested for session ${session}`,
    `[client] discovery: request, session ${session} (resumed)`,
    `[client] host_info {"topic":"uptime"} (session ${session})`,
  ]);
  const earlier = await loadableSession(["--request"]);
  const loaded = await runClient({
    env: earlier.env,
    args: ["--request", "--resume", earlier.session, "How much memory?"],
  });
  assert.equal(loaded.code, 0, loaded.stderr);
  assertInOrder(loaded.log, [
    `[client] list requested for session ${earlier.session}`,
    `[client] discovery: request, session ${earlier.session} (loaded)`,
    `[client] host_info {"topic":"memory"} (session ${earlier.session})`,
  ]);
  // On the wire: session/load, then mm's list request for that session, then the load's answer.
  const frames = traced(loaded.stderr);
  const load = frames.find((t) => t.sent && t.frame.method === "session/load");
  const list = frames.find((t) => !t.sent && t.frame.method === "_org.mini-me/tools/list");
  const answer = frames.find((t) =>
    !t.sent && t.frame.method === undefined && t.frame.id === load?.frame.id
  );
  assert.ok(load && list && answer, loaded.stderr);
  assert.equal(list.frame.params?.sessionId, earlier.session);
  assert.ok(
    load.at < list.at && list.at < answer.at,
    "the list is asked before the load is answered",
  );
});

Deno.test("--resume: a session mm does not know is one error line, exit 1", async () => {
  const run = await runClient({
    env: stateDir(),
    args: ["--resume", "20261130-120000-deadbeef", "How much memory?"],
  });
  assert.equal(run.code, 1, run.stderr);
  const errors = run.log.filter((l) => l.startsWith("error:"));
  assert.equal(errors.length, 1, run.stderr);
  assert.match(errors[0], /^error: mm refused session\/resume: .+/);
  assert.ok(!run.stdout.includes("❓"), run.stdout);
  assert.ok(!run.log.some((l) => l.startsWith("[client] continue with")), run.stderr);
});

Deno.test("--resume: an mm that can neither resume nor load is an error, exit 1", async () => {
  const earlier = await loadableSession();
  const run = await runClient({
    env: { ...earlier.env, MM_SIM_SESSIONS: "none" },
    args: ["--resume", earlier.session, "How much memory?"],
  });
  assert.equal(run.code, 1, run.stderr);
  assert.deepEqual(run.log.filter((l) => l.startsWith("error:")), [
    "error: mm can neither resume nor load sessions; --resume needs one of them",
  ]);
  for (const method of ["session/resume", "session/load", "session/new", "session/prompt"]) {
    assert.equal(countSent(run.stderr, method), 0, `${method} sent`);
  }
  assert.ok(!run.stdout.includes("❓"), run.stdout);
  assert.ok(!run.log.some((l) => l.startsWith("[client] continue with")), run.stderr);
});

Deno.test("--resume: with -i every turn runs in the resumed session", async () => {
  const env = stateDir();
  const session = await earlierSession(env);
  const run = await runClient({
    env,
    args: ["--resume", session, "-i", "And since when is it up?"],
    stdin: "How much memory?\n",
  });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(countSent(run.stderr, "session/resume"), 1);
  assert.equal(countSent(run.stderr, "session/new"), 0);
  const turns = turnsOf(run.out);
  assert.equal(turns.length, 2, run.stdout);
  assertTurn(turns[0], "And since when is it up?", RESULT_LINE.uptime, "uptime");
  assertTurn(turns[1], "How much memory?", RESULT_LINE.memory, "memory");
  assert.deepEqual(hostInfoLines(run.log), [
    `[client] host_info {"topic":"uptime"} (session ${session})`,
    `[client] host_info {"topic":"memory"} (session ${session})`,
  ]);
  const prompts = sentWith(run.stderr, "session/prompt");
  assert.deepEqual(prompts.map((m) => m.params?.sessionId), [session, session]);
});

// ─── --sessions, --continue ──────────────────────────────────────────────────

Deno.test("--sessions: lists mm's sessions, most recent first: id, last update, title", async () => {
  const state = stateDir();
  const first = await runClient({ env: state, args: ["How much RAM?"] });
  const second = await runClient({ env: state, args: ["Which CPU?"] });
  const run = await runClient({ env: state, args: ["--sessions"] });
  assert.equal(run.code, 0, run.stderr);
  const [newest, older] = run.out.map((line) => line.split("  "));
  assert.equal(run.out.length, 2, run.stdout);
  assert.deepEqual([newest[0], newest[2]], [discovery(second.log).session, "Which CPU?"]);
  assert.deepEqual([older[0], older[2]], [discovery(first.log).session, "How much RAM?"]);
  assert.ok(Date.parse(newest[1]) >= Date.parse(older[1]), run.stdout);
  assert.equal(countSent(run.stderr, "session/prompt"), 0, "listing opens no session");
  const json = await runClient({ env: state, args: ["--sessions", "--json"] });
  const { sessions } = JSON.parse(json.stdout);
  assert.deepEqual(sessions.map((s: { sessionId: string }) => s.sessionId), [newest[0], older[0]]);
});

Deno.test({
  name: "--sessions: at a terminal a long title is cut to the width, one row per session",
  ignore: !hasScript,
  async fn() {
    const state = stateDir();
    const question = "How much memory is free on my machine, and how much of it is used by caches?";
    const first = await runClient({ env: state, noTrace: true, args: [question] });
    assert.equal(first.code, 0, first.stderr);
    const session = discovery(first.log).session;
    const terminal = inTerminal(`stty cols 80; ${clientCommand(["--mm", MM_SIM, "--sessions"])}`, {
      env: state,
    });
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    const rows = visibleLines(screen, 80);
    const at = rows.findIndex((row) => row.startsWith(`${session}  `));
    assert.ok(at >= 0, rows.join("\n"));
    // Cut to 79 columns (the last is left free), and the cut shown: id and date whole.
    assert.equal([...rows[at]].length, 79, rows[at]);
    assert.ok(rows[at].endsWith("…"), rows[at]);
    assert.match(rows[at], new RegExp(`^${session}  \\S+  How much memory is free on`));
    assert.ok(rows.slice(at + 1).every((row) => row === ""), rows.join("\n"));
    // Off a terminal the line is whole.
    const piped = await runClient({ env: state, noTrace: true, args: ["--sessions"] });
    assert.ok(
      piped.out[0].endsWith("  How much memory is free on my machine, and how much of it i…"),
    );
  },
});

Deno.test("--sessions: with no session, stdout is empty and stderr says so", async () => {
  const run = await runClient({ env: stateDir(), noTrace: true, args: ["--sessions"] });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, "");
  assert.ok(run.log.includes("[client] mm has no sessions"), run.stderr);
});

Deno.test("--sessions: follows session/list's nextCursor to the last page; a session without date, title or folder shows - for each", async () => {
  const run = await runRogue("paged-sessions", { args: ["--sessions"] });
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out, ["s1  2026-12-01  /", "s2  2026-12-02  /", "s3  -  -"]);
  assert.ok(run.log.includes('[rogue] second page asked with {"cursor":"page-2"}'), run.stderr);
});

Deno.test("--continue: keeps this folder's sessions itself, though mm's list gave others too", async () => {
  const run = await runRogue("unfiltered-sessions", { args: ["--continue", "Hello again"] });
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(seen(run.log), [
    `listed with ${JSON.stringify({ cwd: ROOT })}`,
    'resumed "here-older"',
  ]);
  assert.equal(discovery(run.log).line, "[client] discovery: meta, session here-older (resumed)");
});

Deno.test("--continue: resumes the most recent session of this folder, not an older one or another folder's", async () => {
  const state = stateDir();
  const older = await runClient({ env: state, args: ["Which OS?"] });
  const here = await runClient({ env: state, args: ["How much RAM?"] });
  assert.notEqual(discovery(older.log).session, discovery(here.log).session);

  await runClient({ env: state, args: ["Which CPU?"], cwd: scratchDir("elsewhere-") });
  const run = await runClient({ env: state, args: ["--continue", "And since when is it up?"] });
  assert.equal(run.code, 0, run.stderr);
  const { session, how } = discovery(run.log);
  assert.deepEqual([session, how], [discovery(here.log).session, "resumed"]);
  assert.match(run.out.at(-2) ?? "", ANSWER_LINE.uptime);
});

Deno.test("--continue: in a folder mm has no session for it is one error line, exit 1", async () => {
  const run = await runClient({ env: stateDir(), args: ["--continue"] });
  assert.equal(run.code, 1, run.stderr);
  assert.deepEqual(run.log.filter((l) => l.startsWith("error:")), [
    `error: mm has no session in ${ROOT} to continue`,
  ]);
});

Deno.test("--sessions and --continue: with an mm that cannot list sessions: one error line, exit 1", async () => {
  for (const args of [["--sessions"], ["--continue"]]) {
    const run = await runClient({ env: { ...stateDir(), MM_SIM_SESSIONS: "load" }, args });
    assert.equal(run.code, 1, run.stderr);
    assert.deepEqual(run.log.filter((l) => !l.startsWith("[acp]")), [
      "error: mm cannot list its sessions (it does not advertise session/list)",
    ]);
    assert.equal(
      countSent(run.stderr, "session/list"),
      0,
      "never asked for what mm does not offer",
    );
  }
});

// ─── --json ──────────────────────────────────────────────────────────────────

type Line = Record<string, Record<string, unknown>>;

/** Every stdout line, parsed; a line that is not a JSON object fails the test. */
function lines(stdout: string): Line[] {
  assert.ok(stdout.endsWith("\n"), `stdout ends with a line end: ${JSON.stringify(stdout)}`);
  return stdout.slice(0, -1).split("\n").map((line) => {
    const value = JSON.parse(line);
    assert.ok(value && typeof value === "object" && !Array.isArray(value), line);
    return value;
  });
}

Deno.test("--json: stdout has the updates as mm sent them, requests with their answers, and last the result", async () => {
  const run = await runClient({ args: ["--json", "How much memory is free?"] });
  assert.equal(run.code, 0, run.stderr);
  const all = lines(run.stdout);
  const updates = all.filter((l) => "update" in l);
  const sessionId = updates[0].sessionId;
  assert.match(String(sessionId), /^\d{8}-\d{6}-[0-9a-f]{8}$/);
  assert.ok(
    updates.every((l) => l.sessionId === sessionId && typeof l.update.sessionUpdate === "string"),
  );
  const calls = all.filter((l) => "request" in l);
  assert.equal(calls.length, 1, run.stdout);
  assert.equal(calls[0].request.method, "_demo.minime/host_info");
  assert.deepEqual((calls[0].request.params as Record<string, unknown>).topic, "memory");
  const answer = calls[0].answer as { result: { content: { text: string }[] } };
  assert.match(answer.result.content[0].text, /^\d+\.\d GiB free of \d+\.\d GiB$/);
  const text = updates.filter((l) => l.update.sessionUpdate === "agent_message_chunk")
    .map((l) => (l.update.content as { text: string }).text).join("");
  assert.deepEqual(all.at(-1), { result: { stopReason: "end_turn", sessionId, text } });
  assert.match(text, /^Here is what host_info reports about your machine — memory: /);
  assert.ok(
    run.log.some((l) => l.startsWith("[client] memory") || l.startsWith("[client] host_info")),
  );
});

/** A kind of `--json` line as the README's Scripts section describes it: its keys, its fields. */
type JsonKind = { keys: string[]; fields: string[][] }; // each field: one path, or alternatives

/**
 * The kinds of `--json` line `--help` describes: each entry's keys, and the fields it names (a
 * permission's own, `request.call`, left out: not every request is one).
 */
function describedKinds(): JsonKind[] {
  const help = usage();
  const section = help.slice(help.indexOf("--json writes one JSON object per line"));
  const items = section.split(/\n {2}(?=\{)/).slice(1).map((item) => item.replace(/\s+/g, " "));
  assert.ok(items.length >= 5, `--help lists the line kinds:\n${section}`);
  return items.map((item) => {
    const keys = [...item.match(/^\{([^}]*)\}/)![1].matchAll(/"(\w+)"/g)].map((m) => m[1]);
    // The fields it names: `a.b`, each of a key of the line; `x or y`: either.
    const fields: string[][] = [];
    const named = [...item.replace(/\([^)]*\)/g, "").matchAll(/\b(\w+(?:\.\w+)*)( or )?/g)];
    for (const [i, [, path]] of named.entries()) {
      if (!keys.includes(path.split(".")[0]) || path === "request.call") continue;
      if (i > 0 && named[i - 1][2]) fields.at(-1)!.push(path);
      else fields.push([path]);
    }
    return { keys: keys.toSorted(), fields };
  });
}

/** The value at a path (`result.text`) of a line. */
const at = (line: Record<string, unknown>, path: string): unknown =>
  path.split(".").reduce<unknown>(
    (value, key) =>
      value && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined,
    line,
  );

Deno.test("--json: every line a run writes is of a kind --help describes, with the fields it names; and each kind it describes is written", async () => {
  const kinds = describedKinds();
  // A turn with calls, asked permission for (yolo: false); -i's turns; --sessions; a failure.
  const agent = agentFileWith({ "yolo: true": "yolo: false" });
  const runs = await Promise.all([
    runClient({
      args: ["--json", "--agent", agent, "-i", "What OS?"],
      stdin: "And the CPU?\n",
      readAlso: [agent],
    }),
    runClient({ args: ["--json", "--sessions"] }),
    runClient({ noMm: true, args: ["--json", "--mm", "/nonexistent/mm"] }),
  ]);
  const seenKinds = new Set<JsonKind>();
  for (const run of runs) {
    for (const line of lines(run.stdout)) {
      const keys = Object.keys(line).toSorted();
      const kind = kinds.find((k) => JSON.stringify(k.keys) === JSON.stringify(keys));
      assert.ok(kind, `a line of no kind the README describes: ${JSON.stringify(line)}`);
      seenKinds.add(kind);
      for (const either of kind.fields) {
        const has = either.some((path) => at(line, path) !== undefined);
        assert.ok(has, `${either.join(" or ")} missing: ${JSON.stringify(line).slice(0, 300)}`);
      }
    }
  }
  const unseen = kinds.filter((kind) => !seenKinds.has(kind)).map((kind) => kind.keys.join(", "));
  assert.deepEqual(unseen, [], "kinds the README describes that no run wrote");
  // A permission's line also has the call as described, under the name --help gives it.
  const asked = lines(runs[0].stdout).filter((line) =>
    (line.request as { method?: string } | undefined)?.method === "session/request_permission"
  );
  assert.ok(asked.length > 0, runs[0].stdout);
  assert.ok(usage().includes("request.call"), "--help names a permission's request.call");
  for (const line of asked) {
    const call = (line.request as { call?: { title?: string } }).call;
    assert.equal(call?.title, "client: host_info", JSON.stringify(line));
  }
});

/** Whether `jq` is here, for the README's examples. */
const hasJq = new Deno.Command("sh", { args: ["-c", "command -v jq"], stdout: "null" }).outputSync()
  .success;

Deno.test({
  name: "--json: the README's jq examples pick the answer, and the tool calls' titles",
  ignore: !hasJq,
  async fn() {
    const readme = Deno.readTextFileSync(`${ROOT}/README.md`);
    const examples = [...readme.matchAll(/^(deno task -q demo -- --json \| jq .*?)(  +# .*)?$/gm)];
    assert.equal(examples.length, 2, "the README's two jq lines");
    const deno = Deno.execPath().replace(/\/[^/]*$/, "");
    const env = { PATH: `${deno}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}` };
    const [answer, calls] = await Promise.all(examples.map((m) => runShell(m[1], env)));
    assert.match(answer.stdout, new RegExp(`^${ANSWER_PREFIX}.*\n$`));
    assert.equal(calls.stdout, "client: host_info\nclient: host_info\n");
  },
});

Deno.test("--json: with -i one result line per turn, and nothing but JSON on stdout", async () => {
  const run = await runClient({
    args: ["--json", "-i", "How much RAM?"],
    stdin: "And since when is it up?\n",
  });
  assert.equal(run.code, 0, run.stderr);
  const results = lines(run.stdout).filter((l) => "result" in l);
  assert.deepEqual(results.map((r) => r.result.stopReason), ["end_turn", "end_turn"]);
  // Each turn's text is that turn's answer alone, not the conversation's so far.
  assert.match(String(results[0].result.text), ANSWER_LINE.memory);
  assert.match(String(results[1].result.text), ANSWER_LINE.uptime);
  assert.equal(results[0].result.sessionId, results[1].result.sessionId);
});

Deno.test("--json: a run that fails ends with an error line that says why, with the exit code", async () => {
  const missing = await runClient({ noMm: true, args: ["--json", "--mm", "/nonexistent/mm"] });
  assert.equal(missing.code, 127);
  assert.deepEqual(lines(missing.stdout), [{
    error: {
      message: "cannot start mm (/nonexistent/mm): not found. --mm names it: check that path.",
      exitCode: 127,
    },
  }]);
  const exits = await runClient({ args: ["--json"], env: { MM_SIM_EXIT_IN_TURN: "3" } });
  assert.equal(exits.code, 1);
  assert.deepEqual(lines(exits.stdout).at(-1), {
    error: { message: "mm exited with code 3 before the turn ended", exitCode: 1 },
  });
  await assertNoPeerLeft(exits.pidFile);
  const refused = await runRogue("refuse-session", { args: ["--json"] });
  assert.equal(refused.code, 1);
  assert.deepEqual(lines(refused.stdout), [{
    error: { message: "mm refused session/new: cwd must be absolute", exitCode: 1 },
  }]);
});

Deno.test("--json: a usage error is an error line too, and --json with -q is one", async () => {
  const run = await runClient({ noMm: true, noTrace: true, args: ["--json", "-q"] });
  assert.equal(run.code, 2);
  assert.equal(run.log[0], "error: --json and --quiet both say what stdout is: pick one");
  assert.deepEqual(lines(run.stdout), [{
    error: { message: "--json and --quiet both say what stdout is: pick one", exitCode: 2 },
  }]);
});

Deno.test("--json: a usage error after the -- that deno task passes on is an error line too", async () => {
  // `deno task demo -- --json --tiemout 5`
  const run = await runClient({
    noMm: true,
    noTrace: true,
    args: ["--", "--json", "--tiemout", "5"],
  });
  assert.equal(run.code, 2);
  assert.deepEqual(lines(run.stdout), [{
    error: { message: "unknown option --tiemout; did you mean --timeout?", exitCode: 2 },
  }]);
  // A --json after a second `--` is a word of the question, not an option.
  const words = await runClient({ noMm: true, noTrace: true, args: ["--tiemout", "--", "--json"] });
  assert.equal(words.code, 2);
  assert.equal(words.stdout, "");
});

Deno.test("--json: stdout stays JSON lines whatever mm's text holds", async () => {
  const run = await runRogue("hostile-text", { args: ["--json"] });
  assert.equal(run.code, 0, run.stderr);
  const all = lines(run.stdout);
  assert.ok(all.at(-1)!.result.text, run.stdout);
  // deno-lint-ignore no-control-regex
  assert.ok(!/[\x00-\x09\x0b-\x1f\x7f-\x9f]/.test(run.stdout), "control characters escaped");
});
