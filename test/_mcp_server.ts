/**
 * A small MCP server for the agent stand-in's tests, written with the MCP SDK as a server's author
 * writes one: `host_info`, a fact per topic, and `clock`. The tests serve it over streamable HTTP
 * themselves; run as a program, it serves itself over stdio, as an agent runs a client's stdio
 * MCP server, and writes its process id to `MCP_SERVER_PID_FILE` when that is set.
 *
 * @module
 */

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

/** `host_info`'s description, word for word the one of the adapters' captured frames. */
export const HOST_INFO_DESCRIPTION =
  "Facts about the machine the user's client runs on: its operating system, CPU, memory or uptime. Call it once per topic.";

/** What the request of a call gives its answer: its JSON-RPC id, and its end. */
export interface CallContext {
  requestId: string | number;
  signal: AbortSignal;
}

/** How `host_info` answers a topic. */
export type Answer = (topic: string, call: CallContext) => CallToolResult | Promise<CallToolResult>;

/** The default answer: `fact about <topic>`; `disk`, no topic of `host_info`, an error result. */
export function factAbout(topic: string): CallToolResult {
  if (topic === "disk") {
    return { content: [{ type: "text", text: 'no topic "disk"' }], isError: true };
  }
  return { content: [{ type: "text", text: `fact about ${topic}` }] };
}

/** The server, its tools registered; `answer` says how `host_info` answers. */
export function hostInfoServer(answer: Answer = factAbout): McpServer {
  const server = new McpServer({ name: "host-info-test", version: "0" });
  server.registerTool(
    "host_info",
    { description: HOST_INFO_DESCRIPTION, inputSchema: { topic: z.string() } },
    // Typed by hand: deno check (TypeScript 6) does not infer the arguments from the zod shape.
    (args: { topic: string }, extra: CallContext) => answer(args.topic, extra),
  );
  const clock = { description: "The time on the user's machine.", inputSchema: {} };
  server.registerTool("clock", clock, () => ({ content: [{ type: "text", text: "12:00" }] }));
  return server;
}

if (import.meta.main) {
  const pidFile = Deno.env.get("MCP_SERVER_PID_FILE");
  if (pidFile) Deno.writeTextFileSync(pidFile, String(Deno.pid));
  await hostInfoServer().connect(new StdioServerTransport());
}
