/**
 * The command line and the agent file. `parseCommandLine` (pure) and the same rules as a process:
 * usage errors, `--help` and `--version`, how mm is found (`--mm`, `MM_BIN`, `PATH`) and what is
 * said when it cannot be started; the agent file — where it is looked for, the warnings when it
 * contradicts the run, and the errors when it cannot be used.
 */

import assert from "./_assert.ts";
import {
  agentFileWarnings,
  ClientError,
  DEFAULT_QUESTION,
  parseCommandLine,
  usage,
} from "../client.ts";
import {
  agentFileWith,
  assertInOrder,
  type ClientRun,
  discovery,
  MM_SIM,
  MODEL_NAMES,
  OS_TEXT,
  PATH_WITHOUT_MM,
  permissionsWith,
  ROOT,
  runClient,
  tempFile,
  TOOL_NAMES,
} from "./_run.ts";
import { scratchDir } from "./_scratch.ts";

const USAGE_LINE = "usage: client.ts [options] [question | -] [-- COMMAND [ARGS…]]";

// ─── The command line ────────────────────────────────────────────────────────

Deno.test("command line: defaults to meta mode, 30 s and the default question", () => {
  assert.deepEqual(parseCommandLine([]), {
    question: DEFAULT_QUESTION,
    timeout: "30",
    seconds: 30,
    turnSeconds: undefined,
    program: "client.ts",
  });
});

Deno.test("command line: --request switches the mode and the words are the question", () => {
  const options = parseCommandLine(["--request", "Which", "CPU", "do", "I", "have?"]);
  assert.equal(options.request, true);
  assert.equal(options.question, "Which CPU do I have?");
  assert.equal(parseCommandLine(["--request", "--agent", "mine.yaml"]).agent, "mine.yaml");
});

Deno.test("command line: a leading -- is dropped; a later one ends the options, and another agent's command follows it, as given", () => {
  assert.equal(parseCommandLine(["--", "--request"]).request, true);
  const alone = parseCommandLine(["--", "--", "npx", "-y", "some-acp", "--flag"]);
  assert.deepEqual(alone.command, ["npx", "-y", "some-acp", "--flag"]);
  assert.equal(alone.question, DEFAULT_QUESTION);
  const asked = parseCommandLine(["-q", "Which", "OS?", "--", "./agent", "--trace"]);
  assert.deepEqual([asked.question, asked.command, asked.quiet], ["Which OS?", [
    "./agent",
    "--trace",
  ], true]);
  assert.equal(parseCommandLine(["why"]).command, undefined);
});

Deno.test("command line: -- with no command after it, or with mm's own options, is a usage error", () => {
  const refused = (args: string[]) => {
    try {
      parseCommandLine(args);
    } catch (error) {
      return (error as Error).message;
    }
    return "accepted";
  };
  assert.equal(refused(["Hi", "--"]), "-- needs the command of an agent after it");
  assert.equal(
    refused(["--mm", "/opt/mm", "Hi", "--", "agent"]),
    "--mm is mm's; with -- COMMAND another agent runs",
  );
  assert.equal(
    refused(["--request", "--", "agent"]),
    "--request is mm's; with -- COMMAND another agent runs",
  );
  assert.equal(
    refused(["--agent", "a.yaml", "Hi", "--", "agent"]),
    "--agent is mm's; with -- COMMAND another agent runs",
  );
});

Deno.test("command line: the other options are read, short forms included", () => {
  const options = parseCommandLine([
    "--mm",
    "/opt/mm",
    "--trace",
    "--verbose",
    "--timeout",
    "2.5",
    "-q",
    "--resume",
    "20261130-120000-0badc0de",
    "q",
  ]);
  assert.equal(options.mm, "/opt/mm");
  assert.equal(options.trace, true);
  assert.equal(options.verbose, true);
  assert.equal(options.seconds, 2.5);
  assert.equal(options.quiet, true);
  assert.equal(options.resume, "20261130-120000-0badc0de");
  assert.equal(parseCommandLine(["-h"]).help, true);
  assert.equal(parseCommandLine(["--version"]).version, true);
  assert.equal(parseCommandLine(["-i"]).interactive, true);
  assert.equal(parseCommandLine(["--no-ask"])["no-ask"], true);
  assert.equal(parseCommandLine([])["no-ask"], undefined);
});

