/**
 * The reference of the MCP benchmark: the MCP SDK's own streamable HTTP server, serving the same
 * tool (`hostInfo()` of client.ts) on 127.0.0.1, the way its documentation suggests — `stateful`
 * (a session and a transport kept per client, the faster) or `stateless` (a server and a transport
 * per request). Prints `listening <url>` once it serves.
 *
 * @module
 */

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { hostInfo, TOPICS } from "../../client.ts";

/** A server with host_info registered. */
function server(): McpServer {
  const mcp = new McpServer({ name: "sdk-bench", version: "0" });
  mcp.registerTool(
    "host_info",
    {
      description: "Facts about the machine the user's client runs on.",
      inputSchema: { topic: z.enum(TOPICS) },
    },
    ({ topic }: { topic: (typeof TOPICS)[number] }): CallToolResult => hostInfo(topic),
  );
  return mcp;
}

const stateful = Deno.args[0] !== "stateless";
const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();

/** Handles a request: a kept session's transport (stateful), or a new one (stateless). */
async function handle(request: Request): Promise<Response> {
  const id = request.headers.get("mcp-session-id");
  let transport = id ? sessions.get(id) : undefined;
  if (!transport) {
    transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: stateful ? () => crypto.randomUUID() : undefined,
      enableJsonResponse: true,
      onsessioninitialized: (sessionId: string) => {
        sessions.set(sessionId, transport!);
      },
    });
    await server().connect(transport);
  }
  return await transport.handleRequest(request);
}

const served = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handle);
console.log(`listening http://127.0.0.1:${served.addr.port}/mcp`);
