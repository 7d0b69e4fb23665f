/**
 * `--json`: stdout is one JSON object per line and nothing else — mm's updates as it sent them,
 * each request with the client's answer, and last the result of each turn or the error of the
 * run — so a script never has to guess why there was no answer.
 */

import assert from "node:assert/strict";
import { assertNoPeerLeft, rogue, runClient, tempFile } from "./_run.ts";

type Line = Record<string, Record<string, unknown>>;

/** Every stdout line, parsed; a line that is not a JSON object fails the test. */
function lines(stdout: string): Line[] {
  assert.ok(stdout.endsWith("\n"), `stdout ends with a line end: ${JSON.stringify(stdout)}`);
  return stdout.slice(0, -1).split("\n").map((line) => {
    const value = JSON.parse(line);
    assert.ok(value && typeof value === "object" && !Array.isArray(value), line);
    return value;
  });
}

Deno.test("--json: updates as mm sent them, requests with their answers, and last the result", async () => {
  const run = await runClient({ args: ["--json", "How much memory is free?"] });
  assert.equal(run.code, 0, run.stderr);
  const all = lines(run.stdout);
  const updates = all.filter((l) => "update" in l);
  const sessionId = updates[0].sessionId;
  assert.match(String(sessionId), /^\d{8}-\d{6}-[0-9a-f]{8}$/);
  assert.ok(
    updates.every((l) => l.sessionId === sessionId && typeof l.update.sessionUpdate === "string"),
  );
  const calls = all.filter((l) => "request" in l);
  assert.equal(calls.length, 1, run.stdout);
  assert.equal(calls[0].request.method, "_demo.minime/host_info");
  assert.deepEqual((calls[0].request.params as Record<string, unknown>).topic, "memory");
  const answer = calls[0].answer as { result: { content: { text: string }[] } };
  assert.match(answer.result.content[0].text, /^\d+\.\d GiB free of \d+\.\d GiB$/);
  const text = updates.filter((l) => l.update.sessionUpdate === "agent_message_chunk")
    .map((l) => (l.update.content as { text: string }).text).join("");
  assert.deepEqual(all.at(-1), { result: { stopReason: "end_turn", sessionId, text } });
  assert.match(text, /^Here is what host_info reports about your machine — memory: /);
  assert.ok(
    run.log.some((l) => l.startsWith("[client] memory") || l.startsWith("[client] host_info")),
  );
});

Deno.test("--json -i: one result line per turn, and nothing but JSON on stdout", async () => {
  const run = await runClient({
    args: ["--json", "-i", "How much RAM?"],
    stdin: "And since when is it up?\n",
  });
  assert.equal(run.code, 0, run.stderr);
  const results = lines(run.stdout).filter((l) => "result" in l);
  assert.deepEqual(results.map((r) => r.result.stopReason), ["end_turn", "end_turn"]);
  assert.match(String(results[0].result.text), /memory: /);
  assert.match(String(results[1].result.text), /uptime: /);
  assert.equal(results[0].result.sessionId, results[1].result.sessionId);
});

Deno.test("--json: a run that fails ends with an error line that says why, with the exit code", async () => {
  const missing = await runClient({ noMm: true, args: ["--json", "--mm", "/nonexistent/mm"] });
  assert.equal(missing.code, 127);
  assert.deepEqual(lines(missing.stdout), [{
    error: {
      message: "cannot start mm (/nonexistent/mm): not found. --mm names it: check that path.",
      exitCode: 127,
    },
  }]);
  const pidFile = tempFile("pid", "");
  const exits = await runClient({
    args: ["--json"],
    env: { MM_SIM_EXIT_IN_TURN: "3", MM_SIM_PID_FILE: pidFile },
  });
  assert.equal(exits.code, 1);
  assert.deepEqual(lines(exits.stdout).at(-1), {
    error: { message: "mm exited with code 3 before the turn ended", exitCode: 1 },
  });
  assertNoPeerLeft(pidFile);
  const refused = await runClient(rogue("refuse-session", { args: ["--json"] }));
  assert.equal(refused.code, 1);
  assert.deepEqual(lines(refused.stdout), [{
    error: { message: "mm refused session/new: cwd must be absolute", exitCode: 1 },
  }]);
});

Deno.test("--json: a usage error is an error line too, and --json with -q is one", async () => {
  const run = await runClient({ noMm: true, noTrace: true, args: ["--json", "-q"] });
  assert.equal(run.code, 2);
  assert.equal(run.log[0], "error: --json and --quiet both say what stdout is: pick one");
  assert.deepEqual(lines(run.stdout), [{
    error: { message: "--json and --quiet both say what stdout is: pick one", exitCode: 2 },
  }]);
});

Deno.test("--json: stdout stays JSON lines whatever mm's text holds", async () => {
  const run = await runClient(rogue("hostile-text", { args: ["--json"] }));
  assert.equal(run.code, 0, run.stderr);
  const all = lines(run.stdout);
  assert.ok(all.at(-1)!.result.text, run.stdout);
  // deno-lint-ignore no-control-regex
  assert.ok(!/[\x00-\x09\x0b-\x1f\x7f-\x9f]/.test(run.stdout), "control characters escaped");
});
