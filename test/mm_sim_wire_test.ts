/**
 * The mm stand-in over the wire, as a client meets it: each test starts
 * `test/mm-sim -acp -agent <file>`, speaks newline-delimited JSON-RPC to it,
 * and checks one row of mini-me's acp-client-tools.md ("Référence : outils
 * du client ACP") that a client can observe. What the model read is the
 * text of each call's final `tool_call_update`.
 */

import assert from "./_assert.ts";
import type * as acp from "@agentclientprotocol/sdk";
import { agentYaml, deadline, type Frame, HOST_INFO, type Peer, withPeer } from "./_wire.ts";
import { cutToMaxOutput } from "./mm_sim.ts";
import { assertTook, idleRunMs } from "./_run.ts";
import { scratchDir } from "./_scratch.ts";
import { acpErrors } from "./_schema.ts";

const QUESTION = "What operating system does my machine run, and how much memory does it have?";

/** Starts mm with a meta agent, announces `tools` in initialize, and returns mm's `[acp]` lines. */
async function metaLines(tools: unknown[]): Promise<string[]> {
  let lines: string[] = [];
  await withPeer({}, async (peer) => {
    await peer.initialize(tools);
    await peer.waitForStderr("[acp] client tools (meta):");
    lines = peer.acpLines();
  });
  return lines;
}

/** The index of a frame in what mm wrote. */
function at(peer: Peer, frame: Frame): number {
  return peer.frames.indexOf(frame);
}

/** A promise and its resolver, for a client that answers later. */
function later<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => resolve = r);
  return { promise, resolve };
}

// ─── Validation d'une liste ──────────────────────────────────────────────────
// (acp-client-tools.md, "Validation d'une liste"): "Une entrée invalide est
// ignorée et une ligne est écrite sur le stderr de mm ([acp] client tools:
// entry <i> skipped: <raison>) ; les autres entrées sont gardées".

Deno.test('stand-in: an entry that is not a tool object is skipped as "not a tool description"', async () => {
  const lines = await metaLines([
    "host_info",
    3,
    [HOST_INFO],
    { ...HOST_INFO, name: 5 },
    HOST_INFO,
  ]);
  for (let i = 0; i < 4; i++) {
    assert.ok(
      lines.some((l) =>
        l.startsWith(`[acp] client tools: entry ${i} skipped: not a tool description: `)
      ),
      lines.join("\n"),
    );
  }
  assert.ok(lines.includes("[acp] client tools (meta): client_host_info"), lines.join("\n"));
});

Deno.test('stand-in: an entry whose name is absent, empty or null is skipped as "no name"', async () => {
  const lines = await metaLines([
    { method: "_a/b" },
    { name: "", method: "_a/b" },
    { name: null, method: "_a/b" },
    HOST_INFO,
  ]);
  assert.deepEqual(lines, [
    "[acp] client tools: entry 0 skipped: no name",
    "[acp] client tools: entry 1 skipped: no name",
    "[acp] client tools: entry 2 skipped: no name",
    "[acp] client tools (meta): client_host_info",
  ]);
});

Deno.test("stand-in: an entry whose method is absent or not an extension method is skipped", async () => {
  const lines = await metaLines([{ name: "a" }, { name: "b", method: "workspace/buffers" }]);
  assert.deepEqual(lines, [
    '[acp] client tools: entry 0 skipped: method "" must start with "_" (an ACP extension method)',
    '[acp] client tools: entry 1 skipped: method "workspace/buffers" must start with "_" (an ACP extension method)',
    "[acp] client tools (meta): ",
  ]);
});

Deno.test("stand-in: an entry whose inputSchema describes something else than an object is skipped", async () => {
  const lines = await metaLines([{ ...HOST_INFO, inputSchema: { type: "array" } }]);
  assert.equal(
    lines[0],
    '[acp] client tools: entry 0 skipped: inputSchema.type must be "object", got "array"',
  );
});

Deno.test("stand-in: of two entries with the same model name the first is kept and the second skipped", async () => {
  await withPeer({}, async (peer) => {
    peer.handlers["_other/host"] = () => ({ result: "from the second" });
    await peer.initialize([HOST_INFO, { name: "host-info", method: "_other/host" }]);
    await peer.waitForStderr("(meta)");
    assert.deepEqual(peer.acpLines(), [
      '[acp] client tools: entry 1 skipped: duplicate tool name "client_host_info"',
      "[acp] client tools (meta): client_host_info",
    ]);
    const session = await peer.newSession();
    assert.equal(await peer.prompt(session, "Which OS?"), "end_turn");
    assert.equal(peer.requests("_other/host").length, 0);
    assert.deepEqual(peer.finalTexts(), ["fact about os"]);
  });
});

Deno.test("stand-in: the tools are sorted by the name the model sees, with names normalised", async () => {
  const lines = await metaLines([
    { name: "zeta", method: "_z" },
    { name: "  open buffers!", method: "_o" },
    HOST_INFO,
  ]);
  assert.deepEqual(lines, [
    "[acp] client tools (meta): client_host_info, client_open_buffers, client_zeta",
  ]);
});

Deno.test("stand-in: null fields of a tool description read as absent: default description, no schema", async () => {
  await withPeer({}, async (peer) => {
    await peer.initialize([{ ...HOST_INFO, description: null, inputSchema: null }]);
    const session = await peer.newSession();
    // No schema, so no required parameter: the call without a topic reaches the client.
    assert.equal(await peer.prompt(session, "Tell me without a topic"), "end_turn");
    assert.deepEqual(peer.requests("_demo.minime/host_info")[0].params, {
      _meta: { "org.mini-me/sessionId": session },
    });
    const thought = peer.updates().find((u) => u.sessionUpdate === "agent_thought_chunk");
    assert.ok(
      JSON.stringify(thought).includes("Tool provided by the editor (_demo.minime/host_info)."),
    );
  });
});

// ─── Découverte ──────────────────────────────────────────────────────────────

Deno.test("stand-in: meta mode: the list of initialize serves every session and mm asks for none", async () => {
  await withPeer({}, async (peer) => {
    await peer.initialize();
    const first = await peer.newSession();
    const second = await peer.newSession();
    assert.equal(await peer.prompt(second, QUESTION), "end_turn");
    assert.equal(await peer.prompt(first, "Which CPU?"), "end_turn");
    assert.equal(peer.requests("_org.mini-me/tools/list").length, 0);
    assert.deepEqual(peer.finalTexts(second), ["fact about os", "fact about memory"]);
    assert.deepEqual(peer.finalTexts(first), ["fact about cpu"]);
    assert.ok(peer.acpLines().includes("[acp] client tools (meta): client_host_info"));
  });
});

Deno.test("stand-in: meta mode: true instead of a list gives no tool and the documented line", async () => {
  // (acp-client-tools.md, "Mode meta"): "la valeur true à la place d'une liste ne donne aucun outil".
  await withPeer({}, async (peer) => {
    await peer.initialize(true);
    const session = await peer.newSession();
    assert.equal(await peer.prompt(session, QUESTION), "end_turn");
    assert.deepEqual(peer.acpLines(), [
      '[acp] client tools: "org.mini-me/tools" is not a list of tools; a client that answers _org.mini-me/tools/list needs acp.clientTools.discovery: request',
    ]);
    assert.equal(peer.requests("_org.mini-me/tools/list").length, 0);
    assert.match(peer.answerText(), /^I cannot see your machine/);
  });
});

Deno.test("stand-in: request mode: mm asks for the list while it handles session/new, before answering", async () => {
  // (acp-client-tools.md, "Mode request"): "avant d'y répondre".
  await withPeer({ agent: agentYaml({ discovery: "request" }) }, async (peer) => {
    await peer.initialize(true);
    const answer = await peer.request("session/new", { cwd: "/home/me/project", mcpServers: [] });
    const sessionId = (answer.result as { sessionId: string }).sessionId;
    const [list] = peer.requests("_org.mini-me/tools/list");
    assert.deepEqual(list.params, { sessionId, cwd: "/home/me/project" });
    assert.ok(at(peer, list) < at(peer, answer));
    assert.deepEqual(peer.acpLines(), [
      `[acp] session ${sessionId} client tools (request): client_host_info`,
    ]);
    assert.equal(await peer.prompt(sessionId, "How much RAM?"), "end_turn");
    assert.deepEqual(peer.finalTexts(), ["fact about memory"]);
  });
});

