/**
 * client.ts as a library: the protocol half alone, cut at its line and given a short `main` of its
 * own, type-checks and lends a tool of its own to the stand-in in both discovery modes; `lend()`,
 * imported from another folder, does the same and gives the answer back as data, with nothing on
 * stdout or stderr that its own view did not write; importing the file runs nothing and asks for
 * no permission.
 */

import assert from "./_assert.ts";
import {
  assertNoPeerLeft,
  lastLines,
  MM_SIM,
  passedEnv,
  ROGUE,
  ROOT,
  tempFile,
  WAIT_MS,
  within,
} from "./_run.ts";
import { SCRATCH, scratchDir } from "./_scratch.ts";

/** The line of client.ts where the protocol ends and the terminal program begins. */
const DIVIDER = /^\/\/ ═══ The protocol ends here/m;

/** What a program of the test's prints: its stdout, its stderr, its exit code. */
type Ran = { code: number; stdout: string; stderr: string };

/** Runs `deno <args>` from `cwd`, with the machine's cache and the stand-in's scratch folder. */
async function deno(
  args: string[],
  cwd: string,
  pidFile?: string,
  env: Record<string, string> = {},
): Promise<Ran> {
  const output = new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    clearEnv: true,
    env: {
      ...passedEnv(),
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      DENO_BIN: Deno.execPath(),
      TMPDIR: SCRATCH,
      ...(pidFile ? { MM_SIM_PID_FILE: pidFile, ROGUE_PID_FILE: pidFile } : {}),
      ...env,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const { code, stdout, stderr } = await within(WAIT_MS, `deno ${args.join(" ")}`, output);
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code, stdout: decode(stdout), stderr: decode(stderr) };
}

/**
 * A short program that lends `clock`, a tool TOOLS does not have, to the stand-in
 * (`deno run … <file> <mm> <agent file> <meta|request>`), and prints what `lend()` resolved to and
 * the lines its view was given, as one JSON line.
 */
const LENDS_CLOCK = `
const clock = tool({
  name: "clock",
  description: "The time on the user's machine, in a time zone.",
  method: "_test.library/clock",
  inputSchema: {
    type: "object",
    properties: { zone: { type: "string", enum: ["UTC", "CET"] } },
    required: ["zone"],
  },
  call: ({ zone }) => toolText(\`noon, \${zone}\`),
});
const [mm, agent, discovery] = Deno.args;
const lines: string[] = [];
const lent = await lend({
  mm: { command: mm, args: ["-acp", "-agent", agent] },
  tools: [clock],
  discovery: discovery === "request" ? "request" : "meta",
  questions: ["What does clock say?"],
  view: { log: (line) => lines.push(line) },
});
console.log(JSON.stringify({ lent, lines }));
`;

/** Asserts that a run of {@linkcode LENDS_CLOCK} lent clock, in `discovery` mode, and got its answer. */
function assertClockLent(ran: Ran, discovery: string): void {
  assert.equal(ran.code, 0, `${ran.stdout}\n${lastLines(ran.stderr)}`);
  assert.equal(ran.stderr, "", "nothing on stderr but what the program's own view writes");
  const outLines = ran.stdout.trimEnd().split("\n");
  assert.equal(outLines.length, 1, `nothing on stdout but the program's own line:\n${ran.stdout}`);
  const { lent, lines } = JSON.parse(outLines[0]);
  assert.match(lent.sessionId, /^\d{8}-\d{6}-[0-9a-f]{8}$/);
  assert.equal(lent.turns.length, 1);
  const [turn] = lent.turns;
  assert.equal(turn.question, "What does clock say?");
  assert.equal(turn.stopReason, "end_turn");
  assert.ok(turn.text.includes("clock: noon, UTC"), turn.text);
  assert.deepEqual({ cancelled: turn.cancelled, refused: turn.refused }, {
    cancelled: false,
    refused: false,
  });
  assert.ok(lines.includes(`clock {"zone":"UTC"} (session ${lent.sessionId})`), lines.join("\n"));
  assert.ok(lines.includes(`discovery: ${discovery}, session ${lent.sessionId}`), lines.join("\n"));
  const asked = lines.includes(`list requested for session ${lent.sessionId}`);
  assert.equal(asked, discovery === "request", lines.join("\n"));
}

const AGENT_FILES = { meta: `${ROOT}/agent.yaml`, request: `${ROOT}/agent-request.yaml` };
/** The stand-in as an ACP agent that is not mm. */
const AGENT_SIM = `${ROOT}/test/agent-sim`;

