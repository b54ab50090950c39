import { AuditLog, DEFAULT_AUDIT_FLUSH_MS, type AuditLogInit } from './audit/audit-log.js'
import { AccessGate } from './auth/access-gate.js'
import { ApiKeyService, createMemoryKeyStorage, type ApiKeyServiceInit } from './auth/api-keys.js'
import type { Authenticator } from './auth/authenticator.js'
import { createCredentialAuthenticator, type CredentialAuthenticatorInit } from './auth/credential-authenticator.js'
import { JwtVerifier, type JwtVerifierInit } from './auth/jwt-verifier.js'
import { OAuthIntrospector, type OAuthIntrospectionInit } from './auth/oauth-introspection.js'
import { createLevelKeyStorage } from './auth/level-key-storage.js'
import { createLocalAuthenticator } from './auth/local-authenticator.js'
import type { EventBus } from './events.js'
import { ExecutionService, type ExecutionServiceInit, type SandboxPort } from './executions/execution-service.js'
import { nativeExecute, type NativeExecuteHooks, type NativeExecuteRequest, type NativeExecuteResult } from './executions/native-execution.js'
import { RateLimits, type RateLimitsInit } from './limits/rate-limits.js'
import { publishFunction } from './registry/publish.js'
import { DEFAULT_MAX_INDEXED_FUNCTIONS, Marketplace, type MarketplaceInit } from './search/marketplace.js'
import { functionTelemetry, type FunctionTelemetry } from './telemetry/telemetry.js'
import { functionTelemetrySeries, type TelemetrySeries } from './telemetry/telemetry-series.js'
import type { CreateResult, FunctionTarget } from './registry/function-registry.js'
import type { SvcMetrics } from './metrics.js'
import { FunctionRegistry, type FunctionRegistryInit } from './registry/function-registry.js'
import { ManifestService, type LockfileGeneratorInit } from './manifests/index.js'
import { BranchService } from './branches/index.js'
import type { CatalogStore, LevelDatabase } from './storage/catalog-store.js'
import type { Principal } from './types.js'
import { CatalogReplica } from './replication/catalog-replica.js'
import { Mutex } from './mutex.js'
import type { FederationLink } from './replication/federation-port.js'
import { createFederationLink, reportReplicatedChanges } from './replication/federation-link.js'
import { fetchMissingCode } from './replication/remote-code.js'
import { WheelProvisioner, type WheelProvisionerInit } from './executions/wheel-provisioner.js'
import { ReceiptIssuer } from './executions/receipt-issuer.js'
import type { ReceiptSigner } from '../core/receipt.js'
import type { Readable } from 'node:stream'
import { backupStream, requireOperator } from './storage/backup.js'
import { DATA_FORMAT_VERSION } from './storage/catalog-store.js'
import type { AccountStorage } from './storage/tenant-usage.js'

export interface EngineAuthInit {
  /**
   * `none`: local mode, no credentials, tenant from X-Svc-Namespace;
   * `standard`: API keys (persistent), JWT, OAuth introspection and mTLS as configured;
   * `native`: the spec's test mode, API keys in memory.
   */
  mode: 'none' | 'standard' | 'native'
  defaultTenant: string
  keys: ApiKeyServiceInit
  anonymous?: CredentialAuthenticatorInit['anonymous']
  mtls?: CredentialAuthenticatorInit['mtls']
  jwt?: JwtVerifierInit | undefined
  /** OAuth 2.0 token introspection (RFC 7662) for opaque access tokens */
  oauthIntrospection?: OAuthIntrospectionInit | undefined
}

export interface EngineInit {
  registry: FunctionRegistryInit
  execution: ExecutionServiceInit
  auth: EngineAuthInit
  rateLimits: RateLimitsInit
  audit: AuditLogInit
  /** lockfile generation: package index URLs and request bounds (defaults: pypi.org, registry.npmjs.org) */
  lockfile?: LockfileGeneratorInit
  /** where pinned Python wheels are, and where wheels fetched from federation peers are kept */
  wheels?: WheelProvisionerInit
  /** the marketplace's memory bound (default: DEFAULT_MAX_INDEXED_FUNCTIONS documents) */
  marketplace?: MarketplaceInit
}

export interface EngineComponents {
  /** the node's LevelDB (audit log and API keys live beside the catalog) */
  db: LevelDatabase
  store: CatalogStore
  sandbox: SandboxPort & { start(): Promise<void>; stop(): Promise<void> }
  metrics: SvcMetrics
  events: EventBus
}

