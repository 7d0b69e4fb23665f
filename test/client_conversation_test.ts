/**
 * A conversation, not a one-shot: more questions in one session (`-i`), the
 * question from stdin (`-`), the answer alone (`-q`), an earlier session
 * continued (`--resume`) and progress on a terminal. The real client, as a
 * process, against the mm stand-in — for an mm that can only load a session,
 * or neither, the stand-in with `MM_SIM_SESSIONS=load` or `none`.
 */

import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/2020";
import schema from "@agentclientprotocol/sdk/schema/v1/schema.json" with { type: "json" };
import {
  assertInOrder,
  type ClientResult,
  type ClientRun,
  ROOT,
  runClient,
  startClient,
  within,
} from "./_run.ts";
import { checkSentFrames } from "./_schema.ts";
import { clientCommand, hasScript, inTerminal, visibleLines } from "./_pty.ts";
import { scratchDir, scratchFile } from "./_scratch.ts";

const DEFAULT_QUESTION =
  "What operating system does my machine run, and how much memory does it have?";
const ANSWER_PREFIX = "Here is what host_info reports about your machine — ";
const OS_LINE = /^│ .+ \(.+\/.+\), host name .+$/;
const MEMORY_LINE = /^│ \d+\.\d GiB free of \d+\.\d GiB$/;
const UPTIME_LINE = /^│ up .*\(since \d{4}-\d\d-\d\d \d\d:\d\d UTC\)$/;
const MEMORY_ANSWER =
  /^Here is what host_info reports about your machine — memory: \d+\.\d GiB free of \d+\.\d GiB\.$/;
const UPTIME_ANSWER = /^Here is what host_info reports about your machine — uptime: up .+\.$/;
const NO_TOOL_ANSWER =
  "I cannot see your machine: no client tool was offered to me, and I have no shell.";
const SPINNER = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] waiting for the model … \d+ s/;

// ─── Helpers ─────────────────────────────────────────────────────────────────

/** The frames the client sent, from its `--trace` lines. */
function sent(stderr: string): { method?: string; params?: Record<string, unknown> }[] {
  return stderr.split("\n").filter((l) => l.startsWith("→ ")).map((l) => JSON.parse(l.slice(2)));
}

/** How many requests or notifications of `method` the client sent. */
function countSent(stderr: string, method: string): number {
  return sent(stderr).filter((m) => m.method === method).length;
}

/** The client's discovery line, taken apart. */
function discovery(log: string[]): { line: string; mode: string; session: string; how?: string } {
  const line = log.find((l) => l.startsWith("[client] discovery: "));
  const parts = line?.match(/^\[client\] discovery: (\S+), session (\S+)(?: \((\w+)\))?$/);
  if (!line || !parts) throw new Error(`no discovery line in:\n${log.join("\n")}`);
  return { line, mode: parts[1], session: parts[2], how: parts[3] };
}

/** The `[client] host_info …` lines. */
function hostInfoLines(log: string[]): string[] {
  return log.filter((l) => l.startsWith("[client] host_info "));
}

/** Splits the conversation into turns, each from its `❓` line on. */
function turnsOf(out: string[]): string[][] {
  const turns: string[][] = [];
  for (const line of out) {
    if (line.startsWith("❓ ")) turns.push([]);
    assert.ok(turns.length > 0, `output before the first ❓:\n${out.join("\n")}`);
    turns.at(-1)!.push(line);
  }
  return turns;
}

/** Asserts that a turn is rendered as a one-shot run renders its turn. */
function assertTurn(turn: string[], question: string, result: RegExp, label: string): void {
  const text = turn.join("\n");
  assert.equal(turn[0], `❓ ${question}`, text);
  assert.ok(turn.includes("🛠️ client: host_info"), text);
  assert.ok(turn.some((l) => result.test(l)), `no ${result} in:\n${text}`);
  assert.ok(turn.at(-2)?.startsWith(`${ANSWER_PREFIX}${label}: `), text);
  assert.equal(turn.at(-1), "[end_turn]", text);
}

