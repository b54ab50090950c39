/**
 * The version of the svc protocol this node speaks (service-spec §9, "Version History"), apart
 * from the package version: what a client checks before relying on the spec's surface. Advertised
 * by `GET /api/v1/node/info` (`protocol_version`), the OpenAPI document (`info.x-svc-protocol-version`),
 * every HTTP response and gRPC call (the `svc-protocol-version` header / metadata) and the
 * graphql-ws `connection_ack` payload.
 */
export const PROTOCOL_VERSION = '2.0.0'

/** The HTTP header and gRPC metadata key that carries PROTOCOL_VERSION. */
export const PROTOCOL_VERSION_HEADER = 'svc-protocol-version'
