import type { SvcProtocolServiceHandlers } from './generated/svc/v1/SvcProtocolService.js'
import type { CreateRUFIDRequest__Output } from './generated/svc/v1/CreateRUFIDRequest.js'
import type { CreateRUFIDResponse } from './generated/svc/v1/CreateRUFIDResponse.js'
import type { ExecuteFunctionRequest__Output } from './generated/svc/v1/ExecuteFunctionRequest.js'
import type { ExecuteFunctionResponse } from './generated/svc/v1/ExecuteFunctionResponse.js'
import type { ResolveRUFIDRequest__Output } from './generated/svc/v1/ResolveRUFIDRequest.js'
import type { ResolveRUFIDResponse } from './generated/svc/v1/ResolveRUFIDResponse.js'
import { unaryOperation, type GrpcDoorComponents } from './operation.js'
import { createInputOf, creationMessage, executionMessage, parseJsonField, resolutionMessage } from './presenters.js'
import type { ExecutionStreams } from './stream-executions.js'

const versionOf = (v: string): string | undefined => (v === '' ? undefined : v)
const rufidOfRequest = (request: { rufid: string }): string => request.rufid

/**
 * `svc.v1.SvcProtocolService`: each RPC decodes its request, calls the engine with the caller's
 * Principal, and encodes the answer (service-spec §4.5; the same operations as REST §4.1).
 */
export function svcProtocolHandlers(components: GrpcDoorComponents, streams: ExecutionStreams): SvcProtocolServiceHandlers {
  const { functions, executions } = components.engine
  return {
    CreateRUFID: unaryOperation<CreateRUFIDRequest__Output, CreateRUFIDResponse>(components, 'rufid.create', async (request, principal, note) => {
      const result = await functions.create(principal, createInputOf(request))
      note.rufid = result.rufid
      return creationMessage(result)
    }),

    ResolveRUFID: unaryOperation<ResolveRUFIDRequest__Output, ResolveRUFIDResponse>(components, 'rufid.resolve', async (request, principal) => {
      const target = functions.target(principal, request.rufid, versionOf(request.version))
      return resolutionMessage(await functions.resolve(principal, target))
    }, rufidOfRequest),

    ExecuteFunction: unaryOperation<ExecuteFunctionRequest__Output, ExecuteFunctionResponse>(components, 'rufid.execute', async (request, principal) => {
      const target = functions.target(principal, request.rufid, versionOf(request.version))
      const args = parseJsonField(request.arguments_json, 'arguments_json')
      return executionMessage(await executions.execute(principal, target, args))
    }, rufidOfRequest),

    StreamExecutions: streams.handler,
  }
}
