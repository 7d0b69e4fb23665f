/**
 * The agent side of the end-to-end benchmark: plays mm just enough to drive a
 * client hard, with raw newline-delimited JSON so that its own cost is small
 * and the same for every client measured. `BENCH_MODE` picks the load;
 * the measurements go to `BENCH_OUT` as one JSON object. In `notool` mode the
 * prompt is answered at once with `end_turn` (no tool call, no text), and the
 * client's peak memory is read when the client closes the agent's stdin, at
 * the end of its run.
 *
 * @module
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const mode = Deno.env.get("BENCH_MODE") ?? "pipelined";
const startedAt = Number(Deno.env.get("BENCH_T0") ?? Date.now());
const SESSION = "20261130-120000-00000000";

let buffer = "";
const waiting = new Map<number | string, (message: Record<string, unknown>) => void>();
let onRequest: (message: Record<string, unknown>) => void = () => {};
const out = Deno.stdout.writable.getWriter();

// Frames sent in the same tick go out in one write, so that the agent's own
// system calls do not cap what is measured.
let queued: string[] = [];
let writing = Promise.resolve();
function send(message: Record<string, unknown>): Promise<void> {
  queued.push(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
  if (queued.length === 1) {
    writing = writing.then(async () => {
      await Promise.resolve(); // let the rest of this tick queue up
      const text = queued.join("");
      queued = [];
      await out.write(encoder.encode(text));
    });
  }
  return writing;
}

async function read(): Promise<void> {
  for await (const chunk of Deno.stdin.readable) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const message = JSON.parse(buffer.slice(0, end));
      buffer = buffer.slice(end + 1);
      if ("method" in message) onRequest(message);
      else {
        waiting.get(message.id)?.(message);
        waiting.delete(message.id);
      }
    }
  }
}

function call(id: number): Promise<Record<string, unknown>> {
  const answered = new Promise<Record<string, unknown>>((resolve) => waiting.set(id, resolve));
  send({
    id,
    method: "_demo.minime/host_info",
    params: { topic: "os", _meta: { "org.mini-me/sessionId": SESSION } },
  });
  return answered;
}

/** The client: the process that started this agent (the `bench-mm` script execs Deno). */
const CLIENT_PID = Deno.ppid;
/**
 * Peak resident memory of the client, in bytes: the `VmHWM` line of `/proc/<pid>/status`, which
 * only Linux has. Elsewhere, or when the client is gone, `null` (no figure), never a crash: this is
 * a benchmark, and it prints "n/a" where it has no figure.
 */
function clientPeakRss(): number | null {
  let status;
  try {
    status = Deno.readTextFileSync(`/proc/${CLIENT_PID}/status`);
  } catch {
    return null;
  }
  const kib = status.match(/VmHWM:\s+(\d+) kB/)?.[1];
  return kib === undefined ? null : Number(kib) * 1024;
}

async function turn(): Promise<Record<string, number | null>> {
  if (mode === "pipelined") {
    const total = 20_000;
    const window = 64;
    let next = 1;
    const started = performance.now();
    const worker = async () => {
      while (next <= total) await call(next++);
    };
    await Promise.all(Array.from({ length: window }, worker));
    return { callsPerSecond: total / ((performance.now() - started) / 1000) };
  }
  if (mode === "sequential") {
    const times: number[] = [];
    for (let id = 1; id <= 2000; id++) {
      const started = performance.now();
      await call(id);
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    return { roundTripMs: times[times.length >> 1] };
  }
  if (mode === "big") {
    const size = Number(Deno.env.get("BENCH_SIZE") ?? 16 * 1024 * 1024);
    const text = "é".repeat(size / 4) + "x".repeat(size / 2);
    const line = encoder.encode(
      `${
        JSON.stringify({
          jsonrpc: "2.0",
          method: "session/update",
          params: {
            sessionId: SESSION,
            update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
          },
        })
      }\n`,
    );
    const started = performance.now();
    for (let at = 0; at < line.length; at += 65536) await out.write(line.subarray(at, at + 65536));
    // The client has read the whole message once it answers a call sent after it.
    await call(1);
    return { seconds: (performance.now() - started) / 1000 };
  }
  return {};
}

let prompted = false; // notool: the client has asked its question
function report(result: Record<string, number | null>): void {
  Deno.writeTextFileSync(Deno.env.get("BENCH_OUT")!, JSON.stringify(result));
}

onRequest = async (message) => {
  switch (message.method) {
    case "initialize": {
      const initializeAfterMs = Date.now() - startedAt;
      await send({ id: message.id, result: { protocolVersion: 1 } });
      if (mode === "startup") report({ initializeAfterMs });
      return;
    }
    case "session/new":
      return await send({ id: message.id, result: { sessionId: SESSION } });
    case "session/prompt": {
      if (mode === "notool") {
        prompted = true; // the client's peak is read when it closes stdin, at the end of its run
      } else {
        const result = await turn();
        result.peakRss = clientPeakRss();
        if (mode !== "startup") report(result);
      }
      return await send({ id: message.id, result: { stopReason: "end_turn" } });
    }
  }
};

await read();
// The client has closed stdin to end its run: its peak memory now covers all of that run.
if (prompted) report({ peakRss: clientPeakRss() });
