import type { ServerUnaryCall } from '@grpc/grpc-js'
import type { SvcProtocolServiceHandlers } from './generated/svc/v1/SvcProtocolService.js'
import type { CreateRUFIDRequest__Output } from './generated/svc/v1/CreateRUFIDRequest.js'
import type { CreateRUFIDResponse } from './generated/svc/v1/CreateRUFIDResponse.js'
import type { ExecuteFunctionRequest__Output } from './generated/svc/v1/ExecuteFunctionRequest.js'
import type { ExecuteFunctionResponse } from './generated/svc/v1/ExecuteFunctionResponse.js'
import type { ResolveRUFIDRequest__Output } from './generated/svc/v1/ResolveRUFIDRequest.js'
import type { ResolveRUFIDResponse } from './generated/svc/v1/ResolveRUFIDResponse.js'
import { unaryOperation, type GrpcDoor } from './operation.js'
import { createInputOf, creationMessage, executionMessage, parseJsonField, resolutionMessage } from './presenters.js'
import type { ExecutionStreams } from './stream-executions.js'

const versionOf = (v: string): string | undefined => (v === '' ? undefined : v)
const rufidOfRequest = (call: { request: { rufid: string } }): string => call.request.rufid

/**
 * `svc.v1.SvcProtocolService`: each RPC decodes its request, calls the engine with the caller's
 * Principal through the operation envelope, and encodes the answer (service-spec §4.5; the same
 * operations as REST §4.1).
 */
export function svcProtocolHandlers(door: GrpcDoor, streams: ExecutionStreams): SvcProtocolServiceHandlers {
  const { functions, executions } = door.engine
  return {
    CreateRUFID: unaryOperation<CreateRUFIDRequest__Output, CreateRUFIDResponse>(door, {
      name: 'rufid.create',
      async handle(principal, call, op) {
        const result = await functions.create(principal, createInputOf(call.request))
        op.rufid = result.rufid
        return creationMessage(result)
      },
    }),

    ResolveRUFID: unaryOperation<ResolveRUFIDRequest__Output, ResolveRUFIDResponse>(door, {
      name: 'rufid.resolve',
      rufidOf: rufidOfRequest,
      async handle(principal, { request }: ServerUnaryCall<ResolveRUFIDRequest__Output, ResolveRUFIDResponse>) {
        const target = functions.target(principal, request.rufid, versionOf(request.version))
        return resolutionMessage(await functions.resolve(principal, target))
      },
    }),

    ExecuteFunction: unaryOperation<ExecuteFunctionRequest__Output, ExecuteFunctionResponse>(door, {
      name: 'rufid.execute',
      rufidOf: rufidOfRequest,
      async handle(principal, { request }: ServerUnaryCall<ExecuteFunctionRequest__Output, ExecuteFunctionResponse>) {
        const target = functions.target(principal, request.rufid, versionOf(request.version))
        const args = parseJsonField(request.arguments_json, 'arguments_json')
        return executionMessage(await executions.execute(principal, target, args))
      },
    }),

    StreamExecutions: streams.handler,
  }
}
