/**
 * The CPU limit of JavaScript calls, enforced while a call runs (not only compared once it returned).
 *
 * A call runs synchronously on the worker's main thread (`applySync`), or, in its promise and
 * module phases, on isolated-vm's threads; either way the main thread cannot watch it. Two helpers
 * do, and the call's hot path only writes a few words of shared memory:
 *
 * - a **watchdog** thread (a node worker thread) measures the worker process's CPU time while a
 *   call is armed (`process.cpuUsage()`: the isolate's thread and the V8 threads compiling and
 *   collecting for it; CPU, never wall time, so a loaded machine cannot make a call fail early) and
 *   asks for the call to be stopped once it used its limit;
 * - a **terminator** (a small isolate of its own, blocked in `Atomics.wait` on an isolated-vm
 *   thread) holds a handle of every isolate the runtime made and disposes the running one when asked:
 *   V8 ends its execution at once, whichever thread runs it. Isolate handles cannot travel to a node
 *   worker thread; they can into another isolate, which is why the two are separate.
 *
 * The watchdog polls every POLL_MS while calls run and parks (no wake-ups at all) once no call was
 * armed for PARK_AFTER_MS; arming a call wakes it only when it is parked, and then reads the CPU for
 * it (a parked thread may take a while to run again on a busy machine). Otherwise the watchdog
 * starts counting a call when it first sees it (about a poll late at most), so a call is stopped
 * within its limit plus about two polls of CPU (and the time the threads take to be scheduled),
 * never before it used its limit.
 *
 * A call's CPU time (its outcome's `cpuTimeMs`, and the check once it returned) is the process's
 * CPU from where the watchdog first saw it, plus the wall time before that (at most a poll); the
 * check counts only the measured part, so it never fails a call that used less than its limit. A
 * call the watchdog never saw (shorter than a poll or so) counts its wall time: it cannot have used
 * more CPU on its thread, and it reads no clock but the wall clock, which keeps the warm hot path
 * free of system calls. A limit below EXACT_BELOW_MS is measured exactly instead (the process's CPU
 * read when the call starts and ends).
 */
import ivm from 'isolated-vm'
import { Worker } from 'node:worker_threads'

/** Int32 fields of the shared state. */
const F = {
  /**
   * the seq of the armed call (0: none); -seq once the terminator took it to stop it. The parked
   * watchdog waits on it (woken by `arm`).
   */
  ARMED: 0,
  /** the isolate slot of the armed call (written before ARMED) */
  SLOT: 1,
  /** its CPU limit, ms (written before ARMED) */
  LIMIT_MS: 2,
  /** 1 while the watchdog waits without a timeout */
  PARKED: 3,
  /** the seq of the call the watchdog wants stopped */
  KILL_SEQ: 4,
  /** bumped with every request to the terminator and every reload (the terminator waits on it) */
  KILL_GEN: 5,
  /** the terminator's registration epoch: a loop whose epoch is behind returns (-1: shut down) */
  EPOCH: 6,
  /** CPU the stopped call had used when the watchdog asked to stop it, ms */
  USED_MS: 7,
  /** the seq the watchdog asked to stop last (the main thread reads USED_MS for it) */
  STOPPED_SEQ: 8,
  /** the seq the watchdog saw last (SINCE_CPU and SINCE_AT are its) */
  SEEN_SEQ: 9,
  /** 1 once the watchdog thread runs */
  RUNNING: 10,
} as const
const FIELD_COUNT = 11
/** Float64 fields, after the Int32 ones: the process's CPU (ms) and the time (ms since the epoch) when the watchdog first saw SEEN_SEQ. */
const SINCE_CPU = 0
const SINCE_AT = 1
const FLOAT_OFFSET = 48 // 8-aligned, after the Int32 fields
const STATE_BYTES = FLOAT_OFFSET + 2 * 8

/** How often the watchdog measures while calls run. */
export const POLL_MS = 10
/** No call armed for this long: the watchdog parks until the next one. */
const PARK_AFTER_MS = 500

/** A CPU limit below this is measured exactly (two readings of the process's CPU per call). */
export const EXACT_BELOW_MS = 50
/** this thread's performance.now() origin, ms since the epoch (the watchdog thread has its own) */
const TIME_ORIGIN = performance.timeOrigin

