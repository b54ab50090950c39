import { MEMORY_GUARD } from './js-memory-guard.js'

/**
 * Code evaluated once in each isolate context before the function's source (as the body of an
 * `evalClosure`, with `$0` = the log cap in bytes and `$1` = the isolate's memory limit in MB). It
 * charges what the function can allocate outside the V8 heap to that limit (js-memory-guard.ts),
 * installs a `console` that records lines inside the isolate, and returns
 * `{ bind, call, poll, wait, drain }`:
 *
 * - `bind(fn)` keeps the function the source defined; every later `call` calls it.
 * - `call(callJson)` starts a call with the arguments in `callJson` (`{ values, missing }`), after
 *   clearing the log lines of the previous call. It returns the call's envelope when the function
 *   returned a value, or `P` when it returned a promise (or any thenable): then `poll()` returns the
 *   envelope once the promise has settled (still `P` before), and `wait()` a promise of it.
 * - `drain()` returns the JSON of `{ lines: [level, message, epochMs][], truncated }` (for a call
 *   that ended without an envelope, e.g. at its time limit).
 *
 * An envelope is `S<json>` (success, no log lines: the result's JSON text follows), `U` (success,
 * the function returned `undefined`, no log lines), or the JSON of `{ ok: true, json?, lines,
 * truncated }` / `{ ok: false, kind: 'threw' | 'result', error: { name, message, stack? }, lines,
 * truncated }`.
 *
 * Built-ins are captured before user code runs, so a function that replaces `JSON`, `Reflect` or
 * `Promise` cannot corrupt its own envelope. No host object is exposed to the context.
 */
export const PRELUDE = String.raw`
'use strict';
${MEMORY_GUARD}
const maxBytes = $0;
const stringify = JSON.stringify;
const parse = JSON.parse;
const apply = Reflect.apply;
const defineProperty = Object.defineProperty;
const freeze = Object.freeze;
const now = Date.now;
const toStr = String;
const objectToString = Object.prototype.toString;
const charCodeAt = String.prototype.charCodeAt;
const sliceStr = String.prototype.slice;
const ErrorCtor = Error;
const TypeErrorCtor = TypeError;
const WeakSetCtor = WeakSet;
const weakHas = WeakSet.prototype.has;
const weakAdd = WeakSet.prototype.add;
const PromiseCtor = Promise;
const promiseResolve = Promise.resolve;
const promiseThen = Promise.prototype.then;

let lines = [];
let used = 0;
let truncated = false;

function fit(s, budget) {
  let bytes = 0;
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = apply(charCodeAt, s, [i]);
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : (c >= 0xd800 && c <= 0xdbff && i + 1 < n) ? 4 : 3;
    if (bytes + size > budget) return { units: i, bytes, whole: false };
    bytes += size;
    if (size === 4) i++;
  }
  return { units: n, bytes, whole: true };
}

function formatValue(v) {
  try {
    const t = typeof v;
    if (t === 'string') return v;
    if (t === 'function') return v.name ? '[Function: ' + toStr(v.name) + ']' : '[Function (anonymous)]';
    if (v === null || t !== 'object') return toStr(v);
    if (v instanceof ErrorCtor) return typeof v.stack === 'string' ? v.stack : toStr(v.name) + ': ' + toStr(v.message);
    const seen = new WeakSetCtor();
    const out = stringify(v, function (key, x) {
      const tx = typeof x;
      if (tx === 'bigint') return toStr(x) + 'n';
      if (tx === 'function') return '[Function]';
      if (tx === 'symbol') return toStr(x);
      if (x !== null && tx === 'object') {
        if (apply(weakHas, seen, [x])) return '[Circular]';
        apply(weakAdd, seen, [x]);
      }
      return x;
    });
    return out === undefined ? apply(objectToString, v, []) : out;
  } catch (err) {
    return '[unprintable value]';
  }
}

function write(level, args) {
  if (truncated) return;
  let message = '';
  for (let i = 0; i < args.length; i++) message += (i === 0 ? '' : ' ') + formatValue(args[i]);
  const budget = maxBytes - used - 1;
  const f = fit(message, budget < 0 ? 0 : budget);
  if (f.whole) {
    used += f.bytes + 1;
    lines[lines.length] = [level, message, now()];
    return;
  }
  if (f.units > 0) lines[lines.length] = [level, apply(sliceStr, message, [0, f.units]), now()];
  truncated = true;
}

const sandboxConsole = {
  log(...args) { write('log', args); },
  info(...args) { write('info', args); },
  warn(...args) { write('warn', args); },
  error(...args) { write('error', args); },
  debug(...args) { write('debug', args); },
  trace(...args) { write('debug', args); },
  dir(...args) { write('log', args); },
  table(...args) { write('log', args); },
  assert(condition, ...args) { if (!condition) write('error', ['Assertion failed:'].concat(args)); },
};
defineProperty(globalThis, 'console', { value: freeze(sandboxConsole), writable: false, configurable: false, enumerable: false });

function describe(err) {
  try {
    if (err instanceof ErrorCtor) {
      return { name: toStr(err.name), message: toStr(err.message), stack: typeof err.stack === 'string' ? err.stack : undefined };
    }
    return { name: 'Error', message: 'threw a non-Error value: ' + formatValue(err) };
  } catch (e) {
    return { name: 'Error', message: 'threw a value that cannot be described' };
  }
}

function replacer(key, value) {
  const t = typeof value;
  if (t === 'function' || t === 'symbol' || t === 'bigint') {
    const what = t === 'bigint' ? 'a BigInt' : 'a ' + t;
    throw new TypeErrorCtor('the result contains ' + what + (key === '' ? '' : ' (at key ' + stringify(toStr(key)) + ')'));
  }
  return value;
}

function envelope(fields) {
  if (fields.ok === true && lines.length === 0 && !truncated) return fields.json === undefined ? 'U' : 'S' + fields.json;
  fields.lines = lines;
  fields.truncated = truncated;
  return stringify(fields);
}

function finish(value) {
  if (value === undefined) return envelope({ ok: true });
  let json;
  try {
    json = stringify(value, replacer);
  } catch (err) {
    return envelope({ ok: false, kind: 'result', error: describe(err) });
  }
  if (json === undefined) {
    return envelope({ ok: false, kind: 'result', error: { name: 'TypeError', message: 'the result is not a JSON value' } });
  }
  return envelope({ ok: true, json });
}

let target;
let pending;

function bind(fn) {
  target = fn;
}

function call(callJson) {
  lines = [];
  used = 0;
  truncated = false;
  pending = undefined;
  const c = parse(callJson);
  const args = c.values;
  for (let i = 0; i < c.missing.length; i++) args[c.missing[i]] = undefined;
  let value;
  try {
    value = apply(target, undefined, args);
  } catch (err) {
    return envelope({ ok: false, kind: 'threw', error: describe(err) });
  }
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return finish(value);
  let promise;
  try {
    if (typeof value.then !== 'function') return finish(value);
    promise = apply(promiseResolve, PromiseCtor, [value]);
  } catch (err) {
    return envelope({ ok: false, kind: 'threw', error: describe(err) });
  }
  const state = { text: undefined, notify: undefined };
  pending = state;
  const settle = (text) => {
    state.text = text;
    if (state.notify !== undefined) state.notify(text);
  };
  apply(promiseThen, promise, [
    (v) => settle(finish(v)),
    (err) => settle(envelope({ ok: false, kind: 'threw', error: describe(err) })),
  ]);
  return 'P';
}

function poll() {
  return pending !== undefined && pending.text !== undefined ? pending.text : 'P';
}

function wait() {
  const state = pending;
  if (state === undefined) return 'P';
  if (state.text !== undefined) return state.text;
  return new PromiseCtor((resolve) => {
    state.notify = resolve;
  });
}

function drain() {
  return stringify({ lines, truncated });
}

return freeze({ bind, call, poll, wait, drain });
`