Deno.test("command line: letters go together, -iq is -i -q, and an unknown one among them is named", () => {
  for (const args of [["-iq"], ["-qi"], ["-i", "-q"]]) {
    const options = parseCommandLine(args);
    assert.equal(options.interactive, true, args.join(" "));
    assert.equal(options.quiet, true, args.join(" "));
  }
  usageError(["-ix"], "unknown option -x");
  usageError(["-i=x"], "unknown option -=");
});

Deno.test("command line: a value after = is the whole rest, and one that looks like an option is none", () => {
  assert.equal(parseCommandLine(["--agent=a=b.yaml"]).agent, "a=b.yaml");
  assert.equal(parseCommandLine(["--agent", "a", "--agent", "b"]).agent, "b");
  usageError(["--agent", "--trace"], "--agent needs a value");
  usageError(["--agent", "-q"], "--agent needs a value");
  usageError(["--=x"], "unknown option --=x");
  assert.equal(parseCommandLine(["--agent", "a.yaml", "why?"]).question, "why?");
  // A word that starts with "-" is a value only after "=": `--resume -1x` may be an option missed.
  usageError(["--resume", "-1x"], "--resume needs a value");
  assert.equal(parseCommandLine(["--resume=-1x"]).resume, "-1x");
});

Deno.test("command line: a lone - after an option that takes a value is no value: it is the question from stdin", () => {
  for (const name of ["--agent", "--mm", "--resume", "--timeout", "--turn-timeout"]) {
    usageError([name, "-"], `${name} needs a value`);
    usageError([name, "-", "why?"], `${name} needs a value`);
  }
  // After "=" it is the value as typed, as parseArgs takes any value there.
  assert.equal(parseCommandLine(["--agent=-"]).agent, "-");
  assert.equal(parseCommandLine(["--agent", "a.yaml", "-"]).question, "-");
});

Deno.test("command line: with --interactive and no words the first question is read, not defaulted", () => {
  assert.equal(parseCommandLine(["-i"]).question, undefined);
  assert.equal(parseCommandLine(["-i", "first?"]).question, "first?");
  assert.equal(parseCommandLine(["-"]).question, "-");
});

Deno.test("command line: --timeout takes a decimal number of seconds above 0, nothing else", () => {
  for (const value of ["1.5", "0.25", ".5", "30", "3000000"]) {
    assert.equal(parseCommandLine(["--timeout", value]).seconds, Number(value));
  }
  for (const value of ["0", "-1", "0x10", "1e3", "abc", "", " 5", "Infinity", "NaN"]) {
    usageError(
      ["--timeout", value],
      `--timeout takes a number of seconds above 0, got ${JSON.stringify(value)}`,
    );
  }
});

function usageError(argv: string[], message: string): void {
  assert.throws(
    () => parseCommandLine(argv),
    (e) => e instanceof ClientError && e.exitCode === 2 && e.message === message,
  );
}

Deno.test("command line: a usage error names what is actually wrong", () => {
  usageError(["--frobnicate"], "unknown option --frobnicate");
  usageError(["-x"], "unknown option -x");
  usageError(["--agent"], "--agent needs a value");
  usageError(["--resume"], "--resume needs a value");
  usageError(["--trace=yes"], "--trace takes no value");
  usageError(["--quiet=1"], "--quiet takes no value");
  usageError(["--mm", ""], '--mm needs a path, got ""');
  usageError(["--agent="], '--agent needs a file, got ""');
  usageError(["--agent", ""], '--agent needs a file, got ""');
  usageError(["--resume", ""], '--resume needs a session id, got ""');
  usageError(["-i", "-"], "- reads the question from stdin, which --interactive reads too");
  usageError(["--json", "-q"], "--json and --quiet both say what stdout is: pick one");
  for (const quiet of ["-q", "--quiet"]) {
    usageError(
      ["--sessions", quiet],
      "--sessions lists on stdout, where --quiet writes only an answer",
    );
  }
  usageError(
    ["--continue", "--resume", "x"],
    "--continue and --resume both name the session: pick one",
  );
  usageError(["--turn-timeout"], "--turn-timeout needs a value");
  usageError(["--timeout", "-.5"], '--timeout takes a number of seconds above 0, got "-.5"');
  usageError(["--timeout", "-2"], '--timeout takes a number of seconds above 0, got "-2"');
  usageError(
    ["--turn-timeout", "-2"],
    '--turn-timeout takes a number of seconds above 0, got "-2"',
  );
  // Not a number: an option taken for the value, which is then missing.
  usageError(["--timeout", "-x"], "--timeout needs a value");
  usageError(["--turn-timeout", "--trace"], "--turn-timeout needs a value");
  usageError(["--json=1"], "--json takes no value");
  const sessionsAlone =
    "--sessions lists the sessions and exits: it takes no question or session to open";
  for (const extra of [["RAM?"], ["--resume", "x"], ["--continue"], ["-i"]]) {
    usageError(["--sessions", ...extra], sessionsAlone);
  }
});

