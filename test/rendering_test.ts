/**
 * What the user sees of what real ACP agents send: tool calls announced or
 * not, renamed, with content that replaces earlier content, output only in
 * `rawOutput`, `diff` and `terminal` blocks, text glued across a call, the
 * session's settings, and a turn the agent cancels by itself. The real client
 * against the misbehaving peer (`test/rogue-mm`), whose every update and
 * permission request is first checked against the ACP v1 schema.
 */

import assert from "node:assert/strict";
import { type ClientResult, type ClientRun, rogue, runClient } from "./_run.ts";
import { checkReceivedFrames } from "./_schema.ts";

const QUESTION = "❓ What operating system does my machine run, and how much memory does it have?";

/** Runs a scenario of the peer; its frames must be valid ACP v1. */
async function scenario(name: string, run: ClientRun = {}): Promise<ClientResult> {
  const result = await runClient({ ...rogue(name, run), deadlineMs: 20_000 });
  if (!run.noTrace) {
    assert.deepEqual(checkReceivedFrames(result.stderr), [], "the peer sends ACP v1");
  }
  return result;
}

Deno.test("rendering: a permission for a call nobody announced shows the call, and its refusal, on stdout", async () => {
  const run = await scenario("unannounced-permission");
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out, [
    QUESTION,
    "I will list / with the shell tool.",
    "🛠️ ls /",
    "✖ ls / refused",
    "The shell tool answered: nothing.",
    "[end_turn]",
  ]);
  assert.ok(run.log.includes('[client] permission for "ls /": refused'), run.stderr);
  assert.match(run.stderr, /\[rogue\] answer .*"optionId":"no"/);
});

Deno.test("rendering: a call renamed by an update shows its new title, so the command is visible", async () => {
  const run = await scenario("renamed-call");
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out.slice(1, -1), [
    "🛠️ Terminal",
    "🛠️ Terminal → ls -la /",
    "✖ ls -la / refused",
    "✖ ls -la / failed",
    "🛠️ bash",
    "🛠️ bash → cat /etc/hostname",
    "│ vm",
  ]);
});

Deno.test("rendering: content that replaces earlier content shows only what was not shown yet", async () => {
  const run = await scenario("growing-content");
  assert.deepEqual(run.out.slice(1, -1), [
    "🛠️ npm test",
    "│ line 1",
    "│ line 2",
    "│ line 3",
    "│ line 3 done", // a last line that grew is shown again whole
    "│ all 3 passed", // content that does not extend what was shown: whole
  ]);
});

Deno.test("rendering: a finished call without content shows its rawOutput, at most 20 lines", async () => {
  const run = await scenario("raw-output");
  const logLines = Array.from({ length: 20 }, (_, i) => `│ log ${i + 1}`);
  assert.deepEqual(run.out.slice(1, -1), [
    "🛠️ Read log",
    ...logLines,
    "│ … (5 more lines)",
    "🛠️ Exit code",
    '│ {"exitCode":0,"stdout":"ok"}',
    "🛠️ With content",
    "│ the content",
    "🛠️ Early raw",
    "│ read early",
  ]);
});

Deno.test("rendering: a diff shows its path and size, a terminal its id", async () => {
  const run = await scenario("diff-terminal");
  assert.deepEqual(run.out.slice(1, -1), [
    "🛠️ Edit files",
    "│ diff /p/a.txt (+2 −1 lines)",
    "│ diff /p/new.txt (+2 −0 lines)",
    "🛠️ Run tests",
    "│ [terminal term-1]",
  ]);
});

Deno.test("rendering: agent text after a tool call starts on a line of its own", async () => {
  const run = await scenario("glued-text");
  assert.deepEqual(run.out.slice(1, -1), [
    "🛠️ search",
    "Searching.",
    "Found it.",
    " Done.", // an empty chunk between is no output: the text goes on after it, as sent
  ]);
});

Deno.test("rendering: --quiet shows none of it, only the answer text byte for byte", async () => {
  const glued = await scenario("unannounced-permission", { args: ["-q"] });
  assert.equal(
    glued.stdout,
    "I will list / with the shell tool.The shell tool answered: nothing.\n",
  );
  const renamed = await scenario("renamed-call", { args: ["-q"] });
  assert.equal(renamed.stdout, "");
  const text = await scenario("glued-text", { args: ["-q"] });
  assert.equal(text.stdout, "Searching.Found it. Done.\n");
});

Deno.test("rendering: --verbose shows commands, mode, title, config and every usage update on stderr", async () => {
  const run = await scenario("session-extras", { args: ["--verbose"] });
  assert.deepEqual(run.out.slice(1), ["Settled.", "[end_turn]"]);
  const shown = run.log.filter((line) => !line.startsWith("[") && !line.startsWith("Task "));
  assert.deepEqual(shown, [
    "commands: /web, /test",
    "mode: code",
    "title: Host facts",
    "config: model = qwen",
    "config: fast = true",
    "usage: 100 of 1000 tokens",
    "usage: 200 of 1000 tokens",
    "usage: 300 of 1000 tokens, cost 0.01 USD",
  ]);
  const quiet = await scenario("session-extras");
  assert.ok(!/commands:|mode:|title:|config:|usage:/.test(quiet.stderr), quiet.stderr);
});

Deno.test("rendering: a turn mm cancels by itself after a refusal is [cancelled], 130, and says why", async () => {
  const run = await scenario("self-cancel");
  assert.equal(run.code, 130, run.stderr);
  assert.deepEqual(run.out.slice(1), [
    "🛠️ rm -rf /tmp/x",
    "✖ rm -rf /tmp/x refused",
    "[cancelled]",
  ]);
  assert.ok(
    run.log.includes(
      "[client] mm ended the turn as cancelled; the client did not ask after a refused permission",
    ),
    run.stderr,
  );
  const unasked = await scenario("cancelled-unasked");
  assert.equal(unasked.code, 130);
  assert.ok(
    unasked.log.includes("[client] mm ended the turn as cancelled; the client did not ask"),
    unasked.stderr,
  );
  const quiet = await scenario("self-cancel", { args: ["-q"] });
  assert.ok(quiet.log.some((line) => line.startsWith("[client] mm ended the turn as cancelled")));
});
