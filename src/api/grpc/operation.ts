import { status, type handleUnaryCall, type ServerUnaryCall } from '@grpc/grpc-js'
import type { Logger } from 'pino'
import type { SvcError } from '../../core/errors.js'
import {
  createOperationEnvelope, enveloped,
  type CallerOperation, type Engine, type OperationEnvelope,
} from '../../engine/index.js'
import { credentialsOf, ipOfPeer, type CallCredentialsSource } from './credentials.js'
import { grpcErrorOf, grpcStatusOf, statusName } from './errors.js'

export interface GrpcDoorComponents {
  engine: Engine
  logger: Logger
}

/** The gRPC door's components plus its envelope (built once per server). */
export interface GrpcDoor extends GrpcDoorComponents {
  envelope: OperationEnvelope<CallCredentialsSource>
}

/**
 * The gRPC door's envelope profile: credentials from the call's metadata and TLS peer, metered
 * with protocol `grpc` and the gRPC status name (`OK`, `NOT_FOUND`, …).
 */
export function createGrpcDoor(components: GrpcDoorComponents): GrpcDoor {
  const envelope = createOperationEnvelope<CallCredentialsSource>({
    protocol: 'grpc',
    credentialsOf,
    ipOf: (call) => ipOfPeer(call.getPeer()),
    statusOf: (error?: SvcError) => statusName(error === undefined ? status.OK : grpcStatusOf(error)),
  }, components)
  return { ...components, envelope }
}

/**
 * A unary handler: the operation through the envelope (admit, handle, audit, meter), then the
 * callback answered exactly once — with the response, or with the status and trailers of
 * `errors.ts`.
 */
export function unaryOperation<Req, Res>(
  { envelope }: GrpcDoor,
  operation: CallerOperation<ServerUnaryCall<Req, Res>, Res>,
): handleUnaryCall<Req, Res> {
  return enveloped((call: ServerUnaryCall<Req, Res>, callback: Parameters<handleUnaryCall<Req, Res>>[1]): void => {
    envelope.run(operation, call).then(
      (response) => callback(null, response),
      (err: unknown) => callback(grpcErrorOf(err).status),
    )
  }, operation)
}
