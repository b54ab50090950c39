/**
 * Pinned pure-Python dependencies: checking a lockfile's `pip` pins, the digest that names an
 * installed set, and finding the pinned wheels in the node's wheelhouse directory (a directory of
 * `<name>-<version>[-<build>]-<python>-none-any.whl` files). Runs in the supervisor (checks) and in
 * the worker (lookup and reading); nothing here touches the network.
 */
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { basename, join } from 'node:path'
import { SvcError } from '../../core/errors.js'
import type { PipPin } from './types.js'

/** Largest wheel the worker installs (the set lives in the interpreter's in-memory filesystem). */
export const MAX_WHEEL_BYTES = 64 * 1024 * 1024
/** Largest wheel fetched from or served to a federation peer (it travels base64 in one message). */
export const MAX_REMOTE_WHEEL_BYTES = 16 * 1024 * 1024
/** Most pins one function may have. */
export const MAX_PINS = 256

const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/
/** An exact version: no range operators, wildcards, spaces or commas. */
const VERSION = /^[A-Za-z0-9](?:[A-Za-z0-9.+!_-]*[A-Za-z0-9])?$/
const SHA256 = /^[0-9a-f]{64}$/
const WHEEL = /^([^-]+)-([^-]+)(?:-(\d[^-]*))?-([^-]+)-([^-]+)-([^-]+)\.whl$/

/** PEP 503 name normalisation: lower case, runs of `-`, `_`, `.` as one `-`. */
export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-')
}

/** A lower-cased version with a leading `v` dropped (`V1.0` and `1.0` pin the same wheel). */
export function normalizeVersion(version: string): string {
  return version.toLowerCase().replace(/^v(?=\d)/, '')
}

/** `name==version` as messages show a pin. */
export function pinLabel(pin: PipPin): string {
  return `${pin.name}==${pin.version}`
}

/**
 * Checks and normalises a function's pins (sorted by name). A malformed list, a pin that is not an
 * exact version, or one package pinned twice is VALIDATION_FAILED naming the offending entry.
 */
export function checkPins(value: unknown): PipPin[] {
  if (!Array.isArray(value)) throw pinError('dependencies.pip must be an array of { name, version } pins')
  if (value.length > MAX_PINS) throw pinError(`at most ${MAX_PINS} pinned packages are supported`)
  const seen = new Map<string, string>()
  const pins: PipPin[] = []
  for (const entry of value as unknown[]) {
    if (typeof entry !== 'object' || entry === null) throw pinError('each pinned package must be an object with name and version')
    const { name, version, sha256 } = entry as Record<string, unknown>
    if (typeof name !== 'string' || !NAME.test(name)) throw pinError(`invalid pinned package name ${JSON.stringify(name)}`)
    if (typeof version !== 'string' || !VERSION.test(version)) {
      throw pinError(`package '${name}' must be pinned to an exact version, not ${JSON.stringify(version)}`)
    }
    if (sha256 !== undefined && (typeof sha256 !== 'string' || !SHA256.test(sha256.toLowerCase()))) {
      throw pinError(`package '${name}': sha256 must be 64 hexadecimal digits`)
    }
    const key = normalizeName(name)
    const previous = seen.get(key)
    if (previous !== undefined) {
      if (previous === normalizeVersion(version)) continue
      throw pinError(`package '${name}' is pinned twice (${previous} and ${version})`)
    }
    seen.set(key, normalizeVersion(version))
    const pin: PipPin = { name, version }
    if (typeof sha256 === 'string') pin.sha256 = sha256.toLowerCase()
    pins.push(pin)
  }
  return pins.sort((a, b) => (normalizeName(a.name) < normalizeName(b.name) ? -1 : normalizeName(a.name) > normalizeName(b.name) ? 1 : 0))
}

/**
 * Names one installed set: SHA-256 of the sorted `name==version[#sha256=…]` lines (normalised),
 * 32 hex digits. A pin's hash is part of it, so a set is only reused for pins it was verified against.
 */