Deno.test("command line: a mistyped long option names the one it was meant to be, one edit away", () => {
  usageError(["--tiemout", "5"], "unknown option --tiemout; did you mean --timeout?");
  usageError(["--timout", "5"], "unknown option --timout; did you mean --timeout?");
  usageError(["--jsno"], "unknown option --jsno; did you mean --json?");
  usageError(["--verbos"], "unknown option --verbos; did you mean --verbose?");
  usageError(["--sessionss"], "unknown option --sessionss; did you mean --sessions?");
  usageError(["--quite"], "unknown option --quite; did you mean --quiet?");
  usageError(["--requset"], "unknown option --requset; did you mean --request?");
  usageError(
    ["--turn_timeout", "5"],
    "unknown option --turn_timeout; did you mean --turn-timeout?",
  );
  // Too far from every option, too short to guess from, or a short option: no guess.
  usageError(["--frobnicate"], "unknown option --frobnicate");
  usageError(["--mx"], "unknown option --mx");
  usageError(["--vrebsoe"], "unknown option --vrebsoe");
  usageError(["-j"], "unknown option -j");
});

Deno.test("command line: the did-you-mean at its edges: three letters are guessed from, two are not", () => {
  // Three letters typed: the shortest name guessed from.
  usageError(["--jsn"], "unknown option --jsn; did you mean --json?");
  usageError(["--mmm"], "unknown option --mmm; did you mean --mm?");
  usageError(["--jso"], "unknown option --jso; did you mean --json?");
  // Two letters, though one edit from --mm: too few to guess from.
  usageError(["--mn"], "unknown option --mn");
  usageError(["--m"], "unknown option --m");
  // Each edit at the first letter and at the last: swapped, added, left out, replaced.
  usageError(["--sjon"], "unknown option --sjon; did you mean --json?");
  usageError(["--jsno"], "unknown option --jsno; did you mean --json?");
  usageError(["--xjson"], "unknown option --xjson; did you mean --json?");
  usageError(["--jsonx"], "unknown option --jsonx; did you mean --json?");
  usageError(["--son"], "unknown option --son; did you mean --json?");
  usageError(["--xson"], "unknown option --xson; did you mean --json?");
  usageError(["--jsox"], "unknown option --jsox; did you mean --json?");
  // Two edits, or the same letters in another order than one swap: no guess.
  usageError(["--jxox"], "unknown option --jxox");
  usageError(["--nosj"], "unknown option --nosj");
  usageError(["--jsonxx"], "unknown option --jsonxx");
  // The guess is made on top of the unknown option, whatever follows it.
  usageError(["--jsn=1"], "unknown option --jsn; did you mean --json?");
  usageError(["-i", "--verbos", "why?"], "unknown option --verbos; did you mean --verbose?");
});

Deno.test("command line: --turn-timeout takes the same numbers as --timeout; without it a turn has no deadline", () => {
  assert.equal(parseCommandLine([]).turnSeconds, undefined);
  for (const value of ["1.5", "0.25", ".5", "30"]) {
    assert.equal(parseCommandLine(["--turn-timeout", value]).turnSeconds, Number(value));
  }
  for (const value of ["0", "-1", "0x10", "1e3", "abc", ""]) {
    usageError(
      ["--turn-timeout", value],
      `--turn-timeout takes a number of seconds above 0, got ${JSON.stringify(value)}`,
    );
  }
});

// ─── The agent file ──────────────────────────────────────────────────────────

