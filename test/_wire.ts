/**
 * A test client for the mm stand-in, over the wire: it starts
 * `test/mm-sim -acp -agent <file>` as a process and speaks raw
 * newline-delimited JSON-RPC to it, so a test can answer mm's requests in
 * any way — a result, a JSON-RPC error, or not at all. Every wait has a
 * deadline: a test fails, it never hangs. Every wait, and every answer the
 * test client gives, belongs to the test that started the stand-in: a
 * failure fails that test alone, and ending the stand-in ends them all.
 *
 * @module
 */

import type * as acp from "@agentclientprotocol/sdk";
import { clip } from "./_assert.ts";
import { noStrayRejection, ROOT, WAIT_MS, within } from "./_run.ts";
import { SCRATCH, scratchDir } from "./_scratch.ts";

/** The text of a tool call's content list (text blocks only, joined). */
export function contentText(content: acp.ToolCallContent[] | null | undefined): string {
  return (content ?? []).map((c) =>
    c.type === "content" && c.content.type === "text" ? c.content.text : ""
  ).join("");
}

/** One JSON-RPC message, as read from the wire. */
export interface Frame {
  /** Request or response id. */
  id?: number | string | null;
  /** Request or notification method. */
  method?: string;
  /** Request or notification params. */
  params?: Record<string, unknown>;
  /** A response's result. */
  result?: unknown;
  /** A response's error. */
  error?: { code: number; message: string; data?: unknown };
}

/** How the test client answers one request from mm: `undefined` leaves it unanswered. */
export type Reply = { result: unknown } | { error: Frame["error"] } | undefined;

/** A handler for requests from mm, by method. */
export type Handler = (params: Record<string, unknown>, frame: Frame) => Reply | Promise<Reply>;

/** The demo's tool, as a client offers it. */
export const HOST_INFO = {
  name: "host_info",
  description: "Facts about the machine the user's client runs on.",
  method: "_demo.minime/host_info",
  inputSchema: {
    type: "object",
    properties: { topic: { type: "string", enum: ["os", "cpu", "memory", "uptime"] } },
    required: ["topic"],
  },
};

/** A small agent file with these `acp.clientTools` keys (and `yolo`, `bashTool`, `maxOutput`). */
export function agentYaml(
  o: {
    yolo?: boolean;
    bashTool?: boolean;
    maxOutput?: number;
    enabled?: boolean;
    discovery?: string;
    permissions?: string;
    timeout?: string;
  } = {},
): string {
  return [
    `yolo: ${o.yolo ?? true}`,
    ...(o.bashTool === undefined ? [] : [`bashTool: ${o.bashTool}`]),
    ...(o.maxOutput === undefined ? [] : [`maxOutput: ${o.maxOutput}`]),
    "acp:",
    "  clientTools:",
    `    enabled: ${o.enabled ?? true}`,
    `    discovery: ${o.discovery ?? "meta"}`,
    `    permissions: ${o.permissions ?? "auto"}`,
    ...(o.timeout === undefined ? [] : [`    timeout: ${o.timeout}`]),
    "",
  ].join("\n");
}

/**
 * Rejects with a message naming what was awaited once `ms` pass (default {@linkcode WAIT_MS}: for
 * a hang, never for speed).
 */
export function deadline<T>(promise: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  return within(ms, what, promise);
}

/** How a test starts the stand-in. */
export interface PeerOptions {
  /** The agent file's text (see {@linkcode agentYaml}). */
  agent?: string;
  /** Extra environment (the `MM_SIM_*` knobs). */
  env?: Record<string, string>;
  /** The folder for session files (default: a fresh one). */
  stateDir?: string;
  /**
   * Starts the stand-in as an agent that is not mm, `test/agent-sim` with these arguments (`[]`,
   * `["--stdio"]`, `["--asks", "claude"]`, …), instead of `test/mm-sim -acp -agent <file>`.
   */
  agentSim?: string[];
}

/** The stand-in as a process, and the test client's end of the wire. */
export class Peer {
  /** Every frame mm wrote, in order. */
  readonly frames: Frame[] = [];
  /** Everything mm wrote on stderr. */
  stderr = "";
  /** How the client answers mm's requests, by method (anything else: -32601). */
  readonly handlers: Record<string, Handler> = {};
  /** The folder of session files. */
  readonly stateDir: string;
  #child: Deno.ChildProcess;
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #nextId = 0;
  #wake: (() => void)[] = [];
  #reading: Promise<unknown>;
  /** Aborted when the stand-in is ended: every wait still pending fails then, its timer gone. */
  #ending = new AbortController();
  /** What went wrong on the test client's side of the wire, outside any wait: it fails the test. */
  readonly problems: string[] = [];