/**
 * The engine: everything svc-node does, with no knowledge of any protocol. Adapters pass
 * credentials to `access.admit`, call `functions`/`executions`/`keys` with the Principal they
 * got, and report each operation to `access.audit`.
 */
export interface Engine {
  readonly functions: FunctionRegistry
  /** manifest/lockfile validation and lockfile generation */
  readonly manifests: ManifestService
  /** branch heads: deploy, invoke, heads, rebuild from the ledger */
  readonly branches: BranchService
  readonly executions: ExecutionService
  readonly keys: ApiKeyService
  readonly access: AccessGate
  readonly auditLog: AuditLog
  readonly events: EventBus
  readonly metrics: SvcMetrics
  readonly authMode: EngineAuthInit['mode']
  /** true between a successful start() and stop() */
  readonly ready: boolean
  readonly marketplace: Marketplace
  /** the replicated catalog: change log, version vector, conflicts, digest */
  readonly replication: CatalogReplica
  /**
   * The link a federation connects its port to and reports through (`federation.port` undefined:
   * a single node). The engine records and publishes replicated changes and conflicts itself.
   */
  readonly federation: FederationLink
  /**
   * The key every execution's receipt is signed with (the node's libp2p key and the certificate
   * binding its PeerId); undefined: executions get no receipt.
   */
  useReceiptSigner(signer: ReceiptSigner | undefined): void
  /** service-spec §4.3 native execution */
  nativeExecute(principal: Principal, body: NativeExecuteRequest, hooks?: NativeExecuteHooks): Promise<NativeExecuteResult>
  /** `/v1` publish: base64 source and a runtime such as `node20` or `python3.11` */
  publish(principal: Principal, body: unknown): Promise<CreateResult>
  /**
   * `svc node backup`: the node's whole database read through one snapshot, as a gzip archive
   * (storage/backup.ts). Operators only (an admin of the node's admin tenant), 1003 otherwise.
   */
  backup(principal: Principal, writtenBy: string): Readable
  /** 1003 unless the principal is an operator: an admin of the node's admin tenant (node-wide operations) */
  requireOperator(principal: Principal): void
  /** whether the principal is an operator (see requireOperator) */
  isOperator(principal: Principal): boolean
  /** latency, error rate and cost of one function over a window such as `15m` */
  telemetry(principal: Principal, target: FunctionTarget, window: string): Promise<FunctionTelemetry>
  /** the same over a window cut into `buckets` equal buckets, for charts */
  telemetrySeries(principal: Principal, target: FunctionTarget, window: string, buckets: number): Promise<TelemetrySeries>
  /** what the principal's account (the root of its tenant's namespaces) stores on this node, and its quota */
  tenantStorage(principal: Principal): AccountStorage
  start(): Promise<void>
  /**
   * Publishes `node.started`: call it once the node's doors listen (before that nobody can be
   * subscribed). The bus keeps it as the node's lifecycle event, which system-event channels send
   * to each new subscriber.
   */
  announceStarted(data?: Record<string, unknown>): void
  /**
   * Publishes `node.stopping` once: call it before the doors close their subscription sockets so
   * subscribers receive it. stop() publishes it when nobody did.
   */
  announceStopping(): void
  stop(): Promise<void>
}