Deno.test("library: the protocol half alone, cut at its line with a main of its own, type-checks and lends a tool of its own in both discovery modes", async () => {
  const source = Deno.readTextFileSync(`${ROOT}/client.ts`);
  const cut = source.search(DIVIDER);
  assert.ok(cut > 0, "client.ts has no line that says the protocol ends there");
  const folder = scratchDir("top-half-");
  const file = `${folder}/top_half.ts`;
  Deno.writeTextFileSync(file, `${source.slice(0, cut)}\n${LENDS_CLOCK}`);
  const checked = await deno(["check", "--no-config", "--no-lock", file], folder);
  assert.equal(checked.code, 0, `the protocol half alone does not type-check:\n${checked.stderr}`);
  for (const [discovery, agent] of Object.entries(AGENT_FILES)) {
    const pidFile = tempFile("pid", "");
    const args = ["run", "--no-config", "--no-lock", "--no-prompt", "--allow-run", "--allow-read"];
    const ran = await deno([...args, file, MM_SIM, agent, discovery], folder, pidFile);
    assertClockLent(ran, discovery);
    await assertNoPeerLeft(pidFile);
  }
});

Deno.test("library: lend(), imported from another folder, lends a tool that is not in TOOLS in both modes and gives the answer back as data, printing nothing of its own", async () => {
  const folder = scratchDir("importer-");
  const file = `${folder}/lends_clock.ts`;
  const imported = new URL(`file://${ROOT}/client.ts`).href;
  Deno.writeTextFileSync(
    file,
    `import { lend, tool, toolText } from "${imported}";\n${LENDS_CLOCK}`,
  );
  for (const [discovery, agent] of Object.entries(AGENT_FILES)) {
    const pidFile = tempFile("pid", "");
    const lock = `--lock=${ROOT}/deno.lock`;
    const args = ["run", "--no-config", lock, "--no-prompt", "--allow-run", "--allow-read"];
    const ran = await deno([...args, file, MM_SIM, agent, discovery], folder, pidFile);
    assertClockLent(ran, discovery);
    await assertNoPeerLeft(pidFile);
  }
});

Deno.test("library: importing client.ts runs nothing, reads nothing and needs no permission", async () => {
  const folder = scratchDir("import-only-");
  const file = `${folder}/imports.ts`;
  const imported = new URL(`file://${ROOT}/client.ts`).href;
  const names = "lend, main, tool, TOOLS, decide";
  Deno.writeTextFileSync(
    file,
    `import { ${names} } from "${imported}";\nconsole.log([${names}].map((x) => typeof x).join(" "));\n`,
  );
  // No --allow-* at all, and --no-prompt: a permission asked for would be an error, not a prompt.
  const ran = await deno(
    ["run", "--no-config", `--lock=${ROOT}/deno.lock`, "--no-prompt", file],
    folder,
  );
  assert.equal(ran.code, 0, ran.stderr);
  assert.equal(ran.stdout, "function function function object function\n");
  assert.equal(ran.stderr, "");
});

Deno.test("library: a program that imports lend() and reads no agent file does not even fetch the YAML reader", async () => {
  const folder = scratchDir("no-yaml-");
  const cache = `${folder}/deno-dir`; // empty: what the run needs, it fetches
  const file = `${folder}/imports.ts`;
  const imported = new URL(`file://${ROOT}/client.ts`).href;
  Deno.writeTextFileSync(file, `import { lend } from "${imported}";\nconsole.log(typeof lend);\n`);
  const args = ["run", "--no-config", "--no-lock", "--no-prompt", file];
  const ran = await deno(args, folder, undefined, { DENO_DIR: cache });
  assert.equal(ran.code, 0, ran.stderr);
  assert.equal(ran.stdout, "function\n");
  const yaml = `${cache}/npm/registry.npmjs.org/js-yaml`;
  const fetched = () => Deno.statSync(yaml);
  assert.throws(fetched, Deno.errors.NotFound, "js-yaml was fetched for a program that reads none");
});

/** The first `ts ignore` block of the README after `heading`. */
function readmeBlock(heading: string): string {
  const readme = Deno.readTextFileSync(`${ROOT}/README.md`);
  const after = readme.slice(readme.indexOf(heading));
  const block = after.match(/\n```ts ignore\n([\s\S]*?)\n```\n/)?.[1];
  if (block === undefined) throw new Error(`the README has no ts block after ${heading}`);
  return block;
}

