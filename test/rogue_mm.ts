/**
 * A peer that plays mm badly on purpose, for the tests of peers, rendering, cancellation and ending: raw
 * newline-delimited JSON, no SDK, one scenario per run (`ROGUE_SCENARIO`).
 * Unlike `mm_sim.ts` it is not faithful to mm; it is what a broken or hostile
 * agent could send. It reports what it saw as `[rogue] …` lines on stderr.
 *
 * @module
 */

type Message = Record<string, unknown>;

const encoder = new TextEncoder();
const inbox: Message[] = [];
let wake: (() => void) | undefined;
let closed = false;
/** Set by a scenario that stops reading its stdin for good, or until a time. */
let deaf = false;
let pausedUntil = 0;
/**
 * When the peer last began to write (`Date.now()`): the client cannot have heard anything from it
 * since, so a test can time from here what the client does after hearing it.
 */
let lastSent = 0;

/** Writes raw text to stdout, in 64 KiB writes; false once stdout is gone. */
async function write(raw: string): Promise<boolean> {
  lastSent = Date.now();
  const bytes = encoder.encode(raw);
  for (let at = 0; at < bytes.length;) {
    try {
      at += await Deno.stdout.write(bytes.subarray(at, Math.min(at + 65536, bytes.length)));
    } catch {
      return false;
    }
  }
  return true;
}

function send(message: Message): Promise<boolean> {
  return write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
}

function report(line: string): void {
  console.error(`[rogue] ${line}`);
}

async function readInbox(): Promise<void> {
  let buffer = "";
  for await (const piece of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    buffer += piece;
    let end;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      if (line.trim()) inbox.push(JSON.parse(line));
    }
    wake?.();
    // A peer that stops reading: the client's writes fill the pipe and stay there.
    if (deaf) await new Promise(() => {});
    // One that stops for a while: the client's writes wait, and more answers queue behind them.
    while (Date.now() < pausedUntil) {
      await new Promise((r) => setTimeout(r, pausedUntil - Date.now()));
    }
  }
  closed = true;
  wake?.();
}

/** Ends the pause under way when the test says go on ({@linkcode pause}). */
let goOn: (() => void) | undefined;
/** Whether the test has said go on at least once. */
let toldToGoOn = false;
/** Whether the test said go on when no pause was under way: the next one then ends at once. */
let goOnPending = false;

/**
 * Waits `ms` (or `ROGUE_PAUSE_MS`, when the test sets it), or less: until the test says go on
 * (SIGUSR1), having seen on its side what the pause was there for, such as a progress line that
 * has counted a second; said before the pause began, it ends the pause at once. A test that says
 * nothing gets the pause whole.
 */
function pause(ms: number): Promise<void> {
  const longest = Number(Deno.env.get("ROGUE_PAUSE_MS") ?? ms);
  if (goOnPending) {
    goOnPending = false;
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const end = () => {
      clearTimeout(timer);
      goOn = undefined;
      resolve();
    };
    const timer = setTimeout(end, longest);
    goOn = end;
  });
}

class ClientClosed extends Error {}

/** Whether a file is there. */
function attemptStat(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** The next message from the client that matches, in arrival order. */
async function next(match: (m: Message) => boolean = () => true): Promise<Message> {
  while (true) {
    const at = inbox.findIndex(match);
    if (at >= 0) return inbox.splice(at, 1)[0];
    if (closed) throw new ClientClosed();
    await new Promise<void>((resolve) => wake = resolve);
  }
}

const request = (method: string) => (m: Message) => m.method === method && "id" in m;
const answerTo = (id: unknown) => (m: Message) => m.id === id && !("method" in m);

const SESSION = "20261130-120000-0badc0de";

async function handshake(
  options: { initialize?: Message; session?: Message | "silent" } = {},
): Promise<Message> {
  const init = await next(request("initialize"));
  await send({ id: init.id, ...(options.initialize ?? { result: { protocolVersion: 1 } }) });
  const session = await next(request("session/new"));
  if (options.session === "silent") return await next(() => false);
  await send({ id: session.id, ...(options.session ?? { result: { sessionId: SESSION } }) });
  return await next(request("session/prompt"));
}

function update(u: Message): Promise<boolean> {
  return send({ method: "session/update", params: { sessionId: SESSION, update: u } });
}

function hostInfoCall(id: number | string, params: unknown): Promise<boolean> {
  return send({ id, method: "_demo.minime/host_info", params });
}

/** The line of a `host_info` call for `os`, to write many of them at once. */
function hostInfoLine(id: string): string {
  const params = { topic: "os", _meta: { "org.mini-me/sessionId": SESSION } };
  return `${JSON.stringify({ jsonrpc: "2.0", id, method: "_demo.minime/host_info", params })}\n`;
}

/** An agent message chunk of text. */
const chunk = (t: string) =>
  update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } });

/** A tool call's content: one text block. */
const textContent = (t: string) => [{ type: "content", content: { type: "text", text: t } }];

const endTurn = (prompt: Message, stopReason = "end_turn") =>
  send({ id: prompt.id, result: { stopReason } });

const PERMISSION_OPTIONS = [
  { optionId: "yes", name: "Allow", kind: "allow_once" },
  { optionId: "always", name: "Always", kind: "allow_always" },
  { optionId: "no", name: "Reject", kind: "reject_once" },
  { optionId: "never", name: "Never", kind: "reject_always" },
];

/** A permission for a call titled `title`, of the kind mm gives its client tools' calls. */
function permission(id: number, title: unknown, options: unknown = PERMISSION_OPTIONS) {
  return requestPermission(id, { toolCallId: `t${id}`, title, kind: "other" }, options);
}

function requestPermission(id: number, toolCall: object, options: unknown = PERMISSION_OPTIONS) {
  const params = { sessionId: SESSION, toolCall, options };
  return send({ id, method: "session/request_permission", params });
}

/** An initialize answer that advertises session/close (ACP v1). */
const CLOSES = {
  result: { protocolVersion: 1, agentCapabilities: { sessionCapabilities: { close: {} } } },
};

/** A `tool_call` update: a call announced, as real agents do. */
const announce = (toolCallId: string, title: string, kind: string, status = "pending") =>
  update({ sessionUpdate: "tool_call", toolCallId, title, kind, status });

/** A `tool_call_update` of the call `toolCallId`. */
const callUpdate = (toolCallId: string, fields: Record<string, unknown>) =>
  update({ sessionUpdate: "tool_call_update", toolCallId, ...fields });

/** Asks for a permission for `toolCall` as real agents do, and reports the client's answer. */
async function askPermission(id: number, toolCall: object) {
  await requestPermission(id, toolCall);
  report(`answer ${JSON.stringify(await next(answerTo(id)))}`);
}

/**
 * Text that would clear the screen, set the window title, write the
 * clipboard, move the cursor back over what was shown, ring the bell, delete,
 * and open a one-byte CSI, were a terminal to obey it.
 */
export const HOSTILE =
  "<\x1b[2J|\x1b]0;pwned\x07|\x1b]52;c;aGVsbG8=\x07|back\b\b|del\x7f|csi\u009b2J|tab\tok>";

