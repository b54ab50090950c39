import { formatRufid } from '../../core/rufid.js'
import type { AuditLog } from '../audit/audit-log.js'
import type { EventBus } from '../events.js'
import type { CatalogReplica } from './catalog-replica.js'
import type { FederationLink, FederationPort } from './federation-port.js'

export interface FederationLinkComponents {
  auditLog: AuditLog
  events: EventBus
}

/** The engine's side of a federation (FederationLink): one port slot, and what is reported to the engine. */
export function createFederationLink(components: FederationLinkComponents): FederationLink {
  const { auditLog, events } = components
  let connected: FederationPort | undefined
  return {
    get port() {
      return connected
    },
    connect(port) {
      if (connected !== undefined) throw new Error('a federation is already connected to this engine')
      connected = port
      return () => {
        if (connected === port) connected = undefined
      }
    },
    async memberRefused(refusal) {
      await auditLog.record({
        operation: 'federation.membership.refused', rufid: null, user: refusal.peer_id, tenant: null,
        ip: refusal.remote_addr ?? '', result: `refused (${refusal.reason}): ${refusal.detail}; redials refused until ${refusal.denied_until}`,
        duration_ms: 0, code: 1003,
      })
    },
    memberChanged(event, member) {
      events.publishSystem({
        type: event === 'joined' ? 'peer.joined' : 'peer.left', tenant_id: null, rufid: null,
        message: `federation member ${member.node_id} ${event}`, data: { node_id: member.node_id, endpoint: member.endpoint },
      })
    },
  }
}

/**
 * The engine records and publishes its replicated catalog's changes itself: a version applied
 * from a peer reaches the node's listeners (marketplace index, subscriptions) as a local one does,
 * and a conflict is audited (`federation.conflict`, 2002). Returns the unsubscribe.
 */
export function reportReplicatedChanges(replica: CatalogReplica, components: FederationLinkComponents): () => void {
  const { auditLog, events } = components
  const offApplied = replica.onApplied((fn) => {
    events.publishSystem({
      type: fn.deleted_at === undefined ? 'function.created' : 'function.deleted',
      tenant_id: fn.tenant_id,
      rufid: formatRufid(fn.rufid_short, fn.version, fn.tenant_id),
      message: `function ${fn.function_name} v${fn.version} ${fn.deleted_at === undefined ? 'replicated' : 'deleted'} from a federation peer`,
      data: { function_name: fn.function_name, version: `v${fn.version}`, replicated: true },
    })
  })
  const offConflict = replica.onConflict((conflict) => {
    const what = conflict.kind === 'branch'
      ? `branch ${conflict.branch} of ${conflict.function_name} moved concurrently: move ${conflict.winner.move_id} to ${conflict.winner.version} wins`
      : `conflict on ${conflict.function_name} v${conflict.version}: ${conflict.winner.rufid_short} wins`
    void auditLog.record({
      operation: 'federation.conflict', rufid: conflict.losers.map((l) => l.rufid_short).join(','), user: 'federation', tenant: conflict.tenant_id,
      ip: '', result: what, duration_ms: 0, code: 2002,
    }).catch(() => undefined)
  })
  return () => {
    offApplied()
    offConflict()
  }
}