for (
  const [what, reply, line] of [
    [
      "an error",
      { error: { code: -32603, message: "Internal error" } },
      'list request failed: {"code":-32603,"message":"Internal error"}',
    ],
    ["no tools array", { result: { tool: [HOST_INFO] } }, "the list answer has no tools array"],
  ] as const
) {
  Deno.test(`stand-in: request mode: a list answer with ${what} gives no tool, a line, and the session opens`, async () => {
    await withPeer({ agent: agentYaml({ discovery: "request" }) }, async (peer) => {
      peer.handlers["_org.mini-me/tools/list"] = () => reply;
      await peer.initialize(true);
      const session = await peer.newSession();
      assert.deepEqual(peer.acpLines(), [`[acp] client tools: session ${session}: ${line}`]);
      assert.equal(await peer.prompt(session, QUESTION), "end_turn");
      assert.match(peer.answerText(), /^I cannot see your machine/);
    });
  });
}

Deno.test("stand-in: request mode: a list not answered within the timeout gives no tool and is cancelled", async () => {
  const idle = idleRunMs(); // beside it: how long the machine takes to do nothing
  await withPeer({ agent: agentYaml({ discovery: "request", timeout: "300ms" }) }, async (peer) => {
    peer.handlers["_org.mini-me/tools/list"] = () => undefined;
    await peer.initialize(true);
    const started = performance.now();
    const session = await peer.newSession();
    const took = performance.now() - started;
    assertTook("session/new was answered", took, {
      least: 298,
      most: 300,
      idle: await idle,
    });
    const [list] = peer.requests("_org.mini-me/tools/list");
    assert.ok(
      peer.frames.some((f) => f.method === "$/cancel_request" && f.params?.requestId === list.id),
    );
    assert.deepEqual(peer.acpLines(), [
      `[acp] client tools: session ${session}: list request failed: context deadline exceeded`,
    ]);
  });
});

Deno.test("stand-in: each session asks for the list again, and two sessions may have different tools", async () => {
  // (acp-client-tools.md, "Mode request"): "Chaque session redemande la liste".
  await withPeer({ agent: agentYaml({ discovery: "request" }) }, async (peer) => {
    let asked = 0;
    peer.handlers["_org.mini-me/tools/list"] = () => ({
      result: { tools: asked++ === 0 ? [HOST_INFO] : [] },
    });
    await peer.initialize(true);
    const first = await peer.newSession();
    const second = await peer.newSession();
    assert.deepEqual(
      peer.requests("_org.mini-me/tools/list").map((f) => f.params?.sessionId),
      [first, second],
    );
    await peer.prompt(second, QUESTION);
    await peer.prompt(first, QUESTION);
    assert.match(peer.answerText(second), /^I cannot see your machine/);
    assert.deepEqual(peer.finalTexts(first), ["fact about os", "fact about memory"]);
  });
});

// ─── Appel d'un outil ────────────────────────────────────────────────────────

Deno.test("stand-in: a call without its required parameters never reaches the client", async () => {
  // (acp-client-tools.md, "Avant la requête"): "Aucune requête n'est envoyée".
  await withPeer({}, async (peer) => {
    await peer.initialize();
    const session = await peer.newSession();
    assert.equal(await peer.prompt(session, "Tell me without a topic"), "end_turn");
    assert.equal(peer.requests("_demo.minime/host_info").length, 0);
    assert.deepEqual(peer.finalTexts(), [
      "[client tool error: missing required parameters: topic]",
    ]);
    assert.ok(
      peer.updates().some((u) => u.sessionUpdate === "tool_call_update" && u.status === "failed"),
    );
  });
});

for (
  const [what, agent, asks] of [
    ["permissions: ask", agentYaml({ permissions: "ask" }), true],
    ["permissions: auto with yolo: false", agentYaml({ yolo: false }), true],
    ["permissions: auto with yolo: true", agentYaml(), false],
  ] as const
) {
  Deno.test(`stand-in: ${what}: mm ${asks ? "asks before each call" : "asks no permission"}`, async () => {
    // (acp-client-tools.md, "Avant la requête"): the title is "client: <name>", the kind "other".
    await withPeer({ agent }, async (peer) => {
      await peer.initialize();
      const session = await peer.newSession();
      assert.equal(await peer.prompt(session, QUESTION), "end_turn");
      const asked = peer.requests("session/request_permission");
      const calls = peer.requests("_demo.minime/host_info");
      assert.equal(asked.length, asks ? 2 : 0);
      assert.equal(calls.length, 2);
      for (const [i, permission] of asked.entries()) {
        const toolCall = permission.params?.toolCall as Record<string, unknown>;
        assert.equal(toolCall.title, "client: host_info");
        assert.equal(toolCall.kind, "other");
        assert.ok(at(peer, permission) < at(peer, calls[i]));
      }
      assert.deepEqual(peer.finalTexts(), ["fact about os", "fact about memory"]);
    });
  });
}

for (
  const [what, reply] of [
    ["the reject option", { result: { outcome: { outcome: "selected", optionId: "reject" } } }],
    ["cancelled", { result: { outcome: { outcome: "cancelled" } } }],
    ["an option mm did not offer", {
      result: { outcome: { outcome: "selected", optionId: "yes" } },
    }],
    ["a JSON-RPC error", { error: { code: -32603, message: "Internal error" } }],
    ["a result that is not a permission outcome", { result: { allowed: true } }],
  ] as const
) {
  Deno.test(`stand-in: a permission answered with ${what} is a refusal and the turn goes on`, async () => {
    await withPeer({ agent: agentYaml({ permissions: "ask" }) }, async (peer) => {
      peer.handlers["session/request_permission"] = () => reply;
      await peer.initialize();
      const session = await peer.newSession();
      assert.equal(await peer.prompt(session, QUESTION), "end_turn");
      assert.equal(peer.requests("_demo.minime/host_info").length, 0);
      assert.deepEqual(peer.finalTexts(), [
        "[client_host_info rejected by user]",
        "[client_host_info rejected by user]",
      ]);
      assert.match(peer.answerText(), /rejected by user/);
    });
  });
}

Deno.test("stand-in: the call carries the model's arguments at the top level and mm's _meta instead of the model's", async () => {
  // (acp-client-tools.md, "Requête"): "Un _meta que le modèle aurait mis dans ses arguments est remplacé."
  await withPeer({}, async (peer) => {
    await peer.initialize();
    const session = await peer.newSession();
    assert.equal(await peer.prompt(session, "Which OS? (the model adds a _meta)"), "end_turn");
    const toolCall = peer.updates().find((u) => u.sessionUpdate === "tool_call");
    assert.ok(JSON.stringify(toolCall).includes("made-up-by-the-model"), "the model did add one");
    assert.deepEqual(peer.requests("_demo.minime/host_info")[0].params, {
      topic: "os",
      _meta: { "org.mini-me/sessionId": session },
    });
  });
});

// ─── Réponse ─────────────────────────────────────────────────────────────────

/** Runs one turn whose calls (os, memory, cpu, uptime) the client answers with `answers[topic]`. */
async function answeredWith(
  answers: Record<string, { result: unknown } | { error: Frame["error"] }>,
  agent = agentYaml(),
): Promise<{ texts: string[]; statuses: string[]; stopReason: string; answer: string }> {
  let out = { texts: [] as string[], statuses: [] as string[], stopReason: "", answer: "" };
  await withPeer({ agent }, async (peer) => {
    peer.handlers["_demo.minime/host_info"] = (params) => answers[String(params.topic)];
    await peer.initialize();
    const session = await peer.newSession();
    const question = `Tell me the ${Object.keys(answers).join(" and the ").replace("os", "OS")}`;
    const stopReason = await peer.prompt(session, question);
    out = {
      texts: peer.finalTexts(),
      statuses: peer.updates().flatMap((u) =>
        u.sessionUpdate === "tool_call_update" && u.status ? [u.status] : []
      ),
      stopReason,
      answer: peer.answerText(),
    };
  });
  return out;
}