Deno.test("agent file: one that agrees with the run gives no warning", () => {
  assert.deepEqual(
    agentFileWarnings("agent.yaml", { enabled: true, discovery: "meta" }, false),
    [],
  );
  assert.deepEqual(
    agentFileWarnings("a.yaml", { enabled: true, discovery: "request" }, true),
    [],
  );
  // A discovery mm does not know is not one the client can say is crossed.
  for (const request of [false, true]) {
    assert.deepEqual(
      agentFileWarnings("a.yaml", { enabled: true, discovery: "push" }, request),
      [],
    );
  }
});

Deno.test("agent file: one that contradicts the run is warned about, either way", () => {
  assert.deepEqual(
    agentFileWarnings("agent.yaml", { enabled: true, discovery: "meta" }, true),
    [
      `warning: agent.yaml sets acp.clientTools.discovery: meta, but the client announces request; mm will not see ${TOOL_NAMES}`,
    ],
  );
  assert.deepEqual(agentFileWarnings("r.yaml", { enabled: true, discovery: "request" }, false), [
    "warning: r.yaml sets acp.clientTools.discovery: request, but the client announces meta; mm will ask for the list, and the client answers it",
  ]);
  assert.deepEqual(agentFileWarnings("x.yaml", { enabled: false, discovery: "meta" }, false), [
    `warning: x.yaml sets acp.clientTools.enabled: false; mm will ignore ${TOOL_NAMES}`,
  ]);
});

// ─── The command line as a process ───────────────────────────────────────────

Deno.test("README: sends the reader to --help for every option, and copies no part of it", () => {
  const readme = Deno.readTextFileSync(`${ROOT}/README.md`);
  assert.ok(readme.includes("`deno run -A client.ts --help` lists every option"), "no pointer");
  assert.ok(readme.includes("`deno doc client.ts`"), "no pointer to the module's documentation");
  const help = usage().split("\n");
  const copied = help.filter((line) => line.trim() !== "" && readme.includes(line));
  assert.deepEqual(copied, [], "lines of --help copied into the README");
});

Deno.test("command line: --help prints the usage and exits 0; --version prints the version", async () => {
  const help = await runClient({ noMm: true, noTrace: true, args: ["--help"] });
  assert.equal(help.code, 0);
  assert.ok(help.stdout.startsWith(`${USAGE_LINE}\n`), help.stdout);
  assert.ok(help.stdout.includes("--timeout SECONDS"));
  assert.match(help.stdout, /\n {2}--no-ask +never ask; refuse what the client did not offer/);
  assert.ok(help.stdout.includes(`the client's tools (${TOOL_NAMES})`), help.stdout);
  assert.ok(!help.stdout.includes("one tool"), help.stdout);
  const version = await runClient({ noMm: true, noTrace: true, args: ["--version"] });
  assert.equal(version.code, 0);
  assert.equal(version.stdout, "host-info-client 0.5.0\n");
});

/** Command lines that are usage errors, each with what the error line says. */
const USAGE_ERRORS: [string[], string][] = [
  [["--frobnicate"], "unknown option --frobnicate"],
  ...["0x10", "-1", "0", "abc", "1e3"].map((value): [string[], string] => [
    ["--timeout", value],
    `--timeout takes a number of seconds above 0, got "${value}"`,
  ]),
  [["--trace=yes"], "--trace takes no value"],
  [["--verbose=no"], "--verbose takes no value"],
  [["--agent"], "--agent needs a value"],
  [["--mm", ""], '--mm needs a path, got ""'],
  [["--agent="], '--agent needs a file, got ""'],
  [["--resume"], "--resume needs a value"],
  [["-i", "-"], "- reads the question from stdin, which --interactive reads too"],
  [["--agent", "-"], "--agent needs a value"],
  [["--sessions", "-q"], "--sessions lists on stdout, where --quiet writes only an answer"],
  [["--jsn"], "unknown option --jsn; did you mean --json?"],
];