  constructor(options: PeerOptions = {}) {
    const dir = scratchDir("mm-sim-wire-");
    const agent = `${dir}/agent.yaml`;
    Deno.writeTextFileSync(agent, options.agent ?? agentYaml());
    this.stateDir = options.stateDir ?? `${dir}/sessions`;
    const launcher = `${ROOT}/test/${options.agentSim ? "agent-sim" : "mm-sim"}`;
    const args = options.agentSim ?? ["-acp", "-agent", agent];
    this.#child = new Deno.Command(launcher, {
      args,
      env: {
        DENO_BIN: Deno.execPath(),
        TMPDIR: SCRATCH,
        MM_SIM_STATE_DIR: this.stateDir,
        ...options.env,
      },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
    // What a well-behaved client answers; a test replaces what it needs.
    this.handlers["_org.mini-me/tools/list"] = () => ({ result: { tools: [HOST_INFO] } });
    this.handlers["_demo.minime/host_info"] = (params) => ({
      result: { content: [{ type: "text", text: `fact about ${params.topic}` }] },
    });
    this.handlers["session/request_permission"] = (params) => {
      const options = params.options as acp.PermissionOption[];
      const allow = options.find((o) => o.kind === "allow_once");
      return { result: { outcome: { outcome: "selected", optionId: allow?.optionId } } };
    };
    this.#reading = noStrayRejection(Promise.all([this.#readFrames(), this.#readStderr()]));
  }

  /**
   * `promise`, failing with `deadline: <what>` after `ms`, or when the stand-in is ended first; its
   * timer is cleared either way, and its failure fails only a test that awaits it.
   */
  #wait<T>(promise: Promise<T>, what: string | (() => string), ms: number): Promise<T> {
    const ended = new Promise<never>((_, reject) => {
      const end = () => reject(new Error(`mm-sim was ended while waiting for ${describe(what)}`));
      if (this.#ending.signal.aborted) end();
      this.#ending.signal.addEventListener("abort", end, { once: true });
    });
    return within(ms, what, Promise.race([promise, ended]));
  }

