/**
 * The types `tool()` gives a tool's `call` from its `inputSchema`, as written: each line marked
 * `@ts-expect-error` must be a type error under `deno check` (which `deno task check` runs), and
 * each line that is not must type-check. The run-time check of the arguments, which makes these
 * types true, is in tools_test.ts.
 */

import assert from "./_assert.ts";
import { checkArguments, type Tool, tool, toolText } from "../client.ts";

/** A tool with one property of each kind the types follow. */
const typed: Tool = tool({
  name: "typed",
  description: "Every kind of property the types follow.",
  method: "_test/typed",
  inputSchema: {
    type: "object",
    properties: {
      topic: { type: "string", enum: ["os", "memory"] },
      count: { type: "integer", description: "How many." },
      ratio: { type: "number" },
      flag: { type: "boolean" },
      name: { type: "string" },
      either: { type: ["string", "null"] },
      free: { description: "Any value." },
    },
    required: ["topic", "count"],
  },
  call: (args) => {
    // A required property is there, of its type; an enum is the union of its values.
    const topic: "os" | "memory" = args.topic;
    const count: number = args.count;
    // Another may be missing.
    const ratio: number | undefined = args.ratio;
    const flag: boolean | undefined = args.flag;
    const name: string | undefined = args.name;
    const either: string | null | undefined = args.either;
    const free: unknown = args.free;
    // @ts-expect-error a property the schema does not declare
    const undeclared = args.other;
    // @ts-expect-error a string used as a number
    const asNumber: number = args.name;
    // @ts-expect-error a value outside the enum
    const outside = args.topic === "disk";
    // @ts-expect-error an optional property may be missing
    const present: number = args.ratio;
    // @ts-expect-error a number is not a string
    const asString: string = args.count;
    const seen = [topic, count, ratio, flag, name, either, free, undeclared, asNumber, outside];
    return toolText(JSON.stringify([...seen, present, asString]));
  },
});

/** A tool without parameters gets an object with none. */
const bare: Tool = tool({
  name: "bare",
  description: "No parameters.",
  method: "_test/bare",
  inputSchema: { type: "object" },
  call: (args) => {
    // @ts-expect-error no parameter is declared
    const anything = args.anything;
    return toolText(String(anything));
  },
});

Deno.test("tool(): the types of call's arguments follow the schema, and the run-time check stands behind them", () => {
  // What the types promise, the check makes true before `call` runs: a value the enum does not
  // have, a missing required property, a string for a number are each turned away.
  assert.equal(
    checkArguments(typed, { topic: "disk", count: 1 }),
    'typed: "topic" must be one of os, memory, not "disk"',
  );
  assert.equal(checkArguments(typed, { topic: "os" }), 'typed: missing parameter "count"');
  assert.equal(
    checkArguments(typed, { topic: "os", count: "2" }),
    'typed: "count" must be an integer, not "2"',
  );
  assert.equal(checkArguments(typed, { topic: "os", count: 2 }), undefined);
  assert.equal(checkArguments(bare, {}), undefined);
});
