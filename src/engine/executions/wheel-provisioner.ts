import { randomBytes } from 'node:crypto'
import { mkdir, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { SvcError, isSvcError } from '../../core/errors.js'
import { checkPins, isWheelFileOf, MAX_REMOTE_WHEEL_BYTES, pinLabel, sha256Of, wheelFinder } from '../sandbox/python-wheelhouse.js'
import type { PipPin } from '../sandbox/types.js'
import type { FederationPort } from '../replication/federation-port.js'

export interface WheelProvisionerInit {
  /** the node's wheelhouse (read only) */
  wheelhouse?: string
  /** where wheels fetched from federation peers are kept (read by the sandbox after the wheelhouse) */
  cacheDir?: string
}

export interface WheelProvisionerComponents {
  /** the federation port of the moment (a node may join or leave a federation while it runs) */
  federation(): FederationPort | undefined
}

/**
 * Makes a Python function's pinned wheels available on this node before it runs. A pin that the
 * wheelhouse and the cache lack is fetched from a federation member that provides a wheel with the
 * pin's sha256 (DHT provider records keyed by that hash), accepted only when its bytes have that
 * hash and its file name is a pure-Python wheel of exactly that name and version, and kept in the
 * cache. A pin without a sha256 is never fetched: nothing could verify what a peer sends. Without
 * federation nothing is fetched, and the sandbox reports what is missing.
 */
export class WheelProvisioner {
  private readonly dirs: string[]
  /** fetches in flight, by sha256 (two calls needing one wheel fetch it once) */
  private readonly inflight = new Map<string, Promise<void>>()

  constructor(
    private readonly init: WheelProvisionerInit,
    private readonly c: WheelProvisionerComponents,
  ) {
    this.dirs = [init.wheelhouse, init.cacheDir].filter((d): d is string => d !== undefined && d !== '')
  }

  /**
   * Fetches what is missing of `rawPins` (a lockfile's `dependencies.pip`); throws EXECUTION_FAILED
   * naming every pin that stays unavailable, and why. Malformed pins are left to the sandbox (1006).
   */
  async provide(rawPins: unknown): Promise<void> {
    const federation = this.c.federation()
    if (federation?.fetchWheel === undefined || this.init.cacheDir === undefined) return
    let pins: PipPin[]
    try {
      pins = checkPins(rawPins ?? [])
    } catch (err) {
      if (isSvcError(err)) return
      throw err
    }
    const findWheel = wheelFinder(this.dirs)
    const missing = pins.filter((p) => findWheel(p) === undefined)
    const failures: Array<{ pin: string; reason: string }> = []
    await Promise.all(missing.map(async (pin) => {
      if (pin.sha256 === undefined) {
        failures.push({ pin: pinLabel(pin), reason: 'its lockfile entry has no sha256, so it cannot be fetched from a federation peer' })
        return
      }
      try {
        await this.fetch(federation, { ...pin, sha256: pin.sha256 })
      } catch (err) {
        failures.push({ pin: pinLabel(pin), reason: err instanceof Error ? err.message : String(err) })
      }
    }))
    if (failures.length === 0) return
    failures.sort((a, b) => (a.pin < b.pin ? -1 : 1))
    throw new SvcError('EXECUTION_FAILED', `pinned package${failures.length > 1 ? 's' : ''} not available on this node: ${failures.map((f) => `${f.pin} (${f.reason})`).join('; ')}`, {
      details: { reason: 'dependency_unavailable', missingDependencies: failures.map((f) => f.pin), reasons: failures },
    })
  }

  private fetch(federation: FederationPort, pin: PipPin & { sha256: string }): Promise<void> {
    let running = this.inflight.get(pin.sha256)
    if (running === undefined) {
      running = this.fetchOnce(federation, pin).finally(() => this.inflight.delete(pin.sha256))
      this.inflight.set(pin.sha256, running)
    }
    return running
  }

  private async fetchOnce(federation: FederationPort, pin: PipPin & { sha256: string }): Promise<void> {
    const wheel = await federation.fetchWheel!(pin)
    // the port checked the hash, checked again here where the bytes become a file the sandbox
    // installs; the file name is checked here, where it becomes a path
    if (!isWheelFileOf(wheel.filename, pin)) throw new Error(`a peer named its wheel ${JSON.stringify(wheel.filename)}, not a pure-Python wheel of ${pinLabel(pin)}`)
    if (wheel.bytes.byteLength > MAX_REMOTE_WHEEL_BYTES || sha256Of(wheel.bytes) !== pin.sha256) throw new Error('a peer served a wheel that does not match the pin')
    const dir = this.init.cacheDir!
    await mkdir(dir, { recursive: true })
    const partial = join(dir, `.${wheel.filename}.${randomBytes(6).toString('hex')}.part`)
    try {
      await writeFile(partial, wheel.bytes, { flag: 'wx', mode: 0o644 })
      await rename(partial, join(dir, wheel.filename)) // atomic: the sandbox sees the whole wheel or none
    } finally {
      await rm(partial, { force: true })
    }
  }
}