Deno.test('stand-in: "Réponse": the text blocks of a content list, concatenated, are what the model reads', async () => {
  const run = await answeredWith({
    os: {
      result: {
        content: [{ type: "text", text: "main.go\n" }, { type: "text", text: "util.go" }],
        isError: false,
      },
    },
  });
  assert.deepEqual(run.texts, ["main.go\nutil.go"]);
  assert.deepEqual(run.statuses, ["completed"]);
  assert.match(run.answer, /main\.go\nutil\.go/);
});

Deno.test('stand-in: "Réponse": a block of another type is replaced by the "non-text content" text', async () => {
  const run = await answeredWith({
    os: {
      result: {
        content: [{ type: "image", data: "", mimeType: "image/png" }, { type: "text", text: "!" }],
      },
    },
  });
  assert.deepEqual(run.texts, ["[client tool: non-text content of type image skipped]!"]);
});

Deno.test('stand-in: "Réponse": isError true makes a failed call the model reads as a client tool error', async () => {
  const run = await answeredWith({
    os: { result: { content: [{ type: "text", text: "no such topic" }], isError: true } },
  });
  assert.deepEqual(run.texts, ["[client tool error: no such topic]"]);
  assert.deepEqual(run.statuses, ["failed"]);
  assert.equal(run.stopReason, "end_turn");
});

Deno.test('stand-in: "Réponse": a JSON string is read without its quotes, any other value as JSON text', async () => {
  const run = await answeredWith({
    os: { result: "Linux, plain" },
    memory: { result: { free: 3, unit: "GiB" } },
    cpu: { result: 8 },
    uptime: { result: [1, "two"] },
  });
  assert.deepEqual(run.texts, ["Linux, plain", '{"free":3,"unit":"GiB"}', "8", '[1,"two"]']);
  assert.deepEqual(run.statuses, ["completed", "completed", "completed", "completed"]);
});

// ─── Erreurs ─────────────────────────────────────────────────────────────────

Deno.test('stand-in: "Erreurs": a JSON-RPC error is read as its compact JSON and the turn goes on', async () => {
  const run = await answeredWith({
    os: { error: { code: -32601, message: "Method not found" } },
    memory: { result: "15 GiB" },
  });
  assert.deepEqual(run.texts, [
    '[client tool error: {"code":-32601,"message":"Method not found"}]',
    "15 GiB",
  ]);
  assert.deepEqual(run.statuses, ["failed", "completed"]);
  assert.equal(run.stopReason, "end_turn");
});

Deno.test('stand-in: "Erreurs": a -32800 the client sends on its own is an error like any other, data kept', async () => {
  const run = await answeredWith({
    os: { error: { code: -32800, message: "Request cancelled" } },
    memory: { error: { code: -32000, message: "busy", data: { retry: "later" } } },
  });
  assert.deepEqual(run.texts, [
    '[client tool error: {"code":-32800,"message":"Request cancelled"}]',
    '[client tool error: {"code":-32000,"message":"busy","data":{"retry":"later"}}]',
  ]);
});

Deno.test("stand-in: \"Erreurs\": mm's own timeout reads as the SDK's deadline error and sends $/cancel_request", async () => {
  await withPeer({ agent: agentYaml({ timeout: "300ms" }) }, async (peer) => {
    peer.handlers["_demo.minime/host_info"] = (params) =>
      params.topic === "os" ? undefined : { result: "answered" };
    await peer.initialize();
    const session = await peer.newSession();
    assert.equal(await peer.prompt(session, QUESTION), "end_turn");
    const [call] = peer.requests("_demo.minime/host_info");
    const cancel = peer.frames.find((f) => f.method === "$/cancel_request");
    assert.deepEqual(cancel?.params, { requestId: call.id });
    // The calls run together: the answered one ends first.
    assert.deepEqual(peer.finalTexts(), [
      "answered",
      "[client tool error: context deadline exceeded]",
    ]);
  });
});

Deno.test('stand-in: "Erreurs": session/cancel cancels the call in flight, which ends failed, and the turn ends cancelled', async () => {
  await withPeer({}, async (peer) => {
    const reached = peer.stall("_demo.minime/host_info");
    await peer.initialize();
    const session = await peer.newSession();
    const turn = peer.startTurn(session, "Which OS?");
    await reached;
    await peer.notify("session/cancel", { sessionId: session });
    const answer = await turn;
    assert.deepEqual(answer.result, { stopReason: "cancelled" });
    const [call] = peer.requests("_demo.minime/host_info");
    assert.ok(
      peer.frames.some((f) => f.method === "$/cancel_request" && f.params?.requestId === call.id),
    );
    const final = peer.frames.find((f) =>
      f.method === "session/update" &&
      (f.params?.update as { status?: string }).status === "failed"
    );
    assert.ok(
      final && at(peer, final) < at(peer, answer),
      "the call's end comes before the turn's",
    );
    assert.deepEqual(peer.finalTexts(), ["[client tool error: context canceled]"]);
  });
});

Deno.test("stand-in: session/cancel while the answer streams ends it there, and the turn cancelled", async () => {
  await withPeer({ env: { MM_SIM_STREAM_MS: "100" } }, async (peer) => {
    await peer.initialize();
    const session = await peer.newSession();
    const turn = peer.startTurn(session, "Which OS?");
    const chunk = (f: { method?: string; params?: Record<string, unknown> }) =>
      f.method === "session/update" &&
      (f.params?.update as { sessionUpdate?: string }).sessionUpdate === "agent_message_chunk" &&
      ((f.params?.update as { content?: { text?: string } }).content?.text ?? "") !== "";
    await peer.waitFor(chunk, "a first piece of the answer");
    await peer.notify("session/cancel", { sessionId: session });
    assert.deepEqual((await turn).result, { stopReason: "cancelled" });
    const streamed = peer.frames.filter(chunk).length;
    // Uncancelled, the same answer streams whole, its pieces MM_SIM_STREAM_MS apart.
    await withPeer({ env: { MM_SIM_STREAM_MS: "100" } }, async (full) => {
      await full.initialize();
      const whole = full.startTurn(await full.newSession(), "Which OS?");
      await full.waitFor(chunk, "a first piece of the answer");
      const first = performance.now();
      await whole;
      const pieces = full.frames.filter(chunk).length;
      assert.ok(streamed < pieces, `${streamed} of ${pieces} pieces: not cut`);
      const took = performance.now() - first;
      assert.ok(took >= 100 * (pieces - 1) - 20, `${pieces} pieces in ${took} ms`);
    });
  });
});

Deno.test("stand-in: a turn that calls no tool sends no plan", async () => {
  await withPeer({}, async (peer) => {
    await peer.initialize([]);
    await peer.prompt(await peer.newSession(), "Which OS?");
    const kinds = peer.updates().map((u) => u.sessionUpdate);
    assert.ok(kinds.includes("agent_message_chunk"), kinds.join(", "));
    assert.ok(!kinds.includes("plan"), kinds.join(", "));
  });
});

Deno.test("stand-in: session/cancel while mm waits for a permission ends the turn cancelled", async () => {
  await withPeer({ agent: agentYaml({ permissions: "ask" }) }, async (peer) => {
    const asked = peer.stall("session/request_permission");
    await peer.initialize();
    const session = await peer.newSession();
    const turn = peer.startTurn(session, "Which OS?");
    await asked;
    await peer.notify("session/cancel", { sessionId: session });
    assert.deepEqual((await turn).result, { stopReason: "cancelled" });
    assert.equal(peer.requests("_demo.minime/host_info").length, 0);
  });
});