Deno.test("command line: a usage error as a process is one line naming what is wrong, then the usage, exit 2, nothing on stdout and no mm", async () => {
  const runs = await Promise.all(
    USAGE_ERRORS.map(([args]) =>
      runClient({ noMm: true, noTrace: true, args, stdin: "How much memory?\n" })
    ),
  );
  for (const [i, run] of runs.entries()) {
    const [args, message] = USAGE_ERRORS[i];
    const what = `${JSON.stringify(args)}: ${run.stderr}`;
    assert.equal(run.code, 2, what);
    assert.equal(run.log[0], `error: ${message}`, what);
    assert.equal(run.log[1], USAGE_LINE, what);
    assert.equal(run.stdout, "", what);
    assert.equal(Deno.readTextFileSync(run.pidFile), "", `${what}: mm was started`);
  }
});

Deno.test("command line: the usage after a usage error names the command as it was started, as --help does", async () => {
  const args = ["--called", "host-info-client", "--frobnicate"];
  const run = await runClient({ noMm: true, noTrace: true, args });
  assert.equal(run.code, 2, run.stderr);
  assert.equal(run.log[0], "error: unknown option --frobnicate", run.stderr);
  assert.equal(
    run.log[1],
    "usage: host-info-client [options] [question | -] [-- COMMAND [ARGS…]]",
    run.stderr,
  );
});

Deno.test("command line: the name the command was started by (--called NAME, as the installed and compiled ones are) is not a word of the question", async () => {
  const called = ["--called", "host-info-client", "--mm", MM_SIM];
  const asked = await runClient({ noMm: true, noTrace: true, args: [...called, "How much RAM?"] });
  assert.equal(asked.code, 0, asked.stderr);
  assert.equal(asked.out[0], "❓ How much RAM?", asked.stdout);
  // With -i and no question, the first question is the first line read, not the name.
  const stdin = "How much RAM?\n";
  const read = await runClient({ noMm: true, noTrace: true, args: [...called, "-i"], stdin });
  assert.equal(read.code, 0, read.stderr);
  assert.deepEqual(read.out.filter((line) => line.startsWith("❓")), ["❓ How much RAM?"]);
});

Deno.test("command line: --timeout takes a decimal number of seconds: 4.5 is accepted", async () => {
  const run = await runClient({ args: ["--timeout", "4.5"] });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out.at(-1), "[end_turn]");
});

Deno.test("command line: an mm that cannot be started is one line naming it, what named it or the missing --allow-run, exit 127, nothing on stdout", async () => {
  const notExecutable = tempFile("mm", "#!/bin/sh\n", 0o644);
  const cases: [ClientRun, string][] = [
    [
      { args: ["--mm", "/nonexistent/mm"] },
      "error: cannot start mm (/nonexistent/mm): not found. --mm names it: check that path.",
    ],
    [
      { args: ["--mm", notExecutable] },
      `error: cannot start mm (${notExecutable}): not executable. --mm names it: check that path.`,
    ],
    [
      { env: { MM_BIN: "", PATH: PATH_WITHOUT_MM } },
      "error: cannot start mm (mm): not found. Install mini-me or set MM_BIN / --mm.",
    ],
    [
      { env: { MM_BIN: "/nowhere/mm", PATH: PATH_WITHOUT_MM } },
      "error: cannot start mm (/nowhere/mm): not found. MM_BIN names it: check that path.",
    ],
    [
      // A name without a slash is looked for on PATH, as a shell does: the file here is named.
      { args: ["--mm", "agent.yaml"] },
      "error: cannot start mm (agent.yaml): not found on PATH (for the file in this folder: ./agent.yaml). --mm names it: check that path.",
    ],
    [
      // Both set: --mm is the one started, and the one named.
      { args: ["--mm", "/nowhere/b"], env: { MM_BIN: "/nowhere/a" } },
      "error: cannot start mm (/nowhere/b): not found. --mm names it: check that path.",
    ],
    [
      // MM_BIN unreadable, but --mm named mm: MM_BIN played no part, and is not named.
      { args: ["--mm", "/nowhere/mm"], permissions: permissionsWith("--allow-env", null) },
      "error: cannot start mm (/nowhere/mm): not found. --mm names it: check that path.",
    ],
    [
      // The path is fine: the permission is what is missing, and all the message names.
      { args: ["--mm", MM_SIM], permissions: permissionsWith("--allow-run", null) },
      `error: cannot start mm (${MM_SIM}): this run may not start it (add --allow-run)`,
    ],
  ];

  const runs = await Promise.all(
    cases.map(([run]) => runClient({ ...run, noMm: true, noTrace: true })),
  );
  for (const [i, run] of runs.entries()) {
    const what = `${JSON.stringify(cases[i][0])}: ${run.stderr}`;
    assert.equal(run.code, 127, what);
    assert.deepEqual(run.log, [cases[i][1]], what);
    assert.equal(run.stdout, "", what);
  }
});

