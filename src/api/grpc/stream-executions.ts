import { Metadata, status, type handleServerStreamingCall } from '@grpc/grpc-js'
import { SvcError } from '../../core/errors.js'
import { enveloped, executionEventMatches, requirePermission, type ExecutionEvent, type StreamHold } from '../../engine/index.js'
import { grpcErrorOf, statusName } from './errors.js'
import type { ExecutionEvent as ExecutionEventMessage } from './generated/svc/v1/ExecutionEvent.js'
import type { StreamRequest__Output } from './generated/svc/v1/StreamRequest.js'
import { undecodableError, type GrpcDoor } from './operation.js'
import { executionEventMessage } from './presenters.js'

export const STREAM_OPERATION = 'rufid.stream_executions'
const STREAM = { name: STREAM_OPERATION } as const

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
 *
 * A stream lives as long as the credential that opened it: when that key is revoked or the
 * credential expires, the stream ends at once with UNAUTHENTICATED, the trailers
 * `svc-error-code: 1003`, `svc-error-name: PERMISSION_DENIED` and `svc-error-details`
 * `{"credential":"revoked"|"expired","key_id":…}`, and the details `API key revoked` (or
 * `… expired`); no event is written after, and its audit entry has the result `revoked` or `expired`.
 */
export function executionStreams(door: GrpcDoor, init: ExecutionStreamsInit): ExecutionStreams {
  const { engine, envelope } = door
  const open = new Set<(thrown?: unknown) => void>()
  let refusing: SvcError | undefined

  const handler: ExecutionStreams['handler'] = enveloped((call) => {
    // one operation per stream: admitted now, completed (audited, metered) when it ends
    const operation = envelope.open(STREAM, '')
    const credentials = door.credentialsOf(call)
    operation.ip = credentials.ip
    const undecodable = undecodableError(call.request)
    const rufid = undecodable || call.request.rufid === '' ? undefined : call.request.rufid
    operation.rufid = rufid ?? null
    let listener: ((event: ExecutionEvent) => void) | undefined
    let lifetime: StreamHold | undefined
    let done = false

    /** Ends the subscription once: unsubscribes, answers the status (unless the client left), audits. */
    const finish = (thrown?: unknown, cancelled = false): void => {
      if (done) return
      done = true
      open.delete(finish)
      lifetime?.release()
      if (listener) engine.events.off('execution', listener)
      if (cancelled) operation.status = statusName(status.CANCELLED)
      // the client gets its status at once; the audit entry is written after (nobody waits for it)
      const failure = envelope.finish(operation, thrown)
      if (!cancelled) {
        if (failure) call.emit('error', grpcErrorOf(failure).status)
        else call.end()
      }
    }

    open.add(finish)
    call.on('cancelled', () => finish(undefined, true))
    call.on('error', (err: unknown) => finish(err))

    void (async () => {
      try {
        if (refusing) throw refusing
        if (undecodable) throw undecodable
        const admitted = await envelope.admit(operation, credentials)
        requirePermission(admitted, 'rufid.read')
        const target = rufid === undefined ? undefined : engine.functions.target(admitted, rufid)
        if (done) return
        const tenant = admitted.tenant_id
        listener = (event) => {
          if (!executionEventMatches(event, tenant, target)) return
          // the credential ended (revoked, expired): the stream ends here, without this event
          if (lifetime?.check() !== undefined) return
          if (call.writableLength >= init.maxBufferedEvents) {
            finish(new SvcError('SERVICE_UNAVAILABLE', 'stream subscriber fell behind; subscribe again', {
              details: { reason: 'slow_consumer', buffered_events: call.writableLength },
            }))
            return
          }
          call.write(executionEventMessage(event))
        }
        engine.events.on('execution', listener)
        // the stream lasts as long as its credential: revoked or expired, it ends (UNAUTHENTICATED)
        lifetime = envelope.hold(operation, (reason) => finish(reason))
        call.sendMetadata(new Metadata())
      } catch (err) {
        finish(err)
      }
    })()
  }, { name: STREAM_OPERATION })

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