Deno.test("README: its library example runs as written, lending dice to the stand-in and printing the answer", async () => {
  const example = readmeBlock("## Use it as a library");
  const folder = scratchDir("readme-library-");
  const file = `${folder}/example.ts`;
  const client = new URL(`file://${ROOT}/client.ts`).href;
  Deno.writeTextFileSync(file, example.replace('from "./client.ts"', `from "${client}"`));
  const checked = await deno(["check", "--no-config", `--lock=${ROOT}/deno.lock`, file], ROOT);
  assert.equal(checked.code, 0, checked.stderr);
  // With the permissions the README says it needs, and no more.
  const readme = Deno.readTextFileSync(`${ROOT}/README.md`);
  const flags = readme.match(
    /`MM_BIN=test\/mm-sim deno run ((?:--allow-[a-z]+(?:=\S+)? )+)dice\.ts`/,
  );
  if (!flags) throw new Error("the README does not say how to run its example");
  const pidFile = tempFile("pid", "");
  const output = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-config",
      `--lock=${ROOT}/deno.lock`,
      "--no-prompt",
      ...flags[1].trim().split(" "),
      file,
    ],
    cwd: ROOT, // where its agent.yaml is
    env: { DENO_BIN: Deno.execPath(), MM_BIN: MM_SIM, TMPDIR: SCRATCH, MM_SIM_PID_FILE: pidFile },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const ran = await within(WAIT_MS, "the README's example to end", output);
  const [stdout, stderr] = [ran.stdout, ran.stderr].map((bytes) => new TextDecoder().decode(bytes));
  assert.equal(ran.code, 0, stderr);
  assert.match(
    stdout,
    /^\d{8}-\d{6}-[0-9a-f]{8} end_turn Here is what dice reports about your machine — dice: rolled [1-6]\.\n$/,
  );
  assert.match(
    stderr,
    /^\[dice\] discovery: meta, session \S+\n\[dice\] dice \{\} \(session \S+\)\n$/,
  );
  await assertNoPeerLeft(pidFile);
});

