/**
 * The MCP side of the benchmark: an ACP agent that is not mm, which takes the client's MCP server
 * from `session/new` and, at the prompt, calls host_info through it as fast as it can — one call
 * at a time, then 64 in flight — writing what it measured to `BENCH_OUT` as one JSON object.
 * `BENCH_TRANSPORT` says which road it advertises: `http` (the default) or `stdio` (the relay,
 * which it starts as an agent would). Its MCP client is a few raw lines of fetch or of stdio, the
 * same for every server measured (`mcp_bench.ts` points it at the MCP SDK's own servers too).
 *
 * @module
 */

import { LineReader } from "../../client.ts";

/** What a server is measured for: one call at a time, and many in flight. */
export type McpMeasures = { roundTripMs: number; callsPerSecond: number };
/** How many calls each measure makes. */
const SEQUENTIAL = 1000;
const PIPELINED = 10_000;
const IN_FLIGHT = 64;
const CALL = { name: "host_info", arguments: { topic: "os" } };

/** A way to send an MCP request and get its answer. */
type Requester = (method: string, params: unknown) => Promise<unknown>;

/** An MCP client over streamable HTTP: a POST per message, JSON answers; a session id kept. */
export function overHttp(url: string, headers: Record<string, string>): Requester {
  let session: string | undefined;
  let nextId = 0;
  return async (method, params) => {
    const id = method.startsWith("notifications/") ? undefined : nextId++;
    const response = await fetch(url, {
      method: "POST",
      headers: {
        ...headers,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...(session ? { "mcp-session-id": session } : {}),
      },
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
    });
    session = response.headers.get("mcp-session-id") ?? session;
    const text = await response.text();
    if (id === undefined) return undefined;
    const json = text.startsWith("{")
      ? text
      : text.split("\n").find((l) => l.startsWith("data: "))?.slice(6);
    const answer = JSON.parse(String(json));
    if (answer.error) throw new Error(JSON.stringify(answer.error));
    return answer.result;
  };
}

/**
 * An MCP client over plain HTTP/1.1 on raw connections, each sending a request and reading its
 * answer (head and `content-length` body) before the next: a load much cheaper to make than
 * `fetch`'s, so that what is measured is the server, not the client that asks.
 */
