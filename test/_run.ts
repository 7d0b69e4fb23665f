/**
 * Runs the real client as a process, the way a user does, and collects what
 * it printed. Every run uses the `start` task's exact permissions, every
 * frame the client writes is checked against the ACP schema, and no mm it
 * started may outlive it. Also here: the peers (the stand-in, the misbehaving
 * peer, small shell-script mms), temporary files, shell lines and pid checks.
 *
 * @module
 */

import { describeTools, hostInfo, TOOLS } from "../client.ts";
import { validateToolList } from "./mm_sim.ts";
import assert, { clip } from "./_assert.ts";
import { checkSentFrames } from "./_schema.ts";
import { SCRATCH, scratchDir } from "./_scratch.ts";

/**
 * How long a test waits for something that must happen (a line, an answer, a process gone) before
 * it fails. It is there for a hang, never for speed: a passing test never comes near it, even on a
 * crowded machine (load 20 on 2 cores), and a client that exits meanwhile fails the wait at once.
 */
export const WAIT_MS = 60_000;

/** How long a whole run of the client may take before it is killed and the test fails. */
export const RUN_MS = 120_000;

/** What `host_info os` answers on this machine (read once: it does not change during a run). */
export const OS_TEXT = hostInfo("os").content[0].text;

/**
 * The names mm's log gives the client's tools (`client_host_info`, and those a copier added), in
 * its order: what follows `[acp] client tools (meta): `.
 */
export const MODEL_NAMES = validateToolList(describeTools(TOOLS)).tools
  .map((tool) => tool.modelName).join(", ");

/** The names of the client's tools, as its warnings and `--help` give them: `host_info`, … */
export const TOOL_NAMES = TOOLS.map((tool) => tool.name).join(", ");

/** The project folder. */
export const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

