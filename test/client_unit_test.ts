/**
 * The pure parts of the client: host_info's texts and error results, the
 * permission policy, the command line and the agent-file warnings.
 */

import assert from "node:assert/strict";
import {
  agentFileWarnings,
  choosePermission,
  ClientError,
  DEFAULT_QUESTION,
  describeUptime,
  gib,
  hostInfo,
  initializeParams,
  isOfferedToolTitle,
  osName,
  parseCommandLine,
  readToolCall,
  showControls,
  TOOL_DESCRIPTIONS,
  TOOLS,
} from "../client.ts";
import { validateToolList } from "./mm_sim.ts";

// ─── host_info ───────────────────────────────────────────────────────────────

Deno.test("host_info names operating systems as people do", () => {
  assert.equal(osName("linux"), "Linux");
  assert.equal(osName("darwin"), "macOS");
  assert.equal(osName("windows"), "Windows");
  assert.equal(osName("freebsd"), "Freebsd");
});

Deno.test("host_info writes sizes in GiB with one decimal", () => {
  assert.equal(gib(16_106_127_360), "15.0 GiB");
  assert.equal(gib(16_965_120_000), "15.8 GiB");
});

Deno.test("host_info writes uptime in days, hours and minutes with the UTC start", () => {
  const now = new Date("2026-11-30T12:13:30Z");
  assert.equal(
    describeUptime(3 * 86400 + 4 * 3600 + 12 * 60 + 30, now),
    "up 3 days, 4 hours, 12 minutes (since 2026-11-27 08:01 UTC)",
  );
  assert.equal(
    describeUptime(86400 + 60, now),
    "up 1 day, 0 hours, 1 minute (since 2026-11-29 12:12 UTC)",
  );
  assert.equal(describeUptime(42, now), "up 0 minutes (since 2026-11-30 12:12 UTC)");
  assert.equal(describeUptime(3600 * 2, now), "up 2 hours, 0 minutes (since 2026-11-30 10:13 UTC)");
});

Deno.test("host_info reports this machine's facts in the documented shapes", () => {
  const text = (topic: string) => {
    const result = hostInfo(topic);
    assert.equal(result.isError, undefined, `${topic}: ${result.content[0].text}`);
    return result.content[0].text;
  };
  assert.match(text("os"), /^(Linux|macOS|Windows|\S+) \S+ \(\w+\/\w+\), host name \S+$/);
  assert.ok(text("os").includes(`(${Deno.build.os}/${Deno.build.arch})`));
  assert.match(text("cpu"), /^\d+ × .+ \(\w+\), load average \d+\.\d\d \d+\.\d\d \d+\.\d\d$/);
  assert.match(text("memory"), /^\d+\.\d GiB free of \d+\.\d GiB$/);
  assert.match(text("uptime"), /^up .*minutes? \(since \d{4}-\d\d-\d\d \d\d:\d\d UTC\)$/);
});

Deno.test("host_info reports an unknown topic as an error result", () => {
  assert.deepEqual(hostInfo("disk"), {
    content: [{ type: "text", text: 'unknown topic "disk"; use one of: os, cpu, memory, uptime' }],
    isError: true,
  });
});

Deno.test("host_info reports a missing or non-string topic as an error result", () => {
  for (const topic of [undefined, null, 42, ["os"], { topic: "os" }]) {
    assert.deepEqual(hostInfo(topic), {
      content: [{
        type: "text",
        text: 'missing parameter "topic"; use one of: os, cpu, memory, uptime',
      }],
      isError: true,
    });
  }
});

Deno.test("a tool call's arguments are the params without _meta, its session from _meta", () => {
  assert.deepEqual(
    readToolCall({ topic: "os", _meta: { "org.mini-me/sessionId": "s1" } }),
    { args: { topic: "os" }, sessionId: "s1" },
  );
  assert.deepEqual(readToolCall({ topic: "os" }), { args: { topic: "os" }, sessionId: "?" });
  assert.deepEqual(readToolCall({ _meta: { "org.mini-me/sessionId": 7 } }), {
    args: {},
    sessionId: "?",
  });
  assert.deepEqual(readToolCall(undefined), { args: {}, sessionId: "?" });
  assert.deepEqual(readToolCall([1]), { args: [1], sessionId: "?" });
});

// ─── Announcing it ───────────────────────────────────────────────────────────