export function overRawHttp(url: string, headers: Record<string, string>): Requester {
  const { hostname, port, pathname, host } = new URL(url);
  const idle: Deno.TcpConn[] = [];
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  let session: string | undefined;
  let nextId = 0;
  const exchange = async (connection: Deno.TcpConn, body: string) => {
    const head = [
      `POST ${pathname} HTTP/1.1`,
      `host: ${host}`,
      "content-type: application/json",
      "accept: application/json, text/event-stream",
      `content-length: ${encoder.encode(body).length}`,
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
      ...(session ? [`mcp-session-id: ${session}`] : []),
    ];
    await connection.write(encoder.encode(`${head.join("\r\n")}\r\n\r\n${body}`));
    const buffer = new Uint8Array(65536);
    let text = "";
    for (;;) {
      const read = await connection.read(buffer);
      if (read === null) throw new Error("the server closed the connection");
      text += decoder.decode(buffer.subarray(0, read));
      const end = text.indexOf("\r\n\r\n");
      if (end < 0) continue;
      const length = Number(text.match(/\r\ncontent-length: (\d+)/i)?.[1] ?? 0);
      if (text.length - end - 4 < length) continue; // the bodies here are ASCII
      session = text.match(/\r\nmcp-session-id: (\S+)/i)?.[1] ?? session;
      return text.slice(end + 4, end + 4 + length);
    }
  };
  return async (method, params) => {
    const id = method.startsWith("notifications/") ? undefined : nextId++;
    const connection = idle.pop() ?? await Deno.connect({ hostname, port: Number(port) });
    const text = await exchange(connection, JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    idle.push(connection);
    if (id === undefined) return undefined;
    const answer = JSON.parse(
      text.startsWith("{") ? text : text.split("\n").find((l) => l.startsWith("data: "))!.slice(6),
    );
    if (answer.error) throw new Error(JSON.stringify(answer.error));
    return answer.result;
  };
}

/** An MCP client over stdio: the command started, a line each way, answers matched by id. */
export function overStdio(
  command: string,
  args: string[],
  env: Record<string, string>,
): { request: Requester; close(): Promise<void> } {
  const child = new Deno.Command(command, {
    args,
    env,
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const writer = child.stdin.getWriter();
  const waiting = new Map<number, (answer: Record<string, unknown>) => void>();
  const reading = (async () => {
    const reader = new LineReader();
    for await (const chunk of child.stdout) {
      for (const line of reader.push(chunk)) {
        const answer = JSON.parse(line);
        waiting.get(answer.id)?.(answer);
        waiting.delete(answer.id);
      }
    }
  })();
  let nextId = 0;
  const encoder = new TextEncoder();
  const request: Requester = async (method, params) => {
    const id = method.startsWith("notifications/") ? undefined : nextId++;
    const answered = id === undefined
      ? Promise.resolve(undefined)
      : new Promise<Record<string, unknown>>((resolve) => waiting.set(id, resolve));
    await writer.write(
      encoder.encode(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`),
    );
    const answer = await answered;
    if (answer?.error) throw new Error(JSON.stringify(answer.error));
    return answer?.result;
  };
  const close = async () => {
    await writer.close().catch(() => {});
    await reading.catch(() => {});
    await child.status;
  };
  return { request, close };
}

/** Measures a server through `request`: MCP's handshake, then the calls, one by one and pipelined. */
export async function measureMcp(request: Requester): Promise<McpMeasures> {
  await request("initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "bench", version: "0" },
  });
  await request("notifications/initialized", {});
  const check = (result: unknown) => {
    const text = (result as { content?: { text?: string }[] })?.content?.[0]?.text;
    if (typeof text !== "string" || text === "") {
      throw new Error(`no text: ${JSON.stringify(result)}`);
    }
  };
  for (let i = 0; i < 50; i++) check(await request("tools/call", CALL)); // warm up
  let started = performance.now();
  for (let i = 0; i < SEQUENTIAL; i++) check(await request("tools/call", CALL));
  const roundTripMs = (performance.now() - started) / SEQUENTIAL;
  let left = PIPELINED;
  const worker = async () => {
    while (left > 0) {
      left--;
      check(await request("tools/call", CALL));
    }
  };
  started = performance.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const callsPerSecond = PIPELINED / ((performance.now() - started) / 1000);
  return { roundTripMs, callsPerSecond };
}

/** The entry's name/value pairs as an object. */
const pairs = (list: { name: string; value: string }[] = []) =>
  Object.fromEntries(list.map(({ name, value }) => [name, value]));

/** The agent: ACP over stdio, raw, just enough to be given the server and to be asked. */
async function agent(): Promise<void> {
  const http = (Deno.env.get("BENCH_TRANSPORT") ?? "http") === "http";
  const out = Deno.env.get("BENCH_OUT") ?? "";
  const encoder = new TextEncoder();
  const send = (message: object) =>
    Deno.stdout.write(encoder.encode(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`));
  type Entry = {
    url?: string;
    headers?: { name: string; value: string }[];
    command?: string;
    args?: string[];
    env?: { name: string; value: string }[];
  };
  let entry: Entry = {};
  const reader = new LineReader();
  for await (const chunk of Deno.stdin.readable) {
    for (const line of reader.push(chunk)) {
      const { id, method, params } = JSON.parse(line);
      if (method === "initialize") {
        const agentCapabilities = { mcpCapabilities: { http } };
        await send({ id, result: { protocolVersion: 1, agentCapabilities } });
      } else if (method === "session/new") {
        entry = params.mcpServers[0];
        await send({ id, result: { sessionId: "bench" } });
      } else if (method === "session/prompt") {
        let measures: McpMeasures;
        if (entry.url) measures = await measureMcp(overRawHttp(entry.url, pairs(entry.headers)));
        else {
          const relay = overStdio(String(entry.command), entry.args ?? [], {
            ...pairs(entry.env),
            PATH: Deno.env.get("PATH") ?? "",
            HOME: Deno.env.get("HOME") ?? "",
          });
          measures = await measureMcp(relay.request);
          await relay.close();
        }
        Deno.writeTextFileSync(out, JSON.stringify(measures));
        await send({ id, result: { stopReason: "end_turn" } });
      } else if (id !== undefined) {
        await send({ id, error: { code: -32601, message: "Method not found" } });
      }
    }
  }
}

if (import.meta.main) await agent();
