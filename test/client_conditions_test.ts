// Terminal control characters are what several of these tests are about.
// deno-lint-ignore-file no-control-regex

/**
 * Real conditions, end to end: what a person meets at a real terminal, with a
 * real task runner, disks and peers. One Ctrl-C is one interrupt, Deno never
 * stops to ask for a permission, a failing or shared output, a noisy or
 * broken peer, values at the edge, hostile text on a terminal, and how
 * quickly every run ends. Durations that are the behaviour are checked from
 * below as well as from above; every wait has a deadline.
 */

import assert from "node:assert/strict";
import {
  alive,
  type ClientResult,
  type ClientRun,
  rogue,
  ROOT,
  runClient,
  START_PERMISSIONS,
  startClient,
  tempFile,
  within,
} from "./_run.ts";
import { clientCommand, hasScript, inTerminal, type Terminal } from "./_pty.ts";
import { HOSTILE } from "./rogue_mm.ts";
import { SCRATCH, scratchDir } from "./_scratch.ts";

const MM_SIM = `${ROOT}/test/mm-sim`;
const ROGUE = `${ROOT}/test/rogue-mm`;
const QUESTION = "What operating system does my machine run, and how much memory does it have?";
const USAGE = /^usage: client\.ts \[options\]/;
/** `PATH` with deno and the system's tools, and no `mm`. */
const PATH_WITHOUT_MM = `${Deno.execPath().replace(/\/[^/]*$/, "")}:/usr/bin:/bin`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ─── Helpers ─────────────────────────────────────────────────────────────────

/** The first process id written in a pid file. */
function pidIn(file: string): number {
  const pid = Number(Deno.readTextFileSync(file).trim().split(" ")[0]);
  assert.ok(pid > 0, `a pid was written to ${file}`);
  return pid;
}

/** Asserts that the process whose pid is in `file` is gone (allowing it 1 s to die). */
async function assertGone(file: string, what = "mm"): Promise<void> {
  const pid = pidIn(file);
  for (let i = 0; i < 10 && alive(pid); i++) await sleep(100);
  assert.ok(!alive(pid), `${what} (pid ${pid}) outlived the client`);
}

/** Runs the client against the rogue peer; checks it ended and left no peer. */
async function runRogue(scenario: string, run: ClientRun = {}): Promise<ClientResult> {
  const options = rogue(scenario, run);
  const result = await runClient({ deadlineMs: 20_000, ...options });
  await assertGone(options.env!.ROGUE_PID_FILE);
  return result;
}

/** The `[rogue] …` lines: what the peer saw of the client's answers. */
function seen(log: string[]): string[] {
  return log.filter((l) => l.startsWith("[rogue] ")).map((l) => l.slice(8));
}

/** An mm that never says a word and ignores its stdin, with its pid in a file. */
function silentMm(): { mm: string; pidFile: string } {
  const pidFile = tempFile("pid", "");
  const mm = tempFile("mm", `#!/bin/sh\necho $$ > ${pidFile}\nexec sleep 60\n`, 0o755);
  return { mm, pidFile };
}

/** When the client exits, as `performance.now()`. */
function exitTime(child: Deno.ChildProcess): Promise<number> {
  return child.status.then(() => performance.now());
}

/** The start task's permissions with one flag replaced (or removed with `null`). */
function permissionsWith(prefix: string, flag: string | null): string[] {
  return START_PERMISSIONS.flatMap((f) => f.startsWith(prefix) ? (flag ? [flag] : []) : [f]);
}