Deno.test("the tool description passes every rule of mini-me's list validation", () => {
  const { tools, skipped } = validateToolList([...TOOL_DESCRIPTIONS]);
  assert.deepEqual(skipped, []);
  assert.equal(tools[0].modelName, "client_host_info");
  const [hostInfoTool] = TOOL_DESCRIPTIONS;
  assert.ok(hostInfoTool.method.startsWith("_"));
  assert.equal(hostInfoTool.inputSchema.type, "object");
  assert.deepEqual(Object.keys(hostInfoTool), ["name", "description", "method", "inputSchema"]);
  assert.deepEqual(TOOLS.map((t) => t.name), ["host_info"]);
});

Deno.test("initialize announces the list in meta mode, true in request mode, and no fs or terminal", () => {
  const capabilities = (request: boolean) => initializeParams(request).clientCapabilities;
  assert.deepEqual(capabilities(false)._meta, { "org.mini-me/tools": TOOL_DESCRIPTIONS });
  assert.deepEqual(capabilities(true)._meta, { "org.mini-me/tools": true });
  assert.deepEqual(capabilities(false).fs, { readTextFile: false, writeTextFile: false });
  assert.equal(capabilities(false).terminal, false);
  assert.equal(initializeParams(false).protocolVersion, 1);
  assert.deepEqual(initializeParams(false).clientInfo, {
    name: "host-info-client",
    version: "0.3.0",
  });
});

// ─── Permissions ─────────────────────────────────────────────────────────────

Deno.test("only the exact title of an offered tool is allowed", () => {
  assert.equal(isOfferedToolTitle("client: host_info"), true);
  for (
    const title of [
      "client: host_info ",
      " client: host_info",
      "Client: host_info",
      "client:host_info",
      "client: host_info; rm -rf /",
      "client: host_info\nrm -rf /",
      "client: other",
      "client: ",
      "bash: ls",
      "",
      undefined,
      null,
      42,
    ]
  ) {
    assert.equal(isOfferedToolTitle(title), false, JSON.stringify(title));
  }
});

const OPTIONS = {
  allowOnce: { optionId: "a1", name: "Allow", kind: "allow_once" },
  allowAlways: { optionId: "a2", name: "Always", kind: "allow_always" },
  rejectOnce: { optionId: "r1", name: "Reject", kind: "reject_once" },
  rejectAlways: { optionId: "r2", name: "Never", kind: "reject_always" },
};

Deno.test("allowing picks allow_once, else allow_always", () => {
  const { allowOnce, allowAlways, rejectOnce } = OPTIONS;
  assert.deepEqual(choosePermission([rejectOnce, allowAlways, allowOnce], true), {
    outcome: "selected",
    optionId: "a1",
  });
  assert.deepEqual(choosePermission([rejectOnce, allowAlways], true), {
    outcome: "selected",
    optionId: "a2",
  });
});

Deno.test("refusing picks reject_once, else reject_always, else cancelled", () => {
  const { allowOnce, rejectOnce, rejectAlways } = OPTIONS;
  assert.deepEqual(choosePermission([allowOnce, rejectAlways, rejectOnce], false), {
    outcome: "selected",
    optionId: "r1",
  });
  assert.deepEqual(choosePermission([allowOnce, rejectAlways], false), {
    outcome: "selected",
    optionId: "r2",
  });
  assert.deepEqual(choosePermission([allowOnce], false), { outcome: "cancelled" });
});

Deno.test("without an allow option an allowed call is refused, never given an invented id", () => {
  const { rejectOnce } = OPTIONS;
  assert.deepEqual(choosePermission([rejectOnce], true), { outcome: "selected", optionId: "r1" });
  assert.deepEqual(choosePermission([], true), { outcome: "cancelled" });
  assert.deepEqual(choosePermission("nope", true), { outcome: "cancelled" });
  assert.deepEqual(choosePermission([{ kind: "allow_once" }, null, 3], true), {
    outcome: "cancelled",
  });
});

// ─── The command line ────────────────────────────────────────────────────────

Deno.test("the command line defaults to meta mode, 30 s and the default question", () => {
  assert.deepEqual(parseCommandLine([]), {
    question: DEFAULT_QUESTION,
    timeout: "30",
    seconds: 30,
    turnSeconds: undefined,
  });
});