/** The watchdog thread (CommonJS, node built-ins only: it runs from source and from dist alike). */
const WATCHDOG = String.raw`
'use strict';
const { workerData } = require('node:worker_threads');
const s = new Int32Array(workerData.state);
const f = new Float64Array(workerData.state, workerData.floatOffset, 2);
const F = workerData.fields;
const pollMs = workerData.pollMs;
const parkAfterMs = workerData.parkAfterMs;
const cpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
let seq = 0;
let since = 0;
let requested = 0;
let idleSince = Date.now();
Atomics.store(s, F.RUNNING, 1);
for (;;) {
  const armed = Atomics.load(s, F.ARMED);
  if (armed > 0) {
    idleSince = Date.now();
    if (armed !== seq) {
      // a call this watchdog has not seen yet: count from here (CPU it used before is not counted)
      seq = armed;
      if (Atomics.load(s, F.SEEN_SEQ) === seq) {
        // arm() read the CPU itself (it woke this thread from its park, which may take a while)
        since = f[0];
      } else {
        since = cpuMs();
        f[0] = since;
        f[1] = performance.timeOrigin + performance.now();
        Atomics.store(s, F.SEEN_SEQ, seq);
      }
    } else if (requested !== seq) {
      const used = cpuMs() - since;
      if (used >= Atomics.load(s, F.LIMIT_MS)) {
        requested = seq;
        Atomics.store(s, F.USED_MS, Math.ceil(used));
        Atomics.store(s, F.STOPPED_SEQ, seq);
        Atomics.store(s, F.KILL_SEQ, seq);
        Atomics.add(s, F.KILL_GEN, 1);
        Atomics.notify(s, F.KILL_GEN);
      }
    }
    Atomics.wait(s, F.PARKED, 0, pollMs);
    continue;
  }
  if (Date.now() - idleSince < parkAfterMs) {
    Atomics.wait(s, F.PARKED, 0, pollMs);
    continue;
  }
  // park: a call armed after the next line is either seen below, or its arm() sees PARKED and wakes us
  Atomics.store(s, F.PARKED, 1);
  const idle = Atomics.load(s, F.ARMED);
  if (idle <= 0) Atomics.wait(s, F.ARMED, idle);
  Atomics.store(s, F.PARKED, 0);
  idleSince = Date.now();
}
`

/**
 * The terminator's code (the body of an evalClosure, $0: the shared state, $1: the field indices).
 * It returns `watch(epoch, slot, isolate, slot, isolate, …)`, which blocks until the epoch changes.
 */
const TERMINATOR = String.raw`
'use strict';
const s = new Int32Array($0);
const F = $1;
return function watch(epoch, ...pairs) {
  const targets = new Map();
  for (let i = 0; i + 1 < pairs.length; i += 2) targets.set(pairs[i], pairs[i + 1]);
  for (;;) {
    const gen = Atomics.load(s, F.KILL_GEN);
    if (Atomics.load(s, F.EPOCH) !== epoch) return;
    const seq = Atomics.load(s, F.KILL_SEQ);
    if (seq > 0) {
      // the slot is read before ARMED is taken: while ARMED holds seq, SLOT is seq's
      const slot = Atomics.load(s, F.SLOT);
      if (Atomics.compareExchange(s, F.ARMED, seq, -seq) === seq) {
        const target = targets.get(slot);
        if (target !== undefined) {
          try { target.dispose(); } catch (err) { /* already disposed */ }
        }
      }
      Atomics.compareExchange(s, F.KILL_SEQ, seq, 0);
    }
    Atomics.wait(s, F.KILL_GEN, gen);
  }
};
`

/** What a call used, as `disarm` found it. */
export interface CallCpu {
  /** CPU time the call used, ms (see the module's doc for how it is measured) */
  cpuMs: number
  /** the call was stopped while it ran (its isolate is disposed, or about to be: do not use it again) */
  stopped: boolean
  /** it used more than its limit (stopped, or measured over it once it returned) */
  exceeded: boolean
}

/**
 * The watchdog and terminator of one worker process's JavaScript runtime. Every isolate the runtime
 * makes is registered (a slot); a call arms its isolate's slot with its CPU limit and disarms it
 * when it ends, learning whether it was stopped.
 */