Deno.test("stand-in: every result is cut to maxOutput, keeping its start and its end, errors too", async () => {
  // (acp-client-tools.md, "Erreurs"): "coupé à maxOutput caractères (début et fin conservés)".
  const long = `START${"x".repeat(300)}END`;
  const run = await answeredWith({
    os: { result: long },
    memory: { error: { code: -32000, message: long } },
  }, agentYaml({ maxOutput: 60 }));
  for (const text of run.texts) {
    assert.ok([...text].length <= 60, `${text.length}: ${text}`);
  }
  assert.ok(run.texts[0].startsWith("START") && run.texts[0].endsWith("END"), run.texts[0]);
  assert.ok(
    run.texts[1].startsWith("[client tool") && run.texts[1].endsWith('END"}]'),
    run.texts[1],
  );
  assert.ok(run.answer.includes(run.texts[0]), "the model's answer uses the cut text");
});

Deno.test("stand-in: a tiny maxOutput still cuts within the limit", async () => {
  const run = await answeredWith({ os: { result: "abcdefghij" } }, agentYaml({ maxOutput: 3 }));
  assert.deepEqual(run.texts, ["a…j"]);
});

// ─── Configuration ───────────────────────────────────────────────────────────

for (const discovery of ["meta", "request"]) {
  Deno.test(`stand-in: enabled: false (${discovery}): no list request, no client tool, no [acp] line`, async () => {
    // (acp-client-tools.md, "Configuration"): "pas de requête de liste, pas d'outil client".
    await withPeer({ agent: agentYaml({ enabled: false, discovery }) }, async (peer) => {
      await peer.initialize(discovery === "meta" ? [HOST_INFO] : true);
      const session = await peer.newSession();
      assert.equal(await peer.prompt(session, QUESTION), "end_turn");
      assert.equal(peer.requests("_org.mini-me/tools/list").length, 0);
      assert.equal(peer.requests("_demo.minime/host_info").length, 0);
      assert.deepEqual(peer.acpLines(), []);
      assert.match(peer.answerText(), /^I cannot see your machine/);
    });
  });
}

Deno.test("stand-in: timeout is a Go duration: 0m0.4s ends an unanswered call after 0.4 s", async () => {
  const idle = idleRunMs(); // beside it: how long the machine takes to do nothing
  await withPeer({ agent: agentYaml({ timeout: "0m0.4s" }) }, async (peer) => {
    peer.handlers["_demo.minime/host_info"] = () => undefined;
    await peer.initialize();
    const session = await peer.newSession();
    const started = performance.now();
    assert.equal(await peer.prompt(session, "Which OS?"), "end_turn");
    const ms = performance.now() - started;
    assertTook("the call ended", ms, { least: 398, most: 400, idle: await idle });
    assert.deepEqual(peer.finalTexts(), ["[client tool error: context deadline exceeded]"]);
  });
});

for (const bad of ["5", "soon"]) {
  Deno.test(`stand-in: timeout: ${bad} is reported on stderr and the default 30s is used`, async () => {
    await withPeer({ agent: agentYaml({ timeout: bad }) }, async (peer) => {
      // A client that takes 0.3 s: within 30 s, beyond 5 ms.
      peer.handlers["_demo.minime/host_info"] = async () => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return { result: "slow but there" };
      };
      await peer.initialize();
      const session = await peer.newSession();
      assert.equal(await peer.prompt(session, "Which OS?"), "end_turn");
      assert.deepEqual(peer.finalTexts(), ["slow but there"]);
      assert.equal(
        peer.acpLines()[0],
        `[acp] config: acp.clientTools.timeout: invalid duration "${bad}" (using 30s)`,
      );
    });
  });
}

// ─── The scripted model ──────────────────────────────────────────────────────

Deno.test("stand-in: batch model: all calls announced, then sent together, then their results", async () => {
  // The Node demo's recorded order: both 🛠️ lines, both client calls, then both results.
  await withPeer({}, async (peer) => {
    const both = later();
    let seen = 0;
    peer.handlers["_demo.minime/host_info"] = async (params) => {
      if (++seen === 2) both.resolve();
      await deadline(both.promise, "both calls before any answer");
      return { result: `fact about ${params.topic}` };
    };
    await peer.initialize();
    const session = await peer.newSession();
    assert.equal(await peer.prompt(session, QUESTION), "end_turn");
    const kinds = peer.frames.flatMap((f) => {
      if (f.method === "_demo.minime/host_info") return ["request"];
      const u = f.params?.update as { sessionUpdate?: string; status?: string } | undefined;
      if (u?.sessionUpdate === "tool_call") return ["announce"];
      if (u?.sessionUpdate === "tool_call_update") return [`update ${u.status}`];
      return [];
    });
    assert.deepEqual(kinds, [
      "announce",
      "announce",
      "request",
      "request",
      "update completed",
      "update completed",
    ]);
  });
});

Deno.test("stand-in: stepwise model: a sentence, the call in progress, its result, and only then the next", async () => {
  await withPeer({ env: { MM_SIM_MODEL: "stepwise" } }, async (peer) => {
    peer.handlers["_demo.minime/host_info"] = async (params) => {
      // A slow first answer: a stepwise model must wait for it.
      if (params.topic === "os") await new Promise((resolve) => setTimeout(resolve, 200));
      return { result: `fact about ${params.topic}` };
    };
    await peer.initialize();
    const session = await peer.newSession();
    assert.equal(await peer.prompt(session, QUESTION), "end_turn");
    const steps = peer.frames.flatMap((f) => {
      if (f.method === "_demo.minime/host_info") return ["request"];
      const u = f.params?.update as
        | { sessionUpdate?: string; status?: string; content?: { text?: string } }
        | undefined;
      if (u?.sessionUpdate === "agent_message_chunk" && u.content?.text) return ["say"];
      if (u?.sessionUpdate === "tool_call") return ["announce"];
      if (u?.sessionUpdate === "tool_call_update") return [`update ${u.status}`];
      return [];
    });
    const firstAnswerAt = steps.lastIndexOf("update completed") + 1;
    assert.deepEqual(steps.slice(0, firstAnswerAt), [
      "say",
      "announce",
      "update in_progress",
      "request",
      "update completed",
      "say",
      "announce",
      "update in_progress",
      "request",
      "update completed",
    ]);
    assert.ok(steps.slice(firstAnswerAt).every((s) => s === "say"));
    assert.deepEqual(peer.finalTexts(), ["fact about os", "fact about memory"]);
  });
});

for (const model of ["batch", "stepwise"]) {
  Deno.test(`stand-in: ${model} model: tool call ids never repeat within a session, across turns`, async () => {
    await withPeer({ env: { MM_SIM_MODEL: model } }, async (peer) => {
      await peer.initialize();
      const session = await peer.newSession();
      await peer.prompt(session, QUESTION);
      await peer.prompt(session, "Which CPU, and since when is it up?");
      const ids = peer.updates().flatMap((u) =>
        u.sessionUpdate === "tool_call" ? [u.toolCallId] : []
      );
      assert.equal(ids.length, 4);
      assert.equal(new Set(ids).size, 4, ids.join(", "));
    });
  });
}

Deno.test("stand-in: MM_SIM_STOP_REASON ends a turn with another stop reason", async () => {
  await withPeer({ env: { MM_SIM_STOP_REASON: "max_tokens" } }, async (peer) => {
    await peer.initialize();
    assert.equal(await peer.prompt(await peer.newSession(), QUESTION), "max_tokens");
  });
});

// ─── session/load and session/resume ─────────────────────────────────────────

/** Runs one turn in a first mm and returns the session id and the state folder. */
async function earlierSession(
  question = QUESTION,
): Promise<{ sessionId: string; stateDir: string; texts: string[]; answer: string }> {
  const stateDir = scratchDir("mm-sim-state-");
  let out = { sessionId: "", stateDir, texts: [] as string[], answer: "" };
  await withPeer({ stateDir }, async (peer) => {
    await peer.initialize();
    const sessionId = await peer.newSession();
    await peer.prompt(sessionId, question);
    out = { sessionId, stateDir, texts: peer.finalTexts(), answer: peer.answerText() };
  });
  return out;
}

/** The `agentCapabilities` of an `initialize` answer. */
function capabilitiesOf(answer: Frame): Record<string, unknown> {
  return (answer.result as { agentCapabilities: Record<string, unknown> }).agentCapabilities;
}

