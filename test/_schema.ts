/**
 * Checks every frame the client wrote, read from its `--trace` lines, against
 * the ACP v1 JSON Schema shipped in the official SDK, and the `_`-prefixed
 * extension answers against the shapes mini-me's acp-client-tools.md gives.
 *
 * @module
 */

import { Ajv2020 } from "ajv/2020";
import schema from "@agentclientprotocol/sdk/schema/v1/schema.json" with { type: "json" };

const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
ajv.addSchema(schema, "acp");

/** A tool description (acp-client-tools.md, "Description d'un outil"). */
const toolDescription = {
  type: "object",
  required: ["name", "method"],
  properties: {
    name: { type: "string", minLength: 1 },
    description: { type: "string" },
    method: { type: "string", pattern: "^_" },
    inputSchema: {
      type: "object",
      properties: { type: { const: "object" } },
    },
  },
};

const extensionSchemas: Record<string, object> = {
  // acp-client-tools.md, "Réponse": the MCP tools/call result shape.
  "_demo.minime/host_info": {
    type: "object",
    required: ["content"],
    additionalProperties: false,
    properties: {
      content: {
        type: "array",
        items: {
          type: "object",
          required: ["type", "text"],
          properties: { type: { const: "text" }, text: { type: "string" } },
        },
      },
      isError: { type: "boolean" },
    },
  },
  // acp-client-tools.md, "Mode request": {"tools": [...]}.
  "_org.mini-me/tools/list": {
    type: "object",
    required: ["tools"],
    properties: { tools: { type: "array", items: toolDescription } },
  },
};

const requestParams: Record<string, string> = {
  initialize: "InitializeRequest",
  "session/new": "NewSessionRequest",
  "session/prompt": "PromptRequest",
  "session/load": "LoadSessionRequest",
  "session/resume": "ResumeSessionRequest",
  "session/list": "ListSessionsRequest",
  "session/close": "CloseSessionRequest",
};
const notificationParams: Record<string, string> = {
  "session/cancel": "CancelNotification",
};
const responseResults: Record<string, string> = {
  "session/request_permission": "RequestPermissionResponse",
};

const errorObject = ajv.compile({
  type: "object",
  required: ["code", "message"],
  properties: { code: { type: "integer" }, message: { type: "string" } },
});

function acpDefinition(name: string) {
  const validate = ajv.getSchema(`acp#/$defs/${name}`);
  if (!validate) throw new Error(`no $defs/${name} in the ACP schema`);
  return validate;
}

/** Why `value` is not a valid `definition` of the ACP v1 schema, or `undefined` when it is. */
export function acpErrors(definition: string, value: unknown): string | undefined {
  const validate = acpDefinition(definition);
  return validate(value) ? undefined : `${definition}: ${ajv.errorsText(validate.errors)}`;
}

/** One frame that broke the schema, and why. */
export interface Violation {
  /** The frame as the client wrote it. */
  frame: string;
  /** What was wrong. */
  problem: string;
}

/**
 * Validates the `→` (sent) frames of a `--trace` transcript, using the `←`
 * (received) requests to know which method each response answers.
 */
export function checkSentFrames(stderr: string): Violation[] {
  const violations: Violation[] = [];
  const received = new Map<string, string>();
  for (const line of stderr.split("\n")) {
    if (line.startsWith("← ")) {
      try {
        const message = JSON.parse(line.slice(2));
        if (message && typeof message.method === "string" && message.id !== undefined) {
          received.set(JSON.stringify(message.id), message.method);
        }
      } catch {
        // a bad frame from the peer: not ours to check
      }
      continue;
    }
    if (!line.startsWith("→ ")) continue;
    const frame = line.slice(2);
    const problem = checkFrame(frame, received);
    if (problem) violations.push({ frame, problem });
  }
  return violations;
}

function checkFrame(frame: string, received: Map<string, string>): string | undefined {
  let message;
  try {
    message = JSON.parse(frame);
  } catch {
    return "not JSON";
  }
  if (message.jsonrpc !== "2.0") return 'jsonrpc is not "2.0"';
  const validate = (name: string, value: unknown, validator = acpDefinition(name)) =>
    validator(value) ? undefined : `${name}: ${ajv.errorsText(validator.errors)}`;

  if (typeof message.method === "string") {
    const isRequest = "id" in message;
    const table = isRequest ? requestParams : notificationParams;
    const definition = table[message.method];
    if (!definition) return `the client sent an unexpected ${message.method}`;
    if (isRequest && !Number.isInteger(message.id) && typeof message.id !== "string") {
      return "request id is neither an integer nor a string";
    }
    return validate(definition, message.params);
  }
  if ("error" in message) {
    if ("result" in message) return "a response with both result and error";
    return errorObject(message.error) ? undefined : `error: ${ajv.errorsText(errorObject.errors)}`;
  }
  if (!("result" in message)) return "neither a request, a notification nor a response";
  const method = received.get(JSON.stringify(message.id));
  if (!method) return `a result for id ${JSON.stringify(message.id)}, which mm never sent`;
  // Any other extension method is a lent tool's: its answer is the MCP tools/call result.
  const extension = extensionSchemas[method] ??
    (method.startsWith("_") ? extensionSchemas["_demo.minime/host_info"] : undefined);
  if (extension) return validate(method, message.result, ajv.compile(extension));
  const definition = responseResults[method];
  if (!definition) return `a result for ${method}, which should have been an error`;
  return validate(definition, message.result);
}

const peerParams: Record<string, string> = {
  "session/update": "SessionNotification",
  "session/request_permission": "RequestPermissionRequest",
};

/**
 * Validates the `←` (received) updates and permission requests of a `--trace`
 * transcript against the ACP schema: a peer that plays a real agent must send
 * only what ACP v1 allows, or a test of it proves nothing.
 */
export function checkReceivedFrames(stderr: string): Violation[] {
  const violations: Violation[] = [];
  for (const line of stderr.split("\n")) {
    if (!line.startsWith("← ")) continue;
    const frame = line.slice(2);
    const message = JSON.parse(frame);
    const definition = peerParams[message.method];
    if (!definition) continue;
    const validate = acpDefinition(definition);
    if (!validate(message.params)) {
      violations.push({ frame, problem: `${definition}: ${ajv.errorsText(validate.errors)}` });
    }
  }
  return violations;
}
