import { SvcError, toSvcError } from '../../core/errors.js'
import type { AccessGate } from '../auth/access-gate.js'
import type { CredentialInput } from '../auth/authenticator.js'
import type { StreamHold } from '../auth/credential-streams.js'
import type { SvcMetrics } from '../metrics.js'
import type { Principal } from '../types.js'
import { noteSync, operationEnded, runInOperation, type OperationContext } from './loop-monitor.js'

/**
 * The operation layer: the one envelope every door (REST, GraphQL over HTTP, SSE and WebSocket,
 * gRPC, the `/ws` event socket) runs each operation through. In order, like a fastify hook chain
 * or a gRPC interceptor:
 *
 *   decode (the door's, e.g. the JSON body) → admit (credentials → Principal, rate limits)
 *     → handle (one engine call; the door's decode/encode) → audit → meter → map the error
 *
 * A door declares its operations once (`Operation` objects, built at start, so nothing is
 * allocated per call beyond one `OperationCall`) and answers what `run` resolves or rejects with:
 * the operation's output, or the SvcError a client may see (an internal fault without its text).
 * Doors whose operations do not fit one request/response (a stream that is admitted now and ends
 * later, a GraphQL request whose fields are separate operations) use the steps `open`, `admit`,
 * `complete` themselves; test/api/operation-envelope.test.ts checks that every operation of every
 * door is audited and metered exactly once through here. A stream is also `hold`-ed once it is
 * live: when its caller's key is revoked or its credential expires, the envelope completes the
 * stream's call with the reason (audited, metered) and the door closes the stream with its code.
 */

/** What an operation of a caller does once the caller is admitted. */
export interface CallerOperation<I, O> {
  /** the audited (and metered) name: `rufid.create`, `events.subscribe`, … */
  readonly name: string
  readonly access?: 'caller'
  /** false: metered, not audited (`system.*` reads, transport events such as a slow consumer) */
  readonly audited?: boolean
  /** the RUFID the request names: recorded in the audit entry even when the call is refused */
  rufidOf?(input: I): string | null | undefined
  /** decoding that must pass before the caller is admitted (1006 refuses the operation) */
  decode?(input: I): void
  handle(principal: Principal, input: I, call: OperationCall): Promise<O>
}

/** An operation anyone may call (health, the API document, a peer registering with its certificate). */
export interface PublicOperation<I, O> {
  readonly name: string
  readonly access: 'public'
  readonly audited?: boolean
  rufidOf?(input: I): string | null | undefined
  decode?(input: I): void
  handle(principal: undefined, input: I, call: OperationCall): Promise<O>
}

export type Operation<I, O> = CallerOperation<I, O> | PublicOperation<I, O>

/** The audited description of an operation, without its handler (refusals, streams, fields). */
export type OperationName = Pick<Operation<never, never>, 'name' | 'audited'>

/** One operation in flight: opened when the request arrives, completed exactly once. */
export interface OperationCall {
  readonly operation: OperationName
  /** the caller's address */
  ip: string
  /** `performance.now()` when the request arrived */
  readonly startedAt: number
  /** the caller, as soon as the credentials are known (so a refusal is audited under its tenant) */
  principal: Principal | undefined
  /** the RUFID the request names or the operation created (audit entry) */
  rufid: string | null
  /**
   * the status label of `svc_protocol_requests_total` when the door knows better than
   * `statusOf` (REST: 201 rather than 200; gRPC: CANCELLED when the client left)
   */
  status: string | undefined
  /** the audit write of a completed call (undefined: not audited, or not completed yet) */
  written: Promise<void> | undefined
  completed: boolean
  /**
   * Operations the call performed as part of its own, each audited as an entry of its own under
   * the same caller when the call completes (whatever its outcome: they happened), e.g. the
   * registration a native execute makes (`rufid.create`). Undefined: none.
   */
  performed: Array<{ operation: string; rufid: string | null }> | undefined
}

/** How one door reads requests and names outcomes; given once when the door is built. */
export interface DoorProfile<I> {
  /** the `protocol` label of the svc_protocol_* metrics: rest, graphql, grpc, ws */
  readonly protocol: string
  /** the caller's credentials in a request (caller operations only) */
  credentialsOf(input: I): CredentialInput
  /** the caller's address (public operations, and refusals before the credentials were read) */
  ipOf(input: I): string
  /** decoding every operation of this door needs before admission (REST: reading the JSON body) */
  decode?(input: I): Promise<void> | void
  /** the status label of an outcome: the transport's own (HTTP status, gRPC status name, …) */
  statusOf(error: SvcError | undefined): string
}

