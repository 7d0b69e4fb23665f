/**
 * The stand-in's fidelity to seed `000_1061b47c48e08683.txt`: each test names
 * the seed table and row it checks.
 */

import assert from "node:assert/strict";
import {
  answerFrom,
  cutToMaxOutput,
  modelName,
  newSessionId,
  parseDuration,
  plannedCalls,
  readAgentConfig,
  resultText,
  streamPieces,
  validateToolList,
} from "./mm_sim.ts";

const TOOL = { name: "open_buffers", method: "_com.example/workspace/buffers" };

Deno.test('"Description d\'un outil", name: non-alphanumerics become _, runs shrink, ends are trimmed', () => {
  assert.equal(modelName("open buffers"), "client_open_buffers");
  assert.equal(modelName("__a--b..c__"), "client_a_b_c");
  assert.equal(modelName("host_info"), "client_host_info");
  assert.equal(modelName("été 2026!"), "client_t_2026");
});

Deno.test('"Description d\'un outil", description: absent gives "Tool provided by the editor (<method>)."', () => {
  const { tools } = validateToolList([TOOL]);
  assert.equal(
    tools[0].description,
    "Tool provided by the editor (_com.example/workspace/buffers).",
  );
});

Deno.test('"Validation d\'une liste", row "not a tool description": an entry that is not a tool object', () => {
  const { tools, skipped } = validateToolList(["open_buffers", 3, null, [TOOL], {
    ...TOOL,
    name: 5,
  }]);
  assert.equal(tools.length, 0);
  assert.equal(skipped.length, 5);
  skipped.forEach((line, i) =>
    assert.match(line, new RegExp(`^entry ${i} skipped: not a tool description: `))
  );
});

Deno.test('"Validation d\'une liste", row "no name": name absent or empty', () => {
  const { skipped } = validateToolList([{ method: "_a/b" }, { name: "", method: "_a/b" }]);
  assert.deepEqual(skipped, ["entry 0 skipped: no name", "entry 1 skipped: no name"]);
});

Deno.test('"Validation d\'une liste", row "method …": absent or not an extension method', () => {
  const { skipped } = validateToolList([{ name: "a" }, { name: "b", method: "workspace/buffers" }]);
  assert.deepEqual(skipped, [
    'entry 0 skipped: method "" must start with "_" (an ACP extension method)',
    'entry 1 skipped: method "workspace/buffers" must start with "_" (an ACP extension method)',
  ]);
});

Deno.test('"Validation d\'une liste", row "inputSchema.type": a schema of something else than an object', () => {
  const { tools, skipped } = validateToolList([
    { ...TOOL, inputSchema: { type: "array" } },
    { ...TOOL, name: "no_type", inputSchema: { properties: {} } },
  ]);
  assert.deepEqual(skipped, ['entry 0 skipped: inputSchema.type must be "object", got "array"']);
  assert.deepEqual(tools.map((t) => t.name), ["no_type"]);
});

Deno.test('"Validation d\'une liste", row "duplicate tool name": the first is kept', () => {
  const { tools, skipped } = validateToolList([
    { ...TOOL, description: "first" },
    { ...TOOL, name: "open-buffers", description: "second" },
  ]);
  assert.deepEqual(skipped, ['entry 1 skipped: duplicate tool name "client_open_buffers"']);
  assert.equal(tools[0].description, "first");
});

Deno.test('"Validation d\'une liste": the other entries are kept and tools are sorted by model name', () => {
  const { tools, skipped } = validateToolList([
    { name: "zeta", method: "_z" },
    { name: "" },
    { name: "alpha", method: "_a", inputSchema: { type: "object", required: ["x"] } },
  ]);
  assert.deepEqual(tools.map((t) => t.modelName), ["client_alpha", "client_zeta"]);
  assert.deepEqual(tools[0].required, ["x"]);
  assert.equal(skipped.length, 1);
});

