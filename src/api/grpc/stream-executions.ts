import { Metadata, status, type handleServerStreamingCall } from '@grpc/grpc-js'
import { SvcError } from '../../core/errors.js'
import { requirePermission, type ExecutionEvent, type FunctionTarget, type Principal } from '../../engine/index.js'
import { credentialsOf } from './credentials.js'
import { grpcErrorOf } from './errors.js'
import type { ExecutionEvent as ExecutionEventMessage } from './generated/svc/v1/ExecutionEvent.js'
import type { StreamRequest__Output } from './generated/svc/v1/StreamRequest.js'
import { recordOutcome, type GrpcDoorComponents } from './operation.js'
import { executionEventMessage } from './presenters.js'

export const STREAM_OPERATION = 'rufid.stream_executions'

export interface ExecutionStreamsInit {
  /**
   * Events a subscriber may have waiting (not yet taken by HTTP/2 flow control) before it is
   * dropped: it then receives what was buffered and ends with UNAVAILABLE (1010, `slow_consumer`).
   */
  maxBufferedEvents: number
}

export interface ExecutionStreams {
  handler: handleServerStreamingCall<StreamRequest__Output, ExecutionEventMessage>
  /** Ends every open stream with `reason` and refuses new ones (the server is stopping). */
  closeAll(reason: SvcError): void
  /** Accepts new streams again (the server started) */
  acceptNew(): void
  /** open subscriptions */
  readonly size: number
}

/**
 * StreamExecutions: the engine's `execution` events of the caller's tenant (and of one RUFID when
 * the request names one), written as they happen. The response headers are sent once the
 * subscription is live, so a client that waits for them misses nothing after that point. One
 * audit entry per stream, written when it ends.
 */
export function executionStreams(components: GrpcDoorComponents, init: ExecutionStreamsInit): ExecutionStreams {
  const { engine, logger } = components
  const open = new Set<(thrown?: unknown) => void>()
  let refusing: SvcError | undefined

  const handler: ExecutionStreams['handler'] = (call) => {
    const startedAt = performance.now()
    const credentials = credentialsOf(call)
    const rufid = call.request.rufid === '' ? undefined : call.request.rufid
    let principal: Principal | undefined
    let listener: ((event: ExecutionEvent) => void) | undefined
    let done = false

    /** Ends the subscription once: unsubscribes, answers the status (unless the client left), audits. */
    const finish = (thrown?: unknown, cancelled = false): void => {
      if (done) return
      done = true
      open.delete(finish)
      if (listener) engine.events.off('execution', listener)
      const failure = thrown === undefined ? undefined : grpcErrorOf(thrown)
      if (!cancelled) {
        if (failure) call.emit('error', failure.status)
        else call.end()
      }
      const code = cancelled ? status.CANCELLED : failure ? failure.status.code : status.OK
      void engine.access
        .audit({ operation: STREAM_OPERATION, principal, ip: credentials.ip, rufid, startedAt, error: failure?.svc })
        .catch((err: unknown) => logger.error({ err }, 'audit write failed'))
      try {
        recordOutcome(components, STREAM_OPERATION, startedAt, code, failure?.svc)
      } catch (err) {
        logger.error({ err }, 'recording gRPC metrics failed')
      }
    }

    open.add(finish)
    call.on('cancelled', () => finish(undefined, true))
    call.on('error', (err: unknown) => finish(err))

    void (async () => {
      try {
        if (refusing) throw refusing
        const admitted = await engine.access.admit(credentials)
        principal = admitted
        requirePermission(admitted, 'rufid.read')
        const target = rufid === undefined ? undefined : engine.functions.target(admitted, rufid)
        if (done) return
        listener = (event) => {
          if (event.tenant_id !== admitted.tenant_id || !matches(event, target)) return
          if (call.writableLength >= init.maxBufferedEvents) {
            finish(new SvcError('SERVICE_UNAVAILABLE', 'stream subscriber fell behind; subscribe again', {
              details: { reason: 'slow_consumer', buffered_events: call.writableLength },
            }))
            return
          }
          call.write(executionEventMessage(event))
        }
        engine.events.on('execution', listener)
        call.sendMetadata(new Metadata())
      } catch (err) {
        finish(err)
      }
    })()
  }

  return {
    handler,
    closeAll(reason) {
      refusing = reason
      for (const finish of [...open]) finish(reason)
    },
    acceptNew() {
      refusing = undefined
    },
    get size() {
      return open.size
    },
  }
}

function matches(event: ExecutionEvent, target: FunctionTarget | undefined): boolean {
  if (target === undefined) return true
  if (event.rufid_short !== target.short) return false
  return target.version === undefined || event.version === `v${target.version}`
}