Deno.test("--request switches the mode and the words are the question", () => {
  const options = parseCommandLine(["--request", "Which", "CPU", "do", "I", "have?"]);
  assert.equal(options.request, true);
  assert.equal(options.question, "Which CPU do I have?");
  assert.equal(parseCommandLine(["--request", "--agent", "mine.yaml"]).agent, "mine.yaml");
});

Deno.test("a leading -- is dropped, a later one ends the options", () => {
  assert.equal(parseCommandLine(["--", "--request"]).request, true);
  assert.equal(parseCommandLine(["--", "--", "--request"]).question, "--request");
  assert.equal(parseCommandLine(["why", "--", "--trace"]).question, "why --trace");
});

Deno.test("the other options are read, short forms included", () => {
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
});

Deno.test("with --interactive and no words the first question is read, not defaulted", () => {
  assert.equal(parseCommandLine(["-i"]).question, undefined);
  assert.equal(parseCommandLine(["-i", "first?"]).question, "first?");
  assert.equal(parseCommandLine(["-"]).question, "-");
});

Deno.test("--timeout takes a decimal number of seconds above 0, nothing else", () => {
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
    (e) => e instanceof ClientError && e.exitCode === 2 && e.usage && e.message === message,
  );
}

Deno.test("a usage error names what is actually wrong", () => {
  usageError(["--frobnicate"], "unknown option --frobnicate");
  usageError(["-x"], "unknown option -x");
  usageError(["--agent"], "--agent needs a value");
  usageError(["--resume"], "--resume needs a value");
  usageError(["--trace=yes"], "--trace takes no value");
  usageError(["--quiet=1"], "--quiet takes no value");
  usageError(["--mm", ""], '--mm needs a path, got ""');
  usageError(["--resume", ""], '--resume needs a session id, got ""');
  usageError(["-i", "-"], "- reads the question from stdin, which --interactive reads too");
  usageError(["--json", "-q"], "--json and --quiet both say what stdout is: pick one");
  usageError(
    ["--continue", "--resume", "x"],
    "--continue and --resume both name the session: pick one",
  );
  usageError(["--turn-timeout"], "--turn-timeout needs a value");
  usageError(["--json=1"], "--json takes no value");
});

Deno.test("--turn-timeout takes the same numbers as --timeout; without it a turn has no deadline", () => {
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

Deno.test("an agent file that agrees with the run gives no warning", () => {
  assert.deepEqual(
    agentFileWarnings("agent.yaml", { enabled: true, discovery: "meta" }, false),
    [],
  );
  assert.deepEqual(
    agentFileWarnings("a.yaml", { enabled: true, discovery: "request" }, true),
    [],
  );
});

Deno.test("an agent file that contradicts the run is warned about, either way", () => {
  assert.deepEqual(
    agentFileWarnings("agent.yaml", { enabled: true, discovery: "meta" }, true),
    [
      "warning: agent.yaml sets acp.clientTools.discovery: meta, but the client announces request; mm will not see host_info",
    ],
  );
  assert.deepEqual(agentFileWarnings("r.yaml", { enabled: true, discovery: "request" }, false), [
    "warning: r.yaml sets acp.clientTools.discovery: request, but the client announces meta; mm will ask for the list, and the client answers it",
  ]);
  assert.deepEqual(agentFileWarnings("x.yaml", { enabled: false, discovery: "meta" }, false), [
    "warning: x.yaml sets acp.clientTools.enabled: false; mm will ignore host_info",
  ]);
});

// ─── What the user sees ──────────────────────────────────────────────────────

Deno.test("control characters from mm are shown, not obeyed, on a terminal", () => {
  assert.equal(showControls("\x1b[2J\x1b]0;pwned\x07"), "␛[2J␛]0;pwned␇");
  assert.equal(showControls("over\rwrite\bx\x00"), "over␍write␈x␀");
  assert.equal(showControls("line\r\nnext\ttab\n"), "line\nnext\ttab\n");
  assert.equal(showControls("\x7f\x9b2J é 日本"), "␡�2J é 日本");
});

Deno.test("host_info reports a machine fact it cannot read as an error result, not a crash", () => {
  const loadavg = Deno.loadavg;
  Object.assign(Deno, {
    loadavg: () => {
      throw new Error("no /proc/loadavg");
    },
  });
  try {
    assert.deepEqual(hostInfo("cpu"), {
      content: [{ type: "text", text: "host_info could not read cpu: no /proc/loadavg" }],
      isError: true,
    });
  } finally {
    Object.assign(Deno, { loadavg });
  }
});