Deno.test("command line: mm is found through MM_BIN when --mm is not given", async () => {
  const run = await runClient({ noMm: true, env: { MM_BIN: MM_SIM } });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out.at(-1), "[end_turn]");
});

// ─── The agent file as a process ─────────────────────────────────────────────

Deno.test("agent file: one that cannot be used is one error line naming it and why, exit 2, before mm starts", async () => {
  const dir = scratchDir("host-info-test-");
  // The mistake is on line 5: its indentation.
  const bad = tempFile(
    "agent.yaml",
    "yolo: true\nacp:\n  clientTools:\n    enabled: true\n   discovery: meta\n",
  );
  const list = tempFile("agent.yaml", "- yolo\n- acp\n");
  const unreadable = agentFileWith({});
  const cases: [string, string[], string | RegExp][] = [
    ["nowhere.yaml", [], "error: agent file not found: nowhere.yaml"],
    [dir, [dir], `error: agent file ${dir} is a directory`],
    [
      bad,
      [bad],
      `error: agent file ${bad} is not valid YAML (line 5): bad indentation of a mapping entry`,
    ],
    [list, [list], `error: agent file ${list} is not a YAML mapping of keys`],
    ["agent.yaml/x", [], /^error: agent file agent\.yaml\/x cannot be read: Not a directory/],
    [
      unreadable,
      [],
      `error: agent file ${unreadable} is outside what this run may read (copy it into this folder, or add --allow-read=${unreadable})`,
    ],
  ];
  const runs = await Promise.all(
    cases.map(([agent, readAlso]) =>
      runClient({ args: ["--agent", agent], readAlso: readAlso.length ? readAlso : undefined })
    ),
  );
  for (const [i, run] of runs.entries()) {
    const [agent, , wanted] = cases[i];
    const what = `${agent}: ${run.stderr}`;
    assert.equal(run.code, 2, what);
    assert.equal(run.log.length, 1, what);
    if (typeof wanted === "string") assert.equal(run.log[0], wanted, what);
    else assert.match(run.log[0], wanted, what);
    assert.equal(run.stdout, "", what);
    assert.ok(!run.stderr.includes("→ "), `${what}: a frame was sent`);
    assert.equal(Deno.readTextFileSync(run.pidFile), "", `${what}: mm was started`);
  }
});

Deno.test("agent file: a missing default one, as in a folder where client.ts was copied alone, says to copy it beside client.ts or pass --agent", async () => {
  // A copy of the client in a folder with no agent file, run from another
  // such folder: neither the current folder nor the client's has agent.yaml.
  const copy = scratchDir("host-info-client-");
  Deno.copyFileSync(`${ROOT}/client.ts`, `${copy}/client.ts`);
  const run = await runClient({
    client: `${copy}/client.ts`,
    cwd: scratchDir("host-info-cwd-"),
    permissions: permissionsWith("--allow-read", "--allow-read"),
    noTrace: true,
  });
  assert.equal(run.code, 2, run.stderr);
  assert.equal(
    run.stderr,
    "error: agent file not found: agent.yaml (copy it beside client.ts, or pass --agent FILE)\n",
  );
});

Deno.test("agent file: an empty one, or one with only comments, is valid with no keys", async () => {
  for (const text of ["", "# nothing but\n   # comments here\n\n"]) {
    const agent = tempFile("agent.yaml", text);
    const run = await runClient({
      args: ["--agent", agent],
      readAlso: [agent],
    });
    assert.equal(run.code, 0, `${JSON.stringify(text)}: ${run.stderr}`);
    assert.equal(run.out.at(-1), "[end_turn]");
    assert.ok(!run.log.some((l) => /^error:|warning:/.test(l)), run.stderr);
  }
});