Deno.test("stand-in: session/load replays a failed call as failed", async () => {
  // The earlier turn's call fails mm's own required-parameter check.
  const earlier = await earlierSession("Tell me about it without a topic");
  await withPeer({ stateDir: earlier.stateDir }, async (peer) => {
    await peer.initialize();
    await peer.request("session/load", {
      sessionId: earlier.sessionId,
      cwd: "/tmp",
      mcpServers: [],
    });
    const finals = peer.updates().filter((u) => u.sessionUpdate === "tool_call_update");
    assert.deepEqual(finals.map((u) => u.sessionUpdate === "tool_call_update" && u.status), [
      "failed",
    ]);
    assert.deepEqual(peer.finalTexts(), [
      "[client tool error: missing required parameters: topic]",
    ]);
  });
});

Deno.test("stand-in: a session resumed from another folder is that folder's from then on", async () => {
  const earlier = await earlierSession();
  await withPeer({ stateDir: earlier.stateDir }, async (peer) => {
    await peer.initialize();
    const moved = { sessionId: earlier.sessionId, cwd: "/tmp/moved", mcpServers: [] };
    assert.deepEqual((await peer.request("session/resume", moved)).result, {});
    await peer.prompt(earlier.sessionId, "Which CPU?"); // the session is saved after a turn
    const listed = await peer.request("session/list", { cwd: "/tmp/moved" });
    const ids = (listed.result as { sessions: { sessionId: string }[] }).sessions.map((x) =>
      x.sessionId
    );
    assert.deepEqual(ids, [earlier.sessionId]);
  });
});

Deno.test("stand-in: mm advertises session/load, session/resume, session/list and session/close", async () => {
  await withPeer({}, async (peer) => {
    const capabilities = capabilitiesOf(await peer.initialize());
    assert.equal(capabilities.loadSession, true);
    assert.deepEqual(capabilities.sessionCapabilities, { resume: {}, list: {}, close: {} });
  });
});

Deno.test("stand-in: session/load in a later run replays the conversation before it answers", async () => {
  const earlier = await earlierSession();
  await withPeer({ stateDir: earlier.stateDir }, async (peer) => {
    await peer.initialize();
    const answer = await peer.request("session/load", {
      sessionId: earlier.sessionId,
      cwd: "/tmp",
      mcpServers: [],
    });
    assert.deepEqual(answer.result, {});
    const replayed = peer.frames.filter((f) => f.method === "session/update");
    assert.ok(replayed.length > 0 && replayed.every((f) => at(peer, f) < at(peer, answer)));
    assert.ok(replayed.every((f) => f.params?.sessionId === earlier.sessionId));
    const updates = peer.updates();
    assert.deepEqual(updates[0], {
      sessionUpdate: "user_message_chunk",
      content: { type: "text", text: QUESTION },
    });
    assert.deepEqual(
      updates.map((u) => u.sessionUpdate),
      [
        "user_message_chunk",
        "tool_call",
        "tool_call_update",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
      ],
    );
    assert.deepEqual(peer.finalTexts(), earlier.texts);
    assert.equal(peer.answerText(), earlier.answer);
    const toolCall = updates[1];
    assert.ok(toolCall.sessionUpdate === "tool_call" && toolCall.title === "client: host_info");
    // The loaded session goes on, with tool call ids that do not repeat.
    assert.equal(await peer.prompt(earlier.sessionId, "Which CPU?"), "end_turn");
    const ids = peer.updates().flatMap((u) =>
      u.sessionUpdate === "tool_call" ? [u.toolCallId] : []
    );
    assert.equal(new Set(ids).size, 3, ids.join(", "));
  });
});

Deno.test("stand-in: session/resume in a later run does not replay, and the session goes on", async () => {
  const earlier = await earlierSession();
  await withPeer({ stateDir: earlier.stateDir }, async (peer) => {
    await peer.initialize();
    const answer = await peer.request("session/resume", {
      sessionId: earlier.sessionId,
      cwd: "/tmp",
    });
    assert.deepEqual(answer.result, {});
    assert.deepEqual(peer.updates(), []);
    assert.equal(await peer.prompt(earlier.sessionId, "Which CPU?"), "end_turn");
    const toolCall = peer.updates().find((u) => u.sessionUpdate === "tool_call");
    assert.ok(toolCall?.sessionUpdate === "tool_call" && toolCall.toolCallId === "call_3");
  });
});

for (const method of ["session/load", "session/resume"]) {
  Deno.test(`stand-in: ${method} of an unknown session id is a JSON-RPC error naming the id`, async () => {
    await withPeer({}, async (peer) => {
      await peer.initialize();
      const answer = await peer.request(method, {
        sessionId: "20200101-000000-deadbeef",
        cwd: "/tmp",
        mcpServers: [],
      });
      assert.deepEqual(answer.error, {
        code: -32002,
        message: "Resource not found: session 20200101-000000-deadbeef",
        data: { sessionId: "20200101-000000-deadbeef" },
      });
    });
  });
}

for (const method of ["session/load", "session/resume"]) {
  Deno.test(`stand-in: request mode: ${method} asks for the list of that session before answering`, async () => {
    // (acp-client-tools.md, "Mode request"): "pendant qu'il traite session/new, session/load et session/resume".
    const earlier = await earlierSession();
    await withPeer(
      { stateDir: earlier.stateDir, agent: agentYaml({ discovery: "request" }) },
      async (peer) => {
        await peer.initialize(true);
        const answer = await peer.request(method, {
          sessionId: earlier.sessionId,
          cwd: "/home/me",
          mcpServers: [],
        });
        const [list] = peer.requests("_org.mini-me/tools/list");
        assert.deepEqual(list?.params, { sessionId: earlier.sessionId, cwd: "/home/me" });
        assert.ok(at(peer, list) < at(peer, answer));
        assert.equal(await peer.prompt(earlier.sessionId, "Which CPU?"), "end_turn");
        assert.deepEqual(peer.finalTexts().at(-1), "fact about cpu");
      },
    );
  });
}

Deno.test("stand-in: meta mode: a loaded session uses the list of initialize and asks for none", async () => {
  const earlier = await earlierSession();
  await withPeer({ stateDir: earlier.stateDir }, async (peer) => {
    await peer.initialize([]);
    await peer.request("session/load", {
      sessionId: earlier.sessionId,
      cwd: "/tmp",
      mcpServers: [],
    });
    assert.equal(peer.requests("_org.mini-me/tools/list").length, 0);
    await peer.prompt(earlier.sessionId, "Which CPU?");
    assert.match(peer.answerText(), /I cannot see your machine/);
  });
});

Deno.test("stand-in: session/new answers a session id shaped like mm's", async () => {
  await withPeer({}, async (peer) => {
    await peer.initialize();
    assert.match(await peer.newSession(), /^\d{8}-\d{6}-[0-9a-f]{8}$/);
  });
});

// ─── session/list (guess) ────────────────────────────────────────────────────

/** Asserts that `value` is a valid `definition` of the ACP v1 schema. */
function assertAcp(definition: string, value: unknown): void {
  assert.equal(acpErrors(definition, value), undefined);
}

/** Waits a little, so that two saves never share a millisecond. */
const tick = () => new Promise((resolve) => setTimeout(resolve, 15));

/** The sessions of a `session/list` answer, checked against the ACP schema. */
async function listed(peer: Peer, params: Record<string, unknown>): Promise<acp.SessionInfo[]> {
  const answer = await peer.request("session/list", params);
  assert.equal(answer.error, undefined, JSON.stringify(answer.error));
  assertAcp("ListSessionsResponse", answer.result);
  const result = answer.result as acp.ListSessionsResponse;
  assert.equal(result.nextCursor, undefined, "all in one answer");
  return result.sessions;
}

