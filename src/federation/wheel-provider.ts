import { readdir, readFile, stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { SvcError } from '../core/errors.js'
import { MAX_REMOTE_WHEEL_BYTES, sha256Of } from '../engine/sandbox/python-wheelhouse.js'
import { provideQuietly } from './code-provider.js'
import { noopLogger, type FederationLogger } from './logger.js'
import type { FederationNode } from './node.js'

export const WHEEL_PROTOCOL = '/svc/wheel/1.0.0'

export interface WheelProviderInit {
  /**
   * Directories of pure-Python wheels this node serves to members (by sha256) and announces as a
   * provider of (its wheelhouse, and the wheels it fetched from peers).
   */
  wheelDirs?: string[]
}

export interface WheelProviderComponents {
  node: FederationNode
  logger?: FederationLogger
}

/**
 * Pinned wheels between members: serves this node's wheels by sha256 (`/svc/wheel/1.0.0`),
 * announces its wheelhouse as DHT provider records keyed by the hash, and fetches a wheel it lacks
 * from a member (hash-checked).
 */
export class WheelProvider {
  private readonly log: FederationLogger
  /** this node's wheels: sha256 → path, and the file stamp each hash was computed for */
  private wheels = new Map<string, string>()
  private readonly wheelStamps = new Map<string, { stamp: string; sha256: string }>()
  /** each wheel directory's mtime when it was last indexed (adding or renaming a file changes it) */
  private readonly wheelDirStamps = new Map<string, number>()

  constructor(
    private readonly init: WheelProviderInit,
    private readonly c: WheelProviderComponents,
  ) {
    this.log = c.logger ?? noopLogger
  }

  async start(): Promise<void> {
    await this.c.node.handleMembers(WHEEL_PROTOCOL, async (request) => this.serveWheel(request as { sha256?: unknown }))
    void this.provideWheels()
  }

  async stop(): Promise<void> {
    await this.c.node.unhandle(WHEEL_PROTOCOL)
  }

  /**
   * Hashes the wheels in `wheelDirs` (unchanged files are not hashed again) and indexes them; reads
   * asynchronously, so a large wheelhouse does not stall the node while it starts.
   */
  private async indexWheels(): Promise<string[]> {
    const found: string[] = []
    const wheels = new Map<string, string>() // swapped in whole: a concurrent lookup never sees half an index
    for (const dir of this.init.wheelDirs ?? []) {
      let files: string[]
      try {
        this.wheelDirStamps.set(dir, (await stat(dir)).mtimeMs)
        files = (await readdir(dir)).filter((f) => f.endsWith('.whl') && !f.startsWith('.'))
      } catch {
        continue
      }
      for (const file of files) {
        const path = join(dir, file)
        try {
          const st = await stat(path)
          if (!st.isFile() || st.size > MAX_REMOTE_WHEEL_BYTES) continue
          const stamp = `${st.size}:${st.mtimeMs}`
          let known = this.wheelStamps.get(path)
          if (known?.stamp !== stamp) {
            known = { stamp, sha256: sha256Of(await readFile(path)) }
            this.wheelStamps.set(path, known)
          }
          if (!wheels.has(known.sha256)) wheels.set(known.sha256, path)
          found.push(known.sha256)
        } catch {
          // a file that vanished or cannot be read is not served
        }
      }
    }
    this.wheels = wheels
    return found
  }

  /** Announces every wheel of this node as a DHT provider record keyed by its sha256. */
  private async provideWheels(): Promise<void> {
    await provideQuietly(this.c.node, this.log, await this.indexWheels())
  }

  /** Whether a wheel directory changed (a file added, removed or renamed) since it was indexed. */
  private async wheelDirsChanged(): Promise<boolean> {
    for (const dir of this.init.wheelDirs ?? []) {
      const mtime = await stat(dir).then((st) => st.mtimeMs, () => undefined)
      if (mtime !== this.wheelDirStamps.get(dir)) return true
    }
    return false
  }

  private async serveWheel(request: { sha256?: unknown }): Promise<{ filename: string; bytes: string }> {
    const sha = request?.sha256
    if (typeof sha !== 'string' || !/^[0-9a-f]{64}$/.test(sha)) throw new SvcError('VALIDATION_FAILED', 'a wheel is asked for by its sha256 (64 lower-case hexadecimal digits)')
    // a wheel fetched or added since the last look (a miss costs a stat per directory, not a rescan)
    if (!this.wheels.has(sha) && await this.wheelDirsChanged()) await this.indexWheels()
    const path = this.wheels.get(sha)
    const bytes = path === undefined ? undefined : await readFile(path).catch(() => undefined)
    if (path === undefined || bytes === undefined || sha256Of(bytes) !== sha) {
      throw new SvcError('RUFID_NOT_FOUND', 'this node does not hold that wheel')
    }
    return { filename: basename(path), bytes: bytes.toString('base64') }
  }

  /**
   * FederationPort.fetchWheel: members that provide a wheel with `pin.sha256` (DHT provider records
   * keyed by the hash, announced for wheelhouses), then the other members; the first wheel whose
   * bytes have that hash wins. Once stored here, this node serves it to members that ask (it does
   * not announce it: see CodeProvider.fetchCode).
   */
  async fetchWheel(pin: { name: string; version: string; sha256: string }): Promise<{ filename: string; bytes: Uint8Array }> {
    const { node } = this.c
    const tried = new Set<string>()
    const attempt = async (peerId: string): Promise<{ filename: string; bytes: Uint8Array } | undefined> => {
      if (tried.has(peerId) || peerId === node.peerId) return undefined
      tried.add(peerId)
      try {
        const answer = await node.request(peerId, WHEEL_PROTOCOL, { sha256: pin.sha256 }, 30_000) as { filename?: unknown; bytes?: unknown }
        if (typeof answer.filename !== 'string' || typeof answer.bytes !== 'string' || answer.bytes.length > Math.ceil(MAX_REMOTE_WHEEL_BYTES / 3) * 4) return undefined
        const bytes = Buffer.from(answer.bytes, 'base64')
        if (sha256Of(bytes) !== pin.sha256) {
          this.log.warn({ peer_id: peerId, pin: `${pin.name}==${pin.version}` }, 'a member served a wheel that does not match its sha256: refused')
          return undefined
        }
        return { filename: answer.filename, bytes }
      } catch (err) {
        this.log.debug({ peer_id: peerId, err }, 'wheel fetch failed')
        return undefined
      }
    }
    const candidates = async function* (): AsyncGenerator<string> {
      for await (const provider of node.providers(pin.sha256, { timeoutMs: 2_000 })) yield provider.peerId
      for (const m of node.members().map((x) => x.peerId).sort()) yield m
    }
    for await (const peerId of candidates()) {
      const wheel = await attempt(peerId)
      if (wheel === undefined) continue
      return wheel
    }
    throw new SvcError('FEDERATION_UNREACHABLE', `no federation member served a wheel of ${pin.name}==${pin.version} with sha256 ${pin.sha256}`, {
      details: { pin: `${pin.name}==${pin.version}`, sha256: pin.sha256, tried: [...tried] },
    })
  }
}