/** The `start` task's Deno permission flags, read from deno.json. */
export const START_PERMISSIONS: string[] = (() => {
  const config = JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`));
  return String(config.tasks.start).split(/\s+/).filter((word) => word.startsWith("--allow-"));
})();

/** The stand-in's launcher. */
export const MM_SIM = `${ROOT}/test/mm-sim`;
/** The misbehaving peer's launcher. */
export const ROGUE = `${ROOT}/test/rogue-mm`;
/** `PATH` with deno and the system's tools, and no `mm`. */
export const PATH_WITHOUT_MM = `${Deno.execPath().replace(/\/[^/]*$/, "")}:/usr/bin:/bin`;

/**
 * The variables of the test process's environment that a child started with a cleared
 * environment still needs to reach and trust the network as this machine does: where Deno caches
 * (`DENO_DIR`, so nothing is downloaded again, nor written to `~/.cache/deno`), which certificate
 * authorities to trust (behind a TLS-inspecting proxy, the proxy's), the proxies in both of the
 * spellings tools read, registry tokens and mirrors. Deno 2.9 no longer reads `DENO_NPM_REGISTRY`.
 */
const PASSED_VARIABLES = [
  "DENO_DIR",
  "DENO_COVERAGE_DIR", // `deno test --coverage`: the clients the tests start are measured too
  "DENO_CERT",
  "DENO_TLS_CA_STORE",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "NODE_EXTRA_CA_CERTS",
  "DENO_AUTH_TOKENS",
  "HTTPS_PROXY",
  "https_proxy",
  "HTTP_PROXY",
  "http_proxy",
  "ALL_PROXY",
  "all_proxy",
  "NO_PROXY",
  "no_proxy",
  "NPM_CONFIG_REGISTRY",
  "JSR_URL",
];

/**
 * Those of `PASSED_VARIABLES` that are set in the test process's environment: what a
 * `Deno.Command` with `clearEnv: true` passes on, so that a deno it starts uses the machine's
 * cache, certificates and proxies.
 */
export function passedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of PASSED_VARIABLES) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** What the stand-in's runs show of each topic's `host_info` result. */
export const RESULT_LINE = {
  os: /^│ .+ \(.+\/.+\), host name .+$/,
  cpu: /^│ \d+ × .+ \(.+\), load average \d+\.\d\d \d+\.\d\d \d+\.\d\d$/,
  memory: /^│ \d+\.\d GiB free of \d+\.\d GiB$/,
  uptime:
    /^│ up (\d+ days?, )?(\d+ hours?, )?\d+ minutes? \(since \d{4}-\d\d-\d\d \d\d:\d\d UTC\)$/,
};
/** How the stand-in's answer begins. */
export const ANSWER_PREFIX = "Here is what host_info reports about your machine — ";
/** The stand-in's whole answer to a question about one topic. */
export const ANSWER_LINE = {
  memory: new RegExp(`^${ANSWER_PREFIX}memory: \\d+\\.\\d GiB free of \\d+\\.\\d GiB\\.$`),
  uptime: new RegExp(`^${ANSWER_PREFIX}uptime: up .+\\.$`),
};

/** Waits `ms`. */
export const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));

/** How a test starts the client. */
export interface ClientRun {
  /** Arguments after `client.ts`; `--mm test/mm-sim` and `--trace` come first unless given. */
  args?: string[];
  /** Extra environment variables (for the stand-in's knobs). */
  env?: Record<string, string>;
  /** Permission flags instead of the start task's. */
  permissions?: string[];
  /** Leave out `--trace` (and with it the schema check). */
  noTrace?: boolean;
  /** Working directory (default: the project folder). */
  cwd?: string;
  /** Leave out `--mm test/mm-sim`. */
  noMm?: boolean;
  /** Files outside the project the client may read too (temporary agent files). */
  readAlso?: string[];
  /**
   * What the client reads on stdin: a text written then closed, or `"open"`
   * for a pipe the test writes to with {@linkcode RunningClient.write}.
   * Default: no stdin at all (`null`).
   */
  stdin?: string | "open";
  /** How long the whole run may take before the test fails (default {@linkcode RUN_MS}). */
  deadlineMs?: number;
  /** Another client file to run (a copy of client.ts, see {@linkcode clientWithTools}). */
  client?: string;
  /**
   * Where the peer writes its process ids (default: a fresh file, given to the stand-in as
   * `MM_SIM_PID_FILE`). Once the client has exited, none of them may be alive.
   */
  pidFile?: string;
}

/** What a finished run printed. */
export interface ClientResult {
  /** Exit code. */
  code: number;
  /** Everything on stdout. */
  stdout: string;
  /** Everything on stderr. */
  stderr: string;
  /** stdout lines. */
  out: string[];
  /** stderr lines without the `→`/`←` trace. */
  log: string[];
  /** How long the client took, in ms. */
  ms: number;
  /** The peer's pid file (see {@linkcode ClientRun.pidFile}). */
  pidFile: string;
}

/** A client that is running. */
export interface RunningClient {
  /** The client process. */
  child: Deno.ChildProcess;
  /**
   * Resolves once stdout contains `text`; fails the test (and kills the client) after `ms`
   * (default {@linkcode WAIT_MS}), or at once when the client exits without it, naming its exit
   * and its last stderr lines.
   */
  waitForStdout(text: string, ms?: number): Promise<void>;
  /** Resolves once stderr contains `text`; fails the test as {@linkcode waitForStdout} does. */
  waitForStderr(text: string, ms?: number): Promise<void>;
  /** Writes to the client's stdin (with `stdin: "open"`). */
  write(text: string): Promise<void>;
  /** Closes the client's stdin (end of input). */
  closeStdin(): Promise<void>;
  /** What the client has written on stderr so far. */
  stderr(): string;
  /**
   * Waits for the client to exit and returns what it printed. Past the run's
   * deadline the client is killed and the test fails with what it printed.
   */
  done(): Promise<ClientResult>;
}

/**
 * Marks a helper's promise as handled, and returns it: awaited, it still rejects; but when the
 * test that made it has already failed and moved on, its rejection fails nobody, where Deno would
 * otherwise take it for an uncaught error and cancel the rest of the file.
 */
export function noStrayRejection<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

/**
 * An error made now, to be thrown later with the message given then: its stack is the caller's, so
 * that a wait that fails names the line of the test that waited, not a timer's.
 */
export function errorForLater(): (message: string) => Error {
  const error = new Error("(not yet thrown)");
  Error.captureStackTrace(error, errorForLater);
  return (message) => {
    error.message = message;
    return error;
  };
}

/**
 * Rejects with `deadline: <what> (after <ms> ms)` after `ms`, unless `promise` settles first; the
 * timer is cleared either way. `what` may be a function, asked only when the deadline passes (to
 * say what had come by then); its first line is what was awaited, the others are shown below.
 * The promise returned never rejects outside its test ({@linkcode noStrayRejection}).
 */
export function within<T>(
  ms: number,
  what: string | (() => string),
  promise: Promise<T>,
): Promise<T> {
  const failure = errorForLater();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const [awaited, ...more] = (typeof what === "string" ? what : what()).split("\n");
      const after = `deadline: ${awaited} (after ${Math.round(ms)} ms)`;
      reject(failure([after, ...more].join("\n")));
    }, ms);
  });
  return noStrayRejection(Promise.race([promise, deadline]).finally(() => clearTimeout(timer)));
}

/** How a process ended, in words: `exit code 1`, `killed by SIGKILL`. */
export function exitOf(status: Deno.CommandStatus): string {
  return status.signal ? `killed by ${status.signal}` : `exit code ${status.code}`;
}

/** The last `count` lines of `text` that are not empty, each cut to 300 characters. */
export function lastLines(text: string, count = 12): string {
  const lines = text.split("\n").filter((line) => line.trim() !== "").slice(-count);
  return lines.map((line) => line.length > 300 ? `${line.slice(0, 300)}…` : line).join("\n");
}

/** Starts the client against the mm stand-in (unless told otherwise). */
export function startClient(run: ClientRun = {}): RunningClient {
  const args = [
    ...(run.noMm ? [] : ["--mm", `${ROOT}/test/mm-sim`]),
    ...(run.noTrace ? [] : ["--trace"]),
    ...(run.args ?? []),
  ];
  const pidFile = run.pidFile ?? tempFile("pid", "");
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      "--config",
      `${ROOT}/deno.json`,
      ...(run.permissions ?? START_PERMISSIONS).map((flag) =>
        flag.startsWith("--allow-read=") && run.readAlso
          ? `${flag},${run.readAlso.join(",")}`
          : flag
      ),
      run.client ?? `${ROOT}/client.ts`,
      ...args,
    ],
    cwd: run.cwd ?? ROOT,
    env: {
      DENO_BIN: Deno.execPath(),
      NO_COLOR: "1",
      TMPDIR: SCRATCH,
      MM_SIM_PID_FILE: pidFile,
      ...run.env,
    },
    stdin: run.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stdin = run.stdin === undefined ? undefined : child.stdin.getWriter();
  const encoder = new TextEncoder();
  // A client that stopped reading its stdin is not the test's failure.
  const write = (text: string) =>
    stdin?.write(encoder.encode(text)).catch(() => {}) ?? Promise.resolve();
  const closeStdin = () => stdin?.close().catch(() => {}) ?? Promise.resolve();
  if (typeof run.stdin === "string" && run.stdin !== "open") {
    write(run.stdin).then(closeStdin);
  }

  const text = { stdout: "", stderr: "" };
  const waiters: {
    stream: "stdout" | "stderr";
    text: string;
    resolve: () => void;
    reject: (message: string) => void;
  }[] = [];
  const collect = async (stream: "stdout" | "stderr", from: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of from) {
      text[stream] += decoder.decode(chunk, { stream: true });
      for (const waiter of waiters.filter((w) => w.stream === stream)) {
        if (text[stream].includes(waiter.text)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
    }
  };
  const reading = Promise.all([collect("stdout", child.stdout), collect("stderr", child.stderr)]);
  /** What the client had written when a wait on `stream` failed. */
  const written = (stream: "stdout" | "stderr") =>
    `--- its ${stream} ---\n${clip(text[stream])}${
      stream === "stdout" ? `\n--- the last lines of its stderr ---\n${lastLines(text.stderr)}` : ""
    }`;
  const exitedBefore = (status: Deno.CommandStatus, stream: "stdout" | "stderr", wanted: string) =>
    `the client exited (${exitOf(status)}) before ${JSON.stringify(wanted)} on ${stream}\n${
      written(stream)
    }`;
  // Once the client is gone and all it wrote is read, what has not come will not: fail at once.
  let ended: Deno.CommandStatus | undefined;
  Promise.all([reading.catch(() => {}), child.status]).then(([, status]) => {
    ended = status;
    for (const waiter of waiters.splice(0)) {
      waiter.reject(exitedBefore(status, waiter.stream, waiter.text));
    }
  });
  const waitFor = (stream: "stdout" | "stderr") => (wanted: string, ms = WAIT_MS) => {
    if (text[stream].includes(wanted)) return Promise.resolve();
    const failure = errorForLater();
    if (ended) {
      return noStrayRejection(Promise.reject(failure(exitedBefore(ended, stream, wanted))));
    }
    const waiting = within(
      ms,
      () => `waiting for ${JSON.stringify(wanted)} on ${stream}\n${written(stream)}`,
      new Promise<void>((resolve, reject) =>
        waiters.push({
          stream,
          text: wanted,
          resolve,
          reject: (message) => reject(failure(message)),
        })
      ),
    );
    return noStrayRejection(waiting.catch((error) => {
      try {
        child.kill("SIGKILL");
      } catch { /* gone already */ }
      throw error;
    }));
  };
  const deadlineMs = run.deadlineMs ?? RUN_MS;

  return {
    child,
    waitForStdout: waitFor("stdout"),
    waitForStderr: waitFor("stderr"),
    write,
    closeStdin,
    stderr: () => text.stderr,
    async done() {
      let status: Deno.CommandStatus;
      try {
        status = await within(
          deadlineMs - (performance.now() - started),
          "the client to exit",
          child.status,
        );
      } catch (error) {
        try {
          child.kill("SIGKILL");
        } catch { /* gone already */ }
        await within(WAIT_MS, "the killed client's output to end", reading).catch(() => {});
        const shown = `--- stdout ---\n${clip(text.stdout)}\n--- stderr ---\n${clip(text.stderr)}`;
        if (!(error instanceof Error)) throw new Error(`${error}\n${shown}`);
        error.message = `${error.message}\n${shown}`;
        throw error;
      }
      // mm may hold the pipes open if it outlived the client: that is a failure too.
      await within(WAIT_MS, "the client's stdout and stderr to close", reading);
      const ms = performance.now() - started;
      // Whatever the run was about, no peer outlives the client (when one was started).
      if (Deno.readTextFileSync(pidFile).trim() !== "") await assertNoPeerLeft(pidFile);
      if (!run.noTrace) {
        const violations = checkSentFrames(text.stderr);
        if (violations.length > 0) {
          throw new Error(
            `the client wrote frames that break the ACP schema:\n${
              clip(violations.map((v) => `  ${v.problem}\n    ${v.frame}`).join("\n"))
            }`,
          );
        }
      }
      return {
        code: status.code,
        stdout: text.stdout,
        stderr: text.stderr,
        out: text.stdout.split("\n").filter((line) => line !== ""),
        log: text.stderr.split("\n").filter((line) =>
          line !== "" && !line.startsWith("→ ") && !line.startsWith("← ")
        ),
        ms,
        pidFile,
      };
    },
  };
}

/** Runs the client to the end. */
export function runClient(run: ClientRun = {}): Promise<ClientResult> {
  return startClient(run).done();
}

/** Writes a file in a fresh temporary folder and returns its path. */
export function tempFile(name: string, text: string, mode?: number): string {
  const dir = scratchDir("host-info-test-");
  const path = `${dir}/${name}`;
  Deno.writeTextFileSync(path, text, mode ? { mode } : undefined);
  return path;
}

/** The project's agent.yaml with some lines replaced, in a temporary file. */
export function agentFileWith(replacements: Record<string, string>, base = "agent.yaml"): string {
  let text = Deno.readTextFileSync(`${ROOT}/${base}`);
  for (const [from, to] of Object.entries(replacements)) {
    if (!text.includes(from)) throw new Error(`${base} has no ${JSON.stringify(from)}`);
    text = text.replace(from, to);
  }
  return tempFile("agent.yaml", text);
}

/**
 * An agent file that gives mm its own shell and has it ask before every call (`bashTool: true`,
 * `yolo: false`), with the start task's permissions widened to read it.
 */
export function askingShellAgent(): { agent: string; permissions: string[] } {
  const agent = agentFileWith({ "bashTool: false": "bashTool: true", "yolo: true": "yolo: false" });
  return { agent, permissions: permissionsWith("--allow-read=", `--allow-read=.,${agent}`) };
}

/** How `ps` is asked about a process: its resident memory in KiB and its state, no header. */
function psCommand(pid: number): Deno.Command {
  return new Deno.Command("ps", {
    args: ["-o", "rss=,stat=", "-p", String(pid)],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
}

/**
 * What `ps` said of a process: its resident memory in KiB, or `undefined` once it is gone (`ps`
 * exits 1 for no such process; a zombie, state `Z…`, has exited too). Any other failure of `ps`
 * fails the test.
 */
function psMemoryKiB(pid: number, output: Deno.CommandOutput): number | undefined {
  if (output.code === 1) return undefined;
  const fields = new TextDecoder().decode(output.stdout).trim().split(/\s+/);
  if (!output.success || fields.length !== 2) {
    const stderr = new TextDecoder().decode(output.stderr);
    throw new Error(`ps -o rss=,stat= -p ${pid} failed (exit ${output.code}): ${stderr}`);
  }
  if (fields[1].startsWith("Z")) return undefined;
  return Number(fields[0]);
}

/**
 * Whether a process is still alive (a zombie counts as gone). A process that is gone refuses a
 * signal at once, `SIGCONT`, which does nothing to one that runs; only one that takes it is asked
 * of `ps`, whose state tells a zombie (no `/proc` on macOS).
 */
export function alive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
  } catch {
    return false;
  }
  return psMemoryKiB(pid, psCommand(pid).outputSync()) !== undefined;
}

/** The client's `discovery:` line, taken apart: the mode, the session, and how it was opened. */
export function discovery(log: string[]): {
  line: string;
  mode: string;
  session: string;
  how?: string;
} {
  const line = log.find((l) => l.startsWith("[client] discovery: "));
  const parts = line?.match(/^\[client\] discovery: (\S+), session (\S+)(?: \((\w+)\))?$/);
  if (!line || !parts) throw new Error(`no discovery line in:\n${clip(log.join("\n"))}`);
  return { line, mode: parts[1], session: parts[2], how: parts[3] };
}

/** Splits a conversation's lines into turns, each from its `❓` line on. */
export function turnsOf(out: string[]): string[][] {
  const turns: string[][] = [];
  for (const line of out) {
    if (line.startsWith("❓ ")) turns.push([]);
    if (turns.length === 0) throw new Error(`output before the first ❓:\n${clip(out.join("\n"))}`);
    turns.at(-1)!.push(line);
  }
  return turns;
}

/**
 * Asserts that a turn of the stand-in is shown as a one-shot run shows its turn: the question, a
 * `host_info` call, a `result` line, the answer about `label` and `[end_turn]`.
 */
export function assertTurn(turn: string[], question: string, result: RegExp, label: string): void {
  const text = turn.join("\n");
  const fail = (what: string) => {
    throw new Error(`${what} in:\n${clip(text)}`);
  };
  if (turn[0] !== `❓ ${question}`) fail(`the question is not ${question}`);
  if (!turn.includes("🛠️ client: host_info")) fail("no host_info call");
  if (!turn.some((l) => result.test(l))) fail(`no ${result}`);
  if (!turn.at(-2)?.startsWith(`${ANSWER_PREFIX}${label}: `)) fail(`no answer about ${label}`);
  if (turn.at(-1) !== "[end_turn]") fail("no [end_turn]");
}

/** One frame of a `--trace` transcript: its line's index, whether the client sent it, the frame. */
export interface Traced {
  /** The index of its line in stderr. */
  at: number;
  /** `→`: the client sent it; `←`: it received it. */
  sent: boolean;
  /** The frame (a frame that is not JSON is left out). */
  frame: { id?: unknown; method?: string; params?: Record<string, unknown>; result?: unknown };
}

/** The frames of a `--trace` transcript, in order. */
export function traced(stderr: string): Traced[] {
  return stderr.split("\n").flatMap((line, at) => {
    if (!line.startsWith("→ ") && !line.startsWith("← ")) return [];
    try {
      return [{ at, sent: line[0] === "→", frame: JSON.parse(line.slice(2)) }];
    } catch {
      return [];
    }
  });
}

/** The frames the client sent with `method`, in order. */
export function sentWith(stderr: string, method: string): Traced["frame"][] {
  return traced(stderr).filter((t) => t.sent && t.frame.method === method).map((t) => t.frame);
}

/** Asserts that `lines` contains `wanted` in this order (others may sit between). */
export function assertInOrder(lines: string[], wanted: (string | RegExp)[]): void {
  let at = 0;
  for (const want of wanted) {
    const found = lines.findIndex((line, i) =>
      i >= at && (typeof want === "string" ? line === want : want.test(line))
    );
    if (found < 0) {
      throw new Error(`missing ${want} (after line ${at}) in:\n${clip(lines.join("\n"))}`);
    }
    at = found + 1;
  }
}

/** A run against the misbehaving peer (`test/rogue-mm`) playing `scenario`. */
export function rogue(scenario: string, run: ClientRun = {}): ClientRun {
  const pidFile = run.pidFile ?? tempFile("pid", "");
  return {
    ...run,
    noMm: true,
    pidFile,
    args: ["--mm", ROGUE, ...(run.args ?? [])],
    env: { ROGUE_SCENARIO: scenario, ROGUE_PID_FILE: pidFile, ...run.env },
  };
}

/**
 * Tells the misbehaving peer whose process id comes first in `pidFile` to go on (SIGUSR1): the
 * pause it is in ends, since the test has seen what the pause was there for. With
 * `ROGUE_PAUSE_MS` set to {@linkcode WAIT_MS}, its pauses last until then.
 */
export function goOn(pidFile: string): void {
  const pid = Number(Deno.readTextFileSync(pidFile).trim().split(/\s+/)[0]);
  if (!(pid > 0)) throw new Error(`no pid was written to ${pidFile}`);
  Deno.kill(pid, "SIGUSR1");
}

/**
 * Runs the client against the misbehaving peer playing `scenario`, and checks that the peer wrote
 * its pid and that no peer process outlived the client.
 */
export async function runRogue(scenario: string, run: ClientRun = {}): Promise<ClientResult> {
  const result = await runClient(rogue(scenario, run));
  await assertNoPeerLeft(result.pidFile);
  return result;
}

/** The `[rogue] …` lines: what the misbehaving peer saw of the client's answers. */
export function seen(log: string[]): string[] {
  return log.filter((l) => l.startsWith("[rogue] ")).map((l) => l.slice("[rogue] ".length));
}

/** An mm (a shell script) that never says a word and ignores its stdin; its pid goes to `pidFile`. */
export function silentMm(): { mm: string; pidFile: string } {
  const pidFile = tempFile("pid", "");
  const mm = tempFile("mm", `#!/bin/sh\necho $$ > ${pidFile}\nexec sleep 60\n`, 0o755);
  return { mm, pidFile };
}

/**
 * How long this machine takes, at this moment, for a run that waits for nothing: the client
 * against the stand-in, one question answered at once, from its start to its exit. About a quarter
 * of a second on an idle machine, seconds on a crowded one: what a test allows, above a duration
 * that is the behaviour, for the machine itself ({@linkcode assertTook}). A test may start it
 * beside what it times, and await it when it checks.
 */
export function idleRunMs(): Promise<number> {
  const measuring = async () => {
    const run = await runClient({ noTrace: true, args: ["-q", "How much memory?"] });
    assert.equal(run.code, 0, `the run that waits for nothing failed:\n${run.stderr}`);
    return run.ms;
  };
  return noStrayRejection(measuring());
}

/**
 * Asserts that `what`, a duration that is the behaviour, took `ms`: at least `least` (exactly, to
 * within the clock's rounding: the test timed it from an instant before the client could start its
 * timer), and at most `most` plus twice `idle`, how long a run that waits for nothing took on this
 * machine in the same test ({@linkcode idleRunMs}) — never a fixed small number, which a crowded
 * machine overruns.
 */
export function assertTook(
  what: string,
  ms: number,
  { least, most, idle }: { least?: number; most: number; idle: number },
): void {
  const took = Math.round(ms);
  if (least !== undefined) assert.ok(ms >= least, `${what} after ${took} ms: before ${least} ms`);
  assert.ok(
    ms <= most + 2 * idle,
    `${what} after ${took} ms: more than ${most} ms and twice the ${
      Math.round(idle)
    } ms a run that waits for nothing took`,
  );
}

/** When the process exits, as `performance.now()`. */
export function exitTime(child: Deno.ChildProcess): Promise<number> {
  return child.status.then(() => performance.now());
}

/** The start task's permissions with the flag that starts with `prefix` replaced, or removed (`null`). */
export function permissionsWith(prefix: string, flag: string | null): string[] {
  return START_PERMISSIONS.flatMap((f) => f.startsWith(prefix) ? (flag ? [flag] : []) : [f]);
}

/**
 * The highest resident memory of a process, in KiB, as `ps` reports it (`rss`), sampled about
 * every 50 ms until it exits.
 */
export function peakMemoryKiB(pid: number): Promise<number> {
  const sample = async () => psMemoryKiB(pid, await psCommand(pid).output());
  const sampling = async () => {
    let peak = 0;
    for (let kib = await sample(); kib !== undefined; kib = await sample()) {
      peak = Math.max(peak, kib);
      await sleep(50);
    }
    return peak;
  };
  return noStrayRejection(sampling());
}

// ─── Shells ──────────────────────────────────────────────────────────────────

/** Quotes words for a shell line. */
function shellWords(words: string[]): string {
  return words.map((word) => `'${word.replaceAll("'", `'\\''`)}'`).join(" ");
}

/** The shell command line that runs the client as the `start` task does, with `args`. */
export function clientCommand(args: string[], permissions = START_PERMISSIONS): string {
  return shellWords([
    Deno.execPath(),
    "run",
    "--quiet",
    "--config",
    `${ROOT}/deno.json`,
    ...permissions,
    `${ROOT}/client.ts`,
    ...args,
  ]);
}

/** What a shell line printed. */
export interface ShellResult {
  /** Exit code. */
  code: number;
  /** Everything on stdout. */
  stdout: string;
  /** Everything on stderr. */
  stderr: string;
}

/**
 * Runs a bash line in its own process group, from the project folder, with a deadline (default
 * {@linkcode RUN_MS}; past it the whole group is killed and the test fails).
 */
export async function runShell(
  line: string,
  env: Record<string, string> = {},
  deadlineMs = RUN_MS,
): Promise<ShellResult> {
  const child = new Deno.Command("bash", {
    args: ["-c", line],
    // A new session, so a new process group whose id is the shell's: the `setsid` program is
    // Linux's only.
    detached: true,
    cwd: ROOT,
    env: { DENO_BIN: Deno.execPath(), NO_COLOR: "1", TMPDIR: SCRATCH, ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = child.output();
  try {
    const result = await within(deadlineMs, `the command to end: ${clip(line)}`, output);
    const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    return { code: result.code, stdout: decode(result.stdout), stderr: decode(result.stderr) };
  } catch (error) {
    try {
      Deno.kill(-child.pid, "SIGKILL");
    } catch { /* already gone */ }
    await output.catch(() => {});
    throw error;
  }
}

/**
 * A tool for {@linkcode clientWithTools} that answers after `ms` milliseconds, and stops (saying
 * so on stderr) when mm cancels the call.
 */
export const SLOW_TOOL = `  {
    name: "slow",
    description: "Answers after a while.",
    method: "_test/slow",
    inputSchema: { type: "object", properties: { ms: { type: "number" } } },
    call: ({ ms }, signal) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => resolve(toolText(\`slow done after \${ms} ms\`)), Number(ms));
        signal.addEventListener("abort", () => {
          clearTimeout(timer);
          console.error("[tool] slow saw its signal abort");
          reject(signal.reason);
        });
      }),
  },
`;

/**
 * A copy of `client.ts` (or of `from`) with `entries` added to its `TOOLS`, after the tools it
 * lends, exactly where the README tells a reader to add a tool; nothing else is edited. An entry
 * whose name the client lends already (a copier who pasted the README's tools has them) is not
 * added twice. Returns the copy's path.
 */
export function clientWithTools(entries: string, from = `${ROOT}/client.ts`): string {
  const source = Deno.readTextFileSync(from);
  // The list, to the line that closes it, however its entries are written: `tool({…}),` or `{…},`.
  const registry = /(\nexport const TOOLS: readonly Tool\[\] = \[\n[\s\S]*?\n)(\];\n)/;
  const list = source.match(registry)?.[1];
  if (list === undefined) throw new Error("client.ts has no TOOLS list where the README says");
  const lent = new Set([...list.matchAll(/\n {4}name: "([^"]*)"/g)].map((m) => m[1]));
  // Each entry starts a line: `  tool({`, as the README writes them, or a bare `  {`.
  const added = entries.split(/\n(?= {0,2}(?:tool\()?\{\n)/).filter((entry) => {
    const name = entry.match(/name: "([^"]*)"/)?.[1];
    return name === undefined || !lent.has(name);
  });
  return tempFile("client.ts", source.replace(registry, `$1${added.join("\n")}$2`));
}

/**
 * Asserts that no process whose id is in `file` (the peer's pid file: mm, and maybe its helpers)
 * is alive. The client waits until mm itself is gone before it exits; mm's helpers, killed with it
 * in its group, get up to 5 s more to die, as a crowded machine may take a moment to end them.
 */
export async function assertNoPeerLeft(file: string): Promise<void> {
  const pids = Deno.readTextFileSync(file).trim().split(/\s+/).map(Number);
  if (!(pids[0] > 0)) throw new Error(`no pid was written to ${file}`);
  const until = performance.now() + 5000;
  for (const pid of pids) {
    while (alive(pid)) {
      if (performance.now() > until) throw new Error(`process ${pid} outlived the client`);
      await sleep(100);
    }
  }
}
