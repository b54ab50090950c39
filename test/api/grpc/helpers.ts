// A real @grpc/grpc-js client loaded from the .proto, and an in-process engine behind the gRPC door.
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import { pino } from 'pino'
import type { ProtoGrpcType } from '../../../src/api/grpc/generated/svc_protocol.js'
import type { CreateRUFIDRequest } from '../../../src/api/grpc/generated/svc/v1/CreateRUFIDRequest.js'
import type { CreateRUFIDResponse__Output } from '../../../src/api/grpc/generated/svc/v1/CreateRUFIDResponse.js'
import type { ExecuteFunctionRequest } from '../../../src/api/grpc/generated/svc/v1/ExecuteFunctionRequest.js'
import type { ExecuteFunctionResponse__Output } from '../../../src/api/grpc/generated/svc/v1/ExecuteFunctionResponse.js'
import type { ResolveRUFIDRequest } from '../../../src/api/grpc/generated/svc/v1/ResolveRUFIDRequest.js'
import type { ResolveRUFIDResponse__Output } from '../../../src/api/grpc/generated/svc/v1/ResolveRUFIDResponse.js'
import type { SvcProtocolServiceClient } from '../../../src/api/grpc/generated/svc/v1/SvcProtocolService.js'
import { PROTO_LOADER_OPTIONS, PROTO_ROOT, SVC_PROTO_FILE } from '../../../src/api/grpc/proto.js'
import { createGrpcServer, type GrpcServer, type GrpcServerInit } from '../../../src/api/grpc/server.js'
import type { Engine, EngineComponents, EngineInit } from '../../../src/engine/index.js'
import { createTestEngine } from '../../fixtures/engine.js'

const proto = grpc.loadPackageDefinition(
  protoLoader.loadSync(SVC_PROTO_FILE, { ...PROTO_LOADER_OPTIONS, includeDirs: [PROTO_ROOT] }),
) as unknown as ProtoGrpcType

export type SvcClient = SvcProtocolServiceClient

export function svcClient(address: string, credentials = grpc.credentials.createInsecure(), options: grpc.ChannelOptions = {}): SvcClient {
  return new proto.svc.v1.SvcProtocolService(address, credentials, options)
}

/** Metadata with a bearer token (and a namespace). */
export function bearer(token: string | undefined, namespace?: string): grpc.Metadata {
  const md = new grpc.Metadata()
  if (token !== undefined) md.set('authorization', `Bearer ${token}`)
  if (namespace !== undefined) md.set('x-svc-namespace', namespace)
  return md
}

const options = (): grpc.CallOptions => ({ deadline: Date.now() + 20_000 })
const settle = <T>(resolve: (v: T) => void, reject: (e: unknown) => void) => (err: grpc.ServiceError | null, res?: T) => (err ? reject(err) : resolve(res as T))

/** The unary RPCs as promises; each rejects with the grpc-js ServiceError (status, details, trailers). */
export const createRufid = (c: SvcClient, req: CreateRUFIDRequest, md = new grpc.Metadata()): Promise<CreateRUFIDResponse__Output> =>
  new Promise((resolve, reject) => c.CreateRUFID(req, md, options(), settle(resolve, reject)))
export const resolveRufid = (c: SvcClient, req: ResolveRUFIDRequest, md = new grpc.Metadata()): Promise<ResolveRUFIDResponse__Output> =>
  new Promise((resolve, reject) => c.ResolveRUFID(req, md, options(), settle(resolve, reject)))
export const executeFunction = (c: SvcClient, req: ExecuteFunctionRequest, md = new grpc.Metadata()): Promise<ExecuteFunctionResponse__Output> =>
  new Promise((resolve, reject) => c.ExecuteFunction(req, md, options(), settle(resolve, reject)))

/** The error of a call that must fail. */
export async function failure(promise: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await promise
  } catch (err) {
    return err as grpc.ServiceError
  }
  throw new Error('the call succeeded but was expected to fail')
}

/** The status and the svc trailers of a failed call, for one `toEqual`. */
export function statusOf(err: grpc.ServiceError): { code: string; svcCode: string | undefined; svcName: string | undefined } {
  const first = (key: string) => {
    const v = err.metadata?.get(key)[0]
    return v === undefined ? undefined : String(v)
  }
  return { code: grpc.status[err.code], svcCode: first('svc-error-code'), svcName: first('svc-error-name') }
}

export interface GrpcHarness {
  engine: Engine
  server: GrpcServer
  address: string
  /** an admin key of tenant `acme` (standard auth) */
  adminKey: string
  mint(tenant: string, scopes: string[]): Promise<string>
  client(options?: grpc.ChannelOptions): SvcClient
  close(): Promise<void>
}

/** A started engine (standard auth unless told) and a gRPC server on 127.0.0.1, port 0. */
export async function startGrpcHarness(
  options: {
    sandbox?: EngineComponents['sandbox']
    auth?: Partial<EngineInit['auth']>
    rateLimits?: Partial<EngineInit['rateLimits']>
    server?: Partial<GrpcServerInit>
  } = {},
): Promise<GrpcHarness> {
  const { engine } = await createTestEngine({ sandbox: options.sandbox, auth: options.auth, rateLimits: options.rateLimits })
  const server = createGrpcServer(
    { host: '127.0.0.1', port: 0, maxMessageBytes: 1024 * 1024, shutdownGraceMs: 1000, ...options.server },
    { engine, logger: pino({ level: 'silent' }) },
  )
  const { port } = await server.start()
  const address = `127.0.0.1:${port}`
  const mint = async (tenant: string, scopes: string[]) => (await engine.keys.mintFor(tenant, 'test', { name: `k${Math.random()}`, scopes })).api_key
  const adminKey = engine.authMode === 'none' ? '' : await mint('acme', ['admin'])
  const clients: grpc.Client[] = []
  return {
    engine,
    server,
    address,
    adminKey,
    mint,
    client(channelOptions = {}) {
      const c = svcClient(address, grpc.credentials.createInsecure(), channelOptions)
      clients.push(c)
      return c
    },
    async close() {
      for (const c of clients) c.close()
      await server.stop()
      await engine.stop()
    },
  }
}