Deno.test("stand-in: session/list lists the sessions of earlier runs, most recent first, with title and updatedAt", async () => {
  const stateDir = scratchDir("mm-sim-state-");
  const ids: Record<string, string> = {};
  const started = new Date();
  await withPeer({ stateDir }, async (peer) => {
    await peer.initialize();
    ids.a = await peer.newSession("/home/me/a");
    await peer.prompt(ids.a, "How much memory?");
    await tick();
    ids.b = await peer.newSession("/home/me/a");
    await tick();
    ids.c = await peer.newSession("/home/me/c");
    await peer.prompt(ids.c, `Which CPU?\n  ${"And then what? ".repeat(6)}`);
    await tick();
    await peer.prompt(ids.a, "Which OS?");
  });
  await withPeer({ stateDir }, async (peer) => {
    assertAcp("InitializeResponse", (await peer.initialize()).result);
    const all = await listed(peer, {});
    assert.deepEqual(all.map((s) => s.sessionId), [ids.a, ids.c, ids.b], "the last saved first");
    assert.deepEqual(all.map((s) => s.cwd), ["/home/me/a", "/home/me/c", "/home/me/a"]);
    assert.deepEqual(all.map((s) => s.title), [
      "How much memory?",
      "Which CPU? And then what? And then what? And then what? And…",
      undefined,
    ]);
    assert.ok(!("title" in all[2]), "no title before a first question");
    const times = all.map((s) => Date.parse(s.updatedAt!));
    assert.ok(times.every((t) => t >= started.getTime() - 1000 && t <= Date.now()), `${times}`);
    assert.ok(times[0] > times[1] && times[1] > times[2], `${times}`);
    assert.deepEqual(await listed(peer, { cwd: null, cursor: null }), all);
  });
});

Deno.test("stand-in: session/list with a cwd lists only the sessions of that folder", async () => {
  const stateDir = scratchDir("mm-sim-state-");
  await withPeer({ stateDir }, async (peer) => {
    await peer.initialize();
    const first = await peer.newSession("/home/me/a");
    await tick();
    const other = await peer.newSession("/home/me/b");
    await tick();
    const second = await peer.newSession("/home/me/a");
    assert.deepEqual((await listed(peer, { cwd: "/home/me/a" })).map((s) => s.sessionId), [
      second,
      first,
    ]);
    assert.deepEqual((await listed(peer, { cwd: "/home/me/b" })).map((s) => s.sessionId), [other]);
    assert.deepEqual(await listed(peer, { cwd: "/home/me" }), []);
  });
});

Deno.test("stand-in: session/list of a state folder that does not exist yet is an empty list", async () => {
  const stateDir = `${scratchDir("mm-sim-state-")}/not-yet`;
  await withPeer({ stateDir }, async (peer) => {
    await peer.initialize();
    assert.deepEqual(await listed(peer, {}), []);
  });
});

Deno.test("stand-in: session/close answers {}, ends the session's turn cancelled, and forgets it", async () => {
  await withPeer({ env: { MM_SIM_THINK_MS: "30000" } }, async (peer) => {
    await peer.initialize();
    const session = await peer.newSession();
    const turn = peer.startTurn(session, "Which CPU?");
    await peer.waitFor((f) => f.method === "session/update", "the turn under way");
    const closed = await peer.request("session/close", { sessionId: session });
    assert.equal(closed.error, undefined, JSON.stringify(closed));
    assertAcp("CloseSessionResponse", closed.result);
    assert.deepEqual((await turn).result, { stopReason: "cancelled" });
    const again = await peer.startTurn(session, "Which CPU?");
    assert.equal(again.error?.code, -32002, JSON.stringify(again));
    const unknown = await peer.request("session/close", { sessionId: "no-such-session" });
    assert.equal(unknown.error?.code, -32002, JSON.stringify(unknown));
  });
});

Deno.test("stand-in: MM_SIM_SESSIONS=load advertises only session/load: resume, list and close answer -32601", async () => {
  const earlier = await earlierSession();
  await withPeer({ stateDir: earlier.stateDir, env: { MM_SIM_SESSIONS: "load" } }, async (peer) => {
    const answer = await peer.initialize();
    assertAcp("InitializeResponse", answer.result);
    assert.deepEqual(capabilitiesOf(answer), { loadSession: true });
    for (const method of ["session/list", "session/resume", "session/close"]) {
      const refused = await peer.request(method, { sessionId: earlier.sessionId, cwd: "/tmp" });
      assert.equal(refused.error?.code, -32601, `${method}: ${JSON.stringify(refused)}`);
    }
    const loaded = await peer.request("session/load", {
      sessionId: earlier.sessionId,
      cwd: "/tmp",
      mcpServers: [],
    });
    assert.deepEqual(loaded.result, {});
    assert.deepEqual(peer.finalTexts(), earlier.texts, "the load replayed the conversation");
  });
});

Deno.test("stand-in: MM_SIM_SESSIONS=none advertises none of load, resume, list and close, and each answers -32601", async () => {
  const earlier = await earlierSession();
  await withPeer({ stateDir: earlier.stateDir, env: { MM_SIM_SESSIONS: "none" } }, async (peer) => {
    const answer = await peer.initialize();
    assertAcp("InitializeResponse", answer.result);
    assert.deepEqual(capabilitiesOf(answer), { loadSession: false });
    for (const method of ["session/list", "session/resume", "session/load", "session/close"]) {
      const refused = await peer.request(method, {
        sessionId: earlier.sessionId,
        cwd: "/tmp",
        mcpServers: [],
      });
      assert.equal(refused.error?.code, -32601, `${method}: ${JSON.stringify(refused)}`);
    }
    assert.deepEqual(peer.updates(), [], "no replay");
    assert.equal(await peer.prompt(await peer.newSession(), "Which CPU?"), "end_turn");
  });
});

Deno.test("stand-in: MM_SIM_SESSIONS with an unknown value is reported on stderr, and full is used", async () => {
  await withPeer({ env: { MM_SIM_SESSIONS: "some" } }, async (peer) => {
    const capabilities = capabilitiesOf(await peer.initialize());
    assert.deepEqual(capabilities.sessionCapabilities, { resume: {}, list: {}, close: {} });
    assert.ok(peer.stderr.includes('[mm-sim] MM_SIM_SESSIONS: unknown value "some" (using full)'));
  });
});

// ─── mm's own shell (bashTool: true) ─────────────────────────────────────────
// mm asks the client before its own tools when yolo is false (mini-me's acp.md, "Requêtes
// session/request_permission envoyées", named by acp-client-tools.md). The call's title, kind and
// rawInput are the stand-in's guess.

const DISK = "How big is my disk?";

/** The permission requests, host_info calls, final texts and answer of a turn about the disk. */
async function diskTurn(agent: string, answer?: (options: acp.PermissionOption[]) => string) {
  let seen = {
    asked: [] as Frame[],
    calls: 0,
    texts: [] as string[],
    ends: [] as string[],
    answer: "",
  };
  await withPeer({ agent }, async (peer) => {
    if (answer) {
      peer.handlers["session/request_permission"] = (params) => {
        const optionId = answer(params.options as acp.PermissionOption[]);
        return { result: { outcome: { outcome: "selected", optionId } } };
      };
    }
    await peer.initialize();
    assert.equal(await peer.prompt(await peer.newSession(Deno.cwd()), DISK), "end_turn");
    seen = {
      asked: peer.requests("session/request_permission"),
      calls: peer.requests("_demo.minime/host_info").length,
      texts: peer.finalTexts(),
      ends: peer.updates().flatMap((u) =>
        u.sessionUpdate === "tool_call_update" &&
          (u.status === "completed" || u.status === "failed")
          ? [u.status]
          : []
      ),
      answer: peer.answerText(),
    };
  });
  return seen;
}

Deno.test("stand-in: with bashTool and yolo: false, mm asks before running df -h . for the disk, titled bash: df -h ., kind execute", async () => {
  const turn = await diskTurn(agentYaml({ bashTool: true, yolo: false }));
  assert.equal(turn.asked.length, 1);
  const { toolCall, options } = turn.asked[0].params as unknown as acp.RequestPermissionRequest;
  assert.deepEqual(
    { title: toolCall.title, kind: toolCall.kind, rawInput: toolCall.rawInput },
    { title: "bash: df -h .", kind: "execute", rawInput: { command: "df -h ." } },
  );
  assert.deepEqual(options.map((o) => o.kind), ["allow_once", "allow_always", "reject_once"]);
  assert.equal(turn.calls, 0, "host_info is not asked about the disk");
  assert.equal(turn.texts.length, 1);
  assert.deepEqual(turn.ends, ["completed"]);
  assert.match(turn.texts[0], /^Filesystem .*\n\S+ /, "df's output is what the model read");
  assert.ok(turn.answer.includes(`df -h .: ${turn.texts[0].trimEnd()}`), turn.answer);
});