export function createEngine(init: EngineInit, components: EngineComponents): Engine {
  const { db, store, sandbox, metrics, events } = components
  const manifests = new ManifestService({ lockfile: init.lockfile ?? {} })
  // every write of the catalog (local creates, deletes and branch moves; replicated changes) takes it
  const catalogLock = new Mutex()
  const replication = new CatalogReplica({ db, store, catalogLock })
  const functions = new FunctionRegistry(init.registry, {
    store, metrics, events, manifests, catalogLock,
    replication: {
      planned: (op, fn, ledger) => replication.planLocal(op, fn, ledger),
      movedBranch: (ledger, move) => replication.recordLocalMove(ledger, move),
      assertNotLoser: (tenant, short, version) => replication.assertNotLoser(tenant, short, version),
      fetchCode: (fn) => fetchMissingCode(fn, { store, federation: federation.port, maxSourceBytes: init.registry.maxSourceBytes }),
    },
  })
  replication.onApplied((fn) => functions.invalidate(fn.tenant_id, fn.rufid_short, fn.version))
  const wheels = new WheelProvisioner(init.wheels ?? {}, { federation: () => federation.port })
  const receipts = new ReceiptIssuer()
  const executions = new ExecutionService(init.execution, {
    registry: functions, store, sandbox, metrics, events, wheels, receipts, federation: () => federation.port,
  })
  // keys count in their tenant's storage (a new one is refused past its quota)
  const keys = new ApiKeyService(init.auth.keys, init.auth.mode === 'standard' ? createLevelKeyStorage(db, store) : createMemoryKeyStorage())
  const authenticator: Authenticator = init.auth.mode === 'none'
    ? createLocalAuthenticator({ defaultTenant: init.auth.defaultTenant })
    : createCredentialAuthenticator(
        { anonymous: init.auth.anonymous, mtls: init.auth.mtls },
        {
          apiKeys: keys,
          jwt: init.auth.jwt ? new JwtVerifier(init.auth.jwt) : undefined,
          introspection: init.auth.oauthIntrospection ? new OAuthIntrospector(init.auth.oauthIntrospection) : undefined,
        },
      )
  // the admins of the node's admin tenant are its operators: they read every tenant's audit entries
  // audit entries ride in the execution records' batches when both are flushed as often
  const auditLog = new AuditLog({ operatorTenant: init.auth.defaultTenant, ...init.audit }, { db, groupCommit: store.groupCommitFor(db, init.audit.flushMs ?? DEFAULT_AUDIT_FLUSH_MS) })
  const access = new AccessGate({ authenticator, rateLimits: new RateLimits(init.rateLimits), audit: auditLog })
  // a revoked key's open streams end at once, on every door (the doors hold them in access.streams)
  keys.onRevoked((keyId) => access.streams.revokeKey(keyId))
  const federation = createFederationLink({ auditLog, events })
  reportReplicatedChanges(replication, { auditLog, events })
  const marketplace = new Marketplace(init.marketplace ?? { maxIndexedFunctions: DEFAULT_MAX_INDEXED_FUNCTIONS }, { store, events })
  let ready = false
  let starting: Promise<void> | undefined
  let stoppingAnnounced = false
  const announceStopping = (): void => {
    if (stoppingAnnounced) return
    stoppingAnnounced = true
    events.publishSystem({ type: 'node.stopping', tenant_id: null, rufid: null, message: 'node stopping' })
  }
  const branches = new BranchService({ registry: functions, executions, store, newMoveId: () => replication.newMoveId() })
  return {
    functions,
    manifests,
    branches,
    executions,
    keys,
    access,
    auditLog,
    events,
    metrics,
    authMode: init.auth.mode,
    get ready() {
      return ready && store.isOpen
    },
    marketplace,
    replication,
    federation,
    useReceiptSigner(signer) {
      receipts.use(signer)
    },
    nativeExecute(principal, body, hooks) {
      return nativeExecute(principal, body, { functions, executions }, hooks)
    },
    publish(principal, body) {
      return publishFunction(functions, principal, body)
    },
    backup(principal, writtenBy) {
      return backupStream(principal, { db, catalogLock }, { dataFormatVersion: DATA_FORMAT_VERSION, writtenBy, operatorTenant: init.auth.defaultTenant })
    },
    requireOperator(principal) {
      requireOperator(principal, init.auth.defaultTenant)
    },
    isOperator(principal) {
      return principal.tenant_id === init.auth.defaultTenant && principal.permissions.has('rufid.admin')
    },
    telemetry(principal, target, window) {
      return functionTelemetry(principal, target, window, { store, functions })
    },
    telemetrySeries(principal, target, window, buckets) {
      return functionTelemetrySeries(principal, target, window, buckets, { store, functions })
    },
    tenantStorage(principal) {
      return store.storageOf(principal.tenant_id)
    },
    start() {
      starting ??= (async () => {
        await store.start()
        await replication.start()
        await auditLog.start()
        await marketplace.start()
        await sandbox.start()
        ready = true
        stoppingAnnounced = false
      })()
      return starting
    },
    announceStarted(data) {
      events.publishSystem({ type: 'node.started', tenant_id: null, rufid: null, message: 'node started', ...(data ? { data } : {}) })
    },
    announceStopping,
    async stop() {
      if (starting === undefined) return
      await starting.catch(() => undefined)
      starting = undefined
      if (ready) announceStopping()
      ready = false
      await marketplace.stop()
      await sandbox.stop()
      await executions.drain()
      await auditLog.stop()
      await replication.stop()
      await store.stop()
    },
  }
}
