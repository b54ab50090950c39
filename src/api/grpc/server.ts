import type { SecureContextOptions } from 'node:tls'
import * as grpc from '@grpc/grpc-js'
import { ReflectionService } from '@grpc/reflection'
import { HealthImplementation } from 'grpc-health-check'
import type { Logger } from 'pino'
import { SvcError } from '../../core/errors.js'
import { PROTOCOL_VERSION, PROTOCOL_VERSION_HEADER } from '../../core/protocol-version.js'
import type { Engine } from '../../engine/index.js'
import type { ClientAddresses } from '../client-address.js'
import { loadProtos, SERVICE_NAME } from './proto.js'
import { reflectionDefinitionOf } from './reflection.js'
import { createGrpcDoor, tolerantService } from './operation.js'
import { svcProtocolHandlers } from './service.js'
import { executionStreams } from './stream-executions.js'

export interface GrpcServerInit {
  host: string
  /** 0 picks a free port (start() reports it) */
  port: number
  /** largest message received or sent; bigger ones are refused with RESOURCE_EXHAUSTED */
  maxMessageBytes: number
  /** TLS; with `clientCa`, a client certificate verified against it identifies the caller (mTLS) */
  tls?: { cert: Buffer; key: Buffer; clientCa?: Buffer } | undefined
  /** how long stop() lets running calls finish before it cancels them (default 5000) */
  shutdownGraceMs?: number
  /** events a slow StreamExecutions subscriber may have waiting before it is dropped (default 256) */
  streamBufferEvents?: number
}

export interface GrpcServerComponents {
  engine: Engine
  logger: Logger
  /** the caller's address of a call (a trusted proxy's forwarding metadata); default: the peer's */
  addresses?: ClientAddresses
}

export interface GrpcServer {
  /** Binds and serves; idempotent. Resolves with the bound port. */
  start(): Promise<{ port: number }>
  /**
   * Health turns NOT_SERVING, open StreamExecutions end with UNAVAILABLE, running calls get
   * `shutdownGraceMs` to finish, then the rest are cancelled.
   */
  stop(): Promise<void>
  /**
   * What the health service says while the server runs (default SERVING): a daemon whose other
   * parts are not ready yet (its federation catching up) says NOT_SERVING, as its /readyz says
   * `starting`. Set before `start` it holds from the start.
   */
  setServing(serving: boolean): void
}

/**
 * The gRPC door: `svc.v1.SvcProtocolService` plus the standard health service (`grpc.health.v1`,
 * for "" and the svc service) and server reflection (v1 and v1alpha) over @grpc/grpc-js.
 */
export function createGrpcServer(init: GrpcServerInit, components: GrpcServerComponents): GrpcServer {
  const logger = components.logger.child({ component: 'grpc' })
  const door = createGrpcDoor({ engine: components.engine, logger, ...(components.addresses ? { addresses: components.addresses } : {}) })
  const { packageDefinition, proto } = loadProtos()
  const health = new HealthImplementation({ '': 'NOT_SERVING', [SERVICE_NAME]: 'NOT_SERVING' })
  const streams = executionStreams(door, { maxBufferedEvents: init.streamBufferEvents ?? 256 })
  let server: grpc.Server | undefined
  let starting: Promise<{ port: number }> | undefined
  let serving = true

  const setHealth = (s: 'SERVING' | 'NOT_SERVING'): void => {
    health.setStatus('', s)
    health.setStatus(SERVICE_NAME, s)
  }

  return {
    start() {
      starting ??= (async () => {
        const s = new grpc.Server({
          'grpc.max_receive_message_length': init.maxMessageBytes,
          'grpc.max_send_message_length': init.maxMessageBytes,
          // dead peers (and their stream subscriptions) are noticed within a minute and a half
          'grpc.keepalive_time_ms': 60_000,
          'grpc.keepalive_timeout_ms': 20_000,
          interceptors: [protocolVersionInterceptor],
        })
        s.addService(tolerantService(proto.svc.v1.SvcProtocolService.service), svcProtocolHandlers(door, streams))
        health.addToServer(s)
        new ReflectionService(reflectionDefinitionOf(packageDefinition)).addToServer(s)
        const address = `${init.host.includes(':') && !init.host.startsWith('[') ? `[${init.host}]` : init.host}:${init.port}`
        const port = await new Promise<number>((resolve, reject) => {
          s.bindAsync(address, serverCredentials(init.tls), (err, bound) => (err ? reject(err) : resolve(bound)))
        })
        server = s
        streams.acceptNew()
        setHealth(serving ? 'SERVING' : 'NOT_SERVING')
        logger.info({ address: `${init.host}:${port}`, tls: init.tls !== undefined, mtls: init.tls?.clientCa !== undefined }, 'gRPC listening')
        return { port }
      })()
      starting.catch(() => {
        starting = undefined
      })
      return starting
    },

    async stop() {
      if (starting === undefined) return
      await starting.catch(() => undefined)
      starting = undefined
      const s = server
      server = undefined
      if (s === undefined) return
      setHealth('NOT_SERVING')
      streams.closeAll(new SvcError('SERVICE_UNAVAILABLE', 'the node is stopping'))
      const graceMs = init.shutdownGraceMs ?? 5000
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          logger.warn({ graceMs }, 'gRPC calls still running at the shutdown deadline: cancelling them')
          s.forceShutdown()
          resolve()
        }, graceMs)
        s.tryShutdown(() => {
          clearTimeout(timer)
          resolve()
        })
      })
      logger.info('gRPC stopped')
    },

    setServing(value) {
      serving = value
      if (server !== undefined) setHealth(serving ? 'SERVING' : 'NOT_SERVING')
    },
  }
}

/**
 * Insecure, TLS, or TLS with optional client certificates: like the REST door, a client without a
 * (valid) certificate may still connect and present a bearer token; grpc-js reports a peer
 * certificate only when it verified against `clientCa`.
 */
function serverCredentials(tls: GrpcServerInit['tls']): grpc.ServerCredentials {
  if (!tls) return grpc.ServerCredentials.createInsecure()
  if (!tls.clientCa) return grpc.ServerCredentials.createSsl(null, [{ private_key: tls.key, cert_chain: tls.cert }], false)
  return new OptionalClientCertificateCredentials({ ca: tls.clientCa, cert: tls.cert, key: tls.key })
}

/** `createSsl(ca, pairs, true)` would refuse clients without a certificate; this one asks but does not insist. */
class OptionalClientCertificateCredentials extends grpc.ServerCredentials {
  constructor(context: SecureContextOptions) {
    super({ requestCert: true, rejectUnauthorized: false }, context)
  }

  _equals(other: grpc.ServerCredentials): boolean {
    return other === this
  }
}

/**
 * Names the protocol version (service-spec §9) on every call, of every service: in the response
 * headers (`svc-protocol-version: 2.0.0`, what a client reads with `call.on('metadata')` or
 * grpcurl -v), or in the trailers of an answer that is only a status (an error before any reply).
 */
export const protocolVersionInterceptor: grpc.ServerInterceptor = (_method, call) => {
  let headersSent = false
  return new grpc.ServerInterceptingCall(call, new grpc.ResponderBuilder()
    .withSendMetadata((metadata, next) => {
      headersSent = true
      metadata.set(PROTOCOL_VERSION_HEADER, PROTOCOL_VERSION)
      next(metadata)
    })
    .withSendStatus((status, next) => {
      if (headersSent) return next(status)
      const metadata = status.metadata ?? new grpc.Metadata()
      metadata.set(PROTOCOL_VERSION_HEADER, PROTOCOL_VERSION)
      next({ ...status, metadata })
    })
    .build())
}