export function lockDigest(pins: readonly PipPin[]): string {
  const lines = pins.map((p) => `${normalizeName(p.name)}==${normalizeVersion(p.version)}${p.sha256 ? `#sha256=${p.sha256}` : ''}`).sort()
  return createHash('sha256').update(lines.join('\n')).digest('hex').slice(0, 32)
}

export interface ResolvedWheel {
  pin: PipPin
  file: string
  bytes: Uint8Array
}

/**
 * A lookup of pins in `dirs`: the path of the wheel for a pin in the first directory that holds one
 * (a pure-Python wheel of that name and version), or undefined. Each directory is listed once, when
 * first needed. The hash is not checked here.
 */
export function wheelFinder(dirs: readonly string[]): (pin: PipPin) => string | undefined {
  const listings = new Map<string, Map<string, string>>()
  return (pin) => {
    const key = `${normalizeName(pin.name)}==${normalizeVersion(pin.version)}`
    for (const dir of dirs) {
      let listing = listings.get(dir)
      if (listing === undefined) listings.set(dir, (listing = listWheels(dir)))
      const file = listing.get(key)
      if (file !== undefined) return join(dir, file)
    }
    return undefined
  }
}

/** Whether `file` is a pure-Python wheel's name for exactly `pin`'s name and version. */
export function isWheelFileOf(file: string, pin: PipPin): boolean {
  const m = WHEEL.exec(file)
  if (!m || file.includes('/') || file.includes('\\')) return false
  const [, name = '', version = '', , python = '', abi = '', platform = ''] = m
  return abi === 'none' && platform === 'any' && python.split('.').some((t) => t === 'py3' || /^py3\d*$/.test(t)) &&
    normalizeName(name) === normalizeName(pin.name) && normalizeVersion(version) === normalizeVersion(pin.version)
}

/**
 * Reads the wheels for `pins` from `dirs` (the node's wheelhouse, then wheels fetched from
 * federation peers), the first directory holding a pin's wheel providing it. Every pin they cannot
 * provide (absent, not a pure-Python wheel, too large, or not matching its sha256) makes the whole
 * set fail with EXECUTION_FAILED naming each such `name==version`.
 */
export function readWheels(dirs: readonly string[], pins: readonly PipPin[]): ResolvedWheel[] {
  const missing: string[] = []
  const problems: string[] = []
  const resolved: ResolvedWheel[] = []
  const findWheel = wheelFinder(dirs)
  for (const pin of pins) {
    const path = findWheel(pin)
    if (path === undefined) {
      missing.push(pinLabel(pin))
      continue
    }
    let bytes: Buffer
    try {
      if (statSync(path).size > MAX_WHEEL_BYTES) {
        problems.push(`${pinLabel(pin)} (wheel larger than ${MAX_WHEEL_BYTES} bytes)`)
        continue
      }
      bytes = readFileSync(path)
    } catch {
      missing.push(pinLabel(pin))
      continue
    }
    if (pin.sha256 !== undefined && sha256Of(bytes) !== pin.sha256) {
      problems.push(`${pinLabel(pin)} (the wheel's sha256 does not match the pin)`)
      continue
    }
    resolved.push({ pin, file: basename(path), bytes })
  }
  if (missing.length > 0 || problems.length > 0) {
    const parts: string[] = []
    if (missing.length > 0) {
      parts.push(`pinned package${missing.length > 1 ? 's' : ''} ${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} not available on this node`)
    }
    if (problems.length > 0) parts.push(`cannot install ${problems.join(', ')}`)
    throw new SvcError('EXECUTION_FAILED', `${parts.join('; ')}${dirs.length === 0 ? ' (no Python wheelhouse is configured)' : ''}`, {
      details: { reason: 'dependency_unavailable', missingDependencies: missing, unusableDependencies: problems },
    })
  }
  return resolved
}

export const sha256Of = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex')

/** `normalized-name==version` → file name, for the pure-Python wheels in `dir` (highest build tag wins). */
function listWheels(dir: string): Map<string, string> {
  const found = new Map<string, { file: string; build: string }>()
  let entries: string[]
  try {
    entries = readdirSync(dir)
  } catch {
    return new Map()
  }
  for (const file of entries) {
    const m = WHEEL.exec(file)
    if (!m) continue
    const [, name = '', version = '', build = '', python = '', abi = '', platform = ''] = m
    if (abi !== 'none' || platform !== 'any' || !python.split('.').some((t) => t === 'py3' || /^py3\d*$/.test(t))) continue
    const key = `${normalizeName(name)}==${normalizeVersion(version)}`
    const previous = found.get(key)
    if (previous === undefined || build.localeCompare(previous.build, 'en', { numeric: true }) > 0) found.set(key, { file, build })
  }
  return new Map([...found].map(([key, v]) => [key, v.file]))
}

function pinError(message: string): SvcError {
  return new SvcError('VALIDATION_FAILED', `invalid lockfile pins: ${message}`, { details: { reason: 'invalid_pins' } })
}
