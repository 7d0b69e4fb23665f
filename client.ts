#!/usr/bin/env -S deno run --no-prompt --allow-run --allow-read=. --allow-env=MM_BIN,NO_COLOR,TERM --allow-sys=osRelease,hostname,cpus,loadavg,systemMemoryInfo,osUptime
/**
 * An ACP client that lends mini-me (`mm -acp`) tools of its own — `host_info` to begin with —,
 * asks it a question and shows the conversation. mm speaks the Agent Client Protocol: JSON-RPC 2.0,
 * one JSON object per line on stdin and stdout. A client offers tools through ACP extensibility
 * (mini-me's acp-client-tools.md, "Découverte"): in the `_meta` of `initialize` (`meta`
 * discovery), or in its answer to `_org.mini-me/tools/list` (`request`). mm's model calls each as
 * `client_<name>`, and mm forwards the call to the client as a request for the tool's `method`.
 *
 * To lend a tool of your own, add one entry to `TOOLS`: everything else follows from it. The file
 * reads in a session's order: the tools, the run, what the user sees, then the plumbing.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { loadAll as loadAllYaml, YAMLException } from "npm:js-yaml@^5.5.0";

/** The client's version, sent as `clientInfo.version` and printed by `--version`. */
export const VERSION = "0.3.0";

// ─── 1. What mm may ask, and the tools the client lends ──────────────────────
/** A tool's answer, MCP's `tools/call` result (acp-client-tools.md, "Réponse"). */
export type ToolResult = { content: { type: "text"; text: string }[]; isError?: boolean };
/** A tool: its description (acp-client-tools.md, "Description d'un outil") and its `call`. */
export interface Tool {
  /** Unique in the list; the model sees `client_<name>`. */
  name: string;
  /** What the model reads to decide when to call the tool. */
  description: string;
  /** The ACP extension method mm sends for a call: it starts with `_`. */
  method: string;
  /** The JSON Schema of the arguments, an object: checked before `call` runs. */
  inputSchema: { type: "object"; [key: string]: unknown };
  /**
   * Answers a call, now or in a promise (the client goes on meanwhile); `signal` aborts when mm
   * cancels the call. A throw or a rejection is answered as an error result.
   */
  call(args: Record<string, unknown>, signal: AbortSignal): ToolResult | Promise<ToolResult>;
}

/** Every tool the client lends to mm. Add yours here. */
export const TOOLS: readonly Tool[] = [
  {
    name: "host_info",
    description: "Facts about the machine the user's client runs on: its operating system, CPU, " +
      "memory or uptime. Call it once per topic.",
    method: "_demo.minime/host_info",
    inputSchema: {
      type: "object",
      properties: {
        topic: {
          type: "string",
          enum: ["os", "cpu", "memory", "uptime"],
          description: "Which fact to report.",
        },
      },
      required: ["topic"],
    },
    call: ({ topic }) => hostInfo(topic as Topic), // the schema has checked it is one
  },
];
/** The tools as mm reads them, in `initialize` or in the answer to the list request. */
export const TOOL_DESCRIPTIONS: readonly Omit<Tool, "call">[] = TOOLS.map(({ call: _, ...d }) => d);
/** The tools' names, for the texts that speak of them: `host_info, clock`. */
const TOOL_NAMES = TOOLS.map((tool) => tool.name).join(", ");
/** A text result; with `isError`, the model reads it as `[client tool error: <text>]`. */
export function toolText(text: string, isError = false): ToolResult {
  if (isError) return { content: [{ type: "text", text }], isError };
  return { content: [{ type: "text", text }] };
}

/** Answers a request from mm: its result, a promise of it, or a thrown {@linkcode RpcError}. */
function answerRequest(run: Run, method: string, params: unknown, signal: AbortSignal): unknown {
  const tool = TOOLS.find((lent) => lent.method === method);
  if (tool) return callTool(run, tool, params, signal);
  if (method === "session/request_permission") return answerPermission(run, params, signal);
  if (method === "_org.mini-me/tools/list") {
    run.out.log(`list requested for session ${field(params, "sessionId") ?? "?"}`);
    return { tools: TOOL_DESCRIPTIONS };
  }
  throw new RpcError(-32601, "Method not found"); // fs/*, terminal/*, unknown extensions: not lent
}
/** One call: its `[client]` line, its arguments checked, the tool; a throw is an error result. */
function callTool(run: Run, tool: Tool, params: unknown, signal: AbortSignal) {
  const { args, sessionId } = readToolCall(params);
  run.out.log(`${tool.name} ${JSON.stringify(args)} (session ${sessionId})`);
  // Only `$/cancel_request` aborts the signal (mm's timeout, a cancelled turn): say it reached it.
  signal.addEventListener("abort", () => run.out.log(`${tool.name} cancelled by mm`));
  const given = isObject(args) ? args : {};
  const failed = (text: string) => {
    if (!signal.aborted) run.out.note(`[client] ${text}`); // cancelled: mm has its -32800 already
    return toolText(text, true);
  };
  const mismatch = checkArguments(tool, given);
  if (mismatch) return failed(mismatch);
  const threw = (error: unknown) => failed(`${tool.name} failed: ${errorText(error)}`);
  try {
    const result = tool.call(given, signal);
    return result instanceof Promise ? result.catch(threw) : result;
  } catch (error) {
    return threw(error);
  }
}
/** A call's arguments (`params` but `_meta`) and its session (`_meta`'s, or `?`): "Requête". */
export function readToolCall(params: unknown): { args: unknown; sessionId: string } {
  if (!isObject(params)) return { args: params ?? {}, sessionId: "?" };
  const { _meta, ...args } = params;
  const sessionId = field(_meta, "org.mini-me/sessionId");
  return { args, sessionId: typeof sessionId === "string" ? sessionId : "?" };
}

/** Whether a permission's title is exactly `client: <name>` of a lent tool ("Avant la requête"). */
export function isOfferedToolTitle(title: unknown): boolean {
  return TOOLS.some((tool) => title === `client: ${tool.name}`);
}
/** The answer to `session/request_permission`. */
export type Outcome = { outcome: "cancelled" } | { outcome: "selected"; optionId: string };
/**
 * Picks among mm's options: `allow_once`, else `allow_always` to allow; `reject_once`, else
 * `reject_always` to refuse; else `cancelled`. Never an `optionId` mm did not offer.
 */
export function choosePermission(options: unknown, allow: boolean): Outcome {
  const offered = list(options).filter(isObject);
  const kinds = ["reject_once", "reject_always"];
  if (allow) kinds.unshift("allow_once", "allow_always");
  for (const kind of kinds) {
    const option = offered.find((o) => o.kind === kind && typeof o.optionId === "string");
    if (option) return { outcome: "selected", optionId: option.optionId as string };
  }
  return { outcome: "cancelled" };
}
/**
 * Answers a permission: the client's own tools are allowed; at a terminal the person is asked about
 * anything else, one question at a time, in order; elsewhere it is refused. Once `session/cancel`
 * is sent, every answer is cancelled.
 */
function answerPermission(run: Run, params: unknown, signal: AbortSignal) {
  const [toolCall, options] = fields(params, "toolCall", "options");
  const call = seeCall(run, toolCall, run.out.stdout);
  const title = field(toolCall, "title");
  const answer = (outcome: Outcome, how = "") => answered(run, call, params, outcome, how);
  if (run.cancelled) return answer({ outcome: "cancelled" }, TURN_CANCELLED);
  const offered = isOfferedToolTitle(title);
  const keys = run.asks && !offered ? optionKeys(options) : [];
  if (!keys.some(({ key }) => key === "a" || key === "A")) {
    return answer(choosePermission(options, offered)); // no one to ask, or nothing to allow
  }
  const asked = run.questions.then(() => askPerson(run, toolCall, keys, signal));
  run.questions = asked;
  return asked.then((outcome) => {
    let how = outcome ? " (asked)" : "";
    if (!outcome && run.cancelled) how = TURN_CANCELLED; // Ctrl-C at the question
    const reply = answer(outcome ?? { outcome: "cancelled" }, how);
    if (outcome) run.out.waitFor("the model"); // answered: no longer waiting for you
    return reply;
  });
}
/** How the log says a permission was answered `cancelled` because the turn was. */
const TURN_CANCELLED = " (the turn is cancelled)";
/** Logs the answer to a permission, and shows a refusal; returns what mm is sent. */
function answered(run: Run, call: Call, params: unknown, outcome: Outcome, how: string) {
  const [toolCall, options] = fields(params, "toolCall", "options");
  const title = field(toolCall, "title");
  // `cancelled` chooses nothing, not even an option without an id.
  const chosen = (o: unknown) => "optionId" in outcome && field(o, "optionId") === outcome.optionId;
  const allowed = `${field(list(options).find(chosen), "kind")}`.startsWith("allow");
  const said = allowed ? "allowed" : "refused";
  run.out.log(`permission for ${JSON.stringify(title ?? "")}: ${said}${how}`);
  if (!allowed) {
    run.refused = true;
    call.done = true;
    call.refused = true;
    run.out.say(`✖ ${call.title} refused`, RED);
  }
  return { outcome };
}
/** The key of each kind of option: `a` allow once, `A` allow always, `r` and `R` reject. */
const OPTION_KEYS = new Map([
  ["allow_once", "a"],
  ["allow_always", "A"],
  ["reject_once", "r"],
  ["reject_always", "R"],
]);
/** An option of mm's that the person can pick, and its key. */
export type KeyedOption = { key: string; option: Record<string, unknown> };
/** mm's options with a key each, in mm's order: of each kind the first, if it has an id. */
export function optionKeys(options: unknown): KeyedOption[] {
  const keyed: KeyedOption[] = [];
  for (const option of list(options).filter(isObject)) {
    const key = OPTION_KEYS.get(String(option.kind));
    const taken = keyed.some((other) => other.key === key);
    if (key && !taken && typeof option.optionId === "string") keyed.push({ key, option });
  }
  return keyed;
}

