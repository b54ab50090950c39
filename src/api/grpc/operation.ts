import { status, type handleUnaryCall, type ServerUnaryCall } from '@grpc/grpc-js'
import type { Logger } from 'pino'
import type { SvcError } from '../../core/errors.js'
import type { Engine, Principal } from '../../engine/index.js'
import { credentialsOf } from './credentials.js'
import { grpcErrorOf, statusName } from './errors.js'

export interface GrpcDoorComponents {
  engine: Engine
  logger: Logger
}

/** What a handler tells the door about the operation it ran, for the audit entry. */
export interface OperationNote {
  /** the RUFID the request names */
  rufid?: string | undefined
}

/**
 * Records the `svc_protocol_*` metrics of one finished RPC (protocol `grpc`, the audited operation
 * name, the gRPC status name) and logs failures (1009 at error level with its cause).
 */
export function recordOutcome(
  { engine, logger }: GrpcDoorComponents,
  operation: string,
  startedAt: number,
  code: status,
  failure: SvcError | undefined,
): void {
  const seconds = (performance.now() - startedAt) / 1000
  engine.metrics.protocolRequests.inc({ protocol: 'grpc', operation, status: statusName(code) })
  engine.metrics.protocolRequestDuration.observe({ protocol: 'grpc', operation }, seconds)
  if (failure) {
    engine.metrics.protocolErrors.inc({ protocol: 'grpc', code: String(failure.code) })
    const internal = failure.code === 1009
    logger[internal ? 'error' : 'debug']({ err: internal ? failure.cause ?? failure : undefined, code: failure.code, operation }, failure.message)
  }
}

/**
 * A unary handler around `run`: authenticates the caller (`access.admit`), runs the operation,
 * writes one audit entry, records metrics, then answers the callback exactly once — with the
 * response, or with the status and trailers of `errors.ts`. `rufidOf` names the RUFID of the
 * request for the audit entry, so that refused calls record it too.
 */
export function unaryOperation<Req, Res>(
  components: GrpcDoorComponents,
  operation: string,
  run: (request: Req, principal: Principal, note: OperationNote) => Promise<Res>,
  rufidOf?: (request: Req) => string | undefined,
): handleUnaryCall<Req, Res> {
  const { engine, logger } = components
  return (call: ServerUnaryCall<Req, Res>, callback) => {
    const startedAt = performance.now()
    const credentials = credentialsOf(call)
    const note: OperationNote = { rufid: rufidOf?.(call.request) || undefined }
    let principal: Principal | undefined
    void (async () => {
      let response: Res | undefined
      let failure: ReturnType<typeof grpcErrorOf> | undefined
      try {
        principal = await engine.access.admit(credentials)
        response = await run(call.request, principal, note)
      } catch (thrown) {
        failure = grpcErrorOf(thrown)
      }
      // the audit entry is written before the answer leaves
      await engine.access
        .audit({ operation, principal, ip: credentials.ip, rufid: note.rufid, startedAt, error: failure?.svc })
        .catch((err: unknown) => logger.error({ err }, 'audit write failed'))
      try {
        recordOutcome(components, operation, startedAt, failure ? failure.status.code : status.OK, failure?.svc)
      } catch (err) {
        logger.error({ err }, 'recording gRPC metrics failed')
      }
      if (failure) callback(failure.status)
      else callback(null, response)
    })()
  }
}