Deno.test("README: its one edit to decide() lets mm read without asking, and nothing else", async () => {
  const edit = readmeBlock("**The policy is one function**");
  const source = Deno.readTextFileSync(`${ROOT}/client.ts`);
  const first = /(\nexport function decide\([^\n]*\{\n[^\n]*\n)/;
  assert.match(source, first, "client.ts has no decide() whose first line the edit follows");
  const folder = scratchDir("readme-policy-");
  Deno.writeTextFileSync(`${folder}/client.ts`, source.replace(first, `$1${edit}\n`));
  const checked = await deno(
    ["check", "--no-config", `--lock=${ROOT}/deno.lock`, "client.ts"],
    folder,
  );
  assert.equal(checked.code, 0, checked.stderr);
  const { decide, TOOLS } = await import(`${folder}/client.ts`);
  const asked = (kind: string, title: string) =>
    decide({ kind, title, toolCall: {}, options: [] }, TOOLS);
  assert.equal(asked("read", "Read /etc/hosts"), "allow");
  assert.equal(asked("execute", "ls -la /srv"), "ask");
  assert.equal(asked("edit", "Edit config.yaml"), "ask");
  assert.equal(asked("other", "client: host_info"), "allow");
});

Deno.test("README: its code blocks are marked for deno test --doc to skip, as each is tested as written here or in tools_test.ts, and deno check --doc-only passes", async () => {
  const checked = await deno(["check", "--no-config", "--doc-only", `${ROOT}/README.md`], ROOT);
  assert.equal(checked.code, 0, checked.stderr);
  const readme = Deno.readTextFileSync(`${ROOT}/README.md`);
  const unmarked = [...readme.matchAll(/\n```(ts|typescript|js|javascript)\n/g)];
  assert.deepEqual(unmarked.map((m) => m[0].trim()), [], "a code block deno test --doc would run");
});

Deno.test("library: when mm exits early and no view shows its log, the error quotes its last line", async () => {
  const mm = tempFile(
    "mm",
    "#!/bin/sh\necho 'mm: starting' >&2\necho 'mm: cannot load agent nowhere.yaml' >&2\nexit 3\n",
    0o755,
  );
  const folder = scratchDir("early-exit-");
  const file = `${folder}/lends.ts`;
  const imported = new URL(`file://${ROOT}/client.ts`).href;
  Deno.writeTextFileSync(
    file,
    `import { lend } from "${imported}";\n` +
      `await lend({ mm: { command: Deno.args[0] }, tools: [], questions: "Hi" }).catch((e) => console.log(e.message));\n`,
  );
  const args = [
    "run",
    "--no-config",
    `--lock=${ROOT}/deno.lock`,
    "--no-prompt",
    "--allow-run",
    "--allow-read",
  ];
  const ran = await deno([...args, file, mm], folder);
  assert.equal(ran.code, 0, ran.stderr);
  assert.equal(
    ran.stdout,
    'mm exited with code 3 before answering initialize (its last words: "mm: cannot load agent nowhere.yaml")\n',
  );
});

/**
 * Runs `body`, a program that imports what it names of client.ts, from a folder of its own with
 * `shell.yaml` (a stand-in with a shell that asks permission) beside it, and with `args` after it;
 * in `folder` if given.
 */
async function runProgram(
  body: string,
  args: string[] = [],
  folder = scratchDir("program-"),
): Promise<Ran> {
  const file = `${folder}/program.ts`;
  const imported = new URL(`file://${ROOT}/client.ts`).href;
  Deno.writeTextFileSync(file, body.replace('"client.ts"', JSON.stringify(imported)));
  const agent = Deno.readTextFileSync(`${ROOT}/agent.yaml`)
    .replace("bashTool: false", "bashTool: true").replace("yolo: true", "yolo: false");
  assert.match(agent, /bashTool: true[\s\S]*yolo: false/, "agent.yaml no longer has these keys");
  Deno.writeTextFileSync(`${folder}/shell.yaml`, agent);
  const pidFile = tempFile("pid", "");
  const lock = `--lock=${ROOT}/deno.lock`;
  const flags = ["run", "--no-config", lock, "--no-prompt", "--allow-run", "--allow-read"];
  const ran = await deno(
    [...flags, file, MM_SIM, `${folder}/shell.yaml`, ...args],
    folder,
    pidFile,
  );
  await assertNoPeerLeft(pidFile);
  return ran;
}

/**
 * A program that lends the default tools to the stand-in with a shell that asks permission
 * (`deno run … <file> <mm> <agent file> <asker> <cwd>`), its asker being `throws` (a plain function
 * that throws), `rejects`, or `unoffered` (an option mm did not offer); it prints how `lend()`
 * ended, its view's lines, and the frames it sent.
 */
const ASKS = `
const [mm, agent, how, cwd] = Deno.args;
const lines: string[] = [];
const sent: unknown[] = [];
const askers: Record<string, Asker> = {
  throws: () => {
    throw new Error("the asker broke");
  },
  rejects: () => Promise.reject(new Error("the asker broke")),
  unoffered: () => Promise.resolve({ outcome: "selected", optionId: "yes-please" }),
};
let ended: unknown;
try {
  ended = await lend({
    mm: { command: mm, args: ["-acp", "-agent", agent], cwd },
    tools: TOOLS,
    questions: ["How big is my disk?"],
    asker: askers[how],
    view: {
      log: (line) => lines.push(line),
      warn: (line) => lines.push(\`warn: \${line}\`),
      frame: (line, out) => {
        if (out) sent.push(JSON.parse(line));
      },
    },
  });
} catch (error) {
  ended = { name: (error as Error).name, message: (error as Error).message };
}
console.log(JSON.stringify({ ended, lines, sent }));
`;

/**
 * Runs {@linkcode ASKS} with `how` for its asker, from a folder of its own; `relative`: mm's session
 * folder given as `../<that folder>`.
 */
async function lendWithAsker(how: string, relative = false) {
  const folder = scratchDir("asker-");
  const cwd = relative ? `../${folder.split("/").at(-1)}` : ".";
  const body = `import { type Asker, lend, TOOLS } from "client.ts";\n${ASKS}`;
  const ran = await runProgram(body, [how, cwd], folder);
  assert.equal(ran.code, 0, `${ran.stdout}\n${lastLines(ran.stderr)}`);
  return { folder, ...JSON.parse(ran.stdout) };
}

Deno.test("library: an asker that throws, even before it returns a promise, ends the lending with its error, and mm with it", async () => {
  for (const how of ["throws", "rejects"]) {
    const { ended, sent } = await lendWithAsker(how);
    assert.deepEqual(ended, { name: "Error", message: "the asker broke" }, how);
    const outcomes = sent.filter((frame: { result?: { outcome?: unknown } }) =>
      frame.result?.outcome
    );
    assert.deepEqual(outcomes, [], `${how}: the permission was not answered as if refused`);
  }
});

Deno.test("library: an asker's choice of an option mm did not offer is never sent: the permission is refused, and a warning says why", async () => {
  const { ended, lines, sent } = await lendWithAsker("unoffered");
  assert.equal(ended.turns[0].refused, true);
  const answers = sent.filter((frame: { result?: { outcome?: unknown } }) => frame.result?.outcome);
  assert.equal(answers.length, 1, JSON.stringify(sent));
  assert.deepEqual(answers[0].result, { outcome: { outcome: "selected", optionId: "reject" } });
  assert.ok(
    lines.includes('warn: the asker chose "yes-please", an option mm did not offer: refused'),
    lines.join("\n"),
  );
  assert.ok(lines.includes('permission for "bash: df -h .": refused (asked)'), lines.join("\n"));
});

Deno.test("library: a relative mm.cwd opens the session in that folder as an absolute path, as ACP asks", async () => {
  const { folder, sent } = await lendWithAsker("unoffered", true);
  const opened = sent.find((frame: { method?: string }) => frame.method === "session/new");
  assert.equal(opened?.params.cwd, folder);
});

Deno.test("library: an uncaught error of lend() is printed with its own name, ClientError, and one line of message", async () => {
  const folder = scratchDir("uncaught-");
  const file = `${folder}/uncaught.ts`;
  const imported = new URL(`file://${ROOT}/client.ts`).href;
  Deno.writeTextFileSync(
    file,
    `import { lend } from "${imported}";\nawait lend({ mm: { command: "./no-such-mm" }, tools: [], questions: "Hi" });\n`,
  );
  const lock = `--lock=${ROOT}/deno.lock`;
  const ran = await deno(["run", "--no-config", lock, "--no-prompt", "--allow-run", file], folder);
  assert.equal(ran.code, 1);
  assert.match(
    ran.stderr,
    /Uncaught \(in promise\) ClientError: cannot start mm \(\.\/no-such-mm\): not found\n/,
  );
});

Deno.test("library: resume's chooser, given a relative cwd, is offered that folder's sessions alone, as mm lists them by absolute path", async () => {
  const folder = scratchDir("resumes-");
  const file = `${folder}/resumes.ts`;
  const imported = new URL(`file://${ROOT}/client.ts`).href;
  Deno.writeTextFileSync(
    file,
    `import { lend } from "${imported}";
const [mm, agent, relative] = Deno.args;
const args = ["-acp", "-agent", agent];
const first = await lend({ mm: { command: mm, args }, tools: [], questions: "Hi" });
let listed: Record<string, unknown>[] = [];
const choose = (found: Record<string, unknown>[]) => {
  listed = found;
  return undefined;
};
await lend({ mm: { command: mm, args }, tools: [], questions: [], resume: { cwd: relative, choose } });
console.log(JSON.stringify({ first: first.sessionId, listed }));
`,
  );
  const lock = `--lock=${ROOT}/deno.lock`;
  const args = ["run", "--no-config", lock, "--no-prompt", "--allow-run", "--allow-read"];
  const relative = `../${folder.split("/").at(-1)}`;
  const ran = await deno([...args, file, MM_SIM, AGENT_FILES.meta, relative], folder);
  assert.equal(ran.code, 0, `${ran.stdout}\n${lastLines(ran.stderr)}`);
  const { first, listed } = JSON.parse(ran.stdout);
  assert.ok(
    listed.some((session: { sessionId: string }) => session.sessionId === first),
    ran.stdout,
  );
  assert.deepEqual([...new Set(listed.map((session: { cwd: string }) => session.cwd))], [folder]);
});

/** Runs `body`, a program that imports what it names of client.ts, from a folder of its own. */
async function runImporter(
  body: string,
  args: string[],
  env: Record<string, string> = {},
  permissions: string[] = [],
) {
  const folder = scratchDir("importer-");
  const file = `${folder}/program.ts`;
  const imported = new URL(`file://${ROOT}/client.ts`).href;
  Deno.writeTextFileSync(file, body.replace('"client.ts"', JSON.stringify(imported)));
  const pidFile = tempFile("pid", "");
  const lock = `--lock=${ROOT}/deno.lock`;
  const flags = ["run", "--no-config", lock, "--no-prompt", "--allow-run", "--allow-read"];
  const ran = await deno([...flags, ...permissions, file, ...args], folder, pidFile, env);
  await assertNoPeerLeft(pidFile);
  assert.equal(ran.code, 0, `${ran.stdout}\n${lastLines(ran.stderr)}`);
  return JSON.parse(ran.stdout);
}

/**
 * A program that lends `wait` — a tool that answers after 4 s, or at once when its signal
 * aborts — to the misbehaving peer, which calls it (`call-then`); while it runs the session ends
 * one way (`exit`: mm exits; `end`: the last turn ends; `cancel`: the program aborts
 * lend()'s signal; `hold`: a view throws). It prints how lend() settled, and whether the call's
 * signal had aborted by then.
 */
const WAITS = `import { lend, tool, toolText } from "client.ts";
const [mm, how, road, started] = Deno.args; // started: a file made when the call runs, for a peer
let aborted = false;
const wait = tool({
  name: "wait",
  description: "Waits 4 s.",
  method: "_test/wait",
  inputSchema: { type: "object" },
  call: (_args, signal) =>
    new Promise((resolve) => {
      if (started) Deno.writeTextFileSync(started, "");
      const timer = setTimeout(() => resolve(toolText("waited")), 4000);
      signal.addEventListener("abort", () => {
        aborted = true;
        clearTimeout(timer);
        resolve(toolText("stopped"));
      });
    }),
});
const controller = new AbortController();
const log = (line: string) => {
  if (!line.startsWith("wait ")) return; // the call's own line, before the tool runs
  // From outside, as a person's Ctrl-C comes: the call has begun.
  if (how === "cancel") setTimeout(() => controller.abort(new Error("aborted by the program")), 0);
  if (how === "hold") throw new Error("the view broke");
};
let settled = "resolved";
try {
  const agent = road === "mcp" ? { agent: { command: mm } } : { mm: { command: mm } };
  await lend({ ...agent, tools: [wait], questions: "Wait.", view: { log }, signal: controller.signal });
} catch (error) {
  settled = (error as Error).message;
}
console.log(JSON.stringify({ settled, aborted }));
`;

const ENDINGS = [
  ["exit", "mm exits", "mm exited with code 0 before the turn ended"],
  ["hold", "a view throws", "the view broke"],
  ["cancel", "lend()'s signal aborts", "aborted by the program"],
  ["end", "the last turn ends", "resolved"],
];
for (const [how, way, settled] of ENDINGS) {
  Deno.test(`library: when ${way} while a call runs, the call's signal aborts before lend() settles`, async () => {
    const env = { ROGUE_SCENARIO: "call-then", ROGUE_THEN: how };
    const ran = await runImporter(WAITS, [ROGUE, how], env);
    assert.deepEqual(ran, { settled, aborted: true });
  });
  // The same through the client's MCP server, for an agent that is not mm (named by its command).
  Deno.test(`library: when ${way.replace("mm", "another agent")} while a call through the client's MCP server runs, the call's signal aborts before lend() settles`, async () => {
    const started = `${scratchDir("started-")}/started`;
    const env = { ROGUE_SCENARIO: "mcp-call-then", ROGUE_THEN: how, ROGUE_WAIT_FILE: started };
    const permissions = ["--allow-net=127.0.0.1", "--allow-write"];
    const ran = await runImporter(WAITS, [ROGUE, how, "mcp", started], env, permissions);
    assert.deepEqual(ran, { settled: settled.replace(/^mm /, "rogue-mm "), aborted: true });
  });
}

Deno.test("library: another agent that cancels a call through the client's MCP server (notifications/cancelled) aborts its signal, and is named as the one who did", async () => {
  const body = WAITS.replace("view: { log }", "view: { log: (line) => lines.push(line) }")
    .replace("let settled", "const lines: string[] = [];\nlet settled")
    .replace("JSON.stringify({ settled, aborted })", "JSON.stringify({ settled, aborted, lines })");
  const started = `${scratchDir("started-")}/started`;
  const env = {
    ROGUE_SCENARIO: "mcp-call-then",
    ROGUE_THEN: "cancel-call",
    ROGUE_WAIT_FILE: started,
  };
  const permissions = ["--allow-net=127.0.0.1", "--allow-write"];
  const ran = await runImporter(body, [ROGUE, "cancel-call", "mcp", started], env, permissions);
  assert.equal(ran.settled, "resolved", JSON.stringify(ran));
  assert.equal(ran.aborted, true, JSON.stringify(ran));
  assert.ok(ran.lines.includes("wait cancelled by rogue-mm"), JSON.stringify(ran.lines));
});

Deno.test("library: a call through the client's MCP server whose signal is aborted before it runs (lend()'s signal, from its own line) does not run", async () => {
  const body = WAITS.replace(
    'if (how === "cancel") setTimeout(() => controller.abort(new Error("aborted by the program")), 0);',
    'if (how === "cancel") controller.abort(new Error("aborted by the program"));',
  ).replace(
    "if (started) Deno.writeTextFileSync",
    "ran = true;\n      if (started) Deno.writeTextFileSync",
  )
    .replace("let aborted = false;", "let aborted = false;\nlet ran = false;")
    .replace("JSON.stringify({ settled, aborted })", "JSON.stringify({ settled, ran })");
  assert.ok(body.includes("ran = true;") && body.includes("controller.abort(new Error"), body);
  const started = `${scratchDir("started-")}/started`;
  // The peer does not wait for the call to run: it ends the turn once it is cancelled.
  const env = { ROGUE_SCENARIO: "mcp-call-then", ROGUE_THEN: "cancel" };
  const permissions = ["--allow-net=127.0.0.1", "--allow-write"];
  const ran = await runImporter(body, [ROGUE, "cancel", "mcp", started], env, permissions);
  assert.deepEqual(ran, { settled: "aborted by the program", ran: false });
});

/** A program of a dozen lines that lends a tool of its own to another ACP agent than mm. */
const LENDS_TO_AN_AGENT = `import { lend, tool, toolText } from "client.ts";
const clock = tool({
  name: "clock",
  description: "The time on the user's machine, in a time zone.",
  method: "_test.library/clock",
  inputSchema: { type: "object", properties: { zone: { type: "string", enum: ["UTC"] } } },
  call: ({ zone = "UTC" }) => toolText(\`noon, \${zone}\`),
});
const [command, ...args] = Deno.args;
const lent = await lend({ agent: { command, args }, tools: [clock], questions: "What does clock say?" });
console.log(JSON.stringify(lent));
`;

Deno.test("library: a program of a dozen lines lends a tool of its own to an ACP agent that is not mm, over HTTP and over stdio, and gets the answer back as data", async () => {
  // The net for the client's MCP server; DENO_DIR, for the relay's deno to compile where this one does.
  const permissions = ["--allow-net=127.0.0.1", "--allow-env=DENO_DIR"];
  for (const transport of [[], ["--stdio"]]) {
    const lent = await runImporter(LENDS_TO_AN_AGENT, [AGENT_SIM, ...transport], {}, permissions);
    assert.equal(lent.turns.length, 1, JSON.stringify(lent));
    assert.ok(lent.turns[0].text.includes("clock: noon, UTC"), JSON.stringify(lent));
    assert.equal(lent.turns[0].stopReason, "end_turn");
  }
});

Deno.test("library: when lend()'s signal aborts, the client's MCP server no longer listens, over HTTP and over stdio, and no relay runs", async () => {
  const body = `import { lend, TOOLS } from "client.ts";
const [command, ...args] = Deno.args;
let host = "";
const controller = new AbortController();
const frame = (line: string, sent: boolean) => {
  if (!sent || !line.includes('"method":"session/new"')) return;
  const [entry] = JSON.parse(line).params.mcpServers;
  host = new URL(entry.url ?? entry.args.find((arg: string) => arg.startsWith("http://"))).host;
};
const turnStarted = () => setTimeout(() => controller.abort(new Error("stopped")), 200);
let settled = "resolved";
try {
  await lend({ agent: { command, args }, tools: TOOLS, questions: "What OS?", signal: controller.signal, view: { frame, turnStarted } });
} catch (error) {
  settled = (error as Error).message;
}
const [hostname, port] = host.split(":");
const listening = await Deno.connect({ hostname, port: Number(port) }).then((c) => c.close() ?? true, () => false);
console.log(JSON.stringify({ settled, host, listening }));
`;
  const permissions = ["--allow-net=127.0.0.1", "--allow-env=DENO_DIR"];
  const env = { MM_SIM_THINK_MS: String(WAIT_MS) };
  for (const transport of [[], ["--stdio"]]) {
    const ran = await runImporter(body, [AGENT_SIM, ...transport], env, permissions);
    assert.deepEqual([ran.settled, ran.listening], ["stopped", false], JSON.stringify(ran));
    const ps = await new Deno.Command("ps", { args: ["-eo", "args="] }).output();
    const relays = new TextDecoder().decode(ps.stdout).split("\n")
      .filter((line) => line.includes(`--mcp-relay http://${ran.host}/`));
    assert.deepEqual(relays, [], "a relay outlived the session");
  }
});

Deno.test("library: lend() takes a policy of its own instead of decide(): refused, the call does not run", async () => {
  const body = `import { lend, TOOLS } from "client.ts";
const [command, ...args] = Deno.args;
const lines: string[] = [];
const lent = await lend({
  agent: { command, args },
  tools: TOOLS,
  questions: "What OS?",
  policy: () => "refuse",
  view: { log: (line) => lines.push(line) },
});
console.log(JSON.stringify({ refused: lent.turns[0].refused, lines }));
`;
  const permissions = ["--allow-net=127.0.0.1", "--allow-env=DENO_DIR"];
  const ran = await runImporter(body, [AGENT_SIM, "--asks", "claude"], {}, permissions);
  assert.equal(ran.refused, true, JSON.stringify(ran));
  assert.ok(ran.lines.includes('permission for "mcp__client__host_info": refused'), ran.lines);
  assert.ok(!ran.lines.some((line: string) => line.startsWith("host_info ")), ran.lines);
});

Deno.test("library: in request discovery, a session mm opens without asking for the list is warned about through the view, with what to change", async () => {
  const body = `import { lend, TOOLS } from "client.ts";
const warnings: string[] = [];
const [mm, agent] = Deno.args;
await lend({
  mm: { command: mm, args: ["-acp", "-agent", agent] },
  tools: TOOLS,
  discovery: "request",
  questions: [],
  view: { warn: (line) => warnings.push(line) },
});
console.log(JSON.stringify(warnings));
`;
  const warned = await runImporter(body, [MM_SIM, AGENT_FILES.meta]);
  assert.equal(warned.length, 1, JSON.stringify(warned));
  assert.match(
    warned[0],
    /^warning: mm opened session \S+ without asking for the client's tools, so it has none: for discovery "request", its agent file must set acp\.clientTools\.discovery: request$/,
  );
  const fine = await runImporter(body, [MM_SIM, AGENT_FILES.request]);
  assert.deepEqual(fine, [], "mm asked: no warning");
});

Deno.test("library: a tool whose call returns, or resolves to, something that is not a result is answered as an error result naming the tool, and warned about", async () => {
  const body = `import { lend, type Tool } from "client.ts";
const [mm, agent] = Deno.args;
const broken = {
  name: "broken",
  description: "Returns nothing, as plain JavaScript may.",
  method: "_test/broken",
  inputSchema: { type: "object" },
  call: () => undefined,
} as unknown as Tool;
const later = {
  name: "later",
  description: "Resolves to a text, not a result.",
  method: "_test/later",
  inputSchema: { type: "object" },
  call: () => Promise.resolve({ text: "soon" }),
} as unknown as Tool;
const warnings: string[] = [];
const lent = await lend({
  mm: { command: mm, args: ["-acp", "-agent", agent] },
  tools: [broken, later],
  questions: "What do broken and later say?",
  view: { warn: (line) => warnings.push(line) },
});
console.log(JSON.stringify({ text: lent.turns[0].text, warnings }));
`;
  const { text, warnings } = await runImporter(body, [MM_SIM, AGENT_FILES.meta]);
  const said = "broken failed: its call returned undefined, not a result";
  assert.ok(text.includes(`broken: [client tool error: ${said}]`), text);
  const resolved = 'later failed: its call returned {"text":"soon"}, not a result';
  assert.ok(text.includes(`later: [client tool error: ${resolved}]`), text);
  assert.deepEqual(warnings.toSorted(), [said, resolved].toSorted());
});

Deno.test("library: a view callback that throws ends the lending with its error, wherever it is called, and the program ends with it: no timer is left running", async () => {
  const program = `import { lend, TOOLS, type View } from "client.ts";
const [mm, agent, where] = Deno.args;
const broke = () => {
  throw new Error(\`the view broke at \${where}\`);
};
let sent = 0;
const views: Record<string, View> = {
  frame: {
    frame: (_line, out) => {
      if (out && ++sent === 2) broke(); // the client's second line: session/new, with its timer
    },
  },
  log: {
    log: (line) => {
      if (line.startsWith("host_info ")) broke(); // a call of the tool, being answered
    },
  },
  read: {
    frame: (_line, out) => {
      if (!out) broke(); // mm's first line, as the connection reads it
    },
  },
};
try {
  const args = ["-acp", "-agent", agent];
  // A timeout longer than the test's deadline: a timer of the lending's left running holds the
  // program past it (or crashes it when it fires), though lend() has ended.
  const lent = await lend({ mm: { command: mm, args }, tools: TOOLS, questions: "What OS?", view: views[where], timeout: 90 });
  console.log(JSON.stringify(lent.turns));
} catch (error) {
  console.log((error as Error).message);
}
`;
  for (const where of ["frame", "log", "read"]) {
    const ran = await runProgram(program, [where]);
    assert.equal(ran.code, 0, `${where}:\n${ran.stdout}\n${lastLines(ran.stderr)}`);
    assert.equal(ran.stdout, `the view broke at ${where}\n`, where);
  }
});

Deno.test("library: an asker that rejects as its signal aborts (the turn cancelled) does not end the lending: that turn ends cancelled, the next one runs", async () => {
  const program = `import { type Asker, lend, TOOLS, type Turn } from "client.ts";
const [mm, agent] = Deno.args;
let turn: Turn | undefined;
let asked = 0;
const asker: Asker = (_request, signal) => {
  asked++;
  if (asked > 1) return Promise.resolve({ outcome: "selected", optionId: "reject" });
  turn?.cancel(); // the person cancels the turn while asked
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason));
  });
};
const lent = await lend({
  mm: { command: mm, args: ["-acp", "-agent", agent] },
  tools: TOOLS,
  questions: ["How big is my disk?", "How big is my disk?"],
  asker,
  view: {
    turnStarted: (started) => {
      turn = started;
    },
  },
});
console.log(JSON.stringify(lent.turns.map(({ stopReason, cancelled, refused }) => ({ stopReason, cancelled, refused }))));
`;
  const ran = await runProgram(program);
  assert.equal(ran.code, 0, `${ran.stdout}\n${lastLines(ran.stderr)}`);
  assert.deepEqual(JSON.parse(ran.stdout), [
    { stopReason: "cancelled", cancelled: true, refused: true },
    { stopReason: "end_turn", cancelled: false, refused: true },
  ]);
});