/** Runs a bash line in its own process group, from the project folder, with a deadline. */
async function runShell(
  line: string,
  env: Record<string, string> = {},
  deadlineMs = 20_000,
): Promise<{ code: number; stdout: string; stderr: string; ms: number }> {
  const started = performance.now();
  const child = new Deno.Command("setsid", {
    args: ["bash", "-c", line],
    cwd: ROOT,
    env: { DENO_BIN: Deno.execPath(), NO_COLOR: "1", TMPDIR: SCRATCH, ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = child.output();
  try {
    const result = await within(deadlineMs, `the command to end: ${line}`, output);
    const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    return {
      code: result.code,
      stdout: decode(result.stdout),
      stderr: decode(result.stderr),
      ms: performance.now() - started,
    };
  } catch (error) {
    try {
      Deno.kill(-child.pid, "SIGKILL");
    } catch { /* already gone */ }
    await output.catch(() => {});
    throw error;
  }
}

const PROMPT = /Allow\?|Deno requests|\[y\/n/;

/**
 * What a terminal shows, line by line: colours dropped, and a line redrawn
 * after `\r` (the client's own progress line) shows only its last drawing.
 */
function shown(screen: string): string[] {
  return screen.replace(/\x1b\[[0-9;]*m/g, "").split(/\r?\n/).map((line) =>
    line.split(/\r(?:\x1b\[K)?/).at(-1)!.replace(/\x1b\[K/g, "")
  );
}

/**
 * Waits for `end` on the terminal or for a permission prompt; a prompt fails
 * the test at once (the command is killed) instead of blocking it.
 */
async function finishWithoutPrompt(
  terminal: Terminal,
  end: string | RegExp,
): Promise<{ code: number; screen: string }> {
  const endSource = typeof end === "string"
    ? end.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
    : end.source;
  await terminal.waitFor(new RegExp(`${PROMPT.source}|${endSource}`), 20_000);
  if (PROMPT.test(terminal.screen())) {
    terminal.kill();
    await terminal.done().catch(() => {});
    assert.fail(`Deno asked for a permission:\n${JSON.stringify(terminal.screen())}`);
  }
  return await terminal.done();
}

// ─── One keypress, one interrupt ─────────────────────────────────────────────

/** Starts `commandLine` in a terminal, types Ctrl-C once the question is shown. */
async function ctrlCOnce(commandLine: string): Promise<void> {
  const pidFile = tempFile("pid", "");
  const terminal = inTerminal(commandLine, {
    env: { MM_SIM_THINK_MS: "10000", MM_SIM_PID_FILE: pidFile },
    deadlineMs: 20_000,
  });
  await terminal.waitFor("❓");
  await sleep(100); // the prompt is on its way to mm
  const pressed = performance.now();
  await terminal.type("\x03");
  const { code, screen } = await terminal.done();
  // The terminal echoes the keypress as `^C`, on the line where it was typed.
  const lines = shown(screen).map((line) => line.replace(/^(\^C)+/, ""));
  assert.equal(code, 130, JSON.stringify(screen));
  assert.ok(lines.includes("[cancelled]"), JSON.stringify(screen));
  assert.equal(lines.filter((l) => l === "[client] cancelling…").length, 1, JSON.stringify(screen));
  assert.ok(
    !screen.includes("second Ctrl-C"),
    `one press counted twice: ${JSON.stringify(screen)}`,
  );
  assert.ok(performance.now() - pressed < 4000, "mm answered the cancel at once");
  await assertGone(pidFile);
}

Deno.test({
  name: "one Ctrl-C under deno task cancels the turn and shows [cancelled], every time",
  ignore: !hasScript,
  async fn() {
    for (let i = 0; i < 3; i++) await ctrlCOnce("deno task demo");
  },
});

Deno.test({
  name: "one Ctrl-C to the client run directly cancels the turn and shows [cancelled], every time",
  ignore: !hasScript,
  async fn() {
    for (let i = 0; i < 3; i++) await ctrlCOnce(clientCommand(["--mm", MM_SIM]));
  },
});

Deno.test({
  name:
    "a second Ctrl-C a second later kills mm that ignores session/cancel, well before the 5 s grace",
  ignore: !hasScript,
  async fn() {
    const pidFile = tempFile("pid", "");
    const terminal = inTerminal(clientCommand(["--mm", ROGUE]), {
      env: { ROGUE_SCENARIO: "ignore-cancel", ROGUE_PID_FILE: pidFile },
      deadlineMs: 20_000,
    });
    await terminal.waitFor("❓");
    await sleep(100);
    await terminal.type("\x03");
    await terminal.waitFor("[client] cancelling…", 3000);
    const first = performance.now();
    await sleep(1000);
    await terminal.type("\x03");
    const { code, screen } = await terminal.done();
    const took = performance.now() - first;
    assert.equal(code, 130, JSON.stringify(screen));
    assert.ok(
      shown(screen).some((l) => l.replace(/^(\^C)+/, "") === "[client] second Ctrl-C: killing mm"),
      JSON.stringify(screen),
    );
    assert.ok(took < 3500, `exited ${took} ms after the first Ctrl-C: it waited for the grace`);
    await assertGone(pidFile);
  },
});

Deno.test("Ctrl-C before the session exists ends the client at once with 130 and no session/cancel", async () => {
  const { mm, pidFile } = silentMm();
  const client = startClient({ noMm: true, args: ["--mm", mm], deadlineMs: 15_000 });
  const exited = exitTime(client.child);
  await client.waitForStderr('"method":"initialize"', 10_000);
  const pressed = performance.now();
  client.child.kill("SIGINT");
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  assert.ok((await exited) - pressed < 1500, `exited ${(await exited) - pressed} ms after Ctrl-C`);
  assert.ok(!run.stderr.includes("session/cancel"), run.stderr);
  await assertGone(pidFile);
});

// ─── No permission prompt, ever ──────────────────────────────────────────────

Deno.test({
  name: "on a terminal a missing --allow-sys name gives host_info's error result, never a prompt",
  ignore: !hasScript,
  async fn() {
    const permissions = permissionsWith(
      "--allow-sys=",
      "--allow-sys=cpus,loadavg,systemMemoryInfo,osUptime",
    );
    const terminal = inTerminal(clientCommand(["--mm", MM_SIM], permissions), {
      deadlineMs: 20_000,
    });
    const { code, screen } = await finishWithoutPrompt(terminal, "[end_turn]");
    assert.equal(code, 0, JSON.stringify(screen));
    assert.ok(
      shown(screen).includes(
        "│ [client tool error: host_info needs --allow-sys=osRelease,hostname to report os]",
      ),
      JSON.stringify(screen),
    );
  },
});

Deno.test({
  name: "MM_BIN that cannot be read counts as unset, without a prompt, and the error says so",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(clientCommand([], permissionsWith("--allow-env", null)), {
      env: { MM_BIN: "/some/where/mm", PATH: PATH_WITHOUT_MM },
      deadlineMs: 20_000,
    });
    const { code, screen } = await finishWithoutPrompt(terminal, "error: ");
    assert.equal(code, 127, JSON.stringify(screen));
    assert.ok(
      shown(screen).includes(
        "error: cannot start mm (mm): not found; MM_BIN could not be read (add --allow-env=MM_BIN). Install mini-me or set MM_BIN / --mm.",
      ),
      JSON.stringify(screen),
    );
  },
});

Deno.test({
  name: "NO_COLOR that cannot be read counts as unset: colour on a terminal, and no prompt",
  ignore: !hasScript,
  async fn() {
    const terminal = inTerminal(
      clientCommand(["--mm", MM_SIM, "How big is my disk?"], permissionsWith("--allow-env", null)),
      { env: { NO_COLOR: "1" }, deadlineMs: 20_000 },
    );
    const { code, screen } = await finishWithoutPrompt(terminal, "[end_turn]");
    assert.equal(code, 0, JSON.stringify(screen));
    assert.match(screen, /\x1b\[[0-9;]*m✖ client: host_info failed/);
  },
});

// ─── Writing the conversation can fail ───────────────────────────────────────

Deno.test("a reader that goes away (| head -1) is not an error: a quiet finish, exit 0, mm gone", async () => {
  const pidFile = tempFile("pid", "");
  const codeFile = tempFile("code", "");
  // The stand-in thinks a little, so the client writes again after head has gone.
  const run = await runShell(
    `${clientCommand(["--mm", MM_SIM])} | head -1; echo "\${PIPESTATUS[0]}" > ${codeFile}`,
    { MM_SIM_THINK_MS: "500", MM_SIM_PID_FILE: pidFile },
  );
  assert.equal(run.stdout, `❓ ${QUESTION}\n`);
  assert.equal(Deno.readTextFileSync(codeFile).trim(), "0", run.stderr);
  assert.ok(!/^error:/m.test(run.stderr), run.stderr);
  assert.ok(!/broken pipe|EPIPE| {4}at /i.test(run.stderr), run.stderr);
  await assertGone(pidFile);
});

Deno.test("a conversation that cannot be written (> /dev/full) is an error, exit 1, mm gone", async () => {
  const pidFile = tempFile("pid", "");
  const run = await runShell(`exec ${clientCommand(["--mm", MM_SIM])} > /dev/full`, {
    MM_SIM_PID_FILE: pidFile,
  });
  assert.equal(run.code, 1, run.stderr);
  const errors = run.stderr.split("\n").filter((l) => l.startsWith("error:"));
  assert.equal(errors.length, 1, run.stderr);
  assert.match(errors[0], /^error: cannot write the conversation: \S.*$/);
  assert.ok(!run.stderr.includes("    at "), "no stack trace");
  await assertGone(pidFile);
});

// ─── stdout and stderr: one pipe, or apart ───────────────────────────────────

/** Lines that start in the middle of another, in a run whose streams share one pipe. */
function misplaced(output: string): string[] {
  return output.split("\n").filter((line) => {
    if (line.startsWith("→ ") || line.startsWith("← ")) return false;
    return ["→ {", "← {", "[client]", "usage:", "thinking hard"].some((marker) =>
      line.includes(marker) && !line.startsWith(marker)
    );
  });
}

Deno.test("with stdout and stderr in one pipe no stderr line starts in the middle of the answer", async () => {
  const pidFile = tempFile("pid", "");
  const interleaved = await runShell(
    `exec ${clientCommand(["--mm", ROGUE, "--trace", "--verbose"])} 2>&1`,
    { ROGUE_SCENARIO: "interleave", ROGUE_PID_FILE: pidFile },
  );
  assert.equal(interleaved.code, 0, interleaved.stdout);
  assert.deepEqual(misplaced(interleaved.stdout), [], interleaved.stdout);
  for (const piece of ["Part one,", " part two,", " part three.", " The end"]) {
    assert.ok(interleaved.stdout.includes(piece), `${piece} is shown`);
  }
  assert.ok(interleaved.stdout.includes("\n[client] bad frame from mm: not json\n"));
  await assertGone(pidFile);

  const standIn = await runShell(
    `exec ${clientCommand(["--mm", MM_SIM, "--trace", "--verbose"])} 2>&1`,
  );
  assert.equal(standIn.code, 0, standIn.stdout);
  assert.deepEqual(misplaced(standIn.stdout), [], standIn.stdout);
  assert.match(standIn.stdout, /\nusage: /);
  assert.ok(!standIn.stdout.includes("\n\n"), `an empty line in one pipe: ${standIn.stdout}`);
  assert.match(standIn.stdout, /\n\[end_turn\]\n/);
  const quiet = await runShell(`exec ${clientCommand(["--mm", MM_SIM, "-q", "--verbose"])} 2>&1`);
  assert.equal(quiet.code, 0, quiet.stdout);
  assert.ok(
    !quiet.stdout.includes("\n\n") && quiet.stdout.endsWith("\n"),
    JSON.stringify(quiet.stdout),
  );
});

Deno.test("mm's log lines come through the client whole, and the last ones arrive when mm exits at once", async () => {
  const pidFile = tempFile("pid", "");
  const run = await runClient(rogue("stderr-burst-exit", { env: { ROGUE_PID_FILE: pidFile } }));
  assert.equal(run.code, 1, run.stderr.slice(-500));
  const lines = run.log.filter((l) => l.startsWith("[mm] line "));
  assert.deepEqual(lines, Array.from({ length: 3000 }, (_, i) => `[mm] line ${i + 1}`));
  assert.equal(run.log.at(-1), "error: mm exited with code 3 before the turn ended");
  await assertGone(pidFile);
});

Deno.test("a flood of mm's log is passed on without growing the client's memory", async () => {
  const options = rogue("stderr-flood", { noTrace: true, deadlineMs: 30_000 });
  const client = startClient(options);
  let peakKiB = 0;
  const sampling = (async () => {
    while (alive(client.child.pid)) {
      const status = Deno.readTextFileSync(`/proc/${client.child.pid}/status`);
      const kib = Number(status.match(/^VmRSS:\s+(\d+) kB/m)?.[1] ?? 0);
      peakKiB = Math.max(peakKiB, kib);
      await sleep(50);
    }
  })().catch(() => {});
  const run = await client.done();
  await sampling;
  assert.equal(run.code, 0, run.stderr.slice(-300));
  assert.ok(run.stderr.includes(`${"x".repeat(100)}`) && run.log.includes("[mm] flood done"));
  assert.equal(run.stderr.split("x").length - 1, 48 * 1024 * 1024, "every byte passed on");
  assert.ok(peakKiB < 200 * 1024, `the client grew to ${Math.round(peakKiB / 1024)} MB`);
});

Deno.test("a line over the limit on stdin names stdin, not mm", async () => {
  const run = await runClient({
    args: ["-i"],
    stdin: `${"x".repeat(32 * 1024 * 1024 + 1)}\n`,
    noTrace: true,
  });
  assert.equal(run.code, 2, run.stderr.slice(-300));
  assert.ok(run.log.includes("error: stdin has a line longer than 33554432 bytes"), run.stderr);
});

Deno.test("MM_BIN set but empty counts as unset; MM_BIN or --mm naming a missing mm is named", async () => {
  const noMm = { noMm: true, noTrace: true, env: { PATH: PATH_WITHOUT_MM } };
  const empty = await runClient({ ...noMm, env: { ...noMm.env, MM_BIN: "" } });
  assert.equal(empty.code, 127);
  assert.deepEqual(empty.log, [
    "error: cannot start mm (mm): not found. Install mini-me or set MM_BIN / --mm.",
  ]);
  const named = await runClient({ ...noMm, env: { ...noMm.env, MM_BIN: "/nowhere/mm" } });
  assert.deepEqual(named.log, [
    "error: cannot start mm (/nowhere/mm): not found. MM_BIN names it: check that path.",
  ]);
});

Deno.test("stdout apart from stderr is exactly the conversation, whatever stderr carried", async () => {
  const run = await runRogue("interleave", { args: ["--verbose"] });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, `❓ ${QUESTION}\nPart one, part two, part three. The end\n[end_turn]\n`);

  const question = "What operating system does my machine run?";
  const [loud, quiet] = await Promise.all([
    runClient({ args: ["--verbose", question] }),
    runClient({ noTrace: true, args: [question] }),
  ]);
  assert.equal(loud.code, 0, loud.stderr);
  assert.equal(quiet.code, 0, quiet.stderr);
  assert.equal(loud.stdout, quiet.stdout, "--trace and --verbose change nothing on stdout");
});

// ─── A noisy peer ────────────────────────────────────────────────────────────

Deno.test("the first 10 bad frames are logged and answered, the rest counted and said once at the end", async () => {
  const run = await runRogue("garbage", { env: { ROGUE_GARBAGE_LINES: "25" } });
  assert.equal(run.code, 0, run.stderr);
  const bad = run.log.filter((l) => l.startsWith("[client] bad frame from mm: "));
  assert.deepEqual(bad, Array(10).fill("[client] bad frame from mm: not json"));
  const more = run.log.filter((l) => l.includes("more bad frames"));
  assert.deepEqual(more, ["[client] 15 more bad frames from mm were not logged"]);
  assert.ok(
    run.log.indexOf(more[0]) > run.log.lastIndexOf(bad[9]),
    "the count comes after the logged ones",
  );
  assert.deepEqual(seen(run.log), ["answers to bad frames: 10"]);
  assert.equal(run.out.at(-1), "[end_turn]");
});

for (
  const [what, mm] of [
    ['an mm that is `yes "not json"`', "yes"],
    ["an mm that floods garbage in the middle of a turn", "rogue"],
  ] as const
) {
  Deno.test(`${what} is dropped after 1,000 bad lines, exit 1, quietly and quickly`, async () => {
    const pidFile = tempFile("pid", "");
    const options: ClientRun = mm === "yes"
      ? {
        noMm: true,
        args: [
          "--mm",
          tempFile("mm", `#!/bin/sh\necho $$ > ${pidFile}\nexec yes "not json"\n`, 0o755),
        ],
      }
      : rogue("flood-garbage", { env: { ROGUE_PID_FILE: pidFile } });
    const run = await runClient({ ...options, noTrace: true, deadlineMs: 15_000 });
    assert.equal(run.code, 1, run.stderr.slice(0, 2000));
    const errors = run.log.filter((l) => l.startsWith("error:"));
    assert.deepEqual(errors, [
      "error: mm is not speaking JSON-RPC on stdout (1000 bad lines; first: not json)",
    ]);
    assert.ok(run.log.length < 20, `stderr has ${run.log.length} lines`);
    assert.ok(run.ms < 10_000, `ended in ${run.ms} ms`);
    await assertGone(pidFile);
  });
}

Deno.test("memory stays bounded when mm floods calls and never reads its stdin", async () => {
  // The peer sends up to 200,000 host_info calls whose ids are 2,500
  // characters long, and never reads a byte: answering them all would take
  // over 500 MB (each answer repeats its id). A client that keeps reading
  // and queues the answers grows by hundreds of MB within seconds; one whose
  // answers wait in a bounded queue stops reading mm's calls while its writes
  // are blocked, so mm blocks too. After 6 s the peer gives up and exits,
  // which ends the run (mm exited before the turn ended). The client's
  // resident memory is sampled all along, and its peak must stay under
  // 300 MB: far above what the client needs (about 100 MB), far below what
  // the answers would need.
  const options = rogue("deaf-flood", {
    noTrace: true,
    env: { ROGUE_CALLS: "200000", ROGUE_ID_PAD: "2500", ROGUE_GIVE_UP_MS: "6000" },
    deadlineMs: 30_000,
  });
  const client = startClient(options);
  let peakKiB = 0;
  const sampling = (async () => {
    while (alive(client.child.pid)) {
      try {
        const status = Deno.readTextFileSync(`/proc/${client.child.pid}/status`);
        for (const key of ["VmRSS", "VmHWM"]) {
          const kib = Number(status.match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m"))?.[1] ?? 0);
          peakKiB = Math.max(peakKiB, kib);
        }
      } catch { /* gone */ }
      await sleep(50);
    }
  })();
  const run = await client.done();
  await sampling;
  const sent = seen(run.log).find((l) => l.startsWith("sent ")) ?? "(the peer said nothing)";
  assert.ok(
    peakKiB < 300 * 1024,
    `the client grew to ${Math.round(peakKiB / 1024)} MB; the peer ${sent}`,
  );
  assert.equal(run.code, 1, run.log.slice(-3).join("\n"));
  await assertGone(options.env!.ROGUE_PID_FILE);
});

// ─── Values at the edge ──────────────────────────────────────────────────────

Deno.test("--timeout takes a decimal number of seconds: 1.5 is accepted", async () => {
  const run = await runClient({ args: ["--timeout", "1.5"], deadlineMs: 20_000 });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out.at(-1), "[end_turn]");
});

Deno.test("--timeout 0x10, -1, 0, abc and 1e3 are usage errors naming the value", async () => {
  const values = ["0x10", "-1", "0", "abc", "1e3"];
  const runs = await Promise.all(
    values.map((value) =>
      runClient({ noTrace: true, args: ["--timeout", value], deadlineMs: 20_000 })
    ),
  );
  for (const [i, run] of runs.entries()) {
    assert.equal(run.code, 2, `${values[i]}: ${run.stderr}`);
    assert.equal(
      run.log[0],
      `error: --timeout takes a number of seconds above 0, got "${values[i]}"`,
    );
    assert.match(run.log[1], USAGE);
    assert.equal(run.stdout, "");
  }
});

Deno.test("--timeout beyond the timer's range never fires early", async () => {
  const { mm, pidFile } = silentMm();
  const client = startClient({
    noMm: true,
    args: ["--mm", mm, "--timeout", "3000000"],
    deadlineMs: 15_000,
  });
  const early = await Promise.race([client.child.status.then(() => true), sleep(2000)]);
  if (early) {
    const run = await client.done();
    assert.fail(`the client ended at once (exit ${run.code}):\n${run.stderr}`);
  }
  client.child.kill("SIGINT");
  const run = await client.done();
  assert.ok(!run.stderr.includes("TimeoutOverflowWarning"), run.stderr);
  assert.ok(!/^error:/m.test(run.stderr), run.stderr);
  assert.equal(run.code, 130, run.stderr);
  await assertGone(pidFile);
});

Deno.test("an option that takes no value given one, or one that needs a value given none, is named", async () => {
  const cases: [string[], string][] = [
    [["--trace=yes"], "error: --trace takes no value"],
    [["--verbose=no"], "error: --verbose takes no value"],
    [["--agent"], "error: --agent needs a value"],
  ];
  const runs = await Promise.all(
    cases.map(([args]) => runClient({ noTrace: true, args, deadlineMs: 20_000 })),
  );
  for (const [i, run] of runs.entries()) {
    assert.equal(run.code, 2, `${cases[i][0]}: ${run.stderr}`);
    assert.equal(run.log[0], cases[i][1]);
    assert.match(run.log[1], USAGE);
  }
});

Deno.test('--mm "" is a usage error, exit 2', async () => {
  const run = await runClient({ noMm: true, noTrace: true, args: ["--mm", ""] });
  assert.equal(run.code, 2, run.stderr);
  assert.equal(run.log[0], 'error: --mm needs a path, got ""');
});

Deno.test("an empty agent file, or one with only comments, is a valid agent file with no keys", async () => {
  for (const text of ["", "# nothing but\n   # comments here\n\n"]) {
    const agent = tempFile("agent.yaml", text);
    const run = await runClient({
      args: ["--agent", agent],
      readAlso: [agent],
      deadlineMs: 20_000,
    });
    assert.equal(run.code, 0, `${JSON.stringify(text)}: ${run.stderr}`);
    assert.equal(run.out.at(-1), "[end_turn]");
    assert.ok(!run.log.some((l) => /^error:|warning:/.test(l)), run.stderr);
  }
});

Deno.test("an agent file that is a directory is named as one", async () => {
  const dir = scratchDir("host-info-test-");
  const run = await runClient({ noTrace: true, args: ["--agent", dir], readAlso: [dir] });
  assert.equal(run.code, 2, run.stderr);
  assert.deepEqual(run.log, [`error: agent file ${dir} is a directory`]);
});

Deno.test("a missing agent file given with --agent is not found, without the pass --agent hint", async () => {
  const run = await runClient({ noTrace: true, args: ["--agent", "nowhere.yaml"] });
  assert.equal(run.code, 2, run.stderr);
  assert.deepEqual(run.log, ["error: agent file not found: nowhere.yaml"]);
});

Deno.test("a missing default agent file gets the hint to run from the project folder or pass --agent", async () => {
  // A copy of the client in a folder with no agent file, run from another
  // such folder: neither the current folder nor the client's has agent.yaml.
  const copy = scratchDir("host-info-client-");
  Deno.copyFileSync(`${ROOT}/client.ts`, `${copy}/client.ts`);
  const cwd = scratchDir("host-info-cwd-");
  const output = await within(
    20_000,
    "the copied client to exit",
    new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--no-prompt",
        "--config",
        `${ROOT}/deno.json`,
        ...permissionsWith("--allow-read", "--allow-read"),
        `${copy}/client.ts`,
        "--mm",
        MM_SIM,
      ],
      cwd,
      env: { DENO_BIN: Deno.execPath(), NO_COLOR: "1" },
      stdin: "null",
    }).output(),
  );
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 2, stderr);
  assert.equal(
    stderr,
    "error: agent file not found: agent.yaml (run from the project folder or pass --agent)\n",
  );
});

/** The screen of a run on a terminal of a question whose tool call fails. */
async function failedCallOnTerminal(env: Record<string, string>): Promise<string> {
  const terminal = inTerminal(clientCommand(["--mm", MM_SIM, "How big is my disk?"]), {
    env,
    deadlineMs: 20_000,
  });
  const { code, screen } = await finishWithoutPrompt(terminal, "[end_turn]");
  assert.equal(code, 0, JSON.stringify(screen));
  return screen;
}

Deno.test({
  name: "NO_COLOR set but empty leaves colour on; NO_COLOR=1 turns it off",
  ignore: !hasScript,
  async fn() {
    const [empty, one] = await Promise.all([
      failedCallOnTerminal({ NO_COLOR: "" }),
      failedCallOnTerminal({ NO_COLOR: "1" }),
    ]);
    assert.match(empty, /\x1b\[[0-9;]*m✖ client: host_info failed/, JSON.stringify(empty));
    assert.ok(!/\x1b\[[0-9;]*m/.test(one), JSON.stringify(one));
    assert.ok(shown(one).includes("✖ client: host_info failed"));
  },
});

// ─── Untrusted text on a terminal ────────────────────────────────────────────

/** HOSTILE as a terminal must show it: control characters as their pictures. */
const HOSTILE_SHOWN = HOSTILE
  .replace(/[\x00-\x08\x0b-\x1f]/g, (c) => String.fromCodePoint(0x2400 + c.codePointAt(0)!))
  .replace(/\x7f/g, "␡")
  .replace(/[\x80-\x9f]/g, "\ufffd");

Deno.test({
  name: "on a terminal mm's control characters are shown, not obeyed; the client's colours stay",
  ignore: !hasScript,
  async fn() {
    const pidFile = tempFile("pid", "");
    const terminal = inTerminal(clientCommand(["--mm", ROGUE, "How big is my disk?"]), {
      env: { ROGUE_SCENARIO: "hostile-text", ROGUE_PID_FILE: pidFile },
      deadlineMs: 20_000,
    });
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    // Drop what the client itself may write (colours, its progress line and
    // erasing it) and the terminal's own line ends: nothing else may obey.
    const rest = screen.replace(/\x1b\[[0-9;]*m/g, "")
      .replace(/(\r*\x1b\[K)?[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] waiting for [^\r\n\x1b]* \d+ s\r*/g, "")
      .replace(/\r*\x1b\[K/g, "")
      .replaceAll("\r\n", "\n");
    for (const [name, c] of Object.entries({ ESC: "\x1b", CR: "\r", BEL: "\x07", BS: "\b" })) {
      assert.ok(!rest.includes(c), `a raw ${name} reached the terminal: ${JSON.stringify(screen)}`);
    }
    assert.ok(!/[\x7f-\x9f]/.test(rest), `a raw DEL or C1 control: ${JSON.stringify(screen)}`);
    const lines = shown(screen);
    for (
      const wanted of [
        `🛠️ ti␍tle${HOSTILE_SHOWN}`,
        `│ result${HOSTILE_SHOWN}`,
        "[client] bad frame from mm: ␛[2Jbad frame␇",
      ]
    ) {
      assert.ok(lines.includes(wanted), `${JSON.stringify(wanted)} in ${JSON.stringify(screen)}`);
    }
    assert.ok(rest.includes(`answer${HOSTILE_SHOWN}␍end`), JSON.stringify(screen));
    assert.ok(rest.includes("␛[2J"));
    await assertGone(pidFile);
  },
});

Deno.test("in a pipe mm's text reaches stdout byte for byte", async () => {
  const run = await runRogue("hostile-text");
  assert.equal(run.code, 0, run.stderr);
  assert.ok(run.out.includes(`🛠️ ti\rtle${HOSTILE}`), JSON.stringify(run.stdout));
  assert.ok(run.out.includes(`│ result${HOSTILE}`), JSON.stringify(run.stdout));
  assert.ok(run.stdout.includes(`answer${HOSTILE}\rend`), JSON.stringify(run.stdout));
  assert.ok(!run.stdout.includes("␛"));
});

// ─── mm that is not what it should be ────────────────────────────────────────

Deno.test("an mm that exits before answering initialize is named that way", async () => {
  const run = await runClient({ noMm: true, args: ["--mm", "/bin/true"], deadlineMs: 20_000 });
  assert.equal(run.code, 1, run.stderr);
  assert.equal(run.log.at(-1), "error: mm exited with code 0 before answering initialize");
});

Deno.test("an mm that exits right after answering initialize is named before answering session/new", async () => {
  const run = await runRogue("exit-after-initialize");
  assert.equal(run.code, 1, run.stderr);
  assert.equal(run.log.at(-1), "error: mm exited with code 0 before answering session/new");
});

// ─── Ending is quick ─────────────────────────────────────────────────────────

Deno.test("after [end_turn] the client exits at once when mm exits at the end of its input", async () => {
  const client = startClient({ deadlineMs: 20_000 });
  const exited = exitTime(client.child);
  await client.waitForStdout("[end_turn]");
  const shownAt = performance.now();
  const run = await client.done();
  assert.equal(run.code, 0, run.stderr);
  const after = (await exited) - shownAt;
  assert.ok(after < 2500, `exited ${after} ms after its last line`);
});

Deno.test("an mm that ignores the end of its input is killed, group and all, 2 s after [end_turn]", async () => {
  const pidFile = tempFile("pids", "");
  const options = rogue("helpers", { env: { ROGUE_PID_FILE: pidFile }, deadlineMs: 20_000 });
  const client = startClient(options);
  const exited = exitTime(client.child);
  await client.waitForStdout("[end_turn]");
  const shownAt = performance.now();
  const run = await client.done();
  assert.equal(run.code, 0, run.stderr);
  const after = (await exited) - shownAt;
  assert.ok(after >= 1800, `mm was given only ${after} ms to exit`);
  assert.ok(after <= 2500, `exited ${after} ms after [end_turn]`);
  const [mm, helper] = Deno.readTextFileSync(pidFile).split(" ").map(Number);
  assert.ok(!alive(mm), "mm is gone");
  assert.ok(!alive(helper), "its helper is gone");
});

Deno.test("--timeout 1 fires after 1 s, not before, and the client exits soon after its error", async () => {
  const { mm, pidFile } = silentMm();
  const started = performance.now();
  const client = startClient({
    noMm: true,
    args: ["--mm", mm, "--timeout", "1"],
    deadlineMs: 15_000,
  });
  const exited = exitTime(client.child);
  await client.waitForStderr("error: mm did not answer initialize within 1 s", 10_000);
  const errorAt = performance.now() - started;
  const run = await client.done();
  assert.equal(run.code, 1, run.stderr);
  assert.ok(errorAt >= 900 && errorAt <= 3000, `the timeout fired after ${errorAt} ms`);
  const after = (await exited) - started - errorAt;
  assert.ok(after <= 2500, `exited ${after} ms after the error`);
  await assertGone(pidFile);
});

Deno.test("--timeout does not bound the prompt: a model thinking 2.5 s with --timeout 1 ends the turn", async () => {
  const run = await runClient({
    args: ["--timeout", "1"],
    env: { MM_SIM_THINK_MS: "2500" },
    deadlineMs: 20_000,
  });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out.at(-1), "[end_turn]");
  assert.ok(run.ms >= 2500, `the model thought for 2.5 s, the run took ${run.ms} ms`);
});

Deno.test("the cancel grace is 5 s: mm ignoring session/cancel is killed 5 s after Ctrl-C, not sooner", async () => {
  const options = rogue("ignore-cancel", { deadlineMs: 20_000 });
  const client = startClient(options);
  const exited = exitTime(client.child);
  await client.waitForStderr("waiting", 10_000);
  const pressed = performance.now();
  client.child.kill("SIGINT");
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  const after = (await exited) - pressed;
  assert.ok(after >= 4800, `mm was given only ${after} ms to answer the cancel`);
  assert.ok(after <= 7500, `exited ${after} ms after Ctrl-C`);
  await assertGone(options.env!.ROGUE_PID_FILE);
});

// ─── Faults the suite missed before ──────────────────────────────────────────

Deno.test("a final answer without a line end, as mm's last bytes, still ends the turn", async () => {
  const run = await runRogue("end-no-newline");
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out.slice(-2), ["last words", "[end_turn]"]);
});

Deno.test("tool text is split into lines at \\r\\n as well as \\n", async () => {
  const run = await runRogue("crlf-tool-text");
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out.slice(-4), ["🛠️ crlf", "│ a", "│ b", "[end_turn]"]);
  assert.ok(!run.stdout.includes("\r"), JSON.stringify(run.stdout));
});

Deno.test("everything mm wrote before exiting is shown before its exit counts", async () => {
  const run = await runRogue("burst-then-exit");
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out, [
    `❓ ${QUESTION}`,
    "🛠️ burst",
    "│ one",
    "│ two",
    ...Array.from({ length: 2000 }, (_, i) => `│ line ${i + 1}`),
    "All shown.",
    "[end_turn]",
  ]);
});

Deno.test("mm's last output is read even when its exit is seen first", async () => {
  // mm exits at once, while a process it started still holds its stdout and
  // writes the end of the turn 300 ms later: the client sees the exit before
  // the last output, and must read that output before it counts the exit.
  const pidFile = tempFile("pid", "");
  const frame = (message: object) => JSON.stringify({ jsonrpc: "2.0", ...message });
  const chunk = frame({
    method: "session/update",
    params: {
      sessionId: "s-1",
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "late" } },
    },
  });
  const idOf = `sed -n 's/.*"id":\\([0-9][0-9]*\\).*/\\1/p'`;
  const mm = tempFile(
    "mm",
    `#!/bin/sh
echo $$ > ${pidFile}
read -r line
printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1}}\\n' "$(echo "$line" | ${idOf})"
read -r line
printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s-1"}}\\n' "$(echo "$line" | ${idOf})"
read -r line
id=$(echo "$line" | ${idOf})
(sleep 0.3; printf '%s\\n' '${chunk}'; printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}\\n' "$id") &
exit 0
`,
    0o755,
  );
  const run = await runClient({ noMm: true, args: ["--mm", mm], deadlineMs: 20_000 });
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out.slice(-2), ["late", "[end_turn]"]);
});

Deno.test("host_info answers keep the JSON type of the request's id", async () => {
  const run = await runRogue("id-types");
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(seen(run.log).sort(), [
    'answer id "7"',
    "answer id 0",
    "answer id 7",
    "answer id 9007199254740991",
  ]);
});