const scenarios: Record<string, () => Promise<void>> = {
  async "refuse-initialize"() {
    const init = await next(request("initialize"));
    // Its data says it again: said once.
    const error = { code: -32603, message: "no model configured", data: "no model configured" };
    await send({ id: init.id, error });
    await next(() => false);
  },
  async "refuse-session"() {
    await handshake({ session: { error: { code: -32602, message: "cwd must be absolute" } } });
  },
  async "refuse-session-details"() {
    // The ACP SDK's shape for a thrown error: its reason in `data.details` (the Claude adapter's,
    // logged in without a model). On two lines, as a reason with a stack may be.
    const details = "Claude Code process exited with code 1\n  (not logged in)";
    const error = { code: -32603, message: "Internal error", data: { details } };
    await handshake({ session: { error } });
  },
  async "refuse-prompt-data"() {
    const prompt = await handshake(); // `data` a plain string, as JSON-RPC allows
    const error = { code: -32603, message: "Internal error", data: "rate limited; retry in 20 s" };
    await send({ id: prompt.id, error });
    await next(() => false);
  },
  async "refuse-prompt"() {
    const prompt = await handshake();
    await send({ id: prompt.id, error: { code: -32603, message: "the model is not loaded" } });
    await next(() => false);
  },
  async "version-2"() {
    // A client that went on anyway would end this turn at once: exit 0, not a hang.
    await endTurn(await handshake({ initialize: { result: { protocolVersion: 2 } } }));
  },
  async "version-text"() {
    await endTurn(await handshake({ initialize: { result: { protocolVersion: "1" } } }));
  },

  async "silent-session"() {
    const init = await next(request("initialize"));
    await send({ id: init.id, result: { protocolVersion: 1 } });
    report(`answered initialize at ${lastSent}`);
    await next(request("session/new"));
    await next(() => false);
  },
  async "unfiltered-sessions"() {
    // session/list that ignores its cwd filter: the newest session is another folder's.
    const init = await next(request("initialize"));
    const agentCapabilities = { sessionCapabilities: { list: {}, resume: {} } };
    await send({ id: init.id, result: { protocolVersion: 1, agentCapabilities } });
    const list = await next(request("session/list"));
    const cwd = (list.params as Message)?.cwd;
    report(`listed with ${JSON.stringify(list.params)}`);
    const sessions = [
      { sessionId: "elsewhere-newest", cwd: "/elsewhere", updatedAt: "2026-12-01T12:00:00Z" },
      { sessionId: "here-older", cwd, updatedAt: "2026-11-30T12:00:00Z" },
      { sessionId: "here-oldest", cwd, updatedAt: "2026-11-29T12:00:00Z" },
    ];
    await send({ id: list.id, result: { sessions } });
    const resume = await next(request("session/resume"));
    report(`resumed ${JSON.stringify((resume.params as Message)?.sessionId)}`);
    await send({ id: resume.id, result: {} });
    const prompt = await next(request("session/prompt"));
    await chunk("Resumed.");
    await endTurn(prompt);
  },
  async "paged-sessions"() {
    // session/list in two pages: the client follows nextCursor until there is none.
    const init = await next(request("initialize"));
    const agentCapabilities = { sessionCapabilities: { list: {} } };
    await send({ id: init.id, result: { protocolVersion: 1, agentCapabilities } });
    const session = (n: number) => ({ sessionId: `s${n}`, cwd: "/", updatedAt: `2026-12-0${n}` });
    const first = await next(request("session/list"));
    await send({ id: first.id, result: { sessions: [session(1)], nextCursor: "page-2" } });
    const second = await next(request("session/list"));
    report(`second page asked with ${JSON.stringify(second.params)}`);
    // The last one has no folder, title or date: each shows as "-".
    await send({ id: second.id, result: { sessions: [session(2), { sessionId: "s3" }] } });
    await next(() => false);
  },
  async "refusal"() {
    await endTurn(await handshake(), "refusal");
  },
  async "stop"() {
    await endTurn(await handshake(), Deno.env.get("ROGUE_STOP_REASON"));
  },
  async "killed"() {
    await handshake();
    Deno.kill(Deno.pid, "SIGKILL");
  },
  async "cancelled-unasked"() {
    await endTurn(await handshake(), "cancelled");
  },
  async "unknown-requests"() {
    const prompt = await handshake();
    await send({
      id: 1,
      method: "fs/read_text_file",
      params: { sessionId: SESSION, path: "/etc/passwd" },
    });
    await send({ id: 2, method: "terminal/create", params: { sessionId: SESSION, command: "ls" } });
    await send({ id: "three", method: "_com.example/unknown", params: {} });
    // $/cancel_request is a notification; sent as a request it is a method like any other.
    await send({ id: 4, method: "$/cancel_request", params: { requestId: 1 } });
    await send({ method: "_com.example/some_notification", params: { x: 1 } });
    await send({
      method: "session/update",
      params: { sessionId: SESSION, update: { sessionUpdate: "from_the_future" } },
    });
    for (const id of [1, 2, "three", 4]) {
      report(`answer ${JSON.stringify(await next(answerTo(id)))}`);
    }
    await endTurn(prompt);
  },
  async "bad-frames"() {
    const prompt = await handshake();
    await write("this is not json\n");
    await write("[1,2]\n");
    await write("42\n");
    await write("null\n");
    await write(`{"jsonrpc":"2.0","id":5}\n`);
    await write(`{"jsonrpc":"2.0","id":7,"params":{}}\n`);
    await write("   \n\r\n\n");
    await write(`{"jsonrpc":"2.0","id":999,"result":{}}\n`);
    // An error for a request that was answered long ago (session/new).
    await write(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"late"}}\n`);
    await write(
      `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"${SESSION}","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"still here"}}}}\r\n`,
    );
    for (let i = 0; i < 4; i++) report(`answer ${JSON.stringify(await next(answerTo(null)))}`);
    report(`answer ${JSON.stringify(await next(answerTo(5)))}`);
    report(`answer ${JSON.stringify(await next(answerTo(7)))}`);
    await endTurn(prompt);
  },
  async "flood"() {
    const prompt = await handshake();
    const count = 1000;
    const sends = [];
    for (let id = 1; id <= count; id++) {
      sends.push(hostInfoCall(id, { topic: "os", _meta: { "org.mini-me/sessionId": SESSION } }));
      if (id === 500) {
        sends.push(permission(5001, "client: host_info"));
        sends.push(
          send({
            id: 5002,
            method: "_org.mini-me/tools/list",
            params: { sessionId: SESSION, cwd: "/" },
          }),
        );
      }
    }
    await Promise.all(sends);
    const answered = new Set<unknown>();
    for (let i = 0; i < count + 2; i++) {
      const answer = await next((m) => "result" in m || "error" in m);
      if (answered.has(answer.id)) report(`answered twice: ${answer.id}`);
      answered.add(answer.id);
      if (typeof answer.id === "number" && answer.id <= count) {
        const result = answer.result as { content?: { text: string }[] };
        if (!result?.content?.[0]?.text?.includes("host name")) {
          report(`bad answer ${JSON.stringify(answer)}`);
        }
      }
    }
    const missing = [...Array(count).keys()].map((i) => i + 1).filter((id) => !answered.has(id));
    report(`host_info answered ${count - missing.length} of ${count}`);
    report(`permission answered: ${answered.has(5001)}, list answered: ${answered.has(5002)}`);
    await endTurn(prompt);
  },
  async "permission-attack"() {
    const prompt = await handshake();
    const cases: [unknown, unknown][] = [
      ["client: host_info", PERMISSION_OPTIONS],
      ["client: host_info ", PERMISSION_OPTIONS],
      ["Client: host_info", PERMISSION_OPTIONS],
      ["client: host_info; rm -rf /", PERMISSION_OPTIONS],
      ["client: other", PERMISSION_OPTIONS],
      ["bash: ls", PERMISSION_OPTIONS],
      ["", PERMISSION_OPTIONS],
      [undefined, PERMISSION_OPTIONS],
      ["client: host_info", [
        { optionId: "always", name: "Always", kind: "allow_always" },
        PERMISSION_OPTIONS[3],
      ]],
      ["bash: ls", [PERMISSION_OPTIONS[0], PERMISSION_OPTIONS[3]]],
      ["bash: ls", [PERMISSION_OPTIONS[0]]],
      ["client: host_info", [PERMISSION_OPTIONS[2]]],
      ["client: host_info", []],
      ["client: host_info", "not a list"],
      ["client: host_info", [{ name: "Allow", kind: "allow_once" }]], // no optionId to pick
    ];
    for (const [i, [title, options]] of cases.entries()) {
      await permission(100 + i, title, options);
      const answer = await next(answerTo(100 + i));
      report(
        `${JSON.stringify(title ?? null)} ${JSON.stringify(options)} -> ${
          JSON.stringify(answer.result)
        }`,
      );
    }
    await endTurn(prompt);
  },
  async "bad-calls"() {
    const prompt = await handshake();
    const calls: unknown[] = [
      [1, 2],
      "os",
      null,
      { topic: 42 },
      { topic: "os", extra: true },
      { topic: "memory", _meta: {} },
      { topic: "cpu", _meta: "nope" },
    ];
    for (const [i, params] of calls.entries()) {
      await hostInfoCall(200 + i, params);
      report(`${JSON.stringify(params)} -> ${JSON.stringify(await next(answerTo(200 + i)))}`);
    }
    await send({ id: 299, method: "_demo.minime/host_info" });
    report(`no params -> ${JSON.stringify(await next(answerTo(299)))}`);
    await endTurn(prompt);
  },
  async "cancel-request"() {
    const prompt = await handshake();
    await hostInfoCall(300, { topic: "uptime" });
    await send({ method: "$/cancel_request", params: { requestId: 300 } });
    await send({ method: "$/cancel_request", params: { requestId: 12345 } });
    await send({ method: "$/cancel_request", params: {} });
    report(`answer ${JSON.stringify(await next(answerTo(300)))}`);
    await endTurn(prompt);
  },
  async "render"() {
    const prompt = await handshake();
    await update({
      sessionUpdate: "agent_thought_chunk",
      content: { type: "text", text: "thinking hard" },
    });
    await update({
      sessionUpdate: "plan",
      entries: [{ content: "look", priority: "high", status: "completed" }, {
        content: "answer",
        priority: "low",
        status: "pending",
      }],
    });
    await update({
      sessionUpdate: "tool_call",
      toolCallId: "a",
      title: "client: host_info",
      kind: "other",
    });
    await callUpdate("a", {
      status: "failed",
      content: [{ type: "content", content: { type: "text", text: "first line\nsecond line" } }],
    });
    await callUpdate("b", { title: "renamed", status: "failed" });
    await callUpdate("c", { status: "failed" });
    await callUpdate("a", {
      status: "completed",
      content: [{ type: "content", content: { type: "image", data: "", mimeType: "image/png" } }, {
        type: "diff",
        path: "/x",
        newText: "",
      }],
    });
    await update({
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: "An answer" },
    });
    await update({
      sessionUpdate: "agent_message_chunk",
      content: { type: "image", data: "", mimeType: "image/png" },
    });
    await update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "" } });
    await update({
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: "ends here." },
    });
    await update({
      sessionUpdate: "usage_update",
      used: 1234,
      size: 32768,
      cost: { amount: 0.02, currency: "USD" },
    });
    await update({ sessionUpdate: "current_mode_update", currentModeId: "x" });
    await endTurn(prompt);
  },
  async "big-chunk"() {
    const prompt = await handshake();
    const size = Number(Deno.env.get("ROGUE_SIZE") ?? 16 * 1024 * 1024);
    // "é" is two bytes: 64 KiB writes split some of them in half.
    const text = "é".repeat(size / 4) + "x".repeat(size / 2);
    await update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
    await endTurn(prompt);
  },
  async "huge-line"() {
    await handshake();
    const head = `{"jsonrpc":"2.0","method":"session/update","params":{"text":"`;
    await write(head);
    const block = "a".repeat(1024 * 1024);
    for (let i = 0; i < 40; i++) await write(block);
    await write(`"}}\n`);
    await next(() => false);
  },
  async "exit-mid-call"() {
    await handshake();
    await hostInfoCall(400, { topic: "os" });
    Deno.exit(0);
  },
  async "permission-after-cancel"() {
    const prompt = await handshake();
    await update({
      sessionUpdate: "agent_thought_chunk",
      content: { type: "text", text: "waiting" },
    });
    const cancel = await next((m) => m.method === "session/cancel");
    report(`got ${JSON.stringify(cancel)}`);
    await permission(500, "client: host_info");
    report(`answer ${JSON.stringify(await next(answerTo(500)))}`);
    await endTurn(prompt, "cancelled");
  },
  async "ignore-cancel"() {
    await handshake();
    await update({
      sessionUpdate: "agent_thought_chunk",
      content: { type: "text", text: "waiting" },
    });
    setInterval(() => {}, 1000);
  },
  async "helpers"() {
    const prompt = await handshake();
    // A helper in mm's process group, as an agent running a tool would have.
    const helper = new Deno.Command("sleep", { args: ["60"] }).spawn();
    Deno.writeTextFileSync(Deno.env.get("ROGUE_PID_FILE")!, `${Deno.pid} ${helper.pid}`);
    await endTurn(prompt);
    report(`ended the turn at ${lastSent}`);
    setInterval(() => {}, 1000); // and mm itself ignores the end of its stdin
  },

  // ─── Noise, floods and odd text ────────────────────────────────────────────
  async "garbage"() {
    const prompt = await handshake();
    const lines = Number(Deno.env.get("ROGUE_GARBAGE_LINES") ?? 25);
    // Split: half the lines, one good frame, the other half, so that no run of them is as long.
    const halves = Deno.env.get("ROGUE_GARBAGE_SPLIT")
      ? [lines >> 1, lines - (lines >> 1)]
      : [lines];
    for (const [i, count] of halves.entries()) {
      if (i > 0) {
        await update({
          sessionUpdate: "agent_message_chunk",
          content: { type: "text", text: "." },
        });
      }
      await write("not json\n".repeat(count));
    }

    // Answers come in the order of the frames: once this call is answered,
    // every answer to a bad frame that will come has come.
    await hostInfoCall(1, { topic: "os" });
    await next(answerTo(1));
    await new Promise((resolve) => setTimeout(resolve, 200));
    report(`answers to bad frames: ${inbox.filter(answerTo(null)).length}`);
    await endTurn(prompt);
  },
  async "flood-garbage"() {
    await handshake();
    // Like `yes "not json"` in the middle of a turn, until the client hangs up.
    const block = "not json\n".repeat(1000);
    while (await write(block));
    Deno.exit(0);
  },
  async "slow-reader"() {
    // mm stops reading its stdin for a while, with 3,000 calls sent: while the client's write of
    // their answers waits, the answers it makes next are queued behind it. None may be lost.
    const prompt = await handshake();
    pausedUntil = Date.now() + 1500;
    const pad = "y".repeat(1000); // a long id: the answer repeats it
    const count = 3000;
    let text = "";
    for (let id = 0; id < count; id++) {
      text += hostInfoLine(`${id}-${pad}`);
    }
    await write(text);
    const answered = new Set<unknown>();
    while (answered.size < count) {
      const quiet = new Promise<undefined>((r) => setTimeout(() => r(undefined), 3000));
      const answer = await Promise.race([next((m) => "result" in m || "error" in m), quiet]);
      if (!answer) break; // nothing for 3 s: what is missing will not come
      answered.add(answer.id);
    }
    report(`answered ${answered.size} of ${count}`);
    await endTurn(prompt);
  },
  async "deaf-flood"() {
    await handshake();
    deaf = true;
    const count = Number(Deno.env.get("ROGUE_CALLS") ?? 200_000);
    const pad = "x".repeat(Number(Deno.env.get("ROGUE_ID_PAD") ?? 2500));
    let sent = 0;
    const giveUp = () => {
      report(`sent ${sent} of ${count} calls`);
      Deno.exit(0);
    };
    setTimeout(giveUp, Number(Deno.env.get("ROGUE_GIVE_UP_MS") ?? 8000));
    // A client that stops reading while its answers cannot be written blocks the writes for good:
    // once one has waited ROGUE_GIVE_UP_BLOCKED_MS, more time would show nothing more.
    const blockedMs = Number(Deno.env.get("ROGUE_GIVE_UP_BLOCKED_MS") ?? Infinity);
    let movedAt = Date.now();
    if (Number.isFinite(blockedMs)) {
      setInterval(() => {
        if (Date.now() - movedAt > blockedMs) giveUp();
      }, 100);
    }
    for (let batch = 0; batch < count; batch += 100) {
      let text = "";
      for (let id = batch; id < Math.min(batch + 100, count); id++) {
        // A long id: the answer repeats it, so each answer is a few KiB.
        text += hostInfoLine(`${id}-${pad}`);
      }
      if (!await write(text)) return;
      sent = Math.min(batch + 100, count);
      movedAt = Date.now();
    }
    await new Promise(() => {}); // never reads, never ends: the timer ends it
  },
  async "hostile-text"() {
    const prompt = await handshake();
    const hostile = HOSTILE;
    console.error(`[mm] log${hostile}`); // its own log, too
    await update({
      sessionUpdate: "tool_call",
      toolCallId: "h",
      title: `ti\rtle${hostile}`,
      kind: "other",
    });
    await callUpdate("h", {
      status: "completed",
      content: [{ type: "content", content: { type: "text", text: `result${hostile}` } }],
    });
    await update({
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: `answer${hostile}\rend` },
    });
    await write("\x1b[2Jbad frame\x07\n");
    await endTurn(prompt);
  },
  async "crlf-tool-text"() {
    const prompt = await handshake();
    await update({ sessionUpdate: "tool_call", toolCallId: "t", title: "crlf", kind: "other" });
    await callUpdate("t", {
      status: "completed",
      content: [{ type: "content", content: { type: "text", text: "a\r\nb" } }],
    });
    await endTurn(prompt);
  },
  async "end-no-newline"() {
    const prompt = await handshake();
    await update({
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: "last words" },
    });
    // The final answer is the last bytes mm ever writes, with no line end.
    await write(
      JSON.stringify({ jsonrpc: "2.0", id: prompt.id, result: { stopReason: "end_turn" } }),
    );
    Deno.exit(0);
  },
  async "burst-then-exit"() {
    const prompt = await handshake();
    const frame = (update: Message) =>
      `${
        JSON.stringify({
          jsonrpc: "2.0",
          method: "session/update",
          params: { sessionId: SESSION, update },
        })
      }\n`;
    // Everything in one write, then mm is gone at once.
    await write(
      frame({ sessionUpdate: "tool_call", toolCallId: "b", title: "burst", kind: "other" }) +
        frame({
          sessionUpdate: "tool_call_update",
          toolCallId: "b",
          status: "completed",
          content: [{ type: "content", content: { type: "text", text: "one\ntwo" } }],
        }) +
        // Enough frames that some are still in the pipe when mm is gone.
        Array.from({ length: 2000 }, (_, i) =>
          frame({
            sessionUpdate: "tool_call_update",
            toolCallId: "b",
            content: [{ type: "content", content: { type: "text", text: `line ${i + 1}` } }],
          })).join("") +
        frame({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "All " } }) +
        frame({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "shown." } }) +
        `${
          JSON.stringify({ jsonrpc: "2.0", id: prompt.id, result: { stopReason: "end_turn" } })
        }\n`,
    );
    Deno.exit(0);
  },
  async "id-types"() {
    const prompt = await handshake();
    const ids = [7, "7", 0, 9007199254740991];
    for (const id of ids) {
      await hostInfoCall(id, { topic: "os", _meta: { "org.mini-me/sessionId": SESSION } });
    }
    const answers = [];
    for (const _ of ids) answers.push(await next((m) => "result" in m || "error" in m));
    for (const answer of answers) report(`answer id ${JSON.stringify(answer.id)}`);
    await endTurn(prompt);
  },
  async "exit-at-prompt"() {
    // A turn ended, then mm exits while the client waits for its next question.
    const prompt = await handshake();
    await chunk("Done.");
    await endTurn(prompt);
    await pause(300);
    Deno.exit(4);
  },
  async "exit-after-initialize"() {
    const init = await next(request("initialize"));
    await send({ id: init.id, result: { protocolVersion: 1 } });
    Deno.exit(0);
  },
  async "interleave"() {
    const prompt = await handshake();
    await chunk("Part one,");
    await hostInfoCall(1, { topic: "os" });
    await next(answerTo(1));
    await chunk(" part two,");
    await write("not json\n");
    await next(answerTo(null));
    await update({
      sessionUpdate: "agent_thought_chunk",
      content: { type: "text", text: "thinking hard" },
    });
    await chunk(" part three.");
    await update({ sessionUpdate: "usage_update", used: 1234, size: 32768 });
    await write(`{"jsonrpc":"2.0","id":999,"result":{}}\n`);
    await chunk(" The end");
    await endTurn(prompt);
  },
  // Edges of what the user sees and of the pipes.
  async "odd-updates"() {
    const prompt = await handshake();
    await send({ method: "session/update", params: { sessionId: SESSION, update: null } });
    await send({ method: "session/update", params: { sessionId: SESSION, update: "text" } });
    await update({
      sessionUpdate: "tool_call",
      toolCallId: "t1",
      title: "client: host_info",
      content: [{ type: "content", content: { type: "text", text: "one\ntwo\n" } }],
    });
    await update({
      sessionUpdate: "agent_thought_chunk",
      content: { type: "text", text: "a thought without its line end" },
    });
    await update({
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: "Done." },
    });
    await endTurn(prompt);
  },
  // ─── Tools a copy of the client lends (see test/tools_test.ts) ──────────────
  async "lent-tools"() {
    const prompt = await handshake();
    const call = (id: number, method: string, params: Message = {}) =>
      send({ id, method, params: { ...params, _meta: { "org.mini-me/sessionId": SESSION } } });
    const answers: Message[] = [];
    const collect = async (count: number) => {
      for (let i = 0; i < count; i++) {
        answers.push(await next((m) => "result" in m || "error" in m));
      }
    };
    // A slow call, then a quick one: the quick one is answered first.
    await call(1, "_test/slow", { ms: 400 });
    await call(2, "_demo.minime/host_info", { topic: "os" });
    await collect(2);
    // A call mm cancels while it runs: answered -32800 at once, and never again.
    await call(3, "_test/slow", { ms: 3000 }); // not cancelled, it would answer in 3 s
    await send({ method: "$/cancel_request", params: { requestId: 3 } });
    await collect(1);
    await call(4, "_test/throws");
    await call(5, "_test/rejects");
    await collect(2);
    // Arguments its schema refuses: the tool does not run.
    await call(8, "_test/slow", { ms: "soon" });
    await collect(1);
    // The permission policy follows the tools lent.
    await permission(6, "client: slow");
    await permission(7, "client: throws");
    await collect(2);
    await new Promise((resolve) => setTimeout(resolve, 300)); // a late answer to 3 would be here
    for (const answer of [...answers, ...inbox.splice(0)]) {
      report(`answer ${JSON.stringify(answer)}`);
    }
    await endTurn(prompt);
  },

  // ─── Long turns (--turn-timeout) ───────────────────────────────────────────
  async "chatty"() {
    // A model that keeps talking for longer than any turn timeout a test gives, then ends well.
    const prompt = await handshake();
    const until = Date.now() + Number(Deno.env.get("ROGUE_CHATTY_MS") ?? 2500);
    // The waits between two updates, in turn, in ms.
    const gaps = (Deno.env.get("ROGUE_CHATTY_GAPS_MS") ?? "200").split(",").map(Number);
    for (let i = 0; Date.now() < until && !toldToGoOn; i++) {
      await update({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "." } });
      await new Promise((resolve) => setTimeout(resolve, gaps[i % gaps.length]));
    }
    await chunk("Done talking.");
    await endTurn(prompt);
  },
  async "silent"() {
    // A model that says nothing at all (or once, after ROGUE_SPEAK_AFTER_MS), and ends the turn
    // only when it is cancelled.
    const prompt = await handshake();
    const speakAfter = Deno.env.get("ROGUE_SPEAK_AFTER_MS");
    if (speakAfter) {
      await new Promise((resolve) => setTimeout(resolve, Number(speakAfter)));
      await update({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "." } });
    }
    const silentSince = lastSent;
    const cancel = await next((m) => m.method === "session/cancel");
    report(`got ${JSON.stringify(cancel)} after ${Date.now() - silentSince} ms of silence`);
    await endTurn(prompt, "cancelled");
  },
  async "slow-client-call"() {
    // mm calls the client and waits for the answer: mm is not silent, it is waiting.
    const prompt = await handshake();
    await send({ id: 9, method: "_test/slow", params: { ms: 1500 } });
    report(`answer ${JSON.stringify(await next(answerTo(9)))}`);
    await chunk("Thanks.");
    await endTurn(prompt);
  },

  // ─── mm's own stderr, which the client passes on ───────────────────────────
  async "stderr-short"() {
    // A short log line while the client's progress line is up.
    const prompt = await handshake();
    await pause(1200);
    Deno.stderr.writeSync(encoder.encode("[mm] hi\n"));
    await new Promise((resolve) => setTimeout(resolve, 400));
    await chunk("Said hi.");
    await endTurn(prompt);
  },
  async "stderr-burst-exit"() {
    // Many log lines in one write, the last one not ended, then mm is gone at once.
    await handshake();
    const lines = Array.from({ length: 3000 }, (_, i) => `[mm] line ${i + 1}\n`).join("") +
      "[mm] last words, no line end";
    Deno.stderr.writeSync(encoder.encode(lines));
    Deno.exit(3);
  },
  async "stderr-helper-exit"() {
    // mm exits while a helper of its own keeps mm's stderr open; its last words have no line end.
    await handshake();
    const helper = new Deno.Command("sleep", { args: ["30"], stderr: "inherit" }).spawn();
    Deno.writeTextFileSync(Deno.env.get("ROGUE_PID_FILE")!, ` ${helper.pid}`, { append: true });
    Deno.stderr.writeSync(encoder.encode("[mm] a whole line\n[mm] last words, no line end"));
    Deno.exit(3);
  },
  async "stderr-split"() {
    // Two log lines in one write, then the answer's text: both lines come before it. After a log
    // line of 70 KiB (passed on in pieces, as a flood is), one line in two writes with the
    // answer's text between.
    const prompt = await handshake();
    Deno.stderr.writeSync(encoder.encode("[mm] one\n[mm] two\n"));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await chunk("After two lines.\n");
    Deno.stderr.writeSync(encoder.encode(`[mm] ${"x".repeat(70 * 1024)}\n`));
    Deno.stderr.writeSync(encoder.encode("[mm] a line in two wri"));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await chunk("Hello.");
    await new Promise((resolve) => setTimeout(resolve, 300));
    Deno.stderr.writeSync(encoder.encode("tes\n"));
    await endTurn(prompt);
  },
  async "stderr-flood"() {
    // 48 MiB of log with no line end, as fast as the pipe takes it, then one line.
    const prompt = await handshake();
    const block = encoder.encode("x".repeat(64 * 1024));
    for (let i = 0; i < 768; i++) {
      for (let at = 0; at < block.length;) at += await Deno.stderr.write(block.subarray(at));
    }
    Deno.stderr.writeSync(encoder.encode("\n[mm] flood done\n"));
    await endTurn(prompt);
  },

  // ─── What real agents send (ACP v1 shapes the stand-in never sends) ──────────
  async "unannounced-permission"() {
    const prompt = await handshake();
    await chunk("I will list / with the shell tool.");
    await askPermission(600, {
      toolCallId: "shell-1",
      title: "ls /",
      kind: "execute",
      rawInput: { command: "ls /" },
    });
    await chunk("The shell tool answered: nothing.");
    await endTurn(prompt);
  },
  async "renamed-call"() {
    const prompt = await handshake();
    await announce("t1", "Terminal", "execute");
    await callUpdate("t1", { title: "ls -la /", status: "in_progress" });
    await askPermission(601, { toolCallId: "t1", title: "ls -la /", kind: "execute" });
    await callUpdate("t1", { status: "failed" });
    await announce("t2", "bash", "execute");
    await callUpdate("t2", {
      title: "cat /etc/hostname",
      status: "completed",
      content: textContent("vm\n"),
    });
    await endTurn(prompt);
  },
  async "growing-content"() {
    const prompt = await handshake();
    await announce("g1", "npm test", "execute", "in_progress");
    // ACP: content in an update replaces the call's content, so each carries everything so far.
    for (
      const soFar of [
        "line 1\n",
        "line 1\nline 2\n",
        "line 1\nline 2\nline 3",
        "line 1\nline 2\nline 3 done\n",
      ]
    ) {
      await callUpdate("g1", { content: textContent(soFar) });
    }
    await callUpdate("g1", { status: "completed", content: textContent("all 3 passed\n") });
    // A line that is not the last grew: the content does not extend what was shown.
    await announce("g2", "lint", "execute", "in_progress");
    await callUpdate("g2", { content: textContent("a\nb\n") });
    await callUpdate("g2", { status: "completed", content: textContent("a changed\nb\nc\n") });
    await endTurn(prompt);
  },
  async "refused-then-cancelled"() {
    // Two turns: a permission refused in the first, which ends well; the second mm cancels itself.
    let prompt = await handshake();
    await permission(700, "bash: ls");
    await next(answerTo(700));
    await endTurn(prompt);
    prompt = await next(request("session/prompt"));
    await endTurn(prompt, "cancelled");
  },
  async "unknown-kinds"() {
    // Kinds of update a later ACP may add, some named as what every JavaScript object has.
    const prompt = await handshake();
    for (const kind of ["future_thing", "constructor", "toString", "__proto__", "hasOwnProperty"]) {
      await update({ sessionUpdate: kind, text: "?" });
    }
    await chunk("Still here.");
    await endTurn(prompt);
  },
  async "unfinished-call"() {
    // Two turns: in the first a call is announced, never finished; the second only thinks.
    let prompt = await handshake();
    await announce("u1", "never finished", "execute", "in_progress");
    await endTurn(prompt);
    prompt = await next(request("session/prompt"));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await update({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "." } });
    await pause(1700);
    await chunk("Thought about it.");
    await endTurn(prompt);
  },
  async "two-running-calls"() {
    // Two of the agent's own calls running at once: the latest is the one waited for.
    const prompt = await handshake();
    await announce("t1", "first call", "execute", "in_progress");
    await announce("t2", "second call", "execute", "in_progress");
    await pause(2000);
    await callUpdate("t2", { status: "completed" });
    await callUpdate("t1", { status: "completed" });
    await endTurn(prompt);
  },
  async "same-call-updates"() {
    // An agent's own call that reports on itself every 200 ms, its title the same each time.
    const prompt = await handshake();
    await announce("t1", "npm test", "execute", "in_progress");
    const since = Date.now();
    let said = false;
    while (!toldToGoOn) {
      await callUpdate("t1", { title: "npm test", status: "in_progress" });
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (said || Date.now() - since < 3000) continue;
      report("updates for 3 s"); // on mm's stderr: the client shows it, then its progress line
      said = true;
    }
    await callUpdate("t1", { status: "completed", content: textContent("all passed\n") });
    await endTurn(prompt);
  },
  async "newest"() {
    // The frames a newest real adapter sent for one shape (test/data/newest-agents.jsonl, the
    // line ROGUE_SHAPE), in a turn of its own; ROGUE_SKIP names frames to leave out (\`0,2\`),
    // ROGUE_EXIT_CODE replaces a terminal's exit code. It reports the answers to its requests.
    const prompt = await handshake();
    const file = new URL("data/newest-agents.jsonl", import.meta.url);
    const shapes = Deno.readTextFileSync(file).trim().split("\n").map((line) => JSON.parse(line));
    const { frames } = shapes[Number(Deno.env.get("ROGUE_SHAPE") ?? 0)];
    const skip = (Deno.env.get("ROGUE_SKIP") ?? "").split(",").filter((n) => n !== "").map(Number);
    const exitCode = Deno.env.get("ROGUE_EXIT_CODE");
    for (const [at, frame] of (frames as Message[]).entries()) {
      if (skip.includes(at)) continue;
      const params: Message = { ...(frame.params as Message), sessionId: SESSION };
      const exit = ((params.update as Message)?._meta as Message)?.terminal_exit as Message;
      if (exit && exitCode !== undefined) exit.exit_code = Number(exitCode);
      if (!("id" in frame)) {
        await send({ method: frame.method, params });
        continue;
      }
      await send({ id: frame.id, method: frame.method, params });
      report(`answer ${JSON.stringify(await next(answerTo(frame.id)))}`);
    }
    await endTurn(prompt);
  },
  async "permission-by-id"() {
    // The call announced as the client's own tool, then a permission that names it by its id alone.
    const prompt = await handshake();
    await announce("c1", "client: host_info", "other");
    await callUpdate("c1", { status: "in_progress" }); // says nothing of its title: it stays
    await requestPermission(700, { toolCallId: "c1", status: "pending" });
    report(`answer ${JSON.stringify(await next(answerTo(700)))}`);
    await endTurn(prompt);
  },
  async "permission-says-more"() {
    // A call announced as the client's own tool, then asked about as a shell command: what the
    // request says now is what is judged. Then a call described by nothing but empty lists.
    const prompt = await handshake();
    await announce("c2", "client: host_info", "other");
    const command = "rm -rf /tmp/x";
    await askPermission(701, {
      toolCallId: "c2",
      title: command,
      kind: "execute",
      rawInput: { command },
    });
    await askPermission(702, { toolCallId: "c3", content: [], locations: [] });
    await endTurn(prompt);
  },
  async "call-shapes"() {
    // Messages told apart by id around tool calls; a terminal's output in three updates; a
    // failed call's rawOutput; a content block not wrapped in `{ type: "content" }`.
    const prompt = await handshake();
    const message = (messageId: string, text: string) =>
      update({ sessionUpdate: "agent_message_chunk", messageId, content: { type: "text", text } });
    await message("m1", "Let me look.");
    await announce("t1", "make test", "execute", "in_progress");
    const delta = (data: string) => ({ terminal_output_delta: { data, terminal_id: "t1" } });
    await callUpdate("t1", { status: "in_progress", _meta: delta("line 1\nline ") });
    await callUpdate("t1", { status: "in_progress", _meta: delta("2\n") });
    await callUpdate("t1", { status: "failed", _meta: { terminal_exit: { exit_code: 2 } } });
    await announce("f1", "Fetch page", "fetch", "in_progress");
    await callUpdate("f1", { status: "failed", rawOutput: "404 not found" });
    await announce("b1", "Bare block", "read", "in_progress");
    await callUpdate("b1", { status: "completed", content: [{ type: "text", text: "bare text" }] });
    await message("m2", "Done.");
    await endTurn(prompt);
  },
  async "running-call"() {
    // An agent's own tool that runs for a while: the client can only wait for it, by its title.
    const prompt = await handshake();
    await announce("t1", "npm test", "execute", "in_progress");
    await pause(2500);
    await callUpdate("t1", { status: "completed", content: textContent("all passed\n") });
    await endTurn(prompt);
  },
  async "raw-output"() {
    const prompt = await handshake();
    const lines = Array.from({ length: 25 }, (_, i) => `log ${i + 1}`).join("\n");
    await announce("r1", "Read log", "read");
    await callUpdate("r1", { status: "completed", rawOutput: lines });
    await announce("r2", "Exit code", "execute");
    await callUpdate("r2", { status: "completed", rawOutput: { exitCode: 0, stdout: "ok" } });
    await announce("r3", "With content", "read");
    await callUpdate("r3", { content: textContent("the content"), rawOutput: "not shown" });
    await callUpdate("r3", { status: "completed" });
    await announce("r4", "Early raw", "read");
    await callUpdate("r4", { status: "in_progress", rawOutput: "read early" });
    await callUpdate("r4", { status: "completed" });
    const twenty = Array.from({ length: 20 }, (_, i) => `row ${i + 1}`).join("\n");
    await announce("r5", "Twenty rows", "read");
    await callUpdate("r5", { status: "completed", rawOutput: twenty });
    await endTurn(prompt);
  },
  async "diff-terminal"() {
    const prompt = await handshake();
    const diff = { type: "diff", path: "/p/a.txt", oldText: "a\nb\nc\n", newText: "a\nB\nc\nd\n" };
    const created = { type: "diff", path: "/p/new.txt", oldText: null, newText: "x\ny\n" };
    // A line of the old text that the new one has twice: one kept, one added.
    const doubled = { type: "diff", path: "/p/twice.txt", oldText: "a\n", newText: "a\na\n" };
    await update({
      sessionUpdate: "tool_call",
      toolCallId: "d1",
      title: "Edit files",
      kind: "edit",
      status: "completed",
      content: [diff, created, doubled],
    });
    await update({
      sessionUpdate: "tool_call",
      toolCallId: "d2",
      title: "Run tests",
      kind: "execute",
      status: "in_progress",
      content: [{ type: "terminal", terminalId: "term-1" }],
    });
    await callUpdate("d2", { status: "completed" });
    await endTurn(prompt);
  },
  async "glued-text"() {
    const prompt = await handshake();
    await announce("s1", "search", "search");
    await chunk("Searching.");
    await callUpdate("s1", { status: "in_progress" });
    await chunk("Found it.");
    await callUpdate("s1", { status: "completed" });
    await chunk("");
    await chunk(" Done.");
    await endTurn(prompt);
  },
  async "session-extras"() {
    const prompt = await handshake();
    await update({
      sessionUpdate: "available_commands_update",
      availableCommands: [{ name: "web", description: "Search the web" }, {
        name: "test",
        description: "Run the tests",
        input: { hint: "which" },
      }],
    });
    await update({ sessionUpdate: "current_mode_update", currentModeId: "code" });
    await update({
      sessionUpdate: "session_info_update",
      title: "Host facts",
      updatedAt: "2026-12-01T10:00:00Z",
    });
    await update({ sessionUpdate: "session_info_update", updatedAt: "2026-12-01T10:00:01Z" });
    await update({
      sessionUpdate: "config_option_update",
      configOptions: [
        {
          id: "model",
          name: "Model",
          type: "select",
          currentValue: "qwen",
          options: [{ value: "qwen", name: "Qwen" }],
        },
        { id: "fast", name: "Fast", type: "boolean", currentValue: true },
      ],
    });
    for (const used of [100, 200]) {
      await update({ sessionUpdate: "usage_update", used, size: 1000 });
    }
    await chunk("Settled.");
    await update({
      sessionUpdate: "usage_update",
      used: 300,
      size: 1000,
      cost: { amount: 0.01, currency: "USD" },
    });
    await endTurn(prompt);
  },
  async "self-cancel"() {
    const prompt = await handshake();
    await askPermission(602, {
      toolCallId: "rm-1",
      title: "rm -rf /tmp/x",
      kind: "delete",
      rawInput: { command: "rm -rf /tmp/x" },
    });
    await endTurn(prompt, "cancelled");
  },

  // ─── A person asked at a terminal, and session/close ────────────────────────
  async "ask-shell"() {
    // A shell command of mm's own, announced, then asked about with every kind of option.
    const prompt = await handshake();
    await announce("sh-1", "ls -la /srv", "execute");
    const toolCall = { toolCallId: "sh-1", kind: "execute", rawInput: { command: "ls -la /srv" } };
    await requestPermission(610, { ...toolCall, title: "ls -la /srv" });
    report(`answer ${JSON.stringify((await next(answerTo(610))).result)}`);
    // The client sends session/cancel before it answers cancelled: the turn ends cancelled.
    const cancelled = inbox.some((m) => m.method === "session/cancel");
    await chunk("Done.");
    await endTurn(prompt, cancelled ? "cancelled" : "end_turn");
  },
  async "ask-then-slow"() {
    // A shell command asked about; once answered, mm takes its time before it says anything.
    const prompt = await handshake();
    await announce("sh-2", "ls -la /srv", "execute");
    const toolCall = { toolCallId: "sh-2", kind: "execute", rawInput: { command: "ls -la /srv" } };
    await requestPermission(612, { ...toolCall, title: "ls -la /srv" });
    report(`answer ${JSON.stringify((await next(answerTo(612))).result)}`);
    await pause(1500);
    await chunk("Done.");
    await endTurn(prompt);
  },
  async "ask-then-withdraw"() {
    // A question mm withdraws (its own timeout) before the person answers, then a while of mm's
    // own, then a turn it ends cancelled by itself: nobody refused anything.
    const prompt = await handshake();
    await announce("rm-1", "rm -rf /tmp/scratch", "delete");
    const toolCall = { toolCallId: "rm-1", kind: "delete", rawInput: { command: "rm -rf /tmp/x" } };
    await requestPermission(613, { ...toolCall, title: "rm -rf /tmp/scratch" });
    await pause(1500);
    await send({ method: "$/cancel_request", params: { requestId: 613 } });
    report(`answer ${JSON.stringify(await next(answerTo(613)))}`);
    await callUpdate("rm-1", { status: "failed" });
    await pause(1500);
    await endTurn(prompt, "cancelled");
  },
  async "ask-edit"() {
    // An edit, with a diff and a place, and only two options: allow once and reject once.
    const prompt = await handshake();
    const path = "/srv/app/config.yaml";
    const diff = {
      type: "diff",
      path,
      oldText: "port: 80\nhost: a\n",
      newText: "port: 8080\nhost: a\n",
    };
    const toolCall = { toolCallId: "ed-1", title: "Edit config.yaml", kind: "edit" };
    const options = [PERMISSION_OPTIONS[0], PERMISSION_OPTIONS[2]];
    await requestPermission(
      611,
      { ...toolCall, content: [diff], locations: [{ path, line: 1 }] },
      options,
    );
    report(`answer ${JSON.stringify((await next(answerTo(611))).result)}`);
    await endTurn(prompt);
  },
  async "ask-empty-input"() {
    // A call whose input is empty: nothing to show of it.
    const prompt = await handshake();
    await askPermission(614, {
      toolCallId: "e-1",
      title: "Look around",
      kind: "read",
      rawInput: {},
    });
    await endTurn(prompt);
  },
  async "ask-two"() {
    // Two permissions at once, as an agent running two calls in parallel asks them.
    const prompt = await handshake();
    for (const [id, file] of [[612, "one"], [613, "two"]] as const) {
      const command = `rm /tmp/${file}`;
      const toolCall = { toolCallId: `rm-${file}`, title: command, kind: "delete" };
      await requestPermission(id, { ...toolCall, rawInput: { command } });
    }
    for (const id of [612, 613]) {
      report(`answer ${id} ${JSON.stringify((await next(answerTo(id))).result)}`);
    }
    await endTurn(prompt);
  },
  async "ask-then-exit"() {
    // Asks, then exits while the question is open.
    await handshake();
    await requestPermission(614, { toolCallId: "x-1", title: "ls /", kind: "execute" });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    Deno.exit(3);
  },
  async "close-then-refuse"() {
    // Advertises session/close, refuses the prompt (the lending fails), then ignores the end of
    // its stdin: a session/close sent now would wait for an answer that never comes.
    const init = await next(request("initialize"));
    await send({ id: init.id, ...CLOSES });
    const session = await next(request("session/new"));
    await send({ id: session.id, result: { sessionId: SESSION } });
    const prompt = await next(request("session/prompt"));
    // Said first: the client, which ends mm at once, cannot have heard the refusal before this.
    report(`refused the prompt at ${Date.now()}`);
    await send({ id: prompt.id, error: { code: -32603, message: "the model is gone" } });
    const close = await next(request("session/close"));
    report(`got session/close ${JSON.stringify(close.params)}`);
  },
  async "helpers-then-exit"() {
    // A helper in mm's process group; mm itself exits at the end of its stdin, as it should.
    const prompt = await handshake();
    const helper = new Deno.Command("sleep", { args: ["60"] }).spawn();
    Deno.writeTextFileSync(Deno.env.get("ROGUE_PID_FILE")!, `${Deno.pid} ${helper.pid}`);
    await endTurn(prompt);
    await next(() => false).catch(() => {}); // until its stdin ends
    Deno.exit(0); // its helper left running
  },
  async "call-then"() {
    // Calls the client's tool `_test/wait`, and while it runs (ROGUE_THEN): `exit`s, ends the
    // turn (`end`), at session/cancel ends it `cancelled` without cancelling the call
    // (`cancel`), or waits for the client to end it all (`hold`).
    const prompt = await handshake();
    const params = { _meta: { "org.mini-me/sessionId": SESSION } };
    await send({ id: 7, method: "_test/wait", params });
    const then = Deno.env.get("ROGUE_THEN");
    if (then === "exit") Deno.exit(0);
    if (then === "hold") await next(() => false);
    if (then === "cancel") await next((m) => m.method === "session/cancel");
    await endTurn(prompt, then === "cancel" ? "cancelled" : "end_turn");
    await next(() => false);
  },
  async "mcp-call-then"() {
    // As an agent that is not mm: takes the client's MCP server (HTTP), calls its tool `wait`
    // there, and once it runs (ROGUE_WAIT_FILE appears) does as ROGUE_THEN says, as "call-then"
    // does, or cancels the call itself (`cancel-call`) and ends the turn.
    const init = await next(request("initialize"));
    const agentCapabilities = { mcpCapabilities: { http: true } };
    await send({ id: init.id, result: { protocolVersion: 1, agentCapabilities } });
    const session = await next(request("session/new"));
    const [server] = (session.params as { mcpServers: Message[] }).mcpServers;
    const given = server.headers as { name: string; value: string }[];
    const headers = {
      ...Object.fromEntries(given.map(({ name, value }) => [name, value])),
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    };
    const post = (id: number | undefined, method: string, params: Message) =>
      fetch(String(server.url), {
        method: "POST",
        headers,
        body: JSON.stringify({ jsonrpc: "2.0", id, method, params }), // no id: a notification
      });
    await (await post(0, "tools/list", {})).text(); // the tools listed: no wait for the prompt
    await send({ id: session.id, result: { sessionId: SESSION } });
    const prompt = await next(request("session/prompt"));
    post(1, "tools/call", { name: "wait" }).catch(() => {}); // left to run
    const then = Deno.env.get("ROGUE_THEN");
    const file = Deno.env.get("ROGUE_WAIT_FILE"); // none: it does not wait for the call to run
    while (file && then !== "hold" && !attemptStat(file)) {
      await new Promise((r) => setTimeout(r, 20));
    }
    if (then === "exit") Deno.exit(0);
    if (then === "cancel-call") {
      // The agent cancels the call itself, as MCP has it, and goes on.
      const cancelled = await post(undefined, "notifications/cancelled", { requestId: 1 });
      report(`cancelled the call: ${cancelled.status}`);
    }
    if (then === "hold") await next(() => false);
    if (then === "cancel") await next((m) => m.method === "session/cancel");
    await endTurn(prompt, then === "cancel" ? "cancelled" : "end_turn");
    await next(() => false);
  },
  async "close-unanswered"() {
    // Advertises session/close, and never answers it; ignores the end of its stdin too.
    const prompt = await handshake({ initialize: CLOSES });
    await endTurn(prompt);
    report(`ended the turn at ${lastSent}`);
    const close = await next(request("session/close"));
    report(`got session/close ${JSON.stringify(close.params)}`);
    setInterval(() => {}, 1000);
  },
  async "close-refused"() {
    // Advertises session/close, answers it with an error, and exits at the end of its stdin.
    const prompt = await handshake({ initialize: CLOSES });
    await endTurn(prompt);
    const close = await next(request("session/close"));
    await send({ id: close.id, error: { code: -32603, message: "Internal error" } });
  },
  async "pause-mid-answer"() {
    const prompt = await handshake();
    await update({
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: "Half an answer" },
    });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await update({
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: " and the rest." },
    });
    await endTurn(prompt);
  },
};

if (import.meta.main) {
  const name = Deno.env.get("ROGUE_SCENARIO") ?? "";
  const scenario = scenarios[name];
  if (!scenario) {
    report(`no scenario ${JSON.stringify(name)}; one of: ${Object.keys(scenarios).join(", ")}`);
    Deno.exit(2);
  }
  // A listener from the start: a signal that came outside a pause would otherwise end the peer.
  Deno.addSignalListener("SIGUSR1", () => {
    toldToGoOn = true;
    if (goOn) goOn();
    else goOnPending = true;
  });
  const pidFile = Deno.env.get("ROGUE_PID_FILE");
  if (pidFile) Deno.writeTextFileSync(pidFile, String(Deno.pid));
  readInbox().catch(() => closed = true);
  await scenario().catch((error) => {
    if (!(error instanceof ClientClosed)) report(`scenario ended: ${error}`);
  });
}