Deno.test("agent file: found next to client.ts when the current folder has none", async () => {
  const elsewhere = scratchDir();
  const run = await runClient({ cwd: elsewhere, permissions: ["--allow-all"] });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(run.stderr.includes(`"cwd":"${elsewhere}"`), "session/new carries the client's cwd");
  // A relative path with a folder in it is looked for there too; an absolute one only where it is.
  const relative = await runClient({
    cwd: elsewhere,
    permissions: ["--allow-all"],
    args: ["--agent", "./agent-request.yaml", "--request"],
  });
  assert.equal(relative.code, 0, relative.stderr);
  const absolute = await runClient({
    cwd: elsewhere,
    permissions: ["--allow-all"],
    noTrace: true,
    args: ["--agent", `${elsewhere}/agent.yaml`],
  });
  assert.equal(absolute.code, 2, absolute.stderr);
  assert.equal(absolute.log[0], `error: agent file not found: ${elsewhere}/agent.yaml`);
});

Deno.test("agent file: crossed modes: the client announces true to a meta agent, is warned, mm says so and the model has no tool", async () => {
  const run = await runClient({ args: ["--request", "--agent", "agent.yaml"] });
  assert.equal(run.code, 0, run.stderr);
  assertInOrder(run.log, [
    `[client] warning: agent.yaml sets acp.clientTools.discovery: meta, but the client announces request; mm will not see ${TOOL_NAMES}`,
    '[acp] client tools: "org.mini-me/tools" is not a list of tools; a client that answers _org.mini-me/tools/list needs acp.clientTools.discovery: request',
  ]);
  assert.ok(!run.log.some((l) => l.startsWith("[client] host_info")));
  assertInOrder(run.out, [/^I cannot see your machine/, "[end_turn]"]);
});

Deno.test("agent file: crossed modes: a meta client with a request agent is warned and still answers the list", async () => {
  const run = await runClient({ args: ["--agent", "agent-request.yaml"] });
  assert.equal(run.code, 0, run.stderr);
  const { session } = discovery(run.log);
  assertInOrder(run.log, [
    "[client] warning: agent-request.yaml sets acp.clientTools.discovery: request, but the client announces meta; mm will ask for the list, and the client answers it",
    `[client] list requested for session ${session}`,
    `[acp] session ${session} client tools (request): ${MODEL_NAMES}`,
  ]);
  assertInOrder(run.out, [`│ ${OS_TEXT}`, "[end_turn]"]);
});

Deno.test("agent file: YAML with quotes and a flow list is read, and warned about alike", async () => {
  const agent = agentFileWith({
    "discovery: meta": 'discovery: "request"',
    "yolo: true": "yolo: true\ntags: [demo, host_info]",
  });
  const run = await runClient({ args: ["--agent", agent], readAlso: [agent] });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(
    run.log[0].endsWith(
      "agent.yaml sets acp.clientTools.discovery: request, but the client announces meta; mm will ask for the list, and the client answers it",
    ),
    run.log[0],
  );
  assertInOrder(run.out, [`│ ${OS_TEXT}`, "[end_turn]"]);
});

Deno.test("agent file: of several YAML documents the first is read, by the client as by mm", async () => {
  const first = Deno.readTextFileSync(agentFileWith({ "enabled: true": "enabled: false" }));
  const rest = Deno.readTextFileSync(`${ROOT}/agent.yaml`);
  const agent = tempFile("agent.yaml", `${first}---\n${rest}`);
  const run = await runClient({ args: ["--agent", agent], readAlso: [agent] });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(
    run.log[0].endsWith(`sets acp.clientTools.enabled: false; mm will ignore ${TOOL_NAMES}`),
  );
  assert.ok(!run.log.some((l) => l.startsWith("[acp] client tools")), run.stderr);
  assertInOrder(run.out, [/^I cannot see your machine/, "[end_turn]"]);
});

Deno.test("agent file: with client tools disabled the client warns and mm ignores host_info", async () => {
  const agent = agentFileWith({ "enabled: true": "enabled: false" });
  const run = await runClient({ args: ["--agent", agent], readAlso: [agent] });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(
    run.log[0].startsWith("[client] warning: ") &&
      run.log[0].endsWith(
        `agent.yaml sets acp.clientTools.enabled: false; mm will ignore ${TOOL_NAMES}`,
      ),
    run.log[0],
  );
  assert.ok(!run.log.some((l) => l.startsWith("[acp] client tools")));
  assertInOrder(run.out, [/^I cannot see your machine/, "[end_turn]"]);
});