/** What the envelope logs: an internal fault with its cause, and an audit entry that could not be written. */
export interface EnvelopeLogger {
  error(obj: object, msg: string): void
  debug(obj: object, msg: string): void
}

export interface EnvelopeComponents {
  /** the engine's access gate (admission, audit) and metrics: only the envelope touches them */
  engine: { readonly access: AccessGate; readonly metrics: SvcMetrics }
  logger: EnvelopeLogger
}

/** Marks the functions a door built with the envelope, so a test can list what skipped it. */
export const ENVELOPED: unique symbol = Symbol.for('svc.operation-envelope')

/** True when `fn` (a route handler, an RPC handler, a resolver) was built by `enveloped`. */
export function isEnveloped(fn: unknown): boolean {
  return typeof fn === 'function' && (fn as unknown as Record<symbol, unknown>)[ENVELOPED] !== undefined
}

/** Marks a door's handler as one that runs `operation` through the envelope; returns it. */
export function enveloped<F extends (...args: never[]) => unknown>(fn: F, operation: OperationName): F {
  Object.defineProperty(fn, ENVELOPED, { value: operation.name })
  return fn
}

/** The operation name `enveloped` recorded on a handler. */
export function envelopedOperationOf(fn: unknown): string | undefined {
  return isEnveloped(fn) ? ((fn as unknown as Record<symbol, string>)[ENVELOPED]) : undefined
}

/**
 * The SvcError a client may see: an internal fault (1009) says only "internal error" (its cause
 * is logged, never sent); every other error as it is.
 */
export function publicErrorOf(err: SvcError): SvcError {
  if (err.code !== 1009 || (err.message === INTERNAL_MESSAGE && Object.keys(err.details).length === 0)) return err
  return new SvcError('INTERNAL_ERROR', INTERNAL_MESSAGE, { cause: err.cause ?? err })
}

const INTERNAL_MESSAGE = 'internal error'

/** The envelope of one door. */
export class OperationEnvelope<I> {
  readonly protocol: string
  private readonly gate: AccessGate
  private readonly metrics: SvcMetrics
  private readonly logger: EnvelopeLogger

  constructor(private readonly profile: DoorProfile<I>, components: EnvelopeComponents) {
    this.protocol = profile.protocol
    this.gate = components.engine.access
    this.metrics = components.engine.metrics
    this.logger = components.logger
  }

  /**
   * The whole envelope for one request/response operation: decode, admit (caller operations),
   * handle, then audit (written before this resolves), meter and map the error. Resolves with
   * the handler's output; rejects with the public SvcError only.
   */
  run<In extends I, O>(operation: Operation<In, O>, input: In): Promise<O> {
    const call = this.open(operation, this.profile.ipOf(input))
    // the operation's code runs as its own: a block of the event loop is blamed on it (loop-monitor.ts)
    const context: OperationContext = { protocol: this.protocol, call }
    return runInOperation(context, () => this.runCall(operation, input, call, context))
  }

  private async runCall<In extends I, O>(operation: Operation<In, O>, input: In, call: OperationCall, context: OperationContext): Promise<O> {
    let output: O
    try {
      // each step's synchronous stretch is timed (a step that blocks the loop is named)
      let t = performance.now()
      if (operation.rufidOf) call.rufid = operation.rufidOf(input) || null
      if (this.profile.decode) {
        const decoded = this.profile.decode(input)
        noteSync(context, t)
        await decoded
        t = performance.now()
      }
      operation.decode?.(input)
      let pending: Promise<O>
      if (operation.access === 'public') {
        pending = operation.handle(undefined, input, call)
      } else {
        const credentials = this.profile.credentialsOf(input)
        call.ip = credentials.ip
        const admitted = this.admit(call, credentials)
        noteSync(context, t)
        const principal = await admitted
        t = performance.now()
        pending = operation.handle(principal, input, call)
      }
      noteSync(context, t)
      output = await pending
    } catch (thrown) {
      operationEnded(context)
      throw await this.complete(call, thrown)
    }
    operationEnded(context)
    await this.complete(call)
    return output
  }

  /**
   * Runs an operation of a caller the door admitted already (a field of a GraphQL request, which
   * was admitted once): handle, audit, meter, map the error.
   */
  runAdmitted<In, O>(operation: CallerOperation<In, O>, principal: Principal, ip: string, input: In): Promise<O> {
    const call = this.open(operation, ip)
    call.principal = principal
    const context: OperationContext = { protocol: this.protocol, call }
    return runInOperation(context, () => this.runAdmittedCall(operation, principal, input, call, context))
  }

