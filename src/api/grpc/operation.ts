import { status, type handleUnaryCall, type ServerUnaryCall, type ServiceDefinition } from '@grpc/grpc-js'
import type { Logger } from 'pino'
import { validationFailed, type SvcError } from '../../core/errors.js'
import {
  createOperationEnvelope, enveloped,
  type CallerOperation, type CredentialInput, type Engine, type OperationEnvelope,
} from '../../engine/index.js'
import { CONNECTION_ADDRESSES, type ClientAddresses } from '../client-address.js'
import { callerAddressOf, credentialsOf, type CallCredentialsSource } from './credentials.js'
import { grpcErrorOf, grpcStatusOf, statusName } from './errors.js'

export interface GrpcDoorComponents {
  engine: Engine
  logger: Logger
  /** the caller's address of a call (trusted proxies' metadata); default: the peer's */
  addresses?: ClientAddresses
}

/** The gRPC door's components plus its envelope (built once per server). */
export interface GrpcDoor extends GrpcDoorComponents {
  envelope: OperationEnvelope<CallCredentialsSource>
  /** the credentials of a call, its caller's address included */
  credentialsOf(call: CallCredentialsSource): CredentialInput
}

/**
 * The gRPC door's envelope profile: credentials from the call's metadata and TLS peer, metered
 * with protocol `grpc` and the gRPC status name (`OK`, `NOT_FOUND`, …).
 */
export function createGrpcDoor(components: GrpcDoorComponents): GrpcDoor {
  const addresses = components.addresses ?? CONNECTION_ADDRESSES
  const credentialsOfCall = (call: CallCredentialsSource): CredentialInput => credentialsOf(call, addresses)
  const envelope = createOperationEnvelope<CallCredentialsSource>({
    protocol: 'grpc',
    credentialsOf: credentialsOfCall,
    ipOf: (call) => callerAddressOf(call, addresses),
    statusOf: (error?: SvcError) => statusName(error === undefined ? status.OK : grpcStatusOf(error)),
    decode: (call) => requireDecodedRequest((call as { request?: unknown }).request),
  }, components)
  return { ...components, envelope, credentialsOf: credentialsOfCall }
}

/** What a request message that did not decode becomes (see `tolerantService`). */
class UndecodableRequest {
  constructor(readonly reason: string) {}
}

/**
 * The service definition with deserializers that never throw: grpc-js answers INTERNAL when a
 * deserializer throws, so bytes that are not the method's message would look like a fault of the
 * node. They become an `UndecodableRequest`, which the envelope's decode step answers with 1006
 * (INVALID_ARGUMENT), as every other malformed request is (found by test/faults/hostile-input).
 */
export function tolerantService<S extends ServiceDefinition>(service: S): S {
  const methods = Object.entries(service).map(([name, method]) => [name, {
    ...method,
    requestDeserialize: (bytes: Buffer): unknown => {
      try {
        return method.requestDeserialize(bytes)
      } catch (err) {
        return new UndecodableRequest(err instanceof Error ? err.message : String(err))
      }
    },
  }])
  return Object.fromEntries(methods) as S
}

/** 1006 for a request message that did not decode (see `tolerantService`), or undefined. */
export function undecodableError(request: unknown): SvcError | undefined {
  return request instanceof UndecodableRequest ? validationFailed(`the request message does not decode: ${request.reason}`) : undefined
}

function requireDecodedRequest(request: unknown): void {
  const err = undecodableError(request)
  if (err) throw err
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
