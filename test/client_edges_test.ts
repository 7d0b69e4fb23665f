/**
 * Edges no other file reaches: updates that are not objects, a half-written
 * answer on a terminal while mm pauses, an mm that stops reading but stays,
 * agent files that are not what they should be, SIGTERM in a conversation.
 */

import assert from "node:assert/strict";
import { ROOT, runClient, startClient, tempFile } from "./_run.ts";
import { clientCommand, hasScript, inTerminal, visibleLines } from "./_pty.ts";

const ROGUE = `${ROOT}/test/rogue-mm`;

Deno.test("updates that are not objects are ignored, and a tool text's last line end adds no line", async () => {
  const run = await runClient({
    noMm: true,
    noTrace: true,
    args: ["--mm", ROGUE, "--verbose"],
    env: { ROGUE_SCENARIO: "odd-updates" },
  });
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out.slice(1), [
    "🛠️ client: host_info",
    "│ one",
    "│ two",
    "Done.",
    "[end_turn]",
  ]);
  // The thought's open line is ended on stderr before the answer goes on.
  assert.ok(run.stderr.includes("a thought without its line end\n"), JSON.stringify(run.stderr));
});

Deno.test({
  name: "on a terminal the progress line never wipes an answer's half-written line",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(clientCommand(["--mm", ROGUE]), {
      env: { ROGUE_SCENARIO: "pause-mid-answer" },
    });
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, screen);
    const lines = visibleLines(screen);
    assert.ok(lines.includes("Half an answer and the rest."), JSON.stringify(lines));
  },
});

/** An mm (a shell script) that answers the handshake, closes its stdin, then calls host_info. */
const DEAF_MM = `#!/bin/sh
read -r line; echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}'
read -r line; echo '{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}'
read -r line; exec 0<&-
echo '{"jsonrpc":"2.0","id":9,"method":"_demo.minime/host_info","params":{"topic":"os"}}'
exec sleep 60
`;

Deno.test("an mm that stops reading its stdin but stays is an error once a write fails", async () => {
  const mm = tempFile("mm", DEAF_MM, 0o755);
  const run = await runClient({ noMm: true, args: ["--mm", mm] });
  assert.equal(run.code, 1, run.stderr);
  assert.match(run.log.at(-1) ?? "", /^error: cannot write to mm: /);
  assert.ok(run.ms < 15_000, `ended in ${run.ms} ms`);
});

Deno.test("an agent file that is a list is not a mapping of keys", async () => {
  const agent = tempFile("agent.yaml", "- yolo\n- acp\n");
  const run = await runClient({ args: ["--agent", agent], readAlso: [agent] });
  assert.equal(run.code, 2);
  assert.deepEqual(run.log, [`error: agent file ${agent} is not a YAML mapping of keys`]);
});

Deno.test("an agent file path that goes through a file is named with the reason", async () => {
  const run = await runClient({ args: ["--agent", "agent.yaml/x"] });
  assert.equal(run.code, 2);
  assert.match(run.log[0], /^error: agent file agent\.yaml\/x cannot be read: Not a directory/);
  assert.equal(run.log.length, 1);
});

Deno.test("SIGTERM during an interactive turn cancels it and ends the client with 143", async () => {
  const client = startClient({
    args: ["-i", "How much memory?"],
    stdin: "open",
    env: { MM_SIM_THINK_MS: "20000" },
  });
  await client.waitForStderr("agent_thought_chunk");
  client.child.kill("SIGTERM");
  const run = await client.done();
  assert.equal(run.code, 143, run.stderr);
  assert.equal(run.out.at(-1), "[cancelled]");
  assert.ok(!run.stderr.includes("\n> "), "no prompt after SIGTERM");
});

Deno.test("-i reads a last question that has no line end", async () => {
  const run = await runClient({ args: ["-i"], stdin: "How much memory?" });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out[0], "❓ How much memory?");
  assert.equal(run.out.at(-1), "[end_turn]");
});

Deno.test({
  name: "-i at a terminal without a question: the first prompt is not covered by a progress line",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(clientCommand(["--mm", `${ROOT}/test/mm-sim`, "-i"]));
    await terminal.waitFor("> ");
    await new Promise((resolve) => setTimeout(resolve, 600));
    const afterPrompt = terminal.screen().slice(terminal.screen().lastIndexOf("> "));
    await terminal.type("\x04");
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, screen);
    assert.ok(!afterPrompt.includes("waiting for"), JSON.stringify(afterPrompt));
  },
});

Deno.test({
  name:
    "-i at a terminal: a blank line asks again, and Ctrl-C at the prompt ends its line and says how to come back",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(
      clientCommand(["--mm", `${ROOT}/test/mm-sim`, "-i", "How much RAM?"]),
    );
    await terminal.waitFor("> ");
    const prompts = () => terminal.screen().split("> ").length - 1;
    await terminal.type("\r");
    await terminal.waitFor(/> [^]*> /);
    assert.equal(prompts(), 2);
    await terminal.type("\x03");
    const { code, screen } = await terminal.done();
    assert.equal(code, 130, screen);
    assert.match(
      screen,
      /> \^C\r\n\[client\] continue with: --resume \d{8}-\d{6}-[0-9a-f]{8}\r\n$/,
    );
  },
});

Deno.test({
  name: "-q -i at a terminal: Ctrl-C at the prompt still ends the prompt's line",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(clientCommand(["--mm", `${ROOT}/test/mm-sim`, "-q", "-i", "RAM?"]));
    await terminal.waitFor("> ");
    await terminal.type("\x03");
    const { code, screen } = await terminal.done();
    assert.equal(code, 130, screen);
    assert.ok(screen.endsWith("> ^C\r\n"), JSON.stringify(screen));
  },
});