const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
ajv.addSchema(schema, "acp");
/** The requests that open an earlier session, with their ACP schema definitions. */
const REOPEN: Record<string, string> = {
  "session/load": "LoadSessionRequest",
  "session/resume": "ResumeSessionRequest",
};

/**
 * Runs the client with `--trace` and checks every frame it sent against the
 * ACP schema, `session/load` and `session/resume` included.
 */
async function runTraced(run: ClientRun): Promise<ClientResult> {
  const result = await runClient({ ...run, noTrace: true, args: ["--trace", ...(run.args ?? [])] });
  const others: string[] = [];
  for (const line of result.stderr.split("\n")) {
    const definition = line.startsWith("→ ") && line.includes('"method":"session/')
      ? REOPEN[JSON.parse(line.slice(2)).method]
      : undefined;
    if (!definition) {
      others.push(line);
      continue;
    }
    const validate = ajv.getSchema(`acp#/$defs/${definition}`)!;
    assert.ok(
      validate(JSON.parse(line.slice(2)).params),
      `${definition}: ${ajv.errorsText(validate.errors)}\n  ${line}`,
    );
  }
  assert.deepEqual(checkSentFrames(others.join("\n")), [], "frames that break the ACP schema");
  return result;
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
  const result = first.out.find((l) => OS_LINE.test(l))?.slice("│ ".length);
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

const ESC = String.fromCharCode(0x1b);
/** A colour (SGR) sequence. */
const COLOUR = new RegExp(`${ESC}\\[[0-9;]*m`, "g");
/** The screen without colours. */
function plain(screen: string): string {
  return screen.replace(COLOUR, "");
}

/** The client in a pseudo-terminal, as a test drives it. */
interface AtTerminal {
  /** The screen so far, raw. */
  screen(): string;
  /** Waits until the screen (colours removed) matches; fails at once if the client exited. */
  see(wanted: RegExp, ms?: number): Promise<void>;
  /** Types at the terminal. */
  type(text: string): Promise<void>;
  /** Whether the client is still running. */
  running(): boolean;
  /** Waits for the client to exit. */
  end(ms?: number): Promise<{ code: number; screen: string }>;
}

/**
 * Runs the client against `mm` (the stand-in) in a pseudo-terminal
 * (`shellTail` is added to the command line, for a redirection) and hands it
 * to `body`.
 * Whatever happens the client is ended before this returns.
 */
async function atTerminal(
  args: string[],
  env: Record<string, string>,
  body: (terminal: AtTerminal) => Promise<void>,
  shellTail = "",
  mm = `${ROOT}/test/mm-sim`,
): Promise<void> {
  const terminal = inTerminal(
    `${clientCommand(["--mm", mm, ...args])}${shellTail}`,
    { env, deadlineMs: 40_000 },
  );
  let exit: number | undefined;
  const ended = terminal.done().then((result) => {
    exit = result.code;
    return result;
  });
  ended.catch(() => {});
  const show = () => `the terminal showed:\n${JSON.stringify(terminal.screen())}`;
  try {
    await body({
      screen: terminal.screen,
      type: terminal.type,
      running: () => exit === undefined,
      async see(wanted, ms = 15_000) {
        const started = performance.now();
        while (!wanted.test(plain(terminal.screen()))) {
          if (exit !== undefined) {
            throw new Error(`the client exited (${exit}) before ${wanted}; ${show()}`);
          }
          if (performance.now() - started > ms) {
            throw new Error(`deadline: no ${wanted} within ${ms} ms; ${show()}`);
          }
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      },
      end: (ms = 10_000) =>
        within(ms, `the client to exit; ${show()}`, ended).then((r) => ({
          code: r.code,
          screen: r.screen,
        })),
    });
  } finally {
    // Ctrl-\ ends a client that is still there; past the deadline the terminal is killed.
    if (exit === undefined) await terminal.type("\x1c");
    await ended.catch(() => {});
  }
}

// ─── --interactive ───────────────────────────────────────────────────────────

Deno.test("-i from a pipe: the argument and each non-blank line are turns of one session, exit 0 at end of input", async () => {
  const run = await runClient({
    args: ["-i", "What operating system does my machine run?"],
    stdin: "How much memory?\n\nAnd since when is it up?\n",
  });
  assert.equal(run.code, 0, run.stderr);
  const turns = turnsOf(run.out);
  assert.equal(turns.length, 3, run.stdout);
  assertTurn(turns[0], "What operating system does my machine run?", OS_LINE, "operating system");
  assertTurn(turns[1], "How much memory?", MEMORY_LINE, "memory");
  assertTurn(turns[2], "And since when is it up?", UPTIME_LINE, "uptime");
  const { session } = discovery(run.log);
  assert.deepEqual(hostInfoLines(run.log), [
    `[client] host_info {"topic":"os"} (session ${session})`,
    `[client] host_info {"topic":"memory"} (session ${session})`,
    `[client] host_info {"topic":"uptime"} (session ${session})`,
  ]);
  assert.equal(countSent(run.stderr, "session/new"), 1);
  const prompts = sent(run.stderr).filter((m) => m.method === "session/prompt");
  assert.deepEqual(prompts.map((m) => m.params?.sessionId), [session, session, session]);
  assert.ok(!run.log.some((l) => l.includes("> ")), "no prompt when stdin is a pipe");
  assert.equal(run.log.at(-1), `[client] continue with: --resume ${session}`);
});

Deno.test("-i without a question argument reads the first question from stdin too, not the default one", async () => {
  const run = await runClient({
    args: ["-i"],
    stdin: "How much memory?\nAnd since when is it up?\n",
  });
  assert.equal(run.code, 0, run.stderr);
  const turns = turnsOf(run.out);
  assert.equal(turns.length, 2, run.stdout);
  assertTurn(turns[0], "How much memory?", MEMORY_LINE, "memory");
  assertTurn(turns[1], "And since when is it up?", UPTIME_LINE, "uptime");
  assert.ok(!run.stdout.includes(DEFAULT_QUESTION));
  assert.equal(countSent(run.stderr, "session/new"), 1);
});

Deno.test("-i with only blank lines on stdin ends with exit 0 and no turn", async () => {
  const run = await runClient({ args: ["-i"], stdin: "\n   \n\t\n" });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(!run.stdout.includes("❓"), run.stdout);
  assert.ok(!run.stdout.includes("[end_turn]"), run.stdout);
  assert.equal(countSent(run.stderr, "session/prompt"), 0);
});

Deno.test({
  name:
    "-i at a terminal: a > prompt on stderr after each turn, a typed line runs a turn, Ctrl-D ends with exit 0",
  ignore: !hasScript,
  async fn() {
    // stdout goes to a file: what the terminal shows is stderr alone.
    const stdoutFile = scratchFile("conversation-");
    await atTerminal(["-i", "How much memory?"], {}, async (terminal) => {
      await terminal.see(/> /);
      await terminal.type("How long is it up?\r");
      await terminal.see(/> How long is it up\?\r\n[^]*> /);
      await terminal.type("\x04");
      const { code, screen } = await terminal.end();
      assert.equal(code, 0, JSON.stringify(screen));
    }, ` > '${stdoutFile}'`);
    const out = Deno.readTextFileSync(stdoutFile).split("\n").filter((l) => l !== "");
    const turns = turnsOf(out);
    assert.equal(turns.length, 2, out.join("\n"));
    assertTurn(turns[0], "How much memory?", MEMORY_LINE, "memory");
    assertTurn(turns[1], "How long is it up?", UPTIME_LINE, "uptime");
    assert.ok(!out.some((l) => l.includes("> ")), "the prompt is not on stdout");
  },
});

Deno.test({
  name:
    "-i at a terminal: Ctrl-C during a turn cancels it and returns to the prompt; Ctrl-C at the prompt exits 130",
  ignore: !hasScript,
  async fn() {
    await atTerminal(["-i", "How much memory?"], { MM_SIM_THINK_MS: "5000" }, async (terminal) => {
      await terminal.see(/❓ How much memory\?/);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await terminal.type("\x03");
      await terminal.see(/\[cancelled\][^]*> /, 8000);
      assert.ok(terminal.running(), "the client is still running after the cancelled turn");
      await terminal.type("How long is it up?\r");
      await terminal.see(/❓ How long is it up\?[^]*\[end_turn\][^]*> /, 15_000);
      await terminal.type("\x03");
      const { code, screen } = await terminal.end();
      assert.equal(code, 130, JSON.stringify(screen));
      const lines = visibleLines(screen);
      assert.equal(lines.filter((l) => l === "[cancelled]").length, 1, lines.join("\n"));
      assert.equal(lines.filter((l) => l === "[end_turn]").length, 1, lines.join("\n"));
    });
  },
});

// ─── - as the question ───────────────────────────────────────────────────────

Deno.test("- reads the question from stdin, trimmed", async () => {
  const run = await runClient({ args: ["-"], stdin: "  How much RAM do I have?\n" });
  assert.equal(run.code, 0, run.stderr);
  const turns = turnsOf(run.out);
  assert.equal(turns.length, 1, run.stdout);
  assertTurn(turns[0], "How much RAM do I have?", MEMORY_LINE, "memory");
  const { session } = discovery(run.log);
  assert.deepEqual(hostInfoLines(run.log), [
    `[client] host_info {"topic":"memory"} (session ${session})`,
  ]);
});

Deno.test("- with an empty stdin asks the default question", async () => {
  const run = await runClient({ args: ["-"], stdin: "" });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out[0], `❓ ${DEFAULT_QUESTION}`);
  assert.equal(run.out.at(-1), "[end_turn]");
});

Deno.test("without - or -i stdin is never read: an open pipe that never closes does not hold the run", async () => {
  const client = startClient({ args: ["How much memory?"], stdin: "open", deadlineMs: 8_000 });
  try {
    const run = await client.done();
    assert.equal(run.code, 0, run.stderr);
    assertTurn(turnsOf(run.out)[0], "How much memory?", MEMORY_LINE, "memory");
  } finally {
    await client.closeStdin();
  }
});

Deno.test("- together with -i is a usage error, exit 2", async () => {
  const run = await runClient({ noTrace: true, args: ["-i", "-"], stdin: "How much memory?\n" });
  assert.equal(run.code, 2, run.stderr);
  assert.equal(run.log[0], "error: - reads the question from stdin, which --interactive reads too");
  assert.match(run.log[1], /^usage: client\.ts \[options\]/);
  assert.equal(run.stdout, "");
});

// ─── --quiet ─────────────────────────────────────────────────────────────────

Deno.test("-q: stdout is the answer text alone with a newline, and stderr has no [client] lines", async () => {
  const run = await runClient({ noTrace: true, args: ["-q", "How much memory?"] });
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /\n$/);
  assert.equal(run.out.length, 1, run.stdout);
  assert.match(run.out[0], MEMORY_ANSWER);
  for (const mark of ["❓", "🛠️", "│", "[end_turn]"]) {
    assert.ok(!run.stdout.includes(mark), `${mark} in ${run.stdout}`);
  }
  assert.deepEqual(run.log.filter((l) => l.startsWith("[client]")), []);
});