Deno.test('"Réponse": text blocks concatenated, other blocks replaced, isError wrapped', () => {
  assert.deepEqual(
    resultText({
      content: [{ type: "text", text: "main.go\n" }, { type: "text", text: "util.go" }],
      isError: false,
    }),
    { text: "main.go\nutil.go", failed: false },
  );
  assert.deepEqual(
    resultText({ content: [{ type: "image", data: "" }, { type: "text", text: "!" }] }),
    {
      text: "[client tool: non-text content of type image skipped]!",
      failed: false,
    },
  );
  assert.deepEqual(
    resultText({ content: [{ type: "text", text: "no such topic" }], isError: true }),
    {
      text: "[client tool error: no such topic]",
      failed: true,
    },
  );
});

Deno.test('"Réponse": a JSON string without its quotes, any other value as JSON text', () => {
  assert.deepEqual(resultText("plain"), { text: "plain", failed: false });
  assert.deepEqual(resultText({ a: 1 }), { text: '{"a":1}', failed: false });
  assert.deepEqual(resultText(42), { text: "42", failed: false });
  assert.deepEqual(resultText([1]), { text: "[1]", failed: false });
});

Deno.test('"Erreurs": every result is cut to maxOutput, keeping its start and its end', () => {
  assert.equal(cutToMaxOutput("short", 100), "short");
  const cut = cutToMaxOutput("a".repeat(500) + "b".repeat(500), 100);
  assert.ok([...cut].length <= 100);
  assert.ok(cut.startsWith("aaa") && cut.endsWith("bbb"));
  assert.ok(cut.includes("characters cut"));
});

Deno.test('"Configuration": defaults, and the keys read from an agent file', () => {
  assert.deepEqual(readAgentConfig("yolo: true\n"), {
    yolo: true,
    maxOutput: 30000,
    enabled: true,
    discovery: "meta",
    permissions: "auto",
    timeoutMs: 30000,
  });
  assert.deepEqual(
    readAgentConfig(
      "yolo: false\nmaxOutput: 80\nacp:\n  clientTools:\n    enabled: false\n    discovery: request\n    permissions: ask\n    timeout: 500ms\n",
    ),
    {
      yolo: false,
      maxOutput: 80,
      enabled: false,
      discovery: "request",
      permissions: "ask",
      timeoutMs: 500,
    },
  );
  assert.equal(parseDuration("2m", 0), 120_000);
  assert.equal(parseDuration("soon", 7), 7);
});

Deno.test("the scripted model picks topics from the question's words, in order", () => {
  assert.deepEqual(
    plannedCalls("What operating system does my machine run, and how much memory?"),
    [
      { topic: "os" },
      { topic: "memory" },
    ],
  );
  assert.deepEqual(plannedCalls("Which CPU does my machine have, and since when is it up?"), [
    { topic: "cpu" },
    { topic: "uptime" },
  ]);
  assert.deepEqual(plannedCalls("How much RAM? And the processor?"), [{ topic: "memory" }, {
    topic: "cpu",
  }]);
  assert.deepEqual(plannedCalls("Hello"), [{ topic: "os" }, { topic: "memory" }]);
  assert.deepEqual(plannedCalls("How big is my disk?"), [{ topic: "disk" }]);
  assert.deepEqual(plannedCalls("anything without a topic"), [{}]);
  assert.match(
    answerFrom([{ args: { topic: "os" }, text: "Linux" }]),
    /operating system: Linux\.$/,
  );
});

Deno.test("session ids are shaped like mm's", () => {
  assert.match(newSessionId(new Date("2026-11-10T22:45:07Z")), /^20261110-224507-[0-9a-f]{8}$/);
});

Deno.test("the scripted model streams its answer in pieces that add up to the whole", () => {
  const text = `Here is ${"a".repeat(60)} and more words after it, ending here.`;
  const pieces = streamPieces(text);
  assert.equal(pieces.join(""), text);
  assert.ok(pieces.length > 2);
});
