/**
 * Runs a command in a real pseudo-terminal, as a person at a terminal does:
 * `script` (util-linux's on Linux, BSD's on macOS and FreeBSD) gives it a
 * terminal on stdin, stdout and stderr, and what the test types goes through
 * the terminal's line discipline — so a typed `\x03` becomes SIGINT for the
 * whole foreground process group, exactly as Ctrl-C does, and `\x04` at the
 * start of a line is end of input.
 *
 * @module
 */

import { clip } from "./_assert.ts";
import {
  askingShellAgent,
  clientCommand,
  errorForLater,
  exitOf,
  lastLines,
  MM_SIM,
  noStrayRejection,
  passedEnv,
  ROOT,
  RUN_MS,
  sleep,
  WAIT_MS,
  within,
} from "./_run.ts";
import { SCRATCH } from "./_scratch.ts";

/** The flavour of `script` that the system `os` comes with, if it is one of the two. */
function scriptFlavour(os: string): "util-linux" | "bsd" | undefined {
  if (os === "linux") return "util-linux";
  if (os === "darwin" || os === "freebsd") return "bsd";
  return undefined;
}

/**
 * Which `script` this system comes with, told apart by its command line: util-linux's
 * (`script -qec CMD /dev/null`) on Linux, BSD's (`script -q /dev/null sh -c CMD`) on macOS and
 * FreeBSD; none elsewhere (the other BSDs' `script` takes neither form).
 */
const SCRIPT_FLAVOUR = scriptFlavour(Deno.build.os);

/**
 * Whether the `script` on `PATH` is of {@linkcode SCRIPT_FLAVOUR}: util-linux's names itself in
 * `script --version`, BSD's rejects the option (run in the scratch folder all the same, so that a
 * `script` that took `--version` for a file name writes it there).
 */
