/**
 * Runs a command in a real pseudo-terminal, as a person at a terminal does:
 * util-linux `script` gives it a terminal on stdin, stdout and stderr, and
 * what the test types goes through the terminal's line discipline — so a
 * typed `\x03` becomes SIGINT for the whole foreground process group, exactly
 * as Ctrl-C does, and `\x04` at the start of a line is end of input.
 *
 * @module
 */

import { ROOT, within } from "./_run.ts";
import { SCRATCH } from "./_scratch.ts";

/** Whether `script` (util-linux) is on this machine. */
export const hasScript: boolean =
  new Deno.Command("sh", { args: ["-c", "command -v script"] }).outputSync().success;

/** How to start a command in a terminal. */
export interface TerminalOptions {
  /** Extra environment variables; `NO_COLOR` is unset unless given here. */
  env?: Record<string, string>;
  /** Working directory (default: the project folder). */
  cwd?: string;
  /** How long the command may run before the test fails (default 60 s). */
  deadlineMs?: number;
}

/** A command running in a pseudo-terminal. */
export interface Terminal {
  /** Everything the terminal showed so far, both streams, raw. */
  screen(): string;
  /**
   * Resolves once the screen, colours left out, matches; fails the test (and kills the command)
   * after `ms` (default 20 s), or at once if the command exits first.
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

/** Starts `commandLine` (a `sh -c` line) in a pseudo-terminal. */
export function inTerminal(commandLine: string, options: TerminalOptions = {}): Terminal {
  const env: Record<string, string> = {
    ...Deno.env.toObject(),
    TERM: "xterm-256color",
    TMPDIR: SCRATCH,
    DENO_BIN: Deno.execPath(),
    // `deno task` runs `deno` by name: the one running the tests.
    PATH: `${Deno.execPath().replace(/\/[^/]*$/, "")}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
  };
  delete env.NO_COLOR;
  Object.assign(env, options.env);
  const started = performance.now();
  const child = new Deno.Command("script", {
    args: ["-qec", commandLine, "/dev/null"],
    cwd: options.cwd ?? ROOT,
    clearEnv: true,
    env,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const keyboard = child.stdin.getWriter();
  let screen = "";
  let exited = false;
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
  Promise.all([child.status, reading]).finally(() => {
    exited = true;
    for (const waiter of waiters.splice(0)) waiter.reject();
  }).catch(() => {});
  child.stderr.cancel();
  const deadlineMs = options.deadlineMs ?? 60_000;
  const fail = (error: unknown): never => {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    throw new Error(`${(error as Error).message}\n--- terminal ---\n${JSON.stringify(screen)}`);
  };

  return {
    screen: () => screen,
    waitFor(wanted, ms = 20_000) {
      if (matches(wanted)) return Promise.resolve();
      if (exited) return Promise.reject(new Error(`exited before ${wanted}`)).catch(fail);
      return within(
        ms,
        `waiting for ${wanted} on the terminal`,
        new Promise<void>((resolve, reject) =>
          waiters.push({
            wanted,
            resolve,
            reject: () => reject(new Error(`the command exited before ${wanted}`)),
          })
        ),
      ).catch(fail);
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
      await within(5000, "the terminal's output to end", reading).catch(fail);
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
  await terminal.waitFor(new RegExp(`${PROMPT.source}|${endSource}`), 20_000);
  if (PROMPT.test(terminal.screen())) {
    terminal.kill();
    await terminal.done().catch(() => {});
    throw new Error(`Deno asked for a permission:\n${JSON.stringify(terminal.screen())}`);
  }
  return await terminal.done();
}
/**
 * One thing a terminal obeys or shows: an erase in line, an erase to the end of the screen,
 * another sequence, a character.
 */
const TERMINAL_TOKEN = new RegExp(
  `${ESC}\\[([012]?)K|${ESC}\\[(0?)J|${ESC}\\[[0-9;?]*[A-Za-z]|[^]`,
  "gu",
);

/**
 * What a terminal `width` columns wide shows once its control sequences are obeyed, row by row: a
 * line longer than the width wraps to the next row, and `\r`, erase-in-line and erase-below act
 * on the row the cursor is on, as a terminal does.
 */
export function visibleLines(screen: string, width = Infinity): string[] {
  const rows: string[][] = [[]];
  let [row, column] = [0, 0];
  const nextRow = () => {
    [row, column] = [row + 1, 0];
    rows[row] ??= [];
  };
  for (const [token, erase, below] of screen.matchAll(TERMINAL_TOKEN)) { // colours are skipped
    const line = rows[row];
    if (token === "\n") nextRow();
    else if (token === "\r") column = 0;
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