Deno.test("stand-in: mm's shell refused reads [bash rejected by user], runs nothing, and the answer says so", async () => {
  const reject = (options: acp.PermissionOption[]) =>
    options.find((o) => o.kind === "reject_once")!.optionId;
  const turn = await diskTurn(agentYaml({ bashTool: true, yolo: false }), reject);
  assert.equal(turn.asked.length, 1);
  assert.deepEqual(turn.texts, ["[bash rejected by user]"]);
  assert.deepEqual(turn.ends, ["failed"], "a refused call ends failed, as a refused client tool's");
  assert.match(turn.answer, /df -h \.: \[bash rejected by user\]\.$/);
});

Deno.test("stand-in: session/cancel while mm's shell waits for its permission ends the call as bash's error, not a client tool's, and runs nothing", async () => {
  await withPeer({ agent: agentYaml({ bashTool: true, yolo: false }) }, async (peer) => {
    // Never answered: the cancel comes while the person would still be thinking.
    const asked = peer.stall("session/request_permission");
    await peer.initialize();
    const session = await peer.newSession(Deno.cwd());
    const turn = peer.startTurn(session, DISK);
    await asked;
    await peer.notify("session/cancel", { sessionId: session });
    assert.deepEqual((await turn).result, { stopReason: "cancelled" });
    assert.deepEqual(peer.finalTexts(), ["[bash error: context canceled]"]);
  });
});

Deno.test("stand-in: a permission answered cancelled just after session/cancel, as a client that cancels answers, ends mm's shell call as the cancelled turn's, never as a refusal", async () => {
  for (let run = 0; run < 3; run++) {
    await withPeer({ agent: agentYaml({ bashTool: true, yolo: false }) }, async (peer) => {
      await peer.initialize();
      const session = await peer.newSession(Deno.cwd());
      peer.handlers["session/request_permission"] = async () => {
        await peer.notify("session/cancel", { sessionId: session });
        return { result: { outcome: { outcome: "cancelled" } } };
      };
      const turn = await peer.startTurn(session, DISK);
      assert.deepEqual(turn.result, { stopReason: "cancelled" });
      assert.deepEqual(peer.finalTexts(), ["[bash error: context canceled]"], `run ${run}`);
    });
  }
});

Deno.test("stand-in: mm's shell runs unasked with yolo: true; without bashTool the disk is asked of host_info", async () => {
  const unasked = await diskTurn(agentYaml({ bashTool: true }));
  assert.equal(unasked.asked.length, 0);
  assert.match(unasked.texts[0], /^Filesystem /);
  const noShell = await diskTurn(agentYaml({ bashTool: false, yolo: false }));
  assert.equal(noShell.calls, 1, "host_info, for topic disk");
  assert.deepEqual(
    noShell.asked.map((f) => (f.params as unknown as acp.RequestPermissionRequest).toolCall.title),
    ["client: host_info"],
  );
});

// ─── Other tools of the client (the stand-in's own behaviour) ────────────────

/** A second tool, as a client that adds one to client.ts would offer it. */
const CLOCK = {
  name: "clock",
  description: "The time on the user's machine.",
  method: "_demo.minime/clock",
  inputSchema: {
    type: "object",
    properties: {
      zone: { type: "string", enum: ["UTC", "local"] },
      digits: { type: "integer" },
      seconds: { type: "boolean" },
      format: { type: "string" },
      note: { type: "string" },
    },
    required: ["zone", "digits", "seconds", "format"],
  },
};
/** The arguments the scripted model builds from CLOCK's schema. */
const CLOCK_ARGS = { zone: "UTC", digits: 0, seconds: false, format: "example" };

/** A peer whose client answers CLOCK's method with the zone it was asked for. */
function withClock(
  options: Parameters<typeof withPeer>[0],
  body: (peer: Peer) => Promise<void>,
): Promise<void> {
  return withPeer(options, async (peer) => {
    peer.handlers[CLOCK.method] = (params) => ({
      result: { content: [{ type: "text", text: `noon in ${params.zone}` }] },
    });
    await body(peer);
  });
}

/** What mm wrote about tool calls, in order: announces, requests, updates, sentences. */
function steps(peer: Peer): string[] {
  return peer.frames.flatMap((f) => {
    if (f.method === HOST_INFO.method || f.method === CLOCK.method) return [`request ${f.method}`];
    const u = f.params?.update as
      | { sessionUpdate?: string; status?: string; title?: string; content?: { text?: string } }
      | undefined;
    if (u?.sessionUpdate === "tool_call") return [`announce ${u.title}`];
    if (u?.sessionUpdate === "tool_call_update") return [`update ${u.status}`];
    if (u?.sessionUpdate === "agent_message_chunk" && u.content?.text?.startsWith("Let me")) {
      return [`say ${u.content.text}`];
    }
    return [];
  });
}

Deno.test("stand-in: another tool named in the question is called as host_info is, with arguments from its schema", async () => {
  await withClock({}, async (peer) => {
    await peer.initialize([HOST_INFO, CLOCK]);
    const session = await peer.newSession();
    assert.equal(
      await peer.prompt(session, "What does clock say, and how much memory?"),
      "end_turn",
    );
    const announced = peer.updates().filter((u) => u.sessionUpdate === "tool_call");
    assert.deepEqual(announced.map((u) => [u.title, u.kind, u.status, u.rawInput]), [
      ["client: host_info", "other", "pending", { topic: "memory" }],
      ["client: clock", "other", "pending", CLOCK_ARGS],
    ]);
    assert.deepEqual(peer.requests(CLOCK.method).map((f) => f.params), [
      { ...CLOCK_ARGS, _meta: { "org.mini-me/sessionId": session } },
    ]);
    assert.deepEqual(peer.finalTexts(), ["fact about memory", "noon in UTC"]);
    assert.equal(
      peer.answerText(),
      "Here is what host_info and clock report about your machine — memory: fact about memory; clock: noon in UTC.",
    );
    assert.deepEqual(steps(peer), [
      "announce client: host_info",
      "announce client: clock",
      `request ${HOST_INFO.method}`,
      `request ${CLOCK.method}`,
      "update completed",
      "update completed",
    ]);
  });
});

Deno.test("stand-in: another tool named as client_<name>, in any case, is called, and host_info only for named topics", async () => {
  await withClock({}, async (peer) => {
    await peer.initialize([HOST_INFO, CLOCK]);
    const session = await peer.newSession();
    assert.equal(await peer.prompt(session, "Ask CLIENT_Clock."), "end_turn");
    assert.equal(peer.requests(HOST_INFO.method).length, 0, "no default os and memory");
    assert.equal(peer.requests(CLOCK.method).length, 1);
    assert.equal(
      peer.answerText(),
      "Here is what clock reports about your machine — clock: noon in UTC.",
    );
    await peer.prompt(session, "And client_clock, with the uptime?");
    assert.deepEqual(peer.requests(HOST_INFO.method).map((f) => f.params?.topic), ["uptime"]);
    assert.equal(peer.requests(CLOCK.method).length, 2);
  });
});

