/**
 * A small mm for the `--resume` tests of an mm that cannot resume sessions:
 * raw newline-delimited JSON, no SDK. `RESUME_PEER_CAPS` says what it
 * advertises in `initialize`:
 * - `load` (default): `loadSession: true` and no `sessionCapabilities`; it
 *   knows one earlier session, {@linkcode KNOWN_SESSION}; in request mode it
 *   asks for the tool list for it, as mm does for `session/new`, then replays
 *   it as `session/update` notifications, then answers `session/load`;
 * - `none`: neither `loadSession` nor `sessionCapabilities.resume`.
 *
 * A prompt makes one `host_info` call (`memory`) and answers with what it
 * read, then `end_turn`. It reports what it saw as `[peer] …` on stderr.
 *
 * @module
 */

type Message = Record<string, unknown>;

/** The one session this peer can load. */
export const KNOWN_SESSION = "20261130-120000-5e55104d";
/** The earlier question the replay carries. */
export const EARLIER_QUESTION = "How much memory did I have yesterday?";
/** The earlier answer the replay carries. */
export const EARLIER_ANSWER = "Yesterday host_info reported 1.0 GiB free of 2.0 GiB.";
/** How the answer to a new prompt begins. */
export const ANSWER_START = "The peer read: ";

const encoder = new TextEncoder();
const waiting = new Map<unknown, (answer: Message) => void>();
let nextId = 100;
let announced: unknown;

function send(message: Message): Promise<void> {
  const line = `${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`;
  return Deno.stdout.write(encoder.encode(line)).then(() => {}, () => {});
}

function report(text: string): void {
  console.error(`[peer] ${text}`);
}

/** Sends a request to the client and waits for its answer. */
async function ask(method: string, params: Message): Promise<Message> {
  const id = nextId++;
  const answer = new Promise<Message>((resolve) => waiting.set(id, resolve));
  await send({ id, method, params });
  return await answer;
}

function update(sessionId: string, u: Message): Promise<void> {
  return send({ method: "session/update", params: { sessionId, update: u } });
}

const text = (t: string) => ({ type: "text", text: t });

async function handle(message: Message): Promise<void> {
  const method = message.method;
  const params = (message.params ?? {}) as Message;
  const id = message.id;
  const caps = Deno.env.get("RESUME_PEER_CAPS") ?? "load";
  if (method === "initialize") {
    announced = ((params.clientCapabilities as Message)?._meta as Message)?.["org.mini-me/tools"];
    await send({
      id,
      result: {
        protocolVersion: 1,
        agentCapabilities: { loadSession: caps === "load" },
        authMethods: [],
      },
    });
  } else if (method === "session/new") {
    await send({ id, result: { sessionId: "20261130-120000-0000e11e" } });
  } else if (method === "session/load" && caps === "load") {
    const sessionId = String(params.sessionId);
    report(`session/load ${sessionId}`);
    if (sessionId !== KNOWN_SESSION) {
      await send({ id, error: { code: -32002, message: `session ${sessionId} not found` } });
      return;
    }
    if (announced === true) {
      const list = await ask("_org.mini-me/tools/list", { sessionId, cwd: params.cwd });
      report(`list answered: ${JSON.stringify(list.result ?? list.error).slice(0, 60)}`);
    }
    await update(sessionId, {
      sessionUpdate: "user_message_chunk",
      content: text(EARLIER_QUESTION),
    });
    await update(sessionId, {
      sessionUpdate: "tool_call",
      toolCallId: "call_1",
      title: "client: host_info",
      kind: "other",
      status: "pending",
      rawInput: { topic: "memory" },
    });
    await update(sessionId, {
      sessionUpdate: "tool_call_update",
      toolCallId: "call_1",
      status: "completed",
      content: [{ type: "content", content: text("1.0 GiB free of 2.0 GiB") }],
    });
    await update(sessionId, {
      sessionUpdate: "agent_message_chunk",
      content: text(EARLIER_ANSWER),
    });
    await send({ id, result: {} });
  } else if (method === "session/prompt") {
    const sessionId = String(params.sessionId);
    await update(sessionId, {
      sessionUpdate: "tool_call",
      toolCallId: "call_2",
      title: "client: host_info",
      kind: "other",
      status: "pending",
      rawInput: { topic: "memory" },
    });
    const answer = await ask("_demo.minime/host_info", {
      topic: "memory",
      _meta: { "org.mini-me/sessionId": sessionId },
    });
    const result = (answer.result ?? {}) as Message;
    const read = Array.isArray(result.content)
      ? result.content.map((block) => String(block?.text ?? "")).join("")
      : JSON.stringify(answer.error);
    await update(sessionId, {
      sessionUpdate: "tool_call_update",
      toolCallId: "call_2",
      status: "completed",
      content: [{ type: "content", content: text(read) }],
    });
    await update(sessionId, {
      sessionUpdate: "agent_message_chunk",
      content: text(`${ANSWER_START}${read}.`),
    });
    await send({ id, result: { stopReason: "end_turn" } });
  } else if (method !== undefined && id !== undefined) {
    report(`refused ${method}`);
    await send({ id, error: { code: -32601, message: "Method not found" } });
  } else if (method === undefined && waiting.has(id)) {
    waiting.get(id)!(message);
    waiting.delete(id);
  }
}

if (import.meta.main) {
  let buffer = "";
  for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    let end;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, end).trim();
      buffer = buffer.slice(end + 1);
      if (!line) continue;
      // Not awaited: a prompt waits for the client's answers, which arrive on this loop.
      handle(JSON.parse(line)).catch((error) => report(`failed: ${error}`));
    }
  }
  Deno.exit(0);
}
