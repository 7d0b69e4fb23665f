/**
 * The checks of `node:assert/strict` that the tests use, each with its failure bounded: the message
 * a test gives (often everything a run printed) and the comparison Node writes are cut to a few KB,
 * their start and their end kept, so that a failing test says why in a screenful and never floods
 * the log. Also {@linkcode clip}, which the helpers use for the texts they put in their own
 * failures.
 *
 * @module
 */

import nodeAssert from "node:assert/strict";

/** How many characters of a long text a failure keeps from its start. */
const HEAD = 1000;
/** How many it keeps from its end, where what went wrong usually is. */
const TAIL = 3000;

/**
 * `text` as a failure shows it: whole when it is a few KB at most, else its first and last
 * characters with the number left out between them.
 */
export function clip(text: string): string {
  const cut = text.length - HEAD - TAIL;
  if (cut <= 100) return text;
  return `${text.slice(0, HEAD)}\n… (${cut} characters left out) …\n${text.slice(-TAIL)}`;
}

/** `check`, throwing what it throws with the message clipped and the stack starting at its caller. */
function bounded<F extends (...args: never[]) => unknown>(check: F): F {
  const wrapped = (...args: Parameters<F>) => {
    try {
      return check(...args);
    } catch (error) {
      if (error instanceof Error) {
        error.message = clip(error.message);
        Error.captureStackTrace(error, wrapped);
      }
      throw error;
    }
  };
  return wrapped as F;
}

/** The checks the tests use, as `node:assert/strict` has them. */
interface Checks {
  /** See `node:assert/strict`. */
  ok: typeof nodeAssert.ok;
  /** See `node:assert/strict`. */
  equal: typeof nodeAssert.equal;
  /** See `node:assert/strict`. */
  notEqual: typeof nodeAssert.notEqual;
  /** See `node:assert/strict`. */
  deepEqual: typeof nodeAssert.deepEqual;
  /** See `node:assert/strict`. */
  match: typeof nodeAssert.match;
  /** See `node:assert/strict`. */
  doesNotMatch: typeof nodeAssert.doesNotMatch;
  /** See `node:assert/strict`. */
  throws: typeof nodeAssert.throws;
  /** See `node:assert/strict`. */
  fail: typeof nodeAssert.fail;
}

/** `node:assert/strict`'s checks, each failure bounded to a few KB. */
const assert: Checks = {
  ok: bounded(nodeAssert.ok),
  equal: bounded(nodeAssert.equal),
  notEqual: bounded(nodeAssert.notEqual),
  deepEqual: bounded(nodeAssert.deepEqual),
  match: bounded(nodeAssert.match),
  doesNotMatch: bounded(nodeAssert.doesNotMatch),
  throws: bounded(nodeAssert.throws),
  fail: bounded(nodeAssert.fail),
};
export default assert;