Deno.test("stand-in: other tools are called in the order the question names them, not the list's", async () => {
  const calendar = {
    name: "calendar",
    description: "The day's appointments.",
    method: "_demo.minime/calendar",
    inputSchema: { type: "object", properties: {} },
  };
  await withClock({}, async (peer) => {
    peer.handlers[calendar.method] = () => ({
      result: { content: [{ type: "text", text: "nothing today" }] },
    });
    await peer.initialize([HOST_INFO, CLOCK, calendar]);
    const session = await peer.newSession();
    // mm's list is sorted (client_calendar, client_clock); the question names clock first.
    assert.equal(await peer.prompt(session, "Ask clock, then calendar."), "end_turn");
    const asked = peer.frames.filter((f) =>
      f.method === CLOCK.method || f.method === calendar.method
    );
    assert.deepEqual(asked.map((f) => f.method), [CLOCK.method, calendar.method]);
    await peer.prompt(session, "Ask calendar, then clock.");
    const again = peer.frames.filter((f) =>
      f.method === CLOCK.method || f.method === calendar.method
    );
    assert.deepEqual(again.slice(2).map((f) => f.method), [calendar.method, CLOCK.method]);
  });
});

Deno.test("stand-in: MM_SIM_ARGS gives the model's arguments by tool name, a wrong type too, over its own", async () => {
  const env = {
    MM_SIM_ARGS: JSON.stringify({ host_info: { topic: 5 }, clock: { zone: "local" } }),
  };
  await withClock({ env }, async (peer) => {
    await peer.initialize([HOST_INFO, CLOCK]);
    const session = await peer.newSession();
    await peer.prompt(session, "What does clock say, and which OS?");
    assert.deepEqual(peer.requests(HOST_INFO.method).map((f) => f.params?.topic), [5]);
    assert.deepEqual(peer.requests(CLOCK.method).map((f) => f.params?.zone), ["local"]);
  });
  await withPeer({ env: { MM_SIM_ARGS: "{not json" } }, async (peer) => {
    await peer.initialize([HOST_INFO]);
    await peer.prompt(await peer.newSession(), "Which OS?");
    assert.deepEqual(peer.requests(HOST_INFO.method).map((f) => f.params?.topic), ["os"]);
    assert.match(peer.stderr, /\[mm-sim\] MM_SIM_ARGS: not JSON: "\{not json" \(ignored\)/);
  });
});

Deno.test("stand-in: MM_SIM_ARGS naming a tool nobody offered (a misspelt name) is said on stderr, and the names it has right are still used", async () => {
  const env = { MM_SIM_ARGS: JSON.stringify({ clcok: { zone: "local" }, clock: { zone: "UTC" } }) };
  await withClock({ env }, async (peer) => {
    await peer.initialize([HOST_INFO, CLOCK]);
    const session = await peer.newSession();
    await peer.prompt(session, "What does clock say?");
    assert.deepEqual(peer.requests(CLOCK.method).map((f) => f.params?.zone), ["UTC"]);
    const said = peer.stderr.split("\n").filter((line) => line.includes("MM_SIM_ARGS"));
    assert.deepEqual(said, [
      '[mm-sim] MM_SIM_ARGS names "clcok", a tool not offered (clock, host_info): ignored',
    ]);
  });
});

Deno.test("stand-in: a tool the question does not name is not called", async () => {
  await withClock({}, async (peer) => {
    await peer.initialize([HOST_INFO, CLOCK]);
    const session = await peer.newSession();
    assert.equal(await peer.prompt(session, "Does my fan turn clockwise?"), "end_turn");
    assert.equal(peer.requests(CLOCK.method).length, 0);
    assert.deepEqual(peer.finalTexts(), ["fact about os", "fact about memory"]);
  });
  await withClock({}, async (peer) => {
    await peer.initialize([CLOCK]);
    const session = await peer.newSession();
    assert.equal(await peer.prompt(session, QUESTION), "end_turn");
    assert.deepEqual(peer.requests(CLOCK.method), []);
    assert.equal(
      peer.answerText(),
      "I called no tool: your question names none of mine (client_clock).",
    );
  });
});

Deno.test("stand-in: another tool asks permission when yolo is false, titled client: <name>, and may be refused", async () => {
  await withClock({ agent: agentYaml({ yolo: false }) }, async (peer) => {
    peer.handlers["session/request_permission"] = (params) => {
      const toolCall = params.toolCall as { title: string };
      const optionId = toolCall.title === "client: clock" ? "reject" : "allow";
      return { result: { outcome: { outcome: "selected", optionId } } };
    };
    await peer.initialize([HOST_INFO, CLOCK]);
    const session = await peer.newSession();
    assert.equal(await peer.prompt(session, "Which OS, and what says clock?"), "end_turn");
    const asked = peer.requests("session/request_permission").map((f) => f.params?.toolCall);
    assert.deepEqual(asked.map((t) => (t as { title: string }).title), [
      "client: host_info",
      "client: clock",
    ]);
    assert.deepEqual(asked[1], {
      toolCallId: "call_2",
      title: "client: clock",
      kind: "other",
      status: "pending",
      rawInput: CLOCK_ARGS,
    });
    assert.equal(peer.requests(CLOCK.method).length, 0, "refused: never sent");
    // The calls run together: the refusal may end first.
    assert.deepEqual(peer.finalTexts().sort(), [
      "[client_clock rejected by user]",
      "fact about os",
    ]);
    assert.match(
      peer.answerText(),
      /operating system: fact about os; clock: \[client_clock rejected by user\]\.$/,
    );
  });
});

Deno.test("stand-in: another tool offered by request discovery is called in the session that listed it", async () => {
  await withClock({ agent: agentYaml({ discovery: "request" }) }, async (peer) => {
    peer.handlers["_org.mini-me/tools/list"] = () => ({ result: { tools: [CLOCK, HOST_INFO] } });
    await peer.initialize(true);
    const session = await peer.newSession();
    assert.deepEqual(peer.acpLines(), [
      `[acp] session ${session} client tools (request): client_clock, client_host_info`,
    ]);
    assert.equal(await peer.prompt(session, "What time does the clock show?"), "end_turn");
    assert.deepEqual(peer.requests(CLOCK.method).map((f) => f.params), [
      { ...CLOCK_ARGS, _meta: { "org.mini-me/sessionId": session } },
    ]);
    assert.deepEqual(peer.finalTexts(), ["noon in UTC"]);
  });
});

Deno.test("stand-in: stepwise model: another tool has its sentence, its call in progress and its result, in turn", async () => {
  await withClock({ env: { MM_SIM_MODEL: "stepwise" } }, async (peer) => {
    await peer.initialize([HOST_INFO, CLOCK]);
    const session = await peer.newSession();
    assert.equal(await peer.prompt(session, "Which OS, and what does clock say?"), "end_turn");
    assert.deepEqual(steps(peer), [
      "say Let me ask host_info about the operating system. ",
      "announce client: host_info",
      "update in_progress",
      `request ${HOST_INFO.method}`,
      "update completed",
      "say Let me ask clock. ",
      "announce client: clock",
      "update in_progress",
      `request ${CLOCK.method}`,
      "update completed",
    ]);
    assert.deepEqual(peer.finalTexts(), ["fact about os", "noon in UTC"]);
    assert.match(peer.answerText(), /operating system: fact about os; clock: noon in UTC\.$/);
  });
});

Deno.test("stand-in: another tool's result is cut to maxOutput and its errors read as host_info's do", async () => {
  await withClock({ agent: agentYaml({ maxOutput: 20 }) }, async (peer) => {
    let calls = 0;
    peer.handlers[CLOCK.method] = () =>
      calls++ === 0
        ? { result: `START${"x".repeat(100)}END` }
        : { error: { code: -32603, message: "Internal error" } };
    await peer.initialize([HOST_INFO, CLOCK]);
    const session = await peer.newSession();
    await peer.prompt(session, "clock?");
    await peer.prompt(session, "clock again?");
    const [cut, failed] = peer.finalTexts();
    assert.ok([...cut].length <= 20 && cut.startsWith("START") && cut.endsWith("END"), cut);
    assert.equal(
      failed,
      cutToMaxOutput('[client tool error: {"code":-32603,"message":"Internal error"}]', 20),
    );
    assert.ok(peer.answerText().includes(`clock: ${cut}.`), peer.answerText());
    const statuses = peer.updates().flatMap((u) =>
      u.sessionUpdate === "tool_call_update" ? [u.status] : []
    );
    assert.deepEqual(statuses, ["completed", "failed"]);
  });
});