export class CpuLimiter {
  private readonly buffer = new SharedArrayBuffer(STATE_BYTES)
  private readonly state = new Int32Array(this.buffer, 0, FIELD_COUNT)
  private readonly since = new Float64Array(this.buffer, FLOAT_OFFSET, 2)
  /** the armed call: its seq, limit, start (performance.now()) and, for an exact measurement, the process's CPU then */
  private readonly call = { seq: 0, limitMs: 0, startedAt: 0, exactFrom: undefined as NodeJS.CpuUsage | undefined }
  private readonly isolates = new Map<number, ivm.Isolate>()
  private watchdog: Worker | undefined
  private terminator: { isolate: ivm.Isolate; watch: ivm.Reference } | undefined
  private nextSlot = 1
  private nextSeq = 1
  private epoch = 0
  private failed: string | undefined

  constructor(private readonly onFault: (message: string) => void = () => undefined) {
    try {
      this.watchdog = new Worker(WATCHDOG, {
        eval: true,
        workerData: { state: this.buffer, floatOffset: FLOAT_OFFSET, fields: F, pollMs: POLL_MS, parkAfterMs: PARK_AFTER_MS },
        // a small thread: it holds nothing
        resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 2, stackSizeMb: 1 },
        stdout: false,
        stderr: false,
      })
      this.watchdog.unref()
      this.watchdog.on('error', (err) => this.fail(`the CPU watchdog thread failed: ${err.message}`))
      this.watchdog.on('exit', (code) => {
        if (this.epoch >= 0) this.fail(`the CPU watchdog thread exited (code ${code})`)
      })
      this.startTerminator()
      // process.exit() would otherwise wait forever for the terminator's blocked thread
      process.once('exit', this.onExit)
    } catch (err) {
      this.fail(`the CPU limit cannot be enforced while calls run: ${err instanceof Error ? err.message : String(err)}`)
    }
  }

  /** Why calls are not stopped by CPU while they run (they are still checked when they return). */
  get fault(): string | undefined {
    return this.failed
  }

  /** Registers an isolate the runtime made; returns its slot (for `arm`). */
  register(isolate: ivm.Isolate): number {
    const slot = this.nextSlot++
    this.isolates.set(slot, isolate)
    this.reload()
    return slot
  }

  /** The isolate was disposed: the terminator lets go of it at its next reload. */
  forget(slot: number): void {
    this.isolates.delete(slot)
  }

  /**
   * Arms the limit for a call about to run in the isolate of `slot`, which started at `startedAt`
   * (performance.now()). The hot path: a few writes to shared memory, and a wake-up of the watchdog
   * only when it parked (no call for a while). One call at a time: `disarm` before the next.
   */
  arm(slot: number, limitMs: number, startedAt: number): void {
    const seq = this.nextSeq
    this.nextSeq = seq >= 0x3fffffff ? 1 : seq + 1
    const call = this.call
    call.seq = seq
    call.limitMs = limitMs
    call.startedAt = startedAt
    call.exactFrom = limitMs < EXACT_BELOW_MS || this.failed !== undefined ? process.cpuUsage() : undefined
    const s = this.state
    const parked = Atomics.load(s, F.PARKED) === 1
    if (parked || Atomics.load(s, F.RUNNING) === 0) {
      // the watchdog must be woken (or has yet to start) and may see the call late: it counts from this reading instead
      const now = process.cpuUsage()
      this.since[SINCE_CPU] = (now.user + now.system) / 1000
      this.since[SINCE_AT] = TIME_ORIGIN + startedAt
      Atomics.store(s, F.SEEN_SEQ, seq)
    }
    // plain writes: the atomic store of ARMED publishes them to whoever reads ARMED atomically
    s[F.SLOT] = slot
    s[F.LIMIT_MS] = Math.max(1, Math.min(0x7fffffff, Math.ceil(limitMs)))
    Atomics.store(s, F.ARMED, seq)
    if (parked || Atomics.load(s, F.PARKED) === 1) Atomics.notify(s, F.ARMED)
  }

  /**
   * Disarms the armed call, which ended at `endedAt` (performance.now()), and says what it used and
   * whether it was stopped.
   */
  disarm(endedAt: number): CallCpu {
    const s = this.state
    const { seq, limitMs, startedAt, exactFrom } = this.call
    const wallMs = endedAt - startedAt
    const stopped = Atomics.compareExchange(s, F.ARMED, seq, 0) !== seq
    let cpuMs: number
    let atLeast: number
    if (exactFrom !== undefined) {
      const used = process.cpuUsage(exactFrom)
      cpuMs = atLeast = (used.user + used.system) / 1000
    } else if (Atomics.load(s, F.SEEN_SEQ) !== seq) {
      // not seen by the watchdog: shorter than about a poll (the limit is above EXACT_BELOW_MS)
      cpuMs = wallMs
      atLeast = 0
    } else {
      const now = process.cpuUsage()
      atLeast = Math.max(0, (now.user + now.system) / 1000 - this.since[SINCE_CPU]!)
      cpuMs = atLeast + Math.min(wallMs, Math.max(0, this.since[SINCE_AT]! - (TIME_ORIGIN + startedAt)))
    }
    if (!stopped) return { cpuMs, stopped: false, exceeded: atLeast > limitMs }
    // the terminator took the call (ARMED is -seq): it is being stopped
    Atomics.store(s, F.ARMED, 0)
    const usedMs = Atomics.load(s, F.STOPPED_SEQ) === seq ? Atomics.load(s, F.USED_MS) : limitMs
    return { cpuMs: Math.max(usedMs, cpuMs), stopped: true, exceeded: true }
  }

  private readonly onExit = (): void => this.dispose()

  /** Ends both helpers (the worker is exiting). */
  dispose(): void {
    process.removeListener('exit', this.onExit)
    this.epoch = -1
    Atomics.store(this.state, F.EPOCH, -1)
    Atomics.add(this.state, F.KILL_GEN, 1)
    Atomics.notify(this.state, F.KILL_GEN)
    const terminator = this.terminator
    this.terminator = undefined
    if (terminator && !terminator.isolate.isDisposed) terminator.isolate.dispose()
    void this.watchdog?.terminate()
    this.watchdog = undefined
    this.isolates.clear()
  }

  private startTerminator(): void {
    const isolate = new ivm.Isolate({ memoryLimit: 8 })
    const context = isolate.createContextSync()
    const watch = context.evalClosureSync(TERMINATOR, [new ivm.ExternalCopy(this.state.buffer).copyInto(), new ivm.ExternalCopy(F).copyInto()], {
      result: { reference: true },
    }) as ivm.Reference
    this.terminator = { isolate, watch }
    this.reload()
  }

  /**
   * Hands the terminator the current set of isolates: the running loop returns (its epoch is behind)
   * and a new one, queued behind it on the terminator's isolate, starts with the new set.
   */
  private reload(): void {
    const terminator = this.terminator
    if (terminator === undefined || this.epoch < 0) return
    this.epoch = this.epoch >= 0x3fffffff ? 1 : this.epoch + 1
    const epoch = this.epoch
    Atomics.store(this.state, F.EPOCH, epoch)
    Atomics.add(this.state, F.KILL_GEN, 1)
    Atomics.notify(this.state, F.KILL_GEN)
    const pairs: unknown[] = []
    for (const [slot, isolate] of this.isolates) if (!isolate.isDisposed) pairs.push(slot, isolate)
    terminator.watch.apply(undefined, [epoch, ...pairs]).catch((err: unknown) => {
      if (this.epoch < 0 || this.terminator !== terminator) return
      // the terminator's isolate was lost: make another (calls armed meanwhile are checked when they return)
      this.onFault(`the CPU terminator failed (${err instanceof Error ? err.message : String(err)}); starting another`)
      this.terminator = undefined
      if (!terminator.isolate.isDisposed) terminator.isolate.dispose()
      try {
        this.startTerminator()
      } catch (again) {
        this.fail(`the CPU terminator cannot be restarted: ${again instanceof Error ? again.message : String(again)}`)
      }
    })
  }

  private fail(message: string): void {
    if (this.failed !== undefined) return
    this.failed = message
    this.onFault(message)
  }
}
