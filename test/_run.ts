/**
 * Runs the real client as a process, the way a user does, and collects what
 * it printed. Every run uses the `start` task's exact permissions, and every
 * frame the client writes is checked against the ACP schema.
 *
 * @module
 */

import { checkSentFrames } from "./_schema.ts";

/** The project folder. */
export const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

/** The `start` task's Deno permission flags, read from deno.json. */
export const START_PERMISSIONS: string[] = (() => {
  const config = JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`));
  return String(config.tasks.start).split(/\s+/).filter((word) => word.startsWith("--allow-"));
})();

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
}

/** A client that is running. */
export interface RunningClient {
  /** The client process. */
  child: Deno.ChildProcess;
  /** Resolves once stdout contains `text`. */
  waitForStdout(text: string): Promise<void>;
  /** Resolves once stderr contains `text`. */
  waitForStderr(text: string): Promise<void>;
  /** Waits for the client to exit and returns what it printed. */
  done(): Promise<ClientResult>;
}

/** Starts the client against the mm stand-in (unless told otherwise). */
export function startClient(run: ClientRun = {}): RunningClient {
  const args = [
    ...(run.noMm ? [] : ["--mm", `${ROOT}/test/mm-sim`]),
    ...(run.noTrace ? [] : ["--trace"]),
    ...(run.args ?? []),
  ];
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      "--config",
      `${ROOT}/deno.json`,
      ...(run.permissions ?? START_PERMISSIONS).map((flag) =>
        flag === "--allow-read=." && run.readAlso ? `${flag},${run.readAlso.join(",")}` : flag
      ),
      `${ROOT}/client.ts`,
      ...args,
    ],
    cwd: run.cwd ?? ROOT,
    env: { DENO_BIN: Deno.execPath(), NO_COLOR: "1", ...run.env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();

  const text = { stdout: "", stderr: "" };
  const waiters: { stream: "stdout" | "stderr"; text: string; resolve: () => void }[] = [];
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
  const waitFor = (stream: "stdout" | "stderr") => (wanted: string) =>
    text[stream].includes(wanted)
      ? Promise.resolve()
      : new Promise<void>((resolve) => waiters.push({ stream, text: wanted, resolve }));

  return {
    child,
    waitForStdout: waitFor("stdout"),
    waitForStderr: waitFor("stderr"),
    async done() {
      const status = await child.status;
      await reading;
      const ms = performance.now() - started;
      if (!run.noTrace) {
        const violations = checkSentFrames(text.stderr);
        if (violations.length > 0) {
          throw new Error(
            `the client wrote frames that break the ACP schema:\n${
              violations.map((v) => `  ${v.problem}\n    ${v.frame}`).join("\n")
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
  const dir = Deno.makeTempDirSync({ prefix: "host-info-test-" });
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

/** Whether a process is still alive (a zombie counts as gone). */
export function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return !/^\d+ \(.*\) Z /.test(stat);
  } catch {
    return false;
  }
}

/** The session id in the client's `discovery:` line. */
export function sessionOf(log: string[]): string {
  const line = log.find((l) => l.startsWith("[client] discovery: "));
  const id = line?.match(/session (\S+)$/)?.[1];
  if (!id) throw new Error(`no discovery line in:\n${log.join("\n")}`);
  return id;
}