// ─── 2. The tool: host_info ──────────────────────────────────────────────────
/** A fact `host_info` reports: the `--allow-sys` names it needs, and how it is read. */
function fact(needs: Deno.SysPermissionDescriptor["kind"][], read: () => string) {
  const allowed = once(() => needs.every((kind) => granted({ name: "sys", kind })));
  return { needs, allowed, read };
}
/** The topics, read with Deno's own APIs where it has them. */
const TOPICS: Record<Topic, ReturnType<typeof fact>> = {
  os: fact(["osRelease", "hostname"], () => OS_TEXT()),
  cpu: fact(["cpus", "loadavg"], () => {
    const count = navigator.hardwareConcurrency;
    const load = Deno.loadavg().map((n) => n.toFixed(2)).join(" ");
    return `${count} × ${CPU_MODEL()} (${Deno.build.arch}), load average ${load}`;
  }),
  memory: fact(["systemMemoryInfo"], () => {
    const { available, total } = Deno.systemMemoryInfo();
    return `${gib(available)} free of ${gib(total)}`;
  }),
  uptime: fact(["osUptime"], () => describeUptime(Deno.osUptime(), new Date())),
};
/** A topic of `host_info`. */
export type Topic = "os" | "cpu" | "memory" | "uptime";
// Read once, as calls may come many times a second and these do not change under a running
// client: the kernel release (`Deno.osRelease()` reads a file), the host name, and the CPU model,
// which Deno has no API for; `node:os`, a Node layer only this topic needs, loads on first use.
const OS_TEXT = once(() => {
  const { os, arch } = Deno.build;
  return `${osName(os)} ${Deno.osRelease()} (${os}/${arch}), host name ${Deno.hostname()}`;
});
const CPU_MODEL = once(() =>
  process.getBuiltinModule("node:os").cpus()[0]?.model.trim() || "unknown CPU"
);
/** Runs `host_info` for a topic its schema has checked; what it cannot say is an error result. */
export function hostInfo(topic: Topic): ToolResult {
  const { needs, allowed, read } = TOPICS[topic];
  const missing = `host_info needs --allow-sys=${needs.join(",")} to report ${topic}`;
  if (!allowed()) return toolText(missing, true); // asked first, so that Deno never prompts
  try {
    return toolText(read());
  } catch (error) {
    return toolText(`host_info could not read ${topic}: ${errorText(error)}`, true);
  }
}
/** The display name of a `Deno.build.os` value: `darwin` is macOS, others are capitalised. */
export function osName(os: string): string {
  return os === "darwin" ? "macOS" : os.charAt(0).toUpperCase() + os.slice(1);
}
/** A size in bytes as GiB with one decimal: `15.8 GiB`. */
export function gib(bytes: number): string {
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}
/** The `uptime` text for seconds up, as of `now`: `up 3 days, 4 hours, 12 minutes (since …)`. */
export function describeUptime(seconds: number, now: Date): string {
  const up = Math.floor(seconds / 60); // minutes
  const unit = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const parts = [unit(up % 60, "minute")];
  if (up >= 60) parts.unshift(unit(Math.floor(up / 60) % 24, "hour"));
  if (up >= 1440) parts.unshift(unit(Math.floor(up / 1440), "day"));
  const since = new Date(now.getTime() - seconds * 1000).toISOString();
  return `up ${parts.join(", ")} (since ${since.slice(0, 10)} ${since.slice(11, 16)} UTC)`;
}

// ─── 3. The run as it happens ────────────────────────────────────────────────
/** An error that ends the run: `error: <message>` on stderr (none if empty), and an exit code. */
export class ClientError extends Error {
  /** `usage`: the usage follows the message. */
  constructor(message: string, readonly exitCode = 1, readonly usage = false) {
    super(message);
  }
}

/** Runs the client; every failure is one `error: …` line, and no mm process outlives the run. */
export async function main(argv: readonly string[]): Promise<number> {
  const out = new Output();
  let run: Run | undefined;
  let code = 1;
  let graceful = false; // the conversation ended: mm may exit in its own time
  try {
    const options = parseCommandLine(argv);
    if (options.help || options.version) {
      out.print(out.stdout, `${options.help ? USAGE : `host-info-client ${VERSION}`}\n`);
      return 0;
    }
    const broken = checkTools(TOOLS); // after --help: a copier with a slip can still read it
    if (broken) throw new ClientError(broken, 2);
    out.quiet = !!options.quiet;
    out.json = !!options.json;
    const agent = options.agent ?? (options.request ? "agent-request.yaml" : "agent.yaml");
    const { path, config } = readAgentFile(agent, options.agent !== undefined);
    const warnings = agentFileWarnings(agent, config, !!options.request);
    for (const warning of warnings) out.note(`[client] ${warning}`);
    if (options.question === "-") options.question = await questionFromStdin(out);
    run = new Run(options, out, path);
    code = await converse(run);
    graceful = true;
  } catch (error) {
    code = error instanceof ClientError ? error.exitCode : 1;
    if (out.stderr.open) out.print(out.stderr, "\n"); // Ctrl-C at the prompt: end its line
    const message = errorText(error);
    if (message) out.note(`error: ${message}`);
    if (error instanceof ClientError && error.usage) out.note(USAGE);
    // A script is told why, even of a usage error: --json among the options, before any `--`.
    if (asksForJson(argv)) out.json = true;
    out.record({ error: { message: message || "interrupted", exitCode: code } });
  }
  out.waitFor(undefined);
  // After a turn that ended, cancelled or not, or at the -i prompt: how to come back to it.
  const resumable = code === 0 || ([124, 130, 143].includes(code) && run?.stage === "question");
  if (resumable && run?.sessionId) out.log(`continue with: --resume ${run.sessionId}`);
  if (run) await endMm(run, graceful);
  const unlogged = run?.connection.unlogged();
  if (unlogged) out.note(`[client] ${unlogged} more bad frames from mm were not logged`);
  out.flush();
  return code;
}

/** One run: mm, the connection, where the exchange stands; `failed` rejects to end it early. */
class Run {
  /** What mm has yet to do, if it exits: answer `asking`, end the turn, nothing (`-i` prompt). */
  stage: "opening" | "turn" | "question" = "opening";
  asking?: string;
  sessionId?: string;
  /** A cancelled turn: its exit code, the error the run ends with (`--turn-timeout`), its timer. */
  cancelled?: { code: number; why?: string; stopTimer: () => void };
  lastSignal?: number;
  replaying = false; // a loaded session's past is shown, on stderr, dimmed
  calls = new Map<string, Call>(); // the tool calls of this turn (or of a replay), by id
  answer = ""; // this turn's answer text
  refused = false; // a permission was refused in this turn
  /** Whether the person at the terminal is asked about a permission (else the policy answers). */
  readonly asks: boolean;
  questions: Promise<unknown> = Promise.resolve(); // the permission questions, asked in turn
  askingYou = false; // a permission question is open
  cancelling = Promise.withResolvers<void>(); // settles when this turn is cancelled
  readonly keyboard = new Keyboard();
  closes = false; // mm advertises session/close
  textBreak = false; // the next text starts a line: it follows a tool call or a block
  readonly child: Deno.ChildProcess;
  readonly connection: Connection;
  readonly log: ReturnType<typeof forwardLog>;
  fail!: (error: ClientError) => void;
  readonly failed = new Promise<never>((_, reject) => this.fail = reject);
  constructor(readonly options: Options, readonly out: Output, agentFile: string) {
    const fromEnv = readEnv("MM_BIN") || undefined; // set but empty is unset
    let namedBy = fromEnv ? "MM_BIN" : undefined;
    if (options.mm) namedBy = "--mm";
    this.child = startMm(options.mm ?? fromEnv ?? "mm", agentFile, namedBy);
    const terminal = Deno.stdin.isTerminal() && out.stderr.terminal;
    this.asks = terminal && !options.json && !options["no-ask"];
    this.failed.catch(() => {}); // read where it matters, in ask()
    this.connection = new Connection(this);
    this.log = forwardLog(this.child, out);
    out.onFailure = (e) =>
      this.fail(new ClientError(`cannot write the conversation: ${errorText(e)}`));
    this.child.status.then((status) => this.#exited(status));
    Deno.addSignalListener("SIGINT", () => interrupt(this, "SIGINT"));
    const windows = Deno.build.os === "windows"; // no SIGTERM there: Deno refuses the listener
    if (!windows) Deno.addSignalListener("SIGTERM", () => interrupt(this, "SIGTERM"));
  }
  /** mm exited: once its last frames and log lines are read, the run ends, naming what mm left. */
  async #exited({ code, signal }: Deno.CommandStatus): Promise<void> {
    await Promise.race([Promise.all([this.connection.reading, this.log.ended]), delay(1000)]);
    this.log.release(); // its last words before the client's line about its end
    const how = signal ? `signal ${signal}` : `code ${code}`;
    let before = "the next question";
    if (this.stage === "opening") before = `answering ${this.asking}`;
    if (this.stage === "turn") before = "the turn ended";
    this.fail(new ClientError(`mm exited with ${how} before ${before}`));
  }
}

/** Starts mm in its own process group: a Ctrl-C typed in the terminal reaches the client alone. */
function startMm(mm: string, agentFile: string, namedBy?: string): Deno.ChildProcess {
  const pipes = { stdin: "piped", stdout: "piped", stderr: "piped" } as const;
  // `<mm> -acp -agent <file>`: the line to change if your mm starts another way.
  const options = { args: ["-acp", "-agent", agentFile], detached: true, ...pipes };
  const refused = `cannot start mm (${mm}): this run may not start it (add --allow-run)`;
  if (!granted({ name: "run", command: mm })) throw new ClientError(refused, 127);
  try {
    return new Deno.Command(mm, options).spawn();
  } catch (error) {
    let reason = error instanceof Deno.errors.NotFound ? "not found" : errorText(error);
    if (error instanceof Deno.errors.PermissionDenied) reason = "not executable";
    // A name without a slash is looked for on PATH, as a shell does, not in this folder.
    const here = !/[/\\]/.test(mm) && granted({ name: "read", path: mm });
    if (reason === "not found" && here && attempt(() => Deno.statSync(mm).isFile, false)) {
      reason = `not found on PATH (for the file in this folder: ./${mm})`;
    }
    const unreadable = !namedBy && !granted({ name: "env", variable: "MM_BIN" });
    if (unreadable) reason += "; MM_BIN could not be read (add --allow-env=MM_BIN)";
    let next = "Install mini-me or set MM_BIN / --mm";
    if (namedBy) next = `${namedBy} names it: check that path`;
    throw new ClientError(`cannot start mm (${mm}): ${reason}. ${next}.`, 127);
  }
}
/** mm's stderr, passed on byte for byte, whole lines as they come; `release()`: an unended one. */
function forwardLog(child: Deno.ChildProcess, out: Output) {
  const held: Uint8Array[] = []; // the start of a line mm has not ended yet
  let size = 0;
  const release = (...more: Uint8Array[]) => {
    for (const part of [...held.splice(0), ...more]) out.put(out.stderr, part);
    size = 0;
  };
  const read = async () => {
    try {
      for await (const chunk of child.stderr) {
        const end = chunk.lastIndexOf(10) + 1; // the lines this chunk ends go out now
        if (end > 0) release(chunk.subarray(0, end));
        if (end < chunk.length) held.push(chunk.subarray(end));
        size += chunk.length - end;
        if (size > 64 * 1024) release(); // a line over 64 KiB goes in pieces: a flood is bounded
      }
    } catch { /* mm's stderr is gone: what was read is still shown */ }
    release();
  };
  return { ended: read(), release }; // `ended`: once mm's stderr is closed and all shown
}