  private async runAdmittedCall<In, O>(operation: CallerOperation<In, O>, principal: Principal, input: In, call: OperationCall, context: OperationContext): Promise<O> {
    let output: O
    try {
      const t = performance.now()
      if (operation.rufidOf) call.rufid = operation.rufidOf(input) || null
      const pending = operation.handle(principal, input, call)
      noteSync(context, t)
      output = await pending
    } catch (thrown) {
      operationEnded(context)
      throw await this.complete(call, thrown)
    }
    operationEnded(context)
    await this.complete(call)
    return output
  }

  /** Starts a call (the steps below are for doors whose operations outlive one request). */
  open(operation: OperationName, ip = ''): OperationCall {
    return { operation, ip, startedAt: performance.now(), principal: undefined, rufid: null, status: undefined, written: undefined, completed: false, performed: undefined }
  }

  /** Credentials → Principal, rate limits charged (1003/1005). Completes nothing: the door does. */
  async admit(call: OperationCall, credentials: CredentialInput): Promise<Principal> {
    const principal = await this.gate.admit(credentials, call)
    call.principal = principal
    return principal
  }

  /**
   * Holds a live stream for as long as its caller's credential is valid. `call` is the stream's
   * operation, opened by the door and carrying the admitted principal (its `startedAt` is when
   * the stream opened). When the key is revoked or the credential expires, the call is finished
   * with the 1003 that says which (`details.credential`: `revoked` or `expired`; audited with
   * that result under the caller, metered), then `end` gets the error the client may see: the
   * door closes the stream with it at once, and delivers no event after. The door calls
   * `check()` on the hold right before each event it delivers, and `release()` when the stream
   * ends otherwise (which leaves the call to the door).
   */
  hold(call: OperationCall, end: (reason: SvcError) => void): StreamHold {
    const principal = call.principal
    if (principal === undefined) throw new Error(`${call.operation.name}: a stream is held only once its caller is admitted`)
    return this.gate.hold(principal, (reason) => end(this.finish(call, reason)!))
  }

  /**
   * Ends a call: meters it, logs an internal fault with its cause, starts its audit entry, and
   * returns the error a client may see (undefined on success). Only the first completion of a
   * call counts. The audit write is `call.written`: `complete` waits for it, this does not (a
   * stream that ended because its client left answers nobody).
   */
  finish(call: OperationCall, thrown?: unknown): SvcError | undefined {
    const error = thrown === undefined ? undefined : toSvcError(thrown)
    if (call.completed) return error === undefined ? undefined : publicErrorOf(error)
    call.completed = true
    const name = call.operation.name
    const protocol = this.protocol
    this.metrics.protocolRequests.inc({ protocol, operation: name, status: call.status ?? this.profile.statusOf(error) })
    this.metrics.protocolRequestDuration.observe({ protocol, operation: name }, (performance.now() - call.startedAt) / 1000)
    if (error !== undefined) {
      this.metrics.protocolErrors.inc({ protocol, code: String(error.code) })
      if (error.code === 1009) this.logger.error({ err: error.cause ?? error, operation: name, protocol }, error.message)
      else this.logger.debug({ code: error.code, operation: name, protocol }, error.message)
    }
    if (call.operation.audited !== false) {
      call.written = this.gate
        .audit({ operation: name, principal: call.principal, ip: call.ip, rufid: call.rufid, startedAt: call.startedAt, error })
        .catch((err: unknown) => this.logger.error({ err, operation: name }, 'audit write failed'))
      if (call.performed !== undefined) {
        const own = call.written
        const also = call.performed.map(({ operation, rufid }) => this.gate
          .audit({ operation, principal: call.principal, ip: call.ip, rufid, startedAt: call.startedAt, error: undefined })
          .catch((err: unknown) => this.logger.error({ err, operation }, 'audit write failed')))
        call.written = Promise.all([own, ...also]).then(() => undefined)
      }
    }
    return error === undefined ? undefined : publicErrorOf(error)
  }

  /** `finish`, then waits until the audit entry is written (the answer leaves after it). */
  async complete(call: OperationCall, thrown?: unknown): Promise<SvcError | undefined> {
    const error = this.finish(call, thrown)
    if (call.written !== undefined) await call.written
    return error
  }
}

/** Builds the envelope of one door. */
export function createOperationEnvelope<I>(profile: DoorProfile<I>, components: EnvelopeComponents): OperationEnvelope<I> {
  return new OperationEnvelope(profile, components)
}
