// A data directory the node cannot use: refused at start with a clear message and its own exit code
// (src/daemon/exit-codes.ts), nothing in the directory changed, and the same answer on every retry
// (no crash loop that ends in a reset). Real daemon processes; needs root for mounts and `nobody`.
import { chmodSync, cpSync, mkdirSync, readdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ClassicLevel } from 'classic-level'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EXIT_CODES } from '../../src/daemon/exit-codes.js'
import { call, removeDir, startDaemonProcess, tempDataDir } from '../fixtures/daemon-process.js'
import { addJs } from '../fixtures/functions.js'
import { recordFault } from './fault-record.js'
import { canMount, fingerprint, LEVELDB_INFO_LOGS, mountTmpfs, remountTmpfs, runDaemonToExit, unmount } from './fault-fixtures.js'

describe('a data directory the node cannot use (real daemon processes)', () => {
  const root = tempDataDir()
  // a stopped node's data: three functions, its write-ahead log still holding them
  const seeded = join(root, 'seeded')
  // the same after LevelDB turned the log into a table
  const compacted = join(root, 'compacted')
  const rufids: string[] = []
  const mounts: string[] = []

  beforeAll(async () => {
    const d = await startDaemonProcess({ dataDir: seeded, env: { SVC_SANDBOX_WORKERS: '1' } })
    for (let i = 0; i < 3; i++) {
      const r = await call(`${d.url}/api/v1/functions/create`, 'POST', { ...addJs, source_code: `function add(a, b) { return a + b + ${i} }` })
      expect(r.status).toBe(201)
      rufids.push(r.body.rufid as string)
    }
    expect((await d.stop('SIGTERM')).code).toBe(0)
    cpSync(seeded, compacted, { recursive: true })
    const db = new ClassicLevel(join(compacted, 'catalog'))
    await db.open()
    await db.close()
    expect(readdirSync(join(compacted, 'catalog')).some((n) => n.endsWith('.ldb'))).toBe(true)
  }, 120_000)

  afterAll(() => {
    for (const m of mounts) unmount(m)
    removeDir(root)
  })

  const copyOf = (from: string, name: string): string => {
    const dir = join(root, name)
    cpSync(from, dir, { recursive: true })
    return dir
  }
  const fileOf = (dir: string, pattern: RegExp): string => join(dir, 'catalog', readdirSync(join(dir, 'catalog')).find((n) => pattern.test(n))!)

  /** Two starts: both refused with the same code and message, the data files untouched. */
  const expectRefusedTwice = async (dir: string, code: number, message: RegExp, options: Parameters<typeof runDaemonToExit>[1] = {}) => {
    const before = fingerprint(dir, LEVELDB_INFO_LOGS)
    const first = await runDaemonToExit(dir, options)
    expect(first.code, first.output).toBe(code)
    expect(first.output).toMatch(message)
    expect(first.output).not.toContain('svc-node listening')
    const second = await runDaemonToExit(dir, options)
    expect(second.code, second.output).toBe(code)
    expect(fingerprint(dir, LEVELDB_INFO_LOGS)).toBe(before)
    return { first, second }
  }

  /** After the cause is removed the node starts with every function it had. */
  const expectStartsWithData = async (dir: string) => {
    const d = await startDaemonProcess({ dataDir: dir, env: { SVC_SANDBOX_WORKERS: '1' } })
    try {
      for (const rufid of rufids) expect((await call(`${d.url}/api/v1/functions/resolve`, 'POST', { rufid })).status, rufid).toBe(200)
    } finally {
      await d.stop('SIGKILL')
    }
  }

  it('a read-only file system: exit 3, then starts once it is writable', async (ctx) => {
    if (!canMount(join(root, 'probe-mount'))) ctx.skip('cannot mount a tmpfs here (not root, or a locked-down container)')
    const rec = recordFault('data-dir.read-only', { fault: 'data directory on a file system mounted read-only', expectation: 'exit 3 with the reason, data untouched, starts once writable' })
    const mount = join(root, 'ro-mount')
    mountTmpfs(mount, 8 << 20)
    mounts.push(mount)
    cpSync(seeded, join(mount, 'data'), { recursive: true })
    remountTmpfs(mount, ['ro'])
    const { first } = await expectRefusedTwice(join(mount, 'data'), EXIT_CODES.data_dir_not_writable, /cannot be written \(EROFS\)/)
    remountTmpfs(mount, ['rw'])
    await expectStartsWithData(join(mount, 'data'))
    rec.figures({ exit_code: first.code, refused_after_ms: first.ms })
    rec.summary(`exit ${first.code} in ${(first.ms / 1000).toFixed(1)} s, twice; started with its 3 functions once writable`)
  })

  it.skipIf(process.getuid?.() !== 0)('a directory its user may not write (the node runs as nobody): exit 3', async () => {
    const rec = recordFault('data-dir.permission', { fault: 'data directory owned by root, mode 0700; the node runs as nobody', expectation: 'exit 3 with the reason, data untouched' })
    const dir = copyOf(seeded, 'root-only')
    chmodSync(dir, 0o700)
    const { first } = await expectRefusedTwice(dir, EXIT_CODES.data_dir_not_writable, /cannot be written \(EACCES\)/, { uid: 65534, env: { HOME: '/tmp' } })
    rec.figures({ exit_code: first.code, refused_after_ms: first.ms })
    rec.summary(`exit ${first.code} (EACCES) in ${(first.ms / 1000).toFixed(1)} s, twice, data untouched`)
  })

  it('another process holds the database: exit 4, then starts once it is released', async () => {
    const rec = recordFault('data-dir.in-use', { fault: 'another process holds the LevelDB lock of the data directory', expectation: 'exit 4 naming the cause, starts once released' })
    const dir = copyOf(seeded, 'in-use')
    const holder = new ClassicLevel(join(dir, 'catalog'))
    await holder.open()
    let first
    try {
      ({ first } = await expectRefusedTwice(dir, EXIT_CODES.data_dir_in_use, /in use by another process/))
    } finally {
      await holder.close()
    }
    await expectStartsWithData(dir)
    rec.figures({ exit_code: first.code, refused_after_ms: first.ms })
    rec.summary(`exit ${first.code} in ${(first.ms / 1000).toFixed(1)} s, twice; started with its data once released`)
  })

  it('a corrupted record in the write-ahead log: exit 5 every time (LevelDB would drop it silently)', async () => {
    const rec = recordFault('data-dir.log-corrupted', { fault: 'one byte flipped inside a record of the LevelDB write-ahead log', expectation: 'exit 5 naming the file, on every start; nothing dropped' })
    const dir = copyOf(seeded, 'log-corrupted')
    const log = fileOf(dir, /^\d+\.log$/)
    const bytes = readFileSync(log)
    expect(bytes.length).toBeGreaterThan(200)
    const middle = Math.floor(bytes.length / 2)
    bytes[middle] = bytes[middle]! ^ 0x40
    writeFileSync(log, bytes)
    const { first } = await expectRefusedTwice(dir, EXIT_CODES.data_corrupted, /corrupted: \d+\.log: checksum mismatch/)
    rec.figures({ exit_code: first.code, refused_after_ms: first.ms })
    rec.summary(`exit ${first.code} in ${(first.ms / 1000).toFixed(1)} s on both starts, log untouched`)
  })

  it('a truncated table file: exit 5', async () => {
    const rec = recordFault('data-dir.table-truncated', { fault: 'a LevelDB table file cut to half its length', expectation: 'exit 5 naming the file, on every start' })
    const dir = copyOf(compacted, 'table-truncated')
    const table = fileOf(dir, /^\d+\.ldb$/)
    truncateSync(table, Math.floor(readFileSync(table).length / 2))
    const { first } = await expectRefusedTwice(dir, EXIT_CODES.data_corrupted, /corrupted: \d+\.ldb: no table magic number/)
    rec.figures({ exit_code: first.code, refused_after_ms: first.ms })
    rec.summary(`exit ${first.code} in ${(first.ms / 1000).toFixed(1)} s on both starts`)
  })

  it('a corrupted manifest: exit 5 (LevelDB refuses to open it)', async () => {
    const rec = recordFault('data-dir.manifest-corrupted', { fault: "LevelDB's MANIFEST overwritten with other bytes", expectation: 'exit 5, on every start' })
    const dir = copyOf(compacted, 'manifest-corrupted')
    const manifest = fileOf(dir, /^MANIFEST-\d+$/)
    const bytes = readFileSync(manifest)
    for (let i = 7; i < bytes.length; i++) bytes[i] = 0x5a
    writeFileSync(manifest, bytes)
    const { first } = await expectRefusedTwice(dir, EXIT_CODES.data_corrupted, /corrupted/)
    rec.figures({ exit_code: first.code, refused_after_ms: first.ms })
    rec.summary(`exit ${first.code} in ${(first.ms / 1000).toFixed(1)} s on both starts`)
  })

  it('a data format from the future: exit 6 naming both formats', async () => {
    const rec = recordFault('data-dir.future-format', { fault: 'data directory stamped with data format 999', expectation: 'exit 6 naming both formats, data kept' })
    const dir = copyOf(seeded, 'future')
    const db = new ClassicLevel<string, unknown>(join(dir, 'catalog'), { valueEncoding: 'json' })
    await db.sublevel<string, unknown>('meta', { valueEncoding: 'json' }).put('data_format_version', 999)
    await db.close()
    const first = await runDaemonToExit(dir)
    expect(first.code, first.output).toBe(EXIT_CODES.data_format_mismatch)
    expect(first.output).toMatch(/data format 999; this svc-node reads format 1 \(a newer svc-node wrote it/)
    expect((await runDaemonToExit(dir)).code).toBe(EXIT_CODES.data_format_mismatch)
    const check = new ClassicLevel<string, unknown>(join(dir, 'catalog'), { valueEncoding: 'json' })
    expect(await check.sublevel<string, unknown>('meta', { valueEncoding: 'json' }).get('data_format_version')).toBe(999)
    let functions = 0
    for await (const _ of check.sublevel('functions').keys()) functions++
    await check.close()
    expect(functions).toBe(3)
    rec.figures({ exit_code: first.code, refused_after_ms: first.ms })
    rec.summary(`exit ${first.code} in ${(first.ms / 1000).toFixed(1)} s, twice; format and functions kept`)
  })

  it('no space left at start: exit 7', async (ctx) => {
    if (!canMount(join(root, 'probe-mount'))) ctx.skip('cannot mount a tmpfs here (not root, or a locked-down container)')
    const rec = recordFault('data-dir.no-space-at-start', { fault: 'data directory on a full file system at start', expectation: 'exit 7 with the reason' })
    const mount = join(root, 'full-mount')
    mountTmpfs(mount, 1 << 20)
    mounts.push(mount)
    mkdirSync(join(mount, 'data'))
    try {
      writeFileSync(join(mount, 'ballast'), Buffer.alloc(2 << 20))
    } catch {
      // full: that is the point
    }
    const first = await runDaemonToExit(join(mount, 'data'))
    expect(first.code, first.output).toBe(EXIT_CODES.disk_full)
    expect(first.output).toMatch(/no space left/)
    rec.figures({ exit_code: first.code, refused_after_ms: first.ms })
    rec.summary(`exit ${first.code} in ${(first.ms / 1000).toFixed(1)} s`)
  })
})