/** The time a deterministic function's clock shows: 2000-01-01T00:00:00.000Z. */
export const DETERMINISTIC_EPOCH_MS = Date.UTC(2000, 0, 1)

/**
 * Evaluated after PRELUDE in the context of a function that declared itself deterministic (a fresh
 * context per call), with `$0` = a hex seed (the call's arguments digest) and `$1` = the fixed
 * epoch. It makes the context's sources of nondeterminism deterministic:
 *
 * - `Math.random` is sfc32 seeded from the first 128 bits of the seed (the same sequence for the
 *   same arguments on every node);
 * - `Date.now()`, `new Date()` and `Date()` read the fixed epoch (dates built from arguments are
 *   real dates; local-time methods still depend on the node's time zone);
 * - `WeakRef` and `FinalizationRegistry` (which expose garbage collection timing) are removed.
 *
 * An isolate context has no `performance`, `crypto`, timers or I/O to begin with.
 */
export const DETERMINISTIC_PRELUDE = String.raw`
'use strict';
const seed = $0;
const epoch = $1;
let a = parseInt(seed.slice(0, 8), 16) | 0;
let b = parseInt(seed.slice(8, 16), 16) | 0;
let c = parseInt(seed.slice(16, 24), 16) | 0;
let d = parseInt(seed.slice(24, 32), 16) | 0;
function next() {
  const t0 = (a + b) | 0;
  a = b ^ (b >>> 9);
  b = (c + (c << 3)) | 0;
  c = (c << 21) | (c >>> 11);
  d = (d + 1) | 0;
  const t = (t0 + d) | 0;
  c = (c + t) | 0;
  return (t >>> 0) / 4294967296;
}
for (let i = 0; i < 15; i++) next();
Object.defineProperty(Math, 'random', { value: function random() { return next(); }, writable: false, configurable: false, enumerable: false });
const RealDate = globalThis.Date;
const construct = Reflect.construct;
const FixedDate = function Date(...args) {
  if (new.target === undefined) return new RealDate(epoch).toString();
  return construct(RealDate, args.length === 0 ? [epoch] : args, new.target);
};
Object.defineProperty(FixedDate, 'prototype', { value: RealDate.prototype, writable: false, configurable: false, enumerable: false });
Object.defineProperty(FixedDate, 'now', { value: function now() { return epoch; }, writable: false, configurable: false, enumerable: false });
Object.defineProperty(FixedDate, 'parse', { value: RealDate.parse, writable: false, configurable: false, enumerable: false });
Object.defineProperty(FixedDate, 'UTC', { value: RealDate.UTC, writable: false, configurable: false, enumerable: false });
Object.defineProperty(RealDate.prototype, 'constructor', { value: FixedDate, writable: false, configurable: false, enumerable: false });
Object.defineProperty(globalThis, 'Date', { value: FixedDate, writable: false, configurable: false, enumerable: false });
delete globalThis.WeakRef;
delete globalThis.FinalizationRegistry;
`
