import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import { protoPath as healthProtoPath } from 'grpc-health-check'
import type { ProtoGrpcType } from './generated/svc_protocol.js'

/** `proto/` of the package (the same relative path from `src/api/grpc` and from `dist/api/grpc`). */
export const PROTO_ROOT = fileURLToPath(new URL('../../../proto', import.meta.url))
/** The svc proto, relative to PROTO_ROOT. */
export const SVC_PROTO_FILE = 'svc/v1/svc_protocol.proto'
export const SERVICE_NAME = 'svc.v1.SvcProtocolService'
export const HEALTH_SERVICE_NAME = 'grpc.health.v1.Health'

/**
 * How messages become JS objects: snake_case fields as in the proto, 64-bit integers and enums as
 * strings, unset scalars as their defaults, virtual oneof fields. `scripts/gen-proto-types.mjs`
 * generates `generated/` with the same choices; change both together.
 */
export const PROTO_LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
}

export interface LoadedProtos {
  /** svc.v1 and grpc.health.v1 together: what reflection describes */
  packageDefinition: protoLoader.PackageDefinition
  proto: ProtoGrpcType
}

/** Loads the svc proto and the standard health proto (so reflection describes both). */
export function loadProtos(): LoadedProtos {
  const packageDefinition = protoLoader.loadSync([SVC_PROTO_FILE, healthProtoPath], {
    ...PROTO_LOADER_OPTIONS,
    includeDirs: [PROTO_ROOT, dirname(healthProtoPath)],
  })
  const proto = grpc.loadPackageDefinition(packageDefinition) as unknown as ProtoGrpcType
  return { packageDefinition, proto }
}
