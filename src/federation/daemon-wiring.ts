import { readFileSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'
import { z } from 'zod'
import type { Engine } from '../engine/engine.js'
import type { SvcMetrics } from '../engine/metrics.js'
import { createFederation, DEFAULT_READY_TIMEOUT_MS, type Federation } from './federation.js'
import { loadOrCreatePeerIdentity } from './identity.js'
import type { FederationLogger } from './logger.js'
import { DEFAULT_GOSSIP_MESH_DEGREE, type NodeRegistration } from './node.js'

/** The `federation:` section of the node config (defaults in config/default.yaml). */
export const federationConfigSchema = z.object({
  enabled: z.boolean(),
  /** libp2p listen multiaddrs */
  listen: z.array(z.string().min(1)),
  /** multiaddrs announced to peers instead of the listen addresses (empty: the listen addresses) */
  announce: z.array(z.string().min(1)),
  /** multiaddrs with /p2p/<peerId> to connect to at start */
  bootstrap: z.array(z.string().min(1)),
  /** the federation CA certificate (PEM file) */
  ca_file: z.string(),
  /** this node's certificate (PEM file) issued by `svc federation cert issue` */
  cert_file: z.string(),
  /** the libp2p identity key (empty: <data_dir>/peer-key, created on first start) */
  identity_file: z.string(),
  /** revoked node certificates: serial numbers or SHA-256 fingerprints */
  revoked: z.array(z.string().min(1)),
  /** PeerIds of registry nodes this node registers with (empty: none) */
  registry_peers: z.array(z.string().min(1)),
  /** anti-entropy sync with one member this often while the catalog changes (0 disables) */
  sync_interval_ms: z.number().int().min(0),
  /** while anti-entropy rounds find nothing to exchange, the wait between them doubles up to this */
  sync_interval_max_ms: z.number().int().min(0).max(3_600_000),
  /** an origin without a change for this long is folded into the retired digest of sync summaries */
  sync_retire_origins_after_ms: z.number().int().min(60_000),
  /** a node known from a registration only (not connected) is listed this long after it was last heard of */
  registration_ttl_ms: z.number().int().min(10_000).max(30 * 86_400_000),
  /** at most this many nodes known from registrations only (the least recently heard of go first) */
  max_registrations: z.number().int().min(1).max(1_000_000),
  /** gossipsub mesh degree: every member receives about this many copies of every change, plus one */
  gossip_mesh_degree: z.number().int().min(1).max(12),
  /** a connected peer has this long to prove membership (a verified certificate); otherwise it is refused */
  membership_timeout_ms: z.number().int().min(100).max(600_000),
  /** a refused peer's redials are refused, both ways, for this long */
  refusal_backoff_ms: z.number().int().min(0).max(86_400_000),
  /**
   * a node with bootstrap peers answers /readyz 503 `starting` (gRPC health NOT_SERVING) until a
   * sync round pulled everything a member had, and at most this long after its federation started
   * (0: ready at once)
   */
  ready_timeout_ms: z.number().int().min(0).max(3_600_000),
  /** results of deterministic functions shared among members (docs/receipts.md "Once per federation") */
  results: z.object({
    enabled: z.boolean(),
    /** whose receipts a node answers from: any member's, trusted_signers' only, or quorum matching ones */
    trust: z.enum(['any_member', 'trusted_signers', 'quorum']),
    trusted_signers: z.array(z.string().min(1)),
    quorum: z.number().int().min(1).max(16),
    /** the fraction of remote hits run here as well and compared (a difference is a conflict) */
    reexecute_fraction: z.number().min(0).max(1),
    candidates: z.number().int().min(0).max(64),
    replicas: z.number().int().min(0).max(64),
    timeout_ms: z.number().int().min(50).max(60_000),
  }).strict(),
}).strict()

export type FederationConfig = z.infer<typeof federationConfigSchema>

export const federationConfigDefaults: FederationConfig = {
  enabled: false,
  listen: ['/ip4/0.0.0.0/tcp/4001'],
  announce: [],
  bootstrap: [],
  ca_file: '',
  cert_file: '',
  identity_file: '',
  revoked: [],
  registry_peers: [],
  sync_interval_ms: 2000,
  sync_interval_max_ms: 30_000,
  sync_retire_origins_after_ms: 604_800_000,
  registration_ttl_ms: 3_600_000,
  max_registrations: 10_000,
  gossip_mesh_degree: DEFAULT_GOSSIP_MESH_DEGREE,
  membership_timeout_ms: 5000,
  refusal_backoff_ms: 30000,
  ready_timeout_ms: DEFAULT_READY_TIMEOUT_MS,
  results: {
    enabled: true, trust: 'any_member', trusted_signers: [], quorum: 2, reexecute_fraction: 0, candidates: 3, replicas: 2, timeout_ms: 2000,
  },
}

export interface DaemonFederationComponents {
  engine: Engine
  logger: FederationLogger
  metrics: SvcMetrics
  /** the node's data directory (identity default, relative paths) */
  dataDir: string
  /** this node's public REST endpoint (known after listen) */
  endpoint: string
  /** what this node declares it can do (`nodeCapabilities` of its configuration) */
  capabilities: NodeRegistration['capabilities']
  /** directories of the wheels this node serves to members (wheelhouse, fetched wheels) */
  wheelDirs?: string[]
}

export interface DaemonFederation {
  federation: Federation
  peerId: string
  multiaddrs: string[]
  stop(): Promise<void>
}

/**
 * Starts the federation of a daemon from its config section, attached to the engine, or returns
 * undefined when `enabled` is false. Throws when enabled without a CA or certificate.
 */
export async function startDaemonFederation(config: FederationConfig, components: DaemonFederationComponents): Promise<DaemonFederation | undefined> {
  if (!config.enabled) return undefined
  if (config.ca_file === '' || config.cert_file === '') {
    throw new Error('federation.enabled needs federation.ca_file and federation.cert_file (see `svc federation ca init` and `svc federation cert issue`)')
  }
  const path = (p: string): string => (isAbsolute(p) ? p : resolve(p))
  const identity = await loadOrCreatePeerIdentity(components.dataDir, config.identity_file ? path(config.identity_file) : join(components.dataDir, 'peer-key'))
  const federation = createFederation({
    privateKey: identity.privateKey,
    listen: config.listen,
    announce: config.announce,
    bootstrap: config.bootstrap,
    caCertPem: readFileSync(path(config.ca_file), 'utf8'),
    certPem: readFileSync(path(config.cert_file), 'utf8'),
    revoked: config.revoked,
    endpoint: components.endpoint,
    capabilities: components.capabilities,
    registryPeers: config.registry_peers,
    syncIntervalMs: config.sync_interval_ms,
    syncIntervalMaxMs: config.sync_interval_max_ms,
    retireOriginsAfterMs: config.sync_retire_origins_after_ms,
    registrationTtlMs: config.registration_ttl_ms,
    maxRegistrations: config.max_registrations,
    membershipTimeoutMs: config.membership_timeout_ms,
    gossipMeshDegree: config.gossip_mesh_degree,
    denyMs: config.refusal_backoff_ms,
    readyTimeoutMs: config.ready_timeout_ms,
    ...(components.wheelDirs ? { wheelDirs: components.wheelDirs } : {}),
    results: {
      enabled: config.results.enabled,
      trust: config.results.trust,
      trustedSigners: config.results.trusted_signers,
      quorum: config.results.quorum,
      reexecuteFraction: config.results.reexecute_fraction,
      candidates: config.results.candidates,
      replicas: config.results.replicas,
      timeoutMs: config.results.timeout_ms,
    },
  }, { engine: components.engine, logger: components.logger, metrics: components.metrics })
  await federation.start()
  const multiaddrs = federation.node.multiaddrs()
  components.logger.info({ peer_id: identity.peerId, multiaddrs }, 'federation started')
  return { federation, peerId: identity.peerId, multiaddrs, stop: () => federation.stop() }
}