/** The whole conversation: `initialize`, a session, then one turn per question. */
async function converse(run: Run): Promise<number> {
  const { options, out } = run;
  out.waitFor("mm");
  const init = await ask(run, "initialize", initializeParams(!!options.request), options.seconds);
  const version = JSON.stringify(field(init, "protocolVersion"));
  const mismatch = `mm speaks ACP protocol version ${version}; this client speaks 1`;
  if (version !== "1") throw new ClientError(mismatch);
  const capabilities = field(init, "agentCapabilities");
  run.closes = field(field(capabilities, "sessionCapabilities"), "close") != null;
  if (options.sessions) return showSessions(run, await listSessions(run, capabilities));
  if (options.continue) options.resume = latestSession(await listSessions(run, capabilities));
  await openSession(run, capabilities);
  out.waitFor(undefined); // the session is open: until a question, nothing to wait for
  if (!options.interactive) return await turn(run, options.question ?? DEFAULT_QUESTION);
  const questions = stdinLines(run.keyboard.chunks()); // shared with the permission questions
  for (let question = options.question;; question = undefined) {
    question ??= await nextQuestion(run, questions);
    if (question === undefined) return 0; // end of input
    const code = await turn(run, question);
    if (run.cancelled?.code === 143) return code; // SIGTERM ends the client, Ctrl-C only the turn
    run.cancelled = undefined;
  }
}
/** The `initialize` params: the tool list (`meta`), or `true` (`request`; "Découverte"). */
export function initializeParams(
  request: boolean,
): { clientCapabilities: Record<string, unknown>; [key: string]: unknown } {
  const clientInfo = { name: "host-info-client", version: VERSION };
  // Capabilities are a contract: no file system and no terminal, which this client lacks.
  const fs = { readTextFile: false, writeTextFile: false };
  const _meta = { "org.mini-me/tools": request ? true : TOOL_DESCRIPTIONS };
  return { protocolVersion: 1, clientInfo, clientCapabilities: { fs, terminal: false, _meta } };
}

/** `--sessions`: mm's sessions, one per line: id, last update, title or folder. */
function showSessions(run: Run, sessions: unknown[]): number {
  run.out.record({ sessions });
  if (sessions.length === 0) run.out.log("mm has no sessions");
  for (const session of sessions) {
    const [id, at, title, cwd] = fields(session, "sessionId", "updatedAt", "title", "cwd");
    const line = `${id}  ${at ?? "-"}  ${title ?? cwd ?? "-"}`;
    run.out.say(run.out.stdout.terminal ? fit(line) : line); // a long title is cut to the width
  }
  return 0;
}
/** `--continue`: the most recent of the sessions of the current folder. */
function latestSession(sessions: unknown[]): string {
  const updated = (s: unknown) => String(field(s, "updatedAt") ?? "");
  const here = sessions.filter((s) => field(s, "cwd") === Deno.cwd());
  const [latest] = here.sort((a, b) => updated(b).localeCompare(updated(a)));
  if (!latest) throw new ClientError(`mm has no session in ${Deno.cwd()} to continue`);
  return String(field(latest, "sessionId"));
}
/** mm's sessions (`session/list`, page after page, 100 at most); this folder's for `--continue`. */
async function listSessions(run: Run, capabilities: unknown): Promise<unknown[]> {
  if (field(field(capabilities, "sessionCapabilities"), "list") == null) {
    throw new ClientError("mm cannot list its sessions (it does not advertise session/list)");
  }
  const sessions: unknown[] = [];
  const cwd = run.options.continue ? Deno.cwd() : undefined;
  let cursor: unknown;
  for (let page = 0; page < 100 && (page === 0 || typeof cursor === "string"); page++) {
    const answer = await ask(run, "session/list", { cwd, cursor }, run.options.seconds);
    sessions.push(...list(field(answer, "sessions")));
    cursor = field(answer, "nextCursor");
  }
  return sessions;
}
/** Opens the session: `session/new`, or for `--resume` `session/resume`, else `session/load`. */
async function openSession(run: Run, capabilities: unknown): Promise<void> {
  const { options } = run;
  const params = { sessionId: options.resume, cwd: Deno.cwd(), mcpServers: [] };
  const opened = `discovery: ${options.request ? "request" : "meta"}, session`;
  if (options.resume === undefined) {
    const session = await ask(run, "session/new", params, options.seconds);
    run.sessionId = String(field(session, "sessionId"));
    return run.out.log(`${opened} ${run.sessionId}`);
  }
  const resumes = field(field(capabilities, "sessionCapabilities"), "resume") != null;
  const neither = "mm can neither resume nor load sessions; --resume needs one of them";
  if (!resumes && field(capabilities, "loadSession") !== true) throw new ClientError(neither);
  run.sessionId = options.resume;
  run.replaying = !resumes;
  await ask(run, resumes ? "session/resume" : "session/load", params, options.seconds);
  run.replaying = false;
  run.out.log(`${opened} ${run.sessionId} (${resumes ? "resumed" : "loaded"})`);
}

/** One prompt turn: the question, mm's updates as they come, and its stop reason. */
async function turn(run: Run, question: string): Promise<number> {
  const { out } = run;
  out.say(`❓ ${question}`);
  run.stage = "turn";
  run.refused = false;
  run.cancelling = Promise.withResolvers();
  run.answer = "";
  run.calls = new Map(); // a call of an earlier turn is not this turn's to wait for
  out.waitFor("the model");
  const params = { sessionId: run.sessionId, prompt: [{ type: "text", text: question }] };
  const stopWatching = watchSilence(run);
  const answer = await ask(run, "session/prompt", params).finally(stopWatching);
  run.cancelled?.stopTimer();
  run.stage = "question";
  out.waitFor(undefined);
  const stopReason = String(field(answer, "stopReason"));
  if (!out.quiet) out.say(`[${stopReason}]`);
  else if (out.stdout.open) out.print(out.stdout, "\n");
  out.record({ result: { stopReason, sessionId: run.sessionId, text: run.answer } });
  if (run.cancelled?.why) throw new ClientError(run.cancelled.why, run.cancelled.code);
  if (run.cancelled) return run.cancelled.code;
  if (stopReason === "refusal") return 1;
  if (stopReason !== "cancelled") return 0;
  const why = run.refused ? " after a refused permission" : "";
  out.note(`[client] mm ended the turn as cancelled; the client did not ask${why}`);
  return 130;
}
/** Sends a request and waits for its answer, unless the run fails or the timeout passes first. */
async function ask(run: Run, method: string, params: object, seconds = Infinity): Promise<unknown> {
  if (run.stage === "opening") run.asking = method;
  const timer = Promise.withResolvers<never>();
  const late = new ClientError(`mm did not answer ${method} within ${seconds} s`);
  const stopTimer = after(seconds * 1000, () => timer.reject(late));
  try {
    return await Promise.race([run.connection.request(method, params), run.failed, timer.promise]);
  } catch (error) {
    if (error instanceof RpcError) throw new ClientError(`mm refused ${method}: ${error.message}`);
    throw error;
  } finally {
    stopTimer();
  }
}

/** Why the terminal cannot be read any more, most often, and what to do. */
const LOST_TERMINAL = "most likely the shell took it back when npm's Node wrapper around deno " +
  'ended at Ctrl-C; put the real deno binary first on PATH (the README\'s "Two commands" says how)';
/** The lines of stdin, for `-i` and `-`; a line over the limit, or a failed read, is an error. */
async function* stdinLines(chunks: AsyncIterable<Uint8Array> = Deno.stdin.readable) {
  const reader = new LineReader();
  try {
    for await (const chunk of chunks) yield* reader.push(chunk);
  } catch (error) {
    if (error instanceof LineTooLongError) throw new ClientError(`stdin has ${error.message}`, 2);
    const reason = errorText(error).replace(/ \(os error \d+\)$/, ""); // the system's words
    if (!Deno.stdin.isTerminal()) throw new ClientError(`cannot read stdin: ${reason}`);
    // The program the shell started, a wrapper around deno (npm's bin.cjs, a Node process), ended
    // at Ctrl-C and the shell took the terminal back; the client, in the background, reads EIO.
    throw new ClientError(`cannot read the terminal any more (stdin: ${reason}): ${LOST_TERMINAL}`);
  }
  const last = reader.flush();
  if (last !== undefined) yield last;
}
/**
 * stdin, read by one reader for `-i`'s questions and a permission's keys: a chunk read for a
 * permission question that ended meanwhile (the turn was cancelled) goes to the next reader.
 */