function scriptFound(): boolean {
  if (SCRIPT_FLAVOUR === undefined) return false;
  let output: Deno.CommandOutput;
  try {
    output = new Deno.Command("script", {
      args: ["--version"],
      cwd: SCRATCH,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).outputSync();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
  const decoder = new TextDecoder();
  const said = decoder.decode(output.stdout) + decoder.decode(output.stderr);
  const utilLinux = output.success && said.includes("util-linux");
  return SCRIPT_FLAVOUR === "util-linux" ? utilLinux : !utilLinux;
}

/**
 * Whether this machine has the `script` that {@linkcode inTerminal} speaks (see the module's
 * doc); the tests that need a terminal are ignored without it.
 */
export const hasScript: boolean = scriptFound();

/** The arguments of `script` that run the `sh -c` line `commandLine` in a pseudo-terminal. */
function scriptArgs(commandLine: string): string[] {
  // util-linux's runs `$SHELL -c` (the environment given sets SHELL=/bin/sh); BSD's runs argv.
  if (SCRIPT_FLAVOUR === "util-linux") return ["-qec", commandLine, "/dev/null"];
  return ["-q", "/dev/null", "sh", "-c", commandLine];
}

/** How to start a command in a terminal. */
export interface TerminalOptions {
  /** Extra environment variables; `NO_COLOR` is unset unless given here. */
  env?: Record<string, string>;
  /** Working directory (default: the project folder). */
  cwd?: string;
  /** How long the command may run before the test fails (default {@linkcode RUN_MS}). */
  deadlineMs?: number;
}

/** A command running in a pseudo-terminal. */
export interface Terminal {
  /** Everything the terminal showed so far, both streams, raw. */
  screen(): string;
  /**
   * Resolves once the screen, colours left out, matches; fails the test (and kills the command)
   * after `ms` (default {@linkcode WAIT_MS}), or at once if the command exits first, naming its
   * exit and the last lines of the screen.
   */
  waitFor(wanted: string | RegExp, ms?: number): Promise<void>;
  /** Types text at the terminal (`"\x03"` is Ctrl-C, `"\x04"` Ctrl-D). */
  type(text: string): Promise<void>;
  /** Whether the command is still running. */
  running(): boolean;
  /**
   * Waits for the command to exit, within `ms` if given, else the run's deadline; past it kills
   * the command and fails.
   */
  done(ms?: number): Promise<{ code: number; screen: string; ms: number }>;
  /** Kills the terminal's command at once (a test that has already failed). */
  kill(): void;
}

/**
 * Starts `commandLine` (a `sh -c` line) in a pseudo-terminal, in an environment of its own: the
 * machine's cache, certificate and proxy variables ({@linkcode passedEnv}), `HOME`, a `PATH` that
 * starts with the deno running the tests, and `options.env`; nothing else of the test process's
 * (no `NO_COLOR`, no `DENO_NO_PROMPT`).
 */
export function inTerminal(commandLine: string, options: TerminalOptions = {}): Terminal {
  const home = Deno.env.get("HOME");
  const env: Record<string, string> = {
    ...passedEnv(),
    ...(home === undefined ? {} : { HOME: home }),
    TERM: "xterm-256color",
    SHELL: "/bin/sh",
    TMPDIR: SCRATCH,
    DENO_BIN: Deno.execPath(),
    // `deno task` runs `deno` by name: the one running the tests.
    PATH: `${Deno.execPath().replace(/\/[^/]*$/, "")}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
    ...options.env,
  };
  const started = performance.now();
  const child = new Deno.Command("script", {
    args: scriptArgs(commandLine),
    cwd: options.cwd ?? ROOT,
    clearEnv: true,
    env,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const keyboard = child.stdin.getWriter();
  let screen = "";
  let exited: Deno.CommandStatus | undefined;
  const waiters: { wanted: string | RegExp; resolve: () => void; reject: () => void }[] = [];
  const matches = (wanted: string | RegExp) => {
    const shown = withoutColours(screen);
    return typeof wanted === "string" ? shown.includes(wanted) : wanted.test(shown);
  };
  const reading = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of child.stdout) {
      screen += decoder.decode(chunk, { stream: true });
      for (const waiter of waiters.filter((w) => matches(w.wanted))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  })();
  // Once the command is gone and its output read, nothing more will come.
  Promise.all([child.status, reading.catch(() => {})]).then(([status]) => {
    exited = status;
    for (const waiter of waiters.splice(0)) waiter.reject();
  });
  child.stderr.cancel().catch(() => {});
  const deadlineMs = options.deadlineMs ?? RUN_MS;
  const fail = (error: unknown): never => {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    const shown = `--- the terminal (as JSON) ---\n${clip(JSON.stringify(screen))}`;
    if (!(error instanceof Error)) throw new Error(`${error}\n${shown}`);
    error.message = `${error.message}\n${shown}`;
    throw error;
  };
  const exitedBefore = (wanted: string | RegExp) =>
    `the command exited (${exitOf(exited!)}) before ${wanted}; the last lines of the terminal:\n${
      lastLines(withoutColours(screen))
    }`;

  return {
    screen: () => screen,
    waitFor(wanted, ms = WAIT_MS) {
      if (matches(wanted)) return Promise.resolve();
      const failure = errorForLater();
      if (exited) {
        return noStrayRejection(Promise.reject(failure(exitedBefore(wanted))).catch(fail));
      }
      return noStrayRejection(
        within(
          ms,
          `waiting for ${wanted} on the terminal`,
          new Promise<void>((resolve, reject) =>
            waiters.push({ wanted, resolve, reject: () => reject(failure(exitedBefore(wanted))) })
          ),
        ).catch(fail),
      );
    },
    async type(text) {
      await keyboard.write(new TextEncoder().encode(text)).catch(() => {});
    },
    running: () => !exited,
    kill() {
      try {
        child.kill("SIGKILL");
      } catch { /* already gone */ }
    },
    async done(ms?: number) {
      const status = await within(
        ms ?? deadlineMs - (performance.now() - started),
        "the command in the terminal to exit",
        child.status,
      ).catch(fail);
      await within(WAIT_MS, "the terminal's output to end", reading).catch(fail);
      await keyboard.close().catch(() => {});
      return { code: status.code, screen, ms: performance.now() - started };
    },
  };
}

const ESC = String.fromCharCode(0x1b);
/** A colour (SGR) sequence. */
const COLOUR = new RegExp(`${ESC}\\[[0-9;]*m`, "g");

/** The screen without its colours. */
function withoutColours(screen: string): string {
  return screen.replace(COLOUR, "");
}

/** What a Deno permission prompt shows. */
const PROMPT = /Allow\?|Deno requests|\[y\/n/;

/**
 * Waits for `end` on the terminal, then for the command to exit; a Deno permission prompt fails
 * the test at once (the command is killed) instead of blocking it.
 */
export async function doneWithoutPrompt(
  terminal: Terminal,
  end: string | RegExp,
): Promise<{ code: number; screen: string }> {
  const endSource = typeof end === "string"
    ? end.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
    : end.source;
  await terminal.waitFor(new RegExp(`${PROMPT.source}|${endSource}`));
  if (PROMPT.test(terminal.screen())) {
    terminal.kill();
    await terminal.done().catch(() => {});
    throw new Error(`Deno asked for a permission:\n${clip(JSON.stringify(terminal.screen()))}`);
  }
  return await terminal.done();
}
/**
 * One thing a terminal obeys or shows: an erase in line, an erase to the end of the screen,
 * another sequence, a character.
 */
const TERMINAL_TOKEN = new RegExp(
  `${ESC}\\[([012]?)K|${ESC}\\[(0?)J|${ESC}\\[(\\d*)A|${ESC}\\[[0-9;?]*[A-Za-z]|[^]`,
  "gu",
);

/**
 * What a terminal `width` columns wide shows once its control sequences are obeyed, row by row: a
 * line longer than the width wraps to the next row, `\r`, erase-in-line and erase-below act on the
 * row the cursor is on, and cursor-up moves it up, as a terminal does.
 */
export function visibleLines(screen: string, width = Infinity): string[] {
  const rows: string[][] = [[]];
  let row = 0;
  let column = 0;
  const nextRow = () => {
    row += 1;
    column = 0;
    rows[row] ??= [];
  };
  for (const [token, erase, below, up] of screen.matchAll(TERMINAL_TOKEN)) { // colours: skipped
    const line = rows[row];
    if (token === "\n") nextRow();
    else if (token === "\r") column = 0;
    else if (token === "\b") column = Math.max(0, column - 1); // Backspace moves left
    else if (up !== undefined) row = Math.max(0, row - Number(up || 1));
    else if (below !== undefined) {
      line.length = Math.min(line.length, column);
      rows.length = row + 1;
    } else if (erase !== undefined) {
      if (erase === "" || erase === "0") line.length = Math.min(line.length, column);
      else if (erase === "1") line.fill(" ", 0, column + 1);
      else rows[row] = Array(column).fill(" ");
    } else if (!token.startsWith(ESC)) {
      if (column >= width) nextRow();
      while (rows[row].length < column) rows[row].push(" ");
      rows[row][column++] = token;
    }
  }
  return rows.map((line) => line.join("").trimEnd());
}

/**
 * Waits until the terminal shows the client's `nth` permission question (its options line ends
 * with `(Enter: …)`), then a while more: the client takes a key pressed within 250 ms of its
 * question for one typed before it, not for an answer. A turn that ends first fails at once: with
 * `-i` the client would wait at its prompt, and only the deadline would say so.
 */
export async function atPermissionQuestion(terminal: Terminal, nth = 1): Promise<void> {
  const question = `(?:[^]*?\\(Enter: ){${nth}}`;
  const turnEnded = `^[^]{${terminal.screen().length}}[^]*?\\[(?:${STOP_REASONS})\\]`;
  await terminal.waitFor(new RegExp(`${question}|${turnEnded}`));
  const shown = terminal.screen().split("(Enter: ").length - 1;
  if (shown < nth) {
    throw new Error(
      `the turn ended before permission question ${nth}:\n${
        clip(JSON.stringify(terminal.screen()))
      }`,
    );
  }
  await sleep(600);
}

/** The stop reasons the client shows at the end of a turn, as a regular expression's choice. */
const STOP_REASONS = "end_turn|cancelled|refusal|max_tokens|max_turn_requests";

/**
 * The client with `-i` at a terminal (its exit code the terminal's), the stand-in given its shell
 * (`yolo: false`) and `env`: the terminal once it shows its first prompt.
 */
export async function atShellPrompt(env: Record<string, string> = {}): Promise<Terminal> {
  const { agent, permissions } = askingShellAgent();
  const command = clientCommand(["--mm", MM_SIM, "--agent", agent, "-i"], permissions);
  // `exec`: the exit code is the client's own, not that of a shell that took a Ctrl-C too.
  const terminal = inTerminal(`exec ${command}`, { env });
  await terminal.waitFor("> ");
  return terminal;
}

/**
 * {@linkcode atShellPrompt}, asked about the disk: the terminal once it shows the question about
 * `df -h .`.
 */
export async function atShellQuestionWithPrompt(): Promise<Terminal> {
  const terminal = await atShellPrompt();
  await terminal.type("How big is my disk?\r");
  await atPermissionQuestion(terminal);
  return terminal;
}