Deno.test("-q keeps warnings on stderr", async () => {
  const run = await runClient({
    noTrace: true,
    args: ["-q", "--request", "--agent", "agent.yaml"],
  });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(
    run.log.includes(
      "[client] warning: agent.yaml sets acp.clientTools.discovery: meta, but the client announces request; mm will not see host_info",
    ),
    run.stderr,
  );
  assert.deepEqual(
    run.log.filter((l) => l.startsWith("[client]") && !l.startsWith("[client] warning: ")),
    [],
  );
  assert.equal(run.stdout, `${NO_TOOL_ANSWER}\n`);
});

Deno.test("-q keeps errors and exit codes: mm not found is still 127", async () => {
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

Deno.test("-q in a shell script: $(client -q …) holds the one line of the answer", async () => {
  const client = clientCommand(["--mm", `${ROOT}/test/mm-sim`, "-q", "How much memory is free?"]);
  const script = `free=$(${client}); code=$?; printf '[%s] %s\\n' "$free" "$code"`;
  const child = new Deno.Command("sh", {
    args: ["-c", script],
    cwd: ROOT,
    env: { DENO_BIN: Deno.execPath(), NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = await within(30_000, "the shell script to end", child.output()).catch((error) => {
    child.kill("SIGKILL");
    throw error;
  });
  const stdout = new TextDecoder().decode(output.stdout);
  const stderr = new TextDecoder().decode(output.stderr);
  const line = stdout.match(/^\[(.*)\] (\d+)\n$/);
  assert.ok(line, `${JSON.stringify(stdout)}\n${stderr}`);
  assert.equal(line[2], "0", stderr);
  assert.match(line[1], MEMORY_ANSWER);
});

Deno.test("-q with --trace: the trace is on stderr and stdout is still the answer alone", async () => {
  const run = await runClient({ args: ["-q", "How much memory?"] });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out.length, 1, run.stdout);
  assert.match(run.out[0], MEMORY_ANSWER);
  assert.equal(countSent(run.stderr, "session/prompt"), 1);
  assert.ok(run.stderr.includes("← "), "frames received are traced too");
});

Deno.test("-q -i: only the answers, each ending with a newline", async () => {
  const run = await runClient({
    noTrace: true,
    args: ["-q", "-i"],
    stdin: "How much memory?\nHow long is it up?\n",
  });
  assert.equal(run.code, 0, run.stderr);
  const lines = run.stdout.split("\n");
  assert.equal(lines.length, 3, run.stdout);
  assert.match(lines[0], MEMORY_ANSWER);
  assert.match(lines[1], UPTIME_ANSWER);
  assert.equal(lines[2], "");
  assert.deepEqual(run.log.filter((l) => l.startsWith("[client]")), []);
});

// ─── --resume ────────────────────────────────────────────────────────────────

Deno.test("a run says how to continue, and --resume continues that session with session/resume", async () => {
  const env = stateDir();
  const first = await runTraced({ env, args: ["How much memory?"] });
  assert.equal(first.code, 0, first.stderr);
  const { session } = discovery(first.log);
  assert.equal(first.log.at(-1), `[client] continue with: --resume ${session}`);

  const second = await runTraced({ env, args: ["--resume", session, "And since when is it up?"] });
  assert.equal(second.code, 0, second.stderr);
  assert.equal(countSent(second.stderr, "session/resume"), 1);
  assert.equal(countSent(second.stderr, "session/new"), 0);
  assert.equal(countSent(second.stderr, "session/load"), 0);
  const resume = sent(second.stderr).find((m) => m.method === "session/resume")!;
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
  assertTurn(turns[0], "And since when is it up?", UPTIME_LINE, "uptime");
  assert.equal(second.log.at(-1), `[client] continue with: --resume ${session}`);
});

Deno.test("--resume with an mm that can only load: session/load, its replay on stderr and not on stdout", async () => {
  const earlier = await loadableSession();
  const run = await runTraced({
    env: earlier.env,
    args: ["--resume", earlier.session, "How much memory?"],
  });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(countSent(run.stderr, "session/load"), 1);
  assert.equal(countSent(run.stderr, "session/resume"), 0);
  assert.equal(countSent(run.stderr, "session/new"), 0);
  const load = sent(run.stderr).find((m) => m.method === "session/load")!;
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
    MEMORY_LINE,
    MEMORY_ANSWER,
    "[end_turn]",
  ]);
  assert.equal(run.out[0], "❓ How much memory?");
});

Deno.test("--resume with --quiet skips a loaded session's replay entirely", async () => {
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
  assert.match(run.out[0], MEMORY_ANSWER);
  assert.equal(run.stdout, `${run.out[0]}\n`);
});

Deno.test({
  name: "--resume with an mm that can only load: on a terminal the replay is dimmed on stderr",
  ignore: !hasScript,
  async fn() {
    const earlier = await loadableSession();
    // stdout goes to a file: what the terminal shows is stderr alone.
    const stdoutFile = scratchFile("conversation-");
    await atTerminal(
      ["--resume", earlier.session, "How much memory?"],
      earlier.env,
      async (terminal) => {
        const { code, screen } = await terminal.end(20_000);
        assert.equal(code, 0, JSON.stringify(screen));
        const dim = `${ESC}\\[(?:[0-9;]*;)?2(?:;[0-9;]*)?m`;
        for (const replayed of [`❓ ${EARLIER_QUESTION}`, earlier.answer]) {
          assert.match(screen, new RegExp(`${dim}[^\\n]*${literally(replayed)}`));
        }
      },
      ` > '${stdoutFile}'`,
    );
    const stdout = Deno.readTextFileSync(stdoutFile);
    assert.ok(!stdout.includes(earlier.answer), stdout);
    assert.ok(stdout.startsWith("❓ How much memory?\n"), stdout);
  },
});

Deno.test("--resume in request mode: mm asks for the list of that session before the session is open", async () => {
  const env = stateDir();
  const session = await earlierSession(env, ["--request"]);
  const resumed = await runTraced({
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
  const loaded = await runTraced({
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
  const frames = loaded.stderr.split("\n").flatMap((l, at) =>
    l.startsWith("→ ") || l.startsWith("← ")
      ? [{ at, out: l[0] === "→", ...JSON.parse(l.slice(2)) }]
      : []
  );
  const load = frames.find((f) => f.out && f.method === "session/load");
  const list = frames.find((f) => !f.out && f.method === "_org.mini-me/tools/list");
  const answer = frames.find((f) => !f.out && f.method === undefined && f.id === load?.id);
  assert.ok(load && list && answer, loaded.stderr);
  assert.equal(list.params.sessionId, earlier.session);
  assert.ok(
    load.at < list.at && list.at < answer.at,
    "the list is asked before the load is answered",
  );
});

Deno.test("--resume of a session mm does not know is one error line, exit 1", async () => {
  const run = await runTraced({
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

Deno.test("--resume with an mm that can neither resume nor load is an error, exit 1", async () => {
  const earlier = await loadableSession();
  const run = await runTraced({
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

Deno.test("--resume without an id is a usage error, exit 2", async () => {
  const run = await runClient({ noTrace: true, args: ["--resume"] });
  assert.equal(run.code, 2, run.stderr);
  assert.equal(run.log[0], "error: --resume needs a value");
  assert.equal(run.stdout, "");
});

Deno.test("--resume with -i: every turn runs in the resumed session", async () => {
  const env = stateDir();
  const session = await earlierSession(env);
  const run = await runTraced({
    env,
    args: ["--resume", session, "-i", "And since when is it up?"],
    stdin: "How much memory?\n",
  });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(countSent(run.stderr, "session/resume"), 1);
  assert.equal(countSent(run.stderr, "session/new"), 0);
  const turns = turnsOf(run.out);
  assert.equal(turns.length, 2, run.stdout);
  assertTurn(turns[0], "And since when is it up?", UPTIME_LINE, "uptime");
  assertTurn(turns[1], "How much memory?", MEMORY_LINE, "memory");
  assert.deepEqual(hostInfoLines(run.log), [
    `[client] host_info {"topic":"uptime"} (session ${session})`,
    `[client] host_info {"topic":"memory"} (session ${session})`,
  ]);
  const prompts = sent(run.stderr).filter((m) => m.method === "session/prompt");
  assert.deepEqual(prompts.map((m) => m.params?.sessionId), [session, session]);
});

// ─── Progress ────────────────────────────────────────────────────────────────

Deno.test({
  name:
    "on a terminal a spinner shows what the client waits for and for how long, erased before the next line",
  ignore: !hasScript,
  async fn() {
    await atTerminal(["How much memory?"], { MM_SIM_THINK_MS: "2500" }, async (terminal) => {
      const { code, screen } = await terminal.end(30_000);
      assert.equal(code, 0, JSON.stringify(screen));
      assert.match(screen, SPINNER);
      assert.match(screen, /waiting for the model … 2 s/, "the seconds are counted");
      const lines = visibleLines(screen);
      const left = lines.filter((l) => l.includes("waiting for"));
      assert.deepEqual(left, [], `not erased:\n${lines.join("\n")}`);
      assertInOrder(lines, ["❓ How much memory?", "🛠️ client: host_info", MEMORY_LINE]);
      assert.ok(lines.includes("[end_turn]"), lines.join("\n"));
    });
  },
});

Deno.test({
  name:
    "-q on a terminal: the spinner is on stderr and erased, stdout in a file is the answer alone",
  ignore: !hasScript,
  async fn() {
    const stdoutFile = scratchFile("answer-");
    await atTerminal(["-q", "How much memory?"], { MM_SIM_THINK_MS: "1500" }, async (terminal) => {
      const { code, screen } = await terminal.end(30_000);
      assert.equal(code, 0, JSON.stringify(screen));
      assert.match(screen, SPINNER);
      const lines = visibleLines(screen);
      assert.deepEqual(lines.filter((l) => l.includes("waiting for")), [], lines.join("\n"));
    }, ` > '${stdoutFile}'`);
    const stdout = Deno.readTextFileSync(stdoutFile);
    assert.match(stdout, /\n$/);
    assert.equal(stdout.split("\n").length, 2, JSON.stringify(stdout));
    assert.match(stdout.trimEnd(), MEMORY_ANSWER);
  },
});

Deno.test("not on a terminal there is no spinner: no waiting line, no \\r, no escape code", async () => {
  const run = await runClient({ noTrace: true, env: { MM_SIM_THINK_MS: "1500", NO_COLOR: "" } });
  assert.equal(run.code, 0, run.stderr);
  for (const [name, text] of [["stdout", run.stdout], ["stderr", run.stderr]]) {
    assert.ok(!text.includes("waiting for"), `${name}: ${JSON.stringify(text)}`);
    assert.ok(!text.includes("\r"), `${name}: ${JSON.stringify(text)}`);
    assert.ok(!text.includes("\x1b"), `${name}: ${JSON.stringify(text)}`);
  }
});

// ─── Finding a session again: --sessions, --continue ─────────────────────────

Deno.test("--sessions lists mm's sessions, most recent first: id, last update, title", async () => {
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

Deno.test("--continue resumes the most recent session of this folder, not of another", async () => {
  const state = stateDir();
  const here = await runClient({ env: state, args: ["How much RAM?"] });
  await runClient({ env: state, args: ["Which CPU?"], cwd: scratchDir("elsewhere-") });
  const run = await runClient({ env: state, args: ["--continue", "And since when is it up?"] });
  assert.equal(run.code, 0, run.stderr);
  const { session, how } = discovery(run.log);
  assert.deepEqual([session, how], [discovery(here.log).session, "resumed"]);
  assert.match(run.out.at(-2) ?? "", UPTIME_ANSWER);
});

Deno.test("--continue in a folder mm has no session for is one error line, exit 1", async () => {
  const run = await runClient({ env: stateDir(), args: ["--continue"] });
  assert.equal(run.code, 1, run.stderr);
  assert.deepEqual(run.log.filter((l) => l.startsWith("error:")), [
    `error: mm has no session in ${ROOT} to continue`,
  ]);
});

Deno.test("--sessions and --continue with an mm that cannot list sessions: one error line, exit 1", async () => {
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