class Keyboard {
  #reader?: ReadableStreamDefaultReader<Uint8Array>;
  #read?: Promise<ReadableStreamReadResult<Uint8Array>>; // asked for, and not taken yet
  /** The next chunk of stdin, or `undefined` when `stop` settles first (the chunk is kept). */
  async next(stop: Promise<unknown> = new Promise(() => {})) {
    this.#reader ??= Deno.stdin.readable.getReader();
    this.#read ??= this.#reader.read();
    const read = await Promise.race([this.#read, stop.then(() => undefined)]);
    if (read) this.#read = undefined;
    return read;
  }
  /** Every chunk, to the end of stdin. */
  async *chunks(): AsyncGenerator<Uint8Array> {
    for (let read = await this.next(); read && !read.done; read = await this.next()) {
      yield read.value;
    }
  }
}
/** `-`: the question is all of stdin (at a terminal, after a hint); empty: the default one. */
async function questionFromStdin(out: Output): Promise<string> {
  const hint = "[client] reading the question from stdin; end it with Ctrl-D";
  if (Deno.stdin.isTerminal()) out.note(hint);
  return (await Array.fromAsync(stdinLines())).join("\n").trim() || DEFAULT_QUESTION;
}
/**
 * Ends the run if the client is no longer in the terminal's foreground while it waits for the
 * person (until `until` settles): the program the shell started around deno (npm's Node wrapper)
 * ended at Ctrl-C, and the shell took the terminal back. A read that began before cannot tell: it
 * would wait on, racing the shell for what the person types. `ps` says it (`+` in its state).
 */
function watchForeground(run: Run, until: Promise<unknown>): void {
  if (!granted({ name: "run", command: "ps" })) return;
  let waiting = true;
  const stopWaiting = () => {
    waiting = false;
  };
  until.then(stopWaiting, stopWaiting);
  const ps = new Deno.Command("ps", { args: ["-o", "stat=", "-p", `${Deno.pid}`], stderr: "null" });
  const lost = "the shell has it back";
  const check = async () => {
    if (!waiting) return;
    const output = await attempt(() => ps.output(), undefined)?.catch(() => undefined);
    if (!output?.success || !waiting) return; // no ps here: nothing to go by
    if (new TextDecoder().decode(output.stdout).includes("+")) return after(FOREGROUND_MS, check);
    run.fail(new ClientError(`cannot read the terminal any more (${lost}): ${LOST_TERMINAL}`));
  };
  after(FOREGROUND_MS, check);
}
/** How often the client makes sure it has the terminal while it waits for the person. */
const FOREGROUND_MS = 300;
/** The next question of `--interactive`, blank lines skipped, after a prompt on a terminal. */
async function nextQuestion(run: Run, lines: AsyncGenerator<string>): Promise<string | undefined> {
  const atTerminal = Deno.stdin.isTerminal();
  for (;;) {
    if (atTerminal) run.out.print(run.out.stderr, "> ");
    const answered = Promise.withResolvers<void>();
    if (atTerminal) watchForeground(run, answered.promise);
    const next = await Promise.race([lines.next(), run.failed]).finally(answered.resolve);
    run.out.stderr.open = false; // the person's Enter ended the prompt's line
    if (next.done && atTerminal) run.out.print(run.out.stderr, "\n"); // Ctrl-D did not
    if (next.done || next.value.trim()) return next.value?.trim();
  }
}

// ─── 4. What the user sees ───────────────────────────────────────────────────
/** A notification from mm: a `session/update` is shown; the others are not for the user. */
function notified(run: Run, method: string, params: unknown): void {
  if (method !== "session/update") return;
  run.out.record(params);
  showUpdate(run, field(params, "update"));
  // A replay, a cancel or a permission question: waited for already.
  if (run.stage !== "turn" || run.cancelled || run.askingYou) return;
  const running = [...run.calls.values()].findLast((call) => !call.done);
  run.out.waitFor(running?.title ?? "the model");
}
/** Shows one `session/update`: a `case` per kind the user sees; a replay goes to stderr, dimmed. */
function showUpdate(run: Run, update: unknown): void {
  const { out, options } = run;
  const [kind, content] = fields(update, "sessionUpdate", "content");
  const to = run.replaying ? out.stderr : out.stdout;
  const style = run.replaying ? DIM : undefined;
  switch (kind) {
    case "agent_message_chunk": { // the answer as it streams; a replayed one is not this turn's
      const text = blockText(content);
      const isText = field(content, "type") === "text";
      if (text === "" || (out.quiet && run.replaying)) return; // "": a chunk of only _meta
      if (out.quiet && !isText) return; // stdout is the answer text alone, as --json's text
      if (isText) run.answer += text; // a replay's comes before the turn, which starts afresh
      if (run.textBreak && to.open && !out.quiet) out.print(to, "\n"); // on a line of its own
      run.textBreak = !isText;
      if (isText) return out.print(to, text, style);
      return out.line(to, text, style);
    }
    case "agent_thought_chunk":
      if (!options.verbose) return;
      if (field(content, "type") === "text") return out.print(out.stderr, blockText(content), DIM);
      return out.note(blockText(content), DIM);
    case "user_message_chunk":
      if (run.replaying && !out.quiet) out.note(`❓ ${blockText(content)}`, DIM);
      return;
    case "tool_call":
    case "tool_call_update":
      return showToolCall(run, update, to, style);
    default: // a kind this client does not know shows nothing
      if (!options.verbose || !isObject(update) || !Object.hasOwn(DETAILS, String(kind))) return;
      for (const line of DETAILS[String(kind)](update)) out.note(line, DIM);
  }
}
/** What `--verbose` shows of the updates that are not the conversation: plans, usage, settings. */
const DETAILS: Record<string, (update: Record<string, unknown>) => string[]> = {
  plan: ({ entries }) => [
    "plan:",
    ...list(entries).map((e) => `  [${field(e, "status")}] ${field(e, "content")}`),
  ],
  usage_update: ({ used, size, cost }) => {
    const paid = isObject(cost) ? `, cost ${cost.amount} ${cost.currency}` : "";
    return [`usage: ${used} of ${size} tokens${paid}`];
  },
  available_commands_update: ({ availableCommands }) => [
    `commands: ${list(availableCommands).map((c) => `/${field(c, "name")}`).join(", ")}`,
  ],
  current_mode_update: ({ currentModeId }) => [`mode: ${currentModeId}`],
  session_info_update: ({ title }) => typeof title === "string" ? [`title: ${title}`] : [],
  config_option_update: ({ configOptions }) =>
    list(configOptions).map((o) => `config: ${field(o, "id")} = ${field(o, "currentValue")}`),
};

/** A tool call as shown so far; `refused`: its permission was, and that is its end as shown. */
type Call = { title: string; lines: string[]; rawOutput?: unknown; done?: boolean; refused?: true };
/** A tool call or its update: its title, its state, the content lines not shown yet. */
function showToolCall(run: Run, update: unknown, to: Stream, style?: number): void {
  const call = seeCall(run, update, to, style);
  const [status, content, raw] = fields(update, "status", "content", "rawOutput");
  if (status === "completed" || status === "failed") call.done = true;
  if (raw !== undefined) call.rawOutput = raw;
  if (run.out.quiet) return;
  const failed = status === "failed" && !call.refused; // refused: said so already
  if (failed) run.out.line(to, `✖ ${call.title} failed`, style ?? RED);
  let lines = Array.isArray(content) ? content.flatMap(contentLines) : call.lines;
  if (call.done && lines.length === 0) lines = rawOutputLines(call.rawOutput);
  for (const line of unshown(call.lines, lines)) run.out.line(to, `│ ${line}`, style);
  call.lines = lines;
}
/** A finished call's `rawOutput` (if any) as lines, 20 at most: a string as text, else as JSON. */
function rawOutputLines(raw: unknown): string[] {
  if (raw === undefined) return [];
  const all = textLines(typeof raw === "string" ? raw : JSON.stringify(raw));
  return all.length <= 20 ? all : [...all.slice(0, 20), `… (${all.length - 20} more lines)`];
}
/**
 * Of a call's content, the lines not shown yet. ACP: an update's `content` replaces the call's: one
 * that extends what was shown adds its new part (a last line that grew, again whole), else all.
 */
function unshown(shown: string[], lines: string[]): string[] {
  const last = shown.length - 1;
  const grew = (line: string, i: number) => i === last && lines[i]?.startsWith(line);
  if (!shown.every((line, i) => lines[i] === line || grew(line, i))) return lines; // a replacement
  return lines.slice(lines[last] === shown[last] ? last + 1 : last);
}
/** The call an update or a permission is about: shown when first seen, and when renamed. */
function seeCall(run: Run, toolCall: unknown, to: Stream, style?: number): Call {
  const id = String(field(toolCall, "toolCallId") ?? "");
  const title = field(toolCall, "title");
  const known = run.calls.get(id);
  const call: Call = known ?? { title: typeof title === "string" ? title : id, lines: [] };
  let shown = known ? undefined : `🛠️ ${call.title}`;
  if (typeof title === "string" && title !== call.title) {
    shown = `🛠️ ${call.title} → ${title}`;
    call.title = title;
  }
  run.calls.set(id, call);
  run.textBreak = true;
  if (shown && !run.out.quiet) run.out.line(to, shown, style);
  return call;
}
/** An item of a tool call's content as lines: text, a diff's size, a terminal, another block. */
function contentLines(item: unknown): string[] {
  const type = field(item, "type");
  if (type === "diff") return [`diff ${field(item, "path")} (${diffSize(item)} lines)`];
  if (type === "terminal") return [`[terminal ${field(item, "terminalId")}]`];
  return textLines(blockText(type === "content" ? field(item, "content") : item));
}
/** A diff's size, `+2 −1`: the lines of `newText` not matched by one of `oldText` are added. */
function diffSize(diff: unknown): string {
  const [before, after] = fields(diff, "oldText", "newText").map((t) => textLines(`${t ?? ""}`));
  const surplus = new Map<string, number>(); // of each line, how many more `before` has
  for (const line of before) surplus.set(line, (surplus.get(line) ?? 0) + 1);
  for (const line of after) surplus.set(line, (surplus.get(line) ?? 0) - 1);
  const kept = before.length - [...surplus.values()].reduce((sum, n) => sum + Math.max(n, 0), 0);
  return `+${after.length - kept} −${before.length - kept}`;
}
/** A text's lines at `\n` or `\r\n`; a last line end adds no line, and "" has none. */
function textLines(text: string): string[] {
  return text === "" ? [] : text.replace(/\r?\n$/, "").split(/\r?\n/);
}
/** A content block as text: its text, or `[<type>]` for any other kind. */
function blockText(block: unknown): string {
  const [type, text] = fields(block, "type", "text");
  if (type === "text" && typeof text === "string") return text;
  return `[${typeof type === "string" ? type : "unknown"}]`;
}

/**
 * Puts a permission to the person at the terminal: what the call would do, then mm's options, each
 * with its key. One key answers; Enter is the safe choice. `undefined`: the turn was cancelled, or
 * mm withdrew the request, before an answer.
 */
async function askPerson(run: Run, toolCall: unknown, keys: KeyedOption[], signal: AbortSignal) {
  if (run.cancelled || signal.aborted) return undefined;
  const { out } = run;
  const withdrawn = new Promise<void>((done) => signal.addEventListener("abort", () => done()));
  const stop = Promise.race([run.cancelling.promise, withdrawn, run.failed.catch(() => {})]);
  watchForeground(run, stop);
  const safe = keys.find(({ key }) => key === "r") ?? keys.find(({ key }) => key === "R");
  const named = (keyed?: KeyedOption) => String(keyed?.option.name ?? keyed?.option.kind);
  const choices = keys.map((keyed) => `[${keyed.key}] ${named(keyed)}`).join("  ");
  for (const line of whatItWouldDo(toolCall)) out.note(`   ${line}`); // whole: nothing hidden
  out.note(`   ${choices}  (Enter: ${safe ? named(safe) : "cancel"})`);
  run.askingYou = true;
  out.waitFor("you");
  try {
    const key = await readKey(run, keys.map((keyed) => keyed.key), stop);
    if (key === undefined) return undefined;
    const picked = keys.find((keyed) => keyed.key === key) ?? safe; // Enter: the safe one
    if (!picked) return { outcome: "cancelled" } as const;
    return { outcome: "selected", optionId: String(picked.option.optionId) } as const;
  } finally {
    run.askingYou = false;
  }
}
/** What a call asked about would do: its kind, its command or input, its diffs, its places. */
function whatItWouldDo(toolCall: unknown): string[] {
  const [kind, input] = fields(toolCall, "kind", "rawInput");
  const lines = [`kind: ${typeof kind === "string" ? kind : "other"}`];
  const command = field(input, "command");
  if (typeof command === "string") lines.push(`command: ${command}`);
  else if (isObject(input) && Object.keys(input).length > 0) {
    lines.push(`input: ${JSON.stringify(input)}`);
  }
  const diffs = list(field(toolCall, "content")).filter((item) => field(item, "type") === "diff");
  lines.push(...diffs.flatMap(contentLines));
  for (const place of list(field(toolCall, "locations"))) {
    const line = field(place, "line");
    lines.push(`location: ${field(place, "path")}${typeof line === "number" ? `:${line}` : ""}`);
  }
  return lines;
}
/** A key this soon after the question showed was typed before it: not an answer. */
const TYPED_AHEAD_MS = 250;
/** One of `keys` or Enter (`\r`), read in raw mode; `undefined` when `stop` comes first. */
async function readKey(run: Run, keys: string[], stop: Promise<unknown>) {
  const shown = performance.now();
  // cbreak: Ctrl-C is still SIGINT, which cancels the turn. Windows has no cbreak: Ctrl-C is a key.
  const windows = Deno.build.os === "windows";
  Deno.stdin.setRaw(true, { cbreak: !windows });
  try {
    for (;;) {
      const read = await run.keyboard.next(stop);
      if (read === undefined) return undefined;
      if (read.done) return "\r"; // the end of input: the safe choice
      const key = new TextDecoder().decode(read.value);
      if (key === "\x03") interrupt(run, "SIGINT");
      const typedAhead = performance.now() - shown < TYPED_AHEAD_MS;
      if (!typedAhead && (key === "\r" || key === "\n" || keys.includes(key))) return key;
    }
  } finally {
    Deno.stdin.setRaw(false);
  }
}

// ─── 5. Interrupts and the end ───────────────────────────────────────────────
/** Signals closer than this to the first are the same keypress (`deno task` forwards it). */
const SAME_KEYPRESS_MS = 300;
/** How long mm gets to end a turn after `session/cancel`, and to exit once its stdin is closed. */
const CANCEL_GRACE_MS = 5000;
const EXIT_GRACE_MS = 2000;
/**
 * Ctrl-C or SIGTERM. During a turn, the first cancels it the ACP way, `session/cancel`; a second
 * kills mm. Before the session exists, or at the `-i` prompt, the client ends.
 */
function interrupt(run: Run, signal: "SIGINT" | "SIGTERM"): void {
  const now = performance.now();
  if (now - (run.lastSignal ?? -Infinity) < SAME_KEYPRESS_MS) return; // one keypress, twice
  run.lastSignal = now;
  const code = signal === "SIGINT" ? 130 : 143;
  if (run.stage !== "turn") return killMm(run, code);
  if (!run.cancelled) return cancelTurn(run, code);
  killMm(run, run.cancelled.code, `second ${signal === "SIGINT" ? "Ctrl-C" : signal}: killing mm`);
}
/** Cancels the turn: `session/cancel`, and mm is killed if it does not end the turn in time. */
function cancelTurn(run: Run, code: number, why?: string): void {
  run.out.log("cancelling…");
  run.cancelling.resolve(); // an open permission question is answered cancelled
  run.connection.notify("session/cancel", { sessionId: run.sessionId });
  // After Ctrl-C a one-shot run draws no progress line: the shell may have the terminal already
  // (a wrapper around deno ended at the keypress), and erasing the line would erase its prompt.
  const oneShotCtrlC = code === 130 && !run.options.interactive;
  run.out.waitFor(oneShotCtrlC ? undefined : "mm to end the turn");
  const late = () => killMm(run, code, "mm did not answer the cancellation in time; killing it");
  run.cancelled = { code, why, stopTimer: after(CANCEL_GRACE_MS, late) };
}
/** Kills mm now, group and all (first logging `saying`, if any), and ends the run with `code`. */
function killMm(run: Run, code: number, saying?: string): void {
  if (saying) run.out.log(saying);
  killGroup(run.child);
  run.fail(new ClientError(run.cancelled?.why ?? "", code));
}
/**
 * `--turn-timeout`: when mm has sent nothing for the turn that long (mm waiting for the client's
 * answer is not silence), the turn is cancelled and the run ends with 124, as `timeout(1)` does.
 */
function watchSilence(run: Run): () => void {
  const ms = (run.options.turnSeconds ?? Infinity) * 1000;
  const why = `mm sent nothing for ${run.options.turnSeconds} s; turn cancelled`;
  const check = () => {
    const rest = ms - run.connection.silentFor(); // of the silence, from mm's last frame
    if (rest > 0) stopTimer = after(rest, check);
    else if (!run.cancelled) cancelTurn(run, 124, why);
  };
  let stopTimer = after(ms, check);
  return () => stopTimer();
}
/**
 * Ends mm: after a conversation, its session closed (if mm can) and its stdin closed, time to exit,
 * all within one grace; then its process group killed.
 */
async function endMm(run: Run, graceful: boolean): Promise<void> {
  run.cancelled?.stopTimer();
  const grace = delay(EXIT_GRACE_MS);
  if (graceful && run.closes && run.sessionId) { // ACP's session/close: mm frees the session
    const closed = run.connection.request("session/close", { sessionId: run.sessionId });
    await Promise.race([closed.catch(() => {}), run.child.status, grace]); // answered or not
  }
  const exited = run.connection.close().then(() => run.child.status).then(() => true);
  if (graceful && !await Promise.race([exited, grace])) { // the grace is up: mm is still there
    run.out.log(`mm did not exit within ${EXIT_GRACE_MS / 1000} s of the end; killing it`);
  }
  await killGroup(run.child);
  await Promise.race([run.log.ended, delay(500)]);
}
/**
 * Kills a child's process group and waits (a second at most) until it is gone; where the group
 * cannot be signalled (Windows refuses a negative pid; a child that leads none), the child itself.
 */
export async function killGroup(child: Deno.ChildProcess): Promise<void> {
  try {
    Deno.kill(-child.pid, "SIGKILL");
  } catch {
    attempt(() => child.kill("SIGKILL"), undefined); // unless it is gone already
  }
  await Promise.race([child.status, delay(1000)]);
}

// ─── 6. Output: the conversation, diagnostics, the progress line ─────────────
const DIM = 2; // ANSI styles
const RED = 31;
const ENCODER = new TextEncoder();
/** stdout or stderr: a terminal or not, in colour or not, its last line open, its reader gone. */
function stream(file: typeof Deno.stdout, fd: number) {
  const terminal = file.isTerminal();
  // no-color.org: no colour when NO_COLOR is set and not empty; a dumb terminal has none.
  const colour = terminal && !readEnv("NO_COLOR") && readEnv("TERM") !== "dumb";
  return { file, fd, terminal, colour, open: false, gone: false };
}
type Stream = ReturnType<typeof stream>;
/**
 * stdout, the conversation, and stderr, diagnostics; on one terminal, pipe or file, a line open on
 * one is ended before the other writes. A tick's output goes out in one write per stream, in order.
 */
class Output {
  readonly stdout = stream(Deno.stdout, 1);
  readonly stderr = stream(Deno.stderr, 2);
  readonly progress = this.stderr.terminal && readEnv("TERM") !== "dumb"; // can erase a line
  quiet = false; // --quiet: stdout is the answer text alone, and no `[client]` progress lines
  json = false; // --json: stdout is JSON lines, written by record(), and nothing else
  onFailure: (error: unknown) => void = () => {}; // stdout cannot be written, and not for EPIPE
  #waiting?: { label: string; since: number; drawnAt?: number }; // drawn: at this width
  #queue: [Stream, string | Uint8Array][] = [];
  constructor() { // the progress line redraws itself (its seconds, its width) on a timer
    if (this.progress) Deno.unrefTimer(Number(setInterval(() => this.#draw(), 100)));
  }
  /** Whether both streams reach the same terminal, pipe or file: asked once, when it matters. */
  readonly shared = once(() => sameStream(streamFacts(this.stdout), streamFacts(this.stderr)));
  /** A `[client] …` progress line on stderr (not with `--quiet`). */
  log(text: string): void {
    if (!this.quiet) this.note(`[client] ${text}`);
  }
  note(text: string, style?: number): void {
    this.line(this.stderr, text, style);
  }
  /** A line of the conversation on stdout (not with `--quiet`). */
  say(text: string, style?: number): void {
    if (!this.quiet) this.line(this.stdout, text, style);
  }
  line(to: Stream, text: string, style?: number): void {
    this.print(to, `${to.open ? "\n" : ""}${text}\n`, style);
  }
  /** Writes text, which mm may have sent: on a terminal its control characters are shown. */
  print(to: Stream, text: string, style?: number): void {
    if (to === this.stdout && this.json) return; // stdout has only what record() writes
    const shown = to.terminal ? showControls(text) : text;
    this.put(to, to.colour && style ? shown.replace(/[^\n]+/g, `\x1b[${style}m$&\x1b[0m`) : shown);
  }
  /** With `--json`, one line on stdout; C1 controls escaped too, so a terminal shows it as is. */
  record(value: unknown): void {
    if (!this.json) return;
    const escape = (c: string) => `\\u00${c.charCodeAt(0).toString(16)}`;
    this.put(this.stdout, `${JSON.stringify(value ?? null).replace(/[\x7f-\x9f]/g, escape)}\n`);
  }
  /** Writes text or bytes as they are, after erasing the progress line and ending the other's. */
  put(to: Stream, data: string | Uint8Array): void {
    if (data.length === 0 || to.gone) return;
    this.#erase();
    const other = to === this.stdout ? this.stderr : this.stdout;
    if (other.open && this.shared()) {
      this.#write(this.stderr, "\n"); // on stderr: stdout, apart, stays the conversation
      other.open = false;
    }
    this.#write(to, data);
    to.open = typeof data === "string" ? !data.endsWith("\n") : data.at(-1) !== 10;
  }
  /** Shows `waiting for <label> … 3 s` on a terminal, erased before output; `undefined`: stop. */
  waitFor(label?: string): void {
    if (label === this.#waiting?.label) return;
    this.#erase();
    this.#waiting = label === undefined ? undefined : { label, since: Date.now() };
    this.#draw();
  }
  #draw(): void {
    const waiting = this.#waiting;
    if (!waiting || !this.progress || this.stderr.open) return;
    if (this.stdout.open && this.shared()) return; // never over an open line of the answer
    const spinner = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"[Math.floor(Date.now() / 100) % 10];
    const seconds = Math.floor((Date.now() - waiting.since) / 1000);
    const label = showControls(waiting.label); // a tool's title is mm's text
    const line = fit(`${spinner} waiting for ${label}`, ` … ${seconds} s`); // the seconds in sight
    this.#write(this.stderr, `${erasing(waiting.drawnAt)}${line}\r`);
    waiting.drawnAt = terminalWidth();
  }
  #erase(): void {
    if (this.#waiting?.drawnAt === undefined) return;
    this.#write(this.stderr, erasing(this.#waiting.drawnAt));
    this.#waiting.drawnAt = undefined;
  }
  #write(to: Stream, data: string | Uint8Array): void {
    if (this.#queue.length === 0) queueMicrotask(() => this.flush());
    const last = this.#queue.at(-1);
    const joins = typeof data === "string" && typeof last?.[1] === "string" && last[0] === to;
    if (joins) last[1] += data; // text after text to the same stream: one write
    else this.#queue.push([to, data]);
  }
  flush(): void {
    for (const [to, data] of this.#queue.splice(0)) {
      const bytes = typeof data === "string" ? ENCODER.encode(data) : data;
      try {
        let written = 0;
        while (written < bytes.length) written += to.file.writeSync(bytes.subarray(written));
      } catch (error) {
        to.gone = true;
        // A reader that went away (`| head -1`) is not an error; a full disk is.
        if (to === this.stdout && !(error instanceof Deno.errors.BrokenPipe)) this.onFailure(error);
      }
    }
  }
}
/**
 * What erases the progress line drawn at a width: back to its start, and to the end of its row
 * alone. `fit()` cuts it to the width at each draw, so it takes one row; an erase to the end of the
 * screen (`CSI J`) at the top row is a cleared screen to tmux (`scroll-on-clear`), which pushes the
 * whole screen into its scrollback. Only a terminal narrowed since the draw may have wrapped it onto
 * more rows: then, and then only, the erase goes to the end of the screen (it is the last line).
 */
function erasing(drawnAt = 0): string {
  return terminalWidth() < drawnAt ? "\r\x1b[J" : ERASE;
}
const ERASE = "\r\x1b[K";
/** What tells two output streams apart: a terminal, or the file's device and inode. */
export type StreamFacts = { terminal: boolean; dev?: number; ino?: number | null };
/**
 * Whether stdout and stderr are one terminal, pipe or file: two terminals are one; two files are
 * one if they share an inode, and two where the system gives none (Windows): never lines glued.
 */
export function sameStream(out: StreamFacts, err: StreamFacts): boolean {
  if (out.terminal || err.terminal) return out.terminal && err.terminal;
  return !!out.ino && out.ino === err.ino && out.dev === err.dev;
}
/** A stream's facts; a file's inode is `node:fs`'s (Deno has no API), loaded only when needed. */
function streamFacts(stream: Stream): StreamFacts {
  if (stream.terminal) return { terminal: true };
  const stat = attempt(() => process.getBuiltinModule("node:fs").fstatSync(stream.fd), undefined);
  return { terminal: false, dev: stat?.dev, ino: stat?.ino };
}
/** The terminal's width in columns, asked at each use: it may be resized at any time. */
const terminalWidth = () => attempt(() => Deno.consoleSize().columns, 0) || 80;
/** Characters a terminal shows two columns wide: East Asian scripts, most emoji. */
const WIDE =
  /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\uff00-\uff60\u{1f300}-\u{1faff}]/u;
/** `text`, cut so that it and `tail` fit one row of the terminal (its last column left free). */
function fit(text: string, tail = ""): string {
  const width = terminalWidth();
  const columns = (char: string) => WIDE.test(char) ? 2 : 1;
  let room = width - 1 - [...tail].reduce((sum, char) => sum + columns(char), 0);
  let kept = "";
  for (const char of text) {
    room -= columns(char);
    if (room < 0) return tail ? kept + tail : `${[...kept].slice(0, -1).join("")}…`;
    kept += char;
  }
  return kept + tail;
}
/**
 * Shows control characters other than newline and tab as symbols (`\x1b` as `␛`), so text on a
 * terminal cannot clear the screen, move the cursor, set the title or write the clipboard.
 */
export function showControls(text: string): string {
  const picture = (char: string) => String.fromCharCode(0x2400 + char.charCodeAt(0)); // ESC: ␛
  // deno-lint-ignore no-control-regex
  const shown = text.replace(/\r\n/g, "\n").replace(/[\x00-\x08\x0b-\x1f]/g, picture);
  return shown.replace(/\x7f/g, "␡").replace(/[\x80-\x9f]/g, "�"); // DEL, and a C1 control
}

// ─── 7. Framing ──────────────────────────────────────────────────────────────
/** A line longer than a {@linkcode LineReader} accepts. */
export class LineTooLongError extends Error {
  /** A line longer than `limit` bytes. */
  constructor(readonly limit: number) {
    super(`a line longer than ${limit} bytes`);
  }
}
/**
 * Splits a byte stream into lines ended by `\n` or `\r\n`. Invariant: each chunk's bytes are
 * scanned once and copied at most once, so a line spanning many chunks costs time linear in its
 * length; a line is decoded whole, so a UTF-8 character split across chunks decodes correctly.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * const reader = new LineReader();
 * assert.deepEqual([...reader.push(new TextEncoder().encode('{"a":1}\r\n{"b"'))], ['{"a":1}']);
 * assert.deepEqual([...reader.push(new TextEncoder().encode(":2}\n"))], ['{"b":2}']);
 * ```
 */
export class LineReader {
  #parts: Uint8Array[] = [];
  #length = 0;
  #decoder = new TextDecoder();
  /** Lines up to `limit` bytes, not counting their end (32 MiB, as in the official SDK). */
  constructor(readonly limit: number = 32 * 1024 * 1024) {}
  /** Takes the next chunk and yields the lines it ends; throws {@linkcode LineTooLongError}. */
  *push(chunk: Uint8Array): Generator<string> {
    let start = 0;
    for (let end = chunk.indexOf(10); end !== -1; end = chunk.indexOf(10, start)) {
      this.#keep(chunk.subarray(start, end));
      yield this.#take();
      start = end + 1;
    }
    if (start < chunk.length) this.#keep(chunk.subarray(start));
  }
  /** The last line when the stream ended without a newline, if any. */
  flush(): string | undefined {
    return this.#length > 0 ? this.#take() : undefined;
  }
  #keep(bytes: Uint8Array): void {
    if (bytes.length > 0) this.#parts.push(bytes); // kept, not copied: each read is a new chunk
    this.#length += bytes.length;
    const ending = this.#parts.at(-1)?.at(-1) === 13 ? 1 : 0; // a last `\r` may be half of `\r\n`
    if (this.#length - ending <= this.limit) return;
    this.#parts = [];
    this.#length = 0;
    throw new LineTooLongError(this.limit);
  }
  #take(): string {
    let bytes = this.#parts.length === 1 ? this.#parts[0] : new Uint8Array(this.#length);
    if (this.#parts.length > 1) {
      let offset = 0;
      for (const part of this.#parts) {
        bytes.set(part, offset);
        offset += part.length;
      }
    }
    this.#parts = [];
    this.#length = 0;
    if (bytes.at(-1) === 13) bytes = bytes.subarray(0, -1);
    return this.#decoder.decode(bytes);
  }
}
/** A JSON-RPC id. */
export type RpcId = string | number | null;
/** What one line from mm turned out to be. */
export type Frame =
  | { kind: "request"; id: string | number; method: string; params: unknown }
  | { kind: "notification"; method: string; params: unknown }
  | { kind: "response"; id: RpcId; result?: unknown; error?: { code: number; message: string } }
  | { kind: "blank" }
  | { kind: "bad"; reply: { jsonrpc: "2.0"; id: RpcId; error: { code: number; message: string } } };
/** Classifies a line; a bad one is answered `-32700` if not JSON, else `-32600` (a batch too). */
export function parseFrame(line: string): Frame {
  if (line.trim() === "") return { kind: "blank" };
  const bad = (id: RpcId, code: number, message: string): Frame => {
    return { kind: "bad", reply: { jsonrpc: "2.0", id, error: { code, message } } };
  };
  const value: unknown = attempt(() => JSON.parse(line), undefined); // JSON is never undefined
  if (value === undefined) return bad(null, -32700, "Parse error");
  if (!isObject(value)) return bad(null, -32600, "Invalid Request");
  const { id, method, params, result, error } = value;
  const validId = typeof id === "string" || typeof id === "number";
  const hasMethod = typeof method === "string";
  if (hasMethod && validId) return { kind: "request", id, method, params };
  if (hasMethod && !("id" in value)) return { kind: "notification", method, params };
  if (method === undefined && (validId || id === null) && ("result" in value || isObject(error))) {
    return { kind: "response", id, result, error: error as { code: number; message: string } };
  }
  return bad(validId ? id : null, -32600, "Invalid Request");
}

// ─── 8. The connection ───────────────────────────────────────────────────────
/** A JSON-RPC error, to answer a request with, or received as an answer. */
class RpcError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}
/** The first bad frames are logged and answered; 1,000 in a row: mm is not talking JSON-RPC. */
const BAD_FRAMES_SHOWN = 10;
const BAD_FRAMES_IN_A_ROW = 1000;
/** Reading from mm pauses while more than this many characters of answers wait to be written. */
const MAX_UNWRITTEN = 1024 * 1024;
const CANCELLED = { error: { code: -32800, message: "Request cancelled" } };
/**
 * JSON-RPC over mm's pipes: writing frames (a tick's in one write), reading them (paused while
 * answers pile up unwritten), and answering mm's requests. Notifications go to `notified()`.
 */
class Connection {
  /** Settles when mm's stdout has ended and each frame on it was handled. */
  readonly reading: Promise<void>;
  readonly #run: Run;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  #queued: string[] = []; // the frames of this tick, not written yet
  #unwritten = 0; // characters of frames not written yet
  #writing = Promise.resolve();
  #nextId = 0;
  #heard = 0; // when a frame last crossed the pipe, either way
  readonly #pending = new Map<RpcId, PromiseWithResolvers<unknown>>(); // the client's requests
  readonly #running = new Map<RpcId, AbortController>(); // mm's requests being answered
  readonly #bad = { total: 0, inARow: 0, first: "" };
  constructor(run: Run) {
    this.#run = run;
    this.#writer = run.child.stdin.getWriter();
    this.reading = this.#read().catch((error) => run.fail(this.#readError(error)));
  }
  // Writing frames.
  /** Sends a request; the promise settles with mm's answer, or rejects with its `RpcError`. */
  request(method: string, params: unknown): Promise<unknown> {
    const id = this.#nextId++;
    const reply = Promise.withResolvers<unknown>();
    this.#pending.set(id, reply);
    this.#send({ jsonrpc: "2.0", id, method, params });
    return reply.promise;
  }
  notify(method: string, params: unknown): void {
    this.#send({ jsonrpc: "2.0", method, params });
  }
  /** Closes mm's stdin, once what is queued is written. */
  close(): Promise<void> {
    return this.#writing.then(() => this.#writer.close()).catch(() => {});
  }
  /** How long mm has been silent, sent nothing and been sent nothing; 0 while a tool runs. */
  silentFor(): number {
    return this.#running.size > 0 ? 0 : performance.now() - this.#heard;
  }
  /** How many bad frames were counted but not logged. */
  unlogged(): number {
    return Math.max(0, this.#bad.total - BAD_FRAMES_SHOWN);
  }
  /** Queues one frame; the frames of one tick go out in one write, after those before them. */
  #send(message: object): void {
    const line = JSON.stringify(message);
    this.#heard = performance.now(); // mm's silence counts from what it was sent last
    if (this.#run.options.trace) this.#run.out.note(`→ ${line}`);
    this.#queued.push(line, "\n");
    this.#unwritten += line.length + 1;
    if (this.#queued.length > 2) return; // a write of this tick is scheduled already
    this.#writing = this.#writing.then(() => this.#writeQueued());
  }
  /** Writes what is queued. A failure is reported here, unless mm exited: the run reports that. */
  async #writeQueued(): Promise<void> {
    const text = this.#queued.splice(0).join("");
    try {
      await this.#writer.write(ENCODER.encode(text));
      this.#unwritten -= text.length;
    } catch (error) {
      const exited = await Promise.race([this.#run.child.status, delay(EXIT_GRACE_MS)]);
      if (!exited) this.#run.fail(new ClientError(`cannot write to mm: ${errorText(error)}`));
    }
  }
  // Reading frames.
  async #read(): Promise<void> {
    const reader = new LineReader();
    for await (const chunk of this.#run.child.stdout) {
      for (const line of reader.push(chunk)) this.#receive(line);
      if (this.#unwritten > MAX_UNWRITTEN) await this.#writing;
    }
    const last = reader.flush();
    if (last !== undefined) this.#receive(last);
  }
  #readError(error: unknown): ClientError {
    if (error instanceof ClientError) return error;
    const text = errorText(error);
    if (!(error instanceof LineTooLongError)) return new ClientError(`reading from mm: ${text}`);
    return new ClientError(`mm sent ${text}; connection dropped`);
  }
  #receive(line: string): void {
    this.#heard = performance.now();
    const frame = parseFrame(line);
    if (frame.kind === "blank") return;
    if (this.#run.options.trace) this.#run.out.note(`← ${line}`);
    if (frame.kind === "bad") return this.#badLine(line, frame.reply);
    this.#bad.inARow = 0;
    if (frame.kind === "request") return this.#answer(frame.id, frame.method, frame.params);
    const cancel = frame.kind === "notification" && frame.method === "$/cancel_request";
    if (cancel) return this.#running.get(field(frame.params, "requestId") as RpcId)?.abort();
    if (frame.kind === "notification") return notified(this.#run, frame.method, frame.params);
    const waiting = this.#pending.get(frame.id); // mm's answer to one of the client's requests
    if (!waiting) {
      const id = JSON.stringify(frame.id);
      return this.#run.out.log(`answer to no pending request (id ${id}) ignored`);
    }
    this.#pending.delete(frame.id);
    if (!frame.error) return waiting.resolve(frame.result);
    const { code, message } = frame.error;
    waiting.reject(new RpcError(Number(code), typeof message === "string" ? message : "?"));
  }
  /** A noisy peer: log and answer the first few bad lines, count the rest, give up on a flood. */
  #badLine(line: string, reply: object): void {
    const bad = this.#bad;
    if (bad.inARow === 0) bad.first = line.slice(0, 80);
    bad.inARow++;
    bad.total++;
    if (bad.total <= BAD_FRAMES_SHOWN) {
      this.#run.out.note(`[client] bad frame from mm: ${line.slice(0, 80)}`);
      this.#send(reply);
    }
    if (bad.inARow < BAD_FRAMES_IN_A_ROW) return;
    const many = `${bad.inARow} bad lines; first: ${bad.first}`;
    throw new ClientError(`mm is not speaking JSON-RPC on stdout (${many})`);
  }
  // Answering mm's requests.
  /** Answers a request at once, or when its promise settles, unless mm cancels it first. */
  #answer(id: string | number, method: string, params: unknown): void {
    const controller = new AbortController();
    const settle = (reply: object) => {
      this.#run.out.record({ request: { method, params }, answer: reply });
      this.#send({ jsonrpc: "2.0", id, ...reply });
    };
    let result;
    try {
      result = answerRequest(this.#run, method, params, controller.signal);
    } catch (error) {
      return settle(errorReply(error));
    }
    if (!(result instanceof Promise)) return settle({ result });
    // Running: `$/cancel_request` aborts it, answered `-32800` at once; the tool's late end is not.
    const finish = (reply: object) => {
      if (this.#running.get(id) !== controller) return; // answered already
      this.#running.delete(id);
      settle(reply);
    };
    this.#running.set(id, controller);
    controller.signal.addEventListener("abort", () => finish(CANCELLED));
    result.then((value) => finish({ result: value }), (error) => finish(errorReply(error)));
  }
}
/** The JSON-RPC error an answer that failed is sent as: its own, or `-32603`. */
function errorReply(error: unknown): { error: { code: number; message: string } } {
  if (error instanceof RpcError) return { error: { code: error.code, message: error.message } };
  return { error: { code: -32603, message: `Internal error: ${errorText(error)}` } };
}

// ─── 9. The command line and the agent file ──────────────────────────────────
/** The default question. */
export const DEFAULT_QUESTION =
  "What operating system does my machine run, and how much memory does it have?";
/**
 * The command line's options, as `parseArgs` reads them (`type`, `short`, `default`), with the
 * name of the value each takes and the help line of the usage. Adding an option is one entry.
 */
export const OPTIONS = {
  request: {
    type: "boolean",
    help: 'discovery mode "request" (default agent file: agent-request.yaml)',
  },
  agent: { type: "string", value: "FILE", help: "the agent file to give mm (default: agent.yaml)" },
  mm: {
    type: "string",
    value: "PATH",
    help: "the mm executable (default: $MM_BIN, else mm on PATH)",
  },
  interactive: {
    type: "boolean",
    short: "i",
    help: "more questions after the first, one per line, one session",
  },
  quiet: {
    type: "boolean",
    short: "q",
    help: "stdout is the answer alone; stderr has no [client] progress lines",
  },
  json: {
    type: "boolean",
    help: "stdout is JSON lines: updates, requests and answers, the result",
  },
  "no-ask": {
    type: "boolean",
    help: "never ask; refuse what the client did not offer, as the Node demo does",
  },
  resume: { type: "string", value: "ID", help: "continue an earlier session of mm" },
  continue: { type: "boolean", help: "continue the most recent session of this folder" },
  sessions: { type: "boolean", help: "list mm's sessions and exit" },
  trace: { type: "boolean", help: "print every JSON-RPC frame on stderr (→ sent, ← received)" },
  verbose: { type: "boolean", help: "also show thoughts, plans, usage and settings on stderr" },
  timeout: {
    type: "string",
    value: "SECONDS",
    default: "30",
    help: "how long to wait for mm to start a session (default 30)",
  },
  "turn-timeout": {
    type: "string",
    value: "SEC",
    help: "cancel a turn after SEC s of silence from mm (exit 124)",
  },
  help: { type: "boolean", short: "h", help: "show this help and exit" },
  version: { type: "boolean", help: "print the version and exit" },
} as const;
/** An option's name: `agent`, `turn-timeout`. */
export type OptionName = keyof typeof OPTIONS;
/** The usage text of `--help`. */
export const USAGE = `usage: client.ts [options] [question | -]

Lends mini-me (mm -acp) the client's tools (${TOOL_NAMES}), asks it a question
("-": read the question from stdin).

options:
${Object.entries(OPTIONS).map(([name, option]) => usageLine(name, option)).join("\n")}`;
/** One option's line of the usage: `  -i, --interactive  more questions…`. */
function usageLine(name: string, option: { value?: string; short?: string; help: string }) {
  const letter = option.short ? `-${option.short}, ` : "";
  const value = option.value ? ` ${option.value}` : "";
  return `${`  ${letter}--${name}${value}`.padEnd(20)} ${option.help}`;
}
/** What the command line says: a flag is `true` if given, a value is as typed. */
export type OptionValues = {
  [name in OptionName]?: (typeof OPTIONS)[name] extends { type: "string" } ? string : boolean;
};
/** A run's options: those typed, the first question (`-`: stdin), the timeouts in seconds. */
export type Options = OptionValues & { question?: string; seconds: number; turnSeconds?: number };
/** The options, or a usage error (exit 2). */
export function parseCommandLine(argv: readonly string[]): Options {
  const { values, words } = readCommandLine(ownArguments(argv));
  const problem = combinationProblem(values, words);
  if (problem) throw usageError(problem);
  const question = words || (values.interactive ? undefined : DEFAULT_QUESTION);
  const turn = values["turn-timeout"];
  const turnSeconds = turn === undefined ? undefined : secondsOf("turn-timeout", turn);
  const seconds = secondsOf("timeout", String(values.timeout));
  return { ...values, question, seconds, turnSeconds };
}
/**
 * The options typed and the words of the question, read by `parseArgs`: `--name value`,
 * `--name=value`, `-iq` for `-i -q`; `--` ends the options. Its errors are said in the client's
 * words, and the option at fault is found among the tokens it reads when it does not refuse.
 */
function readCommandLine(args: string[]): { values: OptionValues; words: string } {
  const config = { args, options: OPTIONS, allowPositionals: true, tokens: true } as const;
  let parsed;
  try {
    parsed = parseArgs({ ...config, strict: true });
  } catch (error) {
    const { tokens } = parseArgs({ ...config, strict: false });
    throw usageError(parseProblem(error, tokens));
  }
  // parseArgs takes no word that starts with "-" as a value, lest it swallow an option; nor does
  // the client take a lone "-", which is the question from stdin: `--agent -` names no file.
  for (const token of parsed.tokens) {
    if (token.kind === "option" && token.value === "-" && !token.inlineValue) {
      throw usageError(`${token.rawName} needs a value`);
    }
  }
  return { values: parsed.values, words: parsed.positionals.join(" ").trim() };
}
/** What `parseArgs` refused (its error `code`), said of the first option it refuses for it. */
function parseProblem(error: unknown, tokens: ArgToken[]): string {
  const code = field(error, "code");
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    const option = Object.hasOwn(OPTIONS, token.name) ? OPTIONS[token.name as OptionName] : null;
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && !option) return unknownOption(token.rawName);
    if (code !== "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" || !option) continue;
    const { rawName, value } = token;
    if (option.type === "boolean" && value !== undefined) return `${rawName} takes no value`;
    if (value === undefined) return `${rawName} needs a value`;
    if (token.inlineValue || !value.startsWith("-")) continue;
    // The next word starts with "-": an option, so the value is missing, or a negative number,
    // which was meant as the value (`--timeout -1`) and is spoken of as one.
    const number = ["timeout", "turn-timeout"].includes(token.name) && /^-[\d.]/.test(value);
    return number ? secondsProblem(token.name, value) : `${rawName} needs a value`;
  }
  throw error; // none the client has words for: its own message, as any other error
}
/** A token of `parseArgs`: an option (with its value, if any), a word, or `--`. */
type ArgToken = NonNullable<ReturnType<typeof parseArgs>["tokens"]>[number];
/** Whether `--json` is among the options, read leniently: for a command line that has a mistake. */
function asksForJson(argv: readonly string[]): boolean {
  const args = ownArguments(argv);
  const lenient = { args, options: OPTIONS, allowPositionals: true, strict: false } as const;
  return attempt(() => parseArgs(lenient).values.json === true, false);
}
/** The client's own arguments: a first `--`, which `deno task` passes on, is dropped. */
const ownArguments = (argv: readonly string[]) => argv[0] === "--" ? argv.slice(1) : [...argv];
/** A usage error: its message, then the usage; exit 2. */
const usageError = (message: string) => new ClientError(message, 2, true);
/** An option this client does not have, and the long one it may be a typo of (`--tiemout`). */
function unknownOption(rawName: string): string {
  const typed = rawName.slice(2); // "" for `-x`: a name under 3 characters is not guessed at
  const meant = Object.keys(OPTIONS).find((name) => typed.length >= 3 && oneEditApart(typed, name));
  if (meant) return `unknown option ${rawName}; did you mean --${meant}?`;
  return `unknown option ${rawName}`;
}
/** Options that cannot go together, or values that cannot be. */
function combinationProblem(values: Omit<Options, "question" | "seconds">, words: string) {
  const { json, quiet, resume, sessions, interactive } = values;
  if (json && quiet) return "--json and --quiet both say what stdout is: pick one";
  if (sessions && quiet) return "--sessions lists on stdout, where --quiet writes only an answer";
  if (values.continue && resume !== undefined) {
    return "--continue and --resume both name the session: pick one";
  }
  if (sessions && (words || resume || values.continue || interactive)) {
    return "--sessions lists the sessions and exits: it takes no question or session to open";
  }
  if (values.mm === "") return '--mm needs a path, got ""';
  if (values.agent === "") return '--agent needs a file, got ""';
  if (resume === "") return '--resume needs a session id, got ""';
  if (words === "-" && interactive) {
    return "- reads the question from stdin, which --interactive reads too";
  }
  return undefined;
}
/** A number of seconds above 0, decimal (`1.5`; not `0x10`, not `-1`). */
function secondsOf(name: string, text: string): number {
  if (/^(\d+\.?\d*|\.\d+)$/.test(text) && Number(text) > 0) return Number(text);
  throw usageError(secondsProblem(name, text));
}
/** What is wrong with a number of seconds given for `--<name>`. */
const secondsProblem = (name: string, text: string) =>
  `--${name} takes a number of seconds above 0, got ${JSON.stringify(text)}`;
/** Whether one character added, left out, replaced, or two neighbours swapped make `a` into `b`. */
function oneEditApart(a: string, b: string): boolean {
  if (a === b || Math.abs(a.length - b.length) > 1) return false;
  if (a[0] === b[0]) return oneEditApart(a.slice(1), b.slice(1)); // alike so far: look further on
  if (a.slice(1) === b.slice(1) || a.slice(1) === b || a === b.slice(1)) return true;
  return a[0] === b[1] && a[1] === b[0] && a.slice(2) === b.slice(2);
}

/** Reads the agent file, in the current folder or else next to `client.ts`; its errors name it. */
function readAgentFile(name: string, given: boolean) {
  const here = import.meta.dirname;
  const places = here && !/^([/\\]|[A-Za-z]:)/.test(name) ? [name, `${here}/${name}`] : [name];
  for (const path of places) {
    const problem = (what: string) => new ClientError(`agent file ${path} ${what}`, 2);
    if (!granted({ name: "read", path })) {
      const remedy = `copy it into this folder, or add --allow-read=${path}`; // tasks' flags are fixed
      throw problem(`is outside what this run may read (${remedy})`);
    }
    let text;
    try {
      text = Deno.readTextFileSync(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue;
      if (error instanceof Deno.errors.IsADirectory) throw problem("is a directory");
      throw problem(`cannot be read: ${errorText(error)}`);
    }
    const document = readYaml(text, problem);
    if (document != null && !isObject(document)) throw problem("is not a YAML mapping of keys");
    const tools = field(field(document, "acp"), "clientTools");
    const [enabled, discovery] = fields(tools, "enabled", "discovery");
    return { path, config: { enabled: enabled !== false, discovery: String(discovery ?? "meta") } };
  }
  const hint = given ? "" : " (run from the project folder or pass --agent)";
  throw new ClientError(`agent file not found: ${name}${hint}`, 2);
}
/**
 * An agent file's first YAML document, as mm reads it (Go's YAML): a file with none (empty, or
 * only comments) has no keys. A mistake is named with its line.
 */
function readYaml(text: string, problem: (what: string) => ClientError): unknown {
  try {
    return loadAllYaml(text)[0];
  } catch (error) {
    if (!(error instanceof YAMLException)) throw problem(`cannot be read: ${errorText(error)}`);
    throw problem(`is not valid YAML (line ${(error.mark?.line ?? 0) + 1}): ${error.reason}`);
  }
}
/** What the client reads in an agent file: `acp.clientTools.enabled` and `.discovery`. */
export type AgentConfig = { enabled: boolean; discovery: string };
/** Warnings for an agent file that contradicts the run; the client goes on, to show mm's way. */
export function agentFileWarnings(file: string, config: AgentConfig, request: boolean): string[] {
  const sets = `warning: ${file} sets acp.clientTools`;
  if (!config.enabled) return [`${sets}.enabled: false; mm will ignore ${TOOL_NAMES}`];
  const announced = request ? "request" : "meta";
  if (config.discovery === announced || !["meta", "request"].includes(config.discovery)) return [];
  let then = "mm will ask for the list, and the client answers it";
  if (request) then = `mm will not see ${TOOL_NAMES}`;
  return [`${sets}.discovery: ${config.discovery}, but the client announces ${announced}; ${then}`];
}

// ─── 10. Checking TOOLS, and the arguments of a call ────────────────────────
/**
 * What is wrong with `TOOLS`, by mm's rules (acp-client-tools.md, "Validation d'une liste") and
 * the client's (one `method` each: calls are dispatched by it). mm would skip a broken entry in
 * silence; the client stops before mm starts. Entries count from 0, as `TOOLS[1]` does.
 */
export function checkTools(tools: readonly Tool[]): string | undefined {
  for (const [index, tool] of tools.entries()) {
    const problem = toolProblem(tool, tools.slice(0, index));
    if (problem) return `TOOLS entry ${index} (${JSON.stringify(tool?.name ?? "")}): ${problem}`;
  }
  return undefined;
}
/** What is wrong with one entry of `TOOLS`, given the entries before it. */
function toolProblem(tool: Tool, before: readonly Tool[]): string | undefined {
  if (typeof tool.name !== "string" || tool.name === "") return "no name";
  const method = typeof tool.method === "string" ? tool.method : "";
  if (!method.startsWith("_")) {
    return `method ${JSON.stringify(method)} must start with "_" (an ACP extension method)`;
  }
  const schema: unknown = tool.inputSchema;
  // mm decodes it as Go does: `null` is no schema, and no parameter.
  if (schema != null && !isObject(schema)) return "inputSchema must be an object";
  const type = field(schema, "type");
  if (type !== undefined && type !== "object") {
    return `inputSchema.type must be "object", got ${JSON.stringify(type)}`;
  }
  const name = modelName(tool.name);
  if (name === "client_") return `name ${JSON.stringify(tool.name)} leaves the model no name`;
  if (method === "_org.mini-me/tools/list") return `method "${method}" is mm's list request`;
  const sameName = before.findIndex((other) => modelName(other.name) === name);
  if (sameName >= 0) {
    return `duplicate tool name "${name}": entry ${sameName} (${before[sameName].name}) has it`;
  }
  const sameMethod = before.findIndex((other) => other.method === method);
  if (sameMethod === -1) return undefined;
  const owner = before[sameMethod].name;
  return `method "${method}" is entry ${sameMethod}'s (${owner}) too; calls are dispatched by it`;
}
/**
 * The name the model sees (acp-client-tools.md, "Description d'un outil"): each character outside
 * `[A-Za-z0-9]` is `_`, a run of `_` one, leading and trailing `_` go: `client_open_buffers`.
 */
export function modelName(name: string): string {
  return `client_${name.replace(/[^A-Za-z0-9]+/g, "_").replace(/^_|_$/g, "")}`;
}

/**
 * A call's arguments against its tool's `inputSchema`: `required`, each `type` and `enum`. mm
 * checks only `required`, and hides `enum` from the model (acp-client-tools.md, "Le schéma tel que
 * le voit le modèle"): a model may send anything else. The mismatch, in words it can act on.
 */
export function checkArguments(
  tool: Pick<Tool, "name" | "inputSchema">,
  args: Record<string, unknown>,
): string | undefined {
  const properties = field(tool.inputSchema, "properties");
  for (const name of list(field(tool.inputSchema, "required"))) {
    if (typeof name !== "string" || Object.hasOwn(args, name)) continue;
    const choices = list(field(field(properties, name), "enum"));
    const hint = choices.length > 0 ? ` (one of ${choices.join(", ")})` : "";
    return `${tool.name}: missing parameter ${JSON.stringify(name)}${hint}`;
  }
  for (const [name, value] of Object.entries(args)) {
    const problem = valueProblem(field(properties, name), value);
    if (problem) return `${tool.name}: ${JSON.stringify(name)} must be ${problem}`;
  }
  return undefined;
}
/** What one property's schema says against `value` (`a string, not 5`), if anything. */
function valueProblem(schema: unknown, value: unknown): string | undefined {
  const declared = field(schema, "type");
  const types = (Array.isArray(declared) ? declared : [declared]).map((type) => TYPES.get(type));
  // A type this check does not know, or none, is left to the tool.
  if (types.every((type) => type !== undefined) && !types.some((type) => type.test(value))) {
    return `${types.map((type) => type.words).join(" or ")}, not ${preview(value)}`;
  }
  const choices = field(schema, "enum");
  if (!Array.isArray(choices) || choices.includes(value)) return undefined;
  const text = JSON.stringify(value); // an object or an array is the same if its JSON is
  if (choices.some((choice) => JSON.stringify(choice) === text)) return undefined;
  return `one of ${choices.join(", ")}, not ${preview(value)}`;
}
/** JSON Schema's primitive types: how an error names each, and how a value is checked. */
const TYPES = new Map<unknown, { words: string; test: (value: unknown) => boolean }>([
  ["string", { words: "a string", test: (value) => typeof value === "string" }],
  ["number", { words: "a number", test: (value) => typeof value === "number" }],
  ["integer", { words: "an integer", test: (value) => Number.isInteger(value) }],
  ["boolean", { words: "a boolean", test: (value) => typeof value === "boolean" }],
  ["array", { words: "an array", test: (value) => Array.isArray(value) }],
  ["object", { words: "an object", test: (value) => isObject(value) }],
  ["null", { words: "null", test: (value) => value === null }],
]);
const preview = (value: unknown) => JSON.stringify(value).slice(0, 40);

// ─── Helpers ─────────────────────────────────────────────────────────────────
// Used only once the module has loaded, so written as constants.
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const list = (value: unknown): unknown[] => Array.isArray(value) ? value : [];
/** `value[key]` when `value` is an object, else `undefined`; `fields()`, of several keys. */
const field = (value: unknown, key: string): unknown => isObject(value) ? value[key] : undefined;
const fields = (value: unknown, ...keys: string[]) => keys.map((key) => field(value, key));
const errorText = (error: unknown) => error instanceof Error ? error.message : String(error);
/** Whether a permission is granted, asked without ever prompting. */
const granted = (descriptor: Deno.PermissionDescriptor) =>
  Deno.permissions.querySync(descriptor).state === "granted";
/** An environment variable; one the run may not read counts as unset. */
const readEnv = (name: string) =>
  granted({ name: "env", variable: name }) ? Deno.env.get(name) : undefined;
const delay = (ms: number) => new Promise<undefined>((done) => after(ms, () => done(undefined)));
/**
 * Calls `fire` in `ms`, unless the function it returns is called first. The web's own timer: Deno's
 * global `setTimeout` and `clearTimeout` are Node's, whose loading costs a tenth of a start. A
 * stopped timer holds the event loop until its time: no matter, the client ends with `Deno.exit()`.
 */
function after(ms: number, fire: () => void): () => void {
  if (ms > 2 ** 31 - 1) return () => {}; // longer than a timer can wait (24.8 days): never fires
  const signal = AbortSignal.timeout(ms);
  signal.addEventListener("abort", fire);
  return () => signal.removeEventListener("abort", fire);
}
/** What `run()` returns, or `otherwise` when it throws. */
function attempt<T, U>(run: () => T, otherwise: U): T | U {
  try {
    return run();
  } catch {
    return otherwise;
  }
}
/** A function that reads a value the first time it is called, and then remembers it. */
function once<T>(read: () => T): () => T {
  let value: { read: T } | undefined;
  return () => {
    value ??= { read: read() };
    return value.read;
  };
}

if (import.meta.main) Deno.exit(await main(Deno.args));