  async #readFrames(): Promise<void> {
    let buffer = "";
    for await (const chunk of this.#child.stdout.pipeThrough(new TextDecoderStream())) {
      buffer += chunk;
      let end;
      while ((end = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, end).trim();
        buffer = buffer.slice(end + 1);
        if (line === "") continue;
        let frame: Frame;
        try {
          frame = JSON.parse(line);
        } catch {
          this.problems.push(`mm wrote a line that is not JSON on stdout: ${clip(line)}`);
          continue;
        }
        this.frames.push(frame);
        if (frame.method && frame.id !== undefined) {
          this.#answer(frame).catch((error) => {
            if (this.#ending.signal.aborted) return; // mm is being ended: it reads no more
            this.problems.push(`the test client could not answer mm's ${frame.method}: ${error}`);
          });
        }
        this.#notify();
      }
    }
  }

  async #readStderr(): Promise<void> {
    for await (const chunk of this.#child.stderr.pipeThrough(new TextDecoderStream())) {
      this.stderr += chunk;
      this.#notify();
    }
  }

  #notify(): void {
    for (const wake of this.#wake.splice(0)) wake();
  }

  async #answer(frame: Frame): Promise<void> {
    const handler = this.handlers[frame.method!];
    const reply = handler
      ? await handler(frame.params ?? {}, frame)
      : { error: { code: -32601, message: "Method not found" } };
    if (reply) await this.send({ id: frame.id, ...reply });
  }

  /** Writes one frame. */
  send(frame: Record<string, unknown>): Promise<void> {
    const line = `${JSON.stringify({ jsonrpc: "2.0", ...frame })}\n`;
    return this.#writer.write(new TextEncoder().encode(line));
  }

  /** Sends a request and returns mm's response frame (result or error). */
  request(method: string, params: unknown, ms = WAIT_MS): Promise<Frame> {
    const id = `t${this.#nextId++}`;
    const answer = this.waitFor(
      (f) => f.id === id && f.method === undefined,
      `the answer to ${method}`,
      ms,
    );
    return noStrayRejection(this.send({ id, method, params }).then(() => answer));
  }

  /** Sends a notification. */
  notify(method: string, params: unknown): Promise<void> {
    return this.send({ method, params });
  }

  /** Resolves with the first frame (from `from` on) that matches, before the deadline. */
  waitFor(match: (f: Frame) => boolean, what: string, ms = WAIT_MS, from = 0): Promise<Frame> {
    return this.#wait(
      (async () => {
        while (true) {
          const found = this.frames.slice(from).find(match);
          if (found) return found;
          await new Promise<void>((wake) => this.#wake.push(wake));
        }
      })(),
      what,
      ms,
    );
  }

  /** Resolves once stderr contains `text`, before the deadline. */
  waitForStderr(text: string, ms = WAIT_MS): Promise<void> {
    return this.#wait(
      (async () => {
        while (!this.stderr.includes(text)) {
          await new Promise<void>((wake) => this.#wake.push(wake));
        }
      })(),
      () => `stderr line ${JSON.stringify(text)}; stderr so far:\n${clip(this.stderr)}`,
      ms,
    );
  }

  /** mm's `[acp] …` lines on stderr. */
  acpLines(): string[] {
    return this.stderr.split("\n").filter((l) => l.startsWith("[acp] "));
  }

  /** Requests from mm with this method, in order. */
  requests(method: string): Frame[] {
    return this.frames.filter((f) => f.method === method && f.id !== undefined);
  }

  /** `session/update` notifications, in order (`update` objects only). */
  updates(sessionId?: string): acp.SessionUpdate[] {
    return this.frames
      .filter((f) =>
        f.method === "session/update" && (!sessionId || f.params?.sessionId === sessionId)
      )
      .map((f) => (f.params as unknown as acp.SessionNotification).update);
  }

  /** `initialize` with this `org.mini-me/tools` value (omitted when `undefined`). */
  async initialize(tools: unknown = [HOST_INFO]): Promise<Frame> {
    const answer = await this.request("initialize", {
      protocolVersion: 1,
      clientInfo: { name: "wire-test", version: "0" },
      clientCapabilities: {
        fs: { readTextFile: false, writeTextFile: false },
        terminal: false,
        ...(tools === undefined ? {} : { _meta: { "org.mini-me/tools": tools } }),
      },
    });
    if (answer.error) throw new Error(`initialize failed: ${clip(JSON.stringify(answer.error))}`);
    return answer;
  }

  /** `session/new` (with these `mcpServers`, for the agent stand-in); returns the session id. */
  async newSession(cwd = "/tmp", mcpServers: unknown[] = []): Promise<string> {
    const answer = await this.request("session/new", { cwd, mcpServers });
    if (answer.error) throw new Error(`session/new failed: ${clip(JSON.stringify(answer.error))}`);
    return (answer.result as acp.NewSessionResponse).sessionId;
  }

  /** Sends a prompt; resolves with mm's answer frame once it comes. */
  startTurn(sessionId: string, text: string, ms = WAIT_MS): Promise<Frame> {
    return this.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] }, ms);
  }

  /** One prompt turn; returns the stop reason, or throws on an error answer. */
  async prompt(sessionId: string, text: string, ms = WAIT_MS): Promise<string> {
    const answer = await this.startTurn(sessionId, text, ms);
    if (answer.error) {
      throw new Error(`session/prompt failed: ${clip(JSON.stringify(answer.error))}`);
    }
    return (answer.result as acp.PromptResponse).stopReason;
  }

  /**
   * From now on leaves mm's requests of `method` unanswered; resolves when the first one arrives
   * (fails after `ms`).
   */
  stall(method: string, ms = WAIT_MS): Promise<void> {
    return this.#wait(
      new Promise<void>((resolve) => {
        this.handlers[method] = () => {
          resolve();
          return undefined;
        };
      }),
      `mm's ${method} request`,
      ms,
    );
  }

  /** The text of each final `tool_call_update` (completed or failed), in order. */
  finalTexts(sessionId?: string): string[] {
    return this.updates(sessionId).flatMap((u) =>
      u.sessionUpdate === "tool_call_update" &&
        (u.status === "completed" || u.status === "failed")
        ? [contentText(u.content)]
        : []
    );
  }

  /** The agent's message text (all chunks), joined. */
  answerText(sessionId?: string): string {
    return this.updates(sessionId).map((u) =>
      u.sessionUpdate === "agent_message_chunk" && u.content.type === "text" ? u.content.text : ""
    ).join("");
  }

  /**
   * Ends the stand-in: fails every wait still pending (their timers gone with them), closes its
   * stdin, then kills it if it lingers.
   */
  async close(): Promise<void> {
    this.#ending.abort();
    await this.#writer.close().catch(() => {});
    const exited = await deadline(this.#child.status, "mm-sim to exit", 2000).catch(() =>
      undefined
    );
    if (!exited) {
      try {
        this.#child.kill("SIGKILL");
      } catch { /* already gone */ }
      await this.#child.status;
    }
    await deadline(this.#reading, "mm-sim's output to end", 2000).catch(() => {});
  }
}

/**
 * Starts the stand-in, runs `body` with it, and always ends it. What went wrong on the test
 * client's side of the wire meanwhile (a handler that threw, a frame that is not JSON) fails the
 * test too.
 */
export async function withPeer(
  options: PeerOptions,
  body: (peer: Peer) => Promise<void>,
): Promise<void> {
  const peer = new Peer(options);
  let failure: unknown;
  try {
    await body(peer);
  } catch (error) {
    failure = error;
  } finally {
    await peer.close();
  }
  if (failure === undefined && peer.problems.length === 0) return;
  const more = `${peer.problems.map((problem) => `\n${problem}`).join("")}\nmm's stderr:\n${
    clip(peer.stderr)
  }`;
  if (!(failure instanceof Error)) {
    throw new Error(`${failure ?? "on the test client's side of the wire:"}${more}`);
  }
  failure.message += more;
  throw failure;
}

/** What a wait is for, in words. */
function describe(what: string | (() => string)): string {
  return typeof what === "string" ? what : what();
}
