import type { IncomingMessage } from 'node:http'
import { BlockList, isIP, SocketAddress } from 'node:net'

/**
 * The caller's address, on every door that has one: what per-IP limits count and audit entries
 * record. It is the connection's address, unless the connection comes from a trusted proxy
 * (`server.trusted_proxies`, CIDRs): then the `Forwarded` (RFC 7239) and `X-Forwarded-For` headers
 * (gRPC: the `forwarded` / `x-forwarded-for` metadata) name it. Their chain is walked from the
 * right, the end the proxies appended to, past every address that is itself a trusted proxy: the
 * first one that is not is the caller. An `unknown` or obfuscated node (`for=_hidden`) there is
 * none the node can count: the address of the proxy that reported it is used. A header that does
 * not parse, or is longer than MAX_FORWARDING_HEADER_CHARS, counts as none: the connection's
 * address is used. Headers from any other connection are never read (a client could write
 * anything there).
 *
 * When a request carries both headers, each is walked: they must name the same caller, else the
 * connection's address is used. A proxy appends to one of them and passes the other on as the
 * client sent it, so a client could otherwise pick its own address by sending the header the
 * proxy does not write; whichever header the proxy writes, agreeing with it means naming the
 * address the proxy saw.
 *
 * Parsing is one left-to-right pass over at most MAX_FORWARDING_HEADER_CHARS characters (no
 * regular expression), so a hostile header costs linear time.
 */
export interface ClientAddresses {
  /** true when some proxy is trusted (else every address is the connection's) */
  readonly trustsProxies: boolean
  /** The caller of an HTTP request or WebSocket upgrade. */
  ofRequest(req: IncomingMessage): string
  /** The caller of a connection from `peer` (an address without port) that carries these forwarding headers. */
  of(peer: string, headers: ForwardingHeaders): string
}

/** The forwarding headers of a request as received (several of one kind joined with ", "). */
export interface ForwardingHeaders {
  forwarded?: string | undefined
  xForwardedFor?: string | undefined
}

export interface ClientAddressesInit {
  /** CIDRs (`10.0.0.0/8`, `2001:db8::/32`; a bare address is /32 or /128) of the proxies trusted to forward */
  trustedProxies: readonly string[]
}

/** Longer forwarding headers are not read (the connection's address is used). */
export const MAX_FORWARDING_HEADER_CHARS = 8192

/** One CIDR as parsed: its family, network address and prefix length. */
export interface Cidr {
  family: 'ipv4' | 'ipv6'
  address: string
  prefix: number
}

/**
 * `10.0.0.0/8`, `2001:db8::/32`, `[2001:db8::]/32`, or a bare address; throws an Error saying
 * what is wrong otherwise. An IPv4-mapped IPv6 network (`::ffff:10.0.0.0/104`) is the IPv4 one.
 */
export function parseCidr(text: string): Cidr {
  const slash = text.indexOf('/')
  let host = (slash === -1 ? text : text.slice(0, slash)).trim()
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1)
  const family = isIP(host)
  if (family === 0) throw new Error(`${JSON.stringify(text)} is not a CIDR: ${JSON.stringify(host)} is not an IPv4 or IPv6 address`)
  const max = family === 4 ? 32 : 128
  const prefixText = slash === -1 ? String(max) : text.slice(slash + 1).trim()
  if (!/^[0-9]{1,3}$/.test(prefixText) || Number(prefixText) > max) {
    throw new Error(`${JSON.stringify(text)} is not a CIDR: the prefix length must be 0 to ${max}`)
  }
  const prefix = Number(prefixText)
  if (family === 6) {
    const canonical = canonicalAddress(host)!
    // an IPv4-mapped network is an IPv4 one (connections on a dual-stack socket show ::ffff:a.b.c.d)
    if (isIP(canonical) === 4) {
      if (prefix < 96) throw new Error(`${JSON.stringify(text)}: an IPv4-mapped network needs a prefix length of 96 or more`)
      return { family: 'ipv4', address: canonical, prefix: prefix - 96 }
    }
    return { family: 'ipv6', address: canonical, prefix }
  }
  return { family: 'ipv4', address: host, prefix }
}

/**
 * An IPv4 address as written (isIP refuses leading zeros), an IPv6 address in its canonical form
 * (lower case, `::` compressed, no zone), an IPv4-mapped IPv6 address as the IPv4 one; undefined
 * when `text` is not an address.
 */
export function canonicalAddress(text: string): string | undefined {
  const family = isIP(text)
  if (family === 4) return text
  if (family !== 6) return undefined
  let canonical: string
  try {
    canonical = new SocketAddress({ address: text, family: 'ipv6' }).address
  } catch {
    return undefined
  }
  return canonical.startsWith('::ffff:') && isIP(canonical.slice(7)) === 4 ? canonical.slice(7) : canonical
}

/** A node of a forwarding chain: an address, or null for `unknown`, an obfuscated node or an element without `for`. */
export type ForwardedNode = string | null

/**
 * The nodes of an `X-Forwarded-For` value, left (the farthest) to right: `a.b.c.d`, `a.b.c.d:port`,
 * a bare IPv6 address, `[IPv6]` or `[IPv6]:port`, or `unknown`; separated by commas with optional
 * blanks. Undefined when any entry is none of these, an entry is empty, or the value is too long.
 */
export function parseXForwardedFor(value: string): ForwardedNode[] | undefined {
  if (value.length > MAX_FORWARDING_HEADER_CHARS) return undefined
  const nodes: ForwardedNode[] = []
  let start = 0
  for (;;) {
    let comma = value.indexOf(',', start)
    if (comma === -1) comma = value.length
    const entry = trimBlanks(value.slice(start, comma))
    if (entry === '') return undefined
    if (entry.toLowerCase() === 'unknown') {
      nodes.push(null)
    } else {
      const address = hostOf(entry)
      if (address === undefined) return undefined
      nodes.push(address)
    }
    if (comma === value.length) return nodes
    start = comma + 1
  }
}

/**
 * The `for` nodes of a `Forwarded` value (RFC 7239), one per element, left to right: each element
 * is `pair *( ";" pair )`, a pair `token "=" ( token / quoted-string )`, elements separated by
 * commas; an element without `for` (or with `for=unknown`, or an obfuscated `for=_x`) is a null
 * node. Undefined when the value does not parse (a bad token, an unterminated quoted string, a
 * repeated `for` in one element, a `for` that is not a node) or is too long.
 */
export function parseForwarded(value: string): ForwardedNode[] | undefined {
  if (value.length > MAX_FORWARDING_HEADER_CHARS) return undefined
  const nodes: ForwardedNode[] = []
  const n = value.length
  let i = 0
  let node: ForwardedNode | undefined
  let empty = true
  const skipBlanks = (): void => {
    while (i < n && (value[i] === ' ' || value[i] === '\t')) i++
  }
  for (;;) {
    skipBlanks()
    // a pair, unless the element or the list goes on at once (empty elements and pairs are allowed)
    if (i < n && value[i] !== ',' && value[i] !== ';') {
      const nameStart = i
      while (i < n && isTokenChar(value.charCodeAt(i))) i++
      if (i === nameStart || value[i] !== '=') return undefined
      const name = value.slice(nameStart, i).toLowerCase()
      i++
      let parameter: string
      if (value[i] === '"') {
        i++
        let text = ''
        let closed = false
        while (i < n) {
          const c = value[i]!
          if (c === '"') {
            closed = true
            i++
            break
          }
          if (c === '\\') {
            if (i + 1 >= n) return undefined
            text += value[i + 1]
            i += 2
            continue
          }
          text += c
          i++
        }
        if (!closed) return undefined
        parameter = text
      } else {
        const valueStart = i
        while (i < n && isTokenChar(value.charCodeAt(i))) i++
        if (i === valueStart) return undefined
        parameter = value.slice(valueStart, i)
      }
      if (name === 'for') {
        if (node !== undefined) return undefined
        const parsed = forNode(parameter)
        if (parsed === undefined) return undefined
        node = parsed
      }
      empty = false
      skipBlanks()
    }
    if (i >= n || value[i] === ',') {
      // an empty element (`a, , b`, as the list rule allows) names nobody: it is skipped
      if (!empty) nodes.push(node ?? null)
      node = undefined
      empty = true
      if (i >= n) return nodes.length > 0 ? nodes : undefined
      i++
      continue
    }
    if (value[i] === ';') {
      i++
      continue
    }
    return undefined
  }
}

/**
 * The caller, walking `nodes` (left to right as in the header) from the right, starting from the
 * connection's address (a trusted proxy): the first node that is not a trusted proxy; the proxy
 * that reported an unknown node; the left-most node when every one is trusted.
 */
export function callerOf(nodes: readonly ForwardedNode[], connection: string, trusted: (address: string) => boolean): string {
  let current = connection
  for (let i = nodes.length - 1; i >= 0; i--) {
    const node = nodes[i]!
    if (node === null) return current
    if (!trusted(node)) return node
    current = node
  }
  return current
}

/** The addresses of a node that trusts no proxy: always the connection's. */
export const CONNECTION_ADDRESSES: ClientAddresses = createClientAddresses({ trustedProxies: [] })

/**
 * Client addresses for `server.trusted_proxies`. Throws on a CIDR that does not parse (the
 * config check refuses it first, naming the key).
 */
export function createClientAddresses(init: ClientAddressesInit): ClientAddresses {
  const v4 = new BlockList()
  const v6 = new BlockList()
  for (const text of init.trustedProxies) {
    const cidr = parseCidr(text)
    ;(cidr.family === 'ipv4' ? v4 : v6).addSubnet(cidr.address, cidr.prefix, cidr.family)
  }
  const trustsProxies = init.trustedProxies.length > 0
  /**
   * Whether an address is a trusted proxy. IPv4 rules match IPv4 (and IPv4-mapped) addresses,
   * IPv6 rules IPv6 ones only: Node's BlockList would let `::/0` match every IPv4 address too.
   */
  const trusted = (address: string): boolean => {
    const canonical = canonicalAddress(address)
    if (canonical === undefined) return false
    return isIP(canonical) === 4 ? v4.check(canonical, 'ipv4') : v6.check(canonical, 'ipv6')
  }

  const of = (peer: string, headers: ForwardingHeaders): string => {
    if (!trustsProxies || !trusted(peer)) return peer
    const { forwarded, xForwardedFor } = headers
    if (forwarded === undefined && xForwardedFor === undefined) return peer
    let fromForwarded: string | undefined
    let fromXff: string | undefined
    if (forwarded !== undefined) {
      const nodes = parseForwarded(forwarded)
      if (nodes === undefined) return peer
      fromForwarded = callerOf(nodes, peer, trusted)
    }
    if (xForwardedFor !== undefined) {
      const nodes = parseXForwardedFor(xForwardedFor)
      if (nodes === undefined) return peer
      fromXff = callerOf(nodes, peer, trusted)
    }
    if (fromForwarded !== undefined && fromXff !== undefined && fromForwarded !== fromXff) return peer
    return fromForwarded ?? fromXff ?? peer
  }

  return {
    trustsProxies,
    of,
    ofRequest(req) {
      const peer = req.socket.remoteAddress ?? ''
      if (!trustsProxies) return peer
      return of(peer, { forwarded: headerText(req.headers.forwarded), xForwardedFor: headerText(req.headers['x-forwarded-for']) })
    },
  }
}

function headerText(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined
  return Array.isArray(value) ? value.join(', ') : value
}

/** The value of a `for` parameter as a node: `unknown` and `_obfuscated` are null; undefined when it is none. */
function forNode(value: string): ForwardedNode | undefined {
  if (value.toLowerCase() === 'unknown') return null
  if (value.startsWith('_')) return isObfuscated(value) ? null : undefined
  return hostOf(value)
}

/**
 * The address of `a.b.c.d`, `a.b.c.d:port`, a bare IPv6 address, `[IPv6]` or `[IPv6]:port` (a
 * port may be obfuscated, `:_x`, as RFC 7239 allows), canonical; undefined for anything else.
 */
function hostOf(text: string): string | undefined {
  if (text.startsWith('[')) {
    const close = text.indexOf(']')
    if (close === -1) return undefined
    const rest = text.slice(close + 1)
    if (rest !== '' && !isPortSuffix(rest)) return undefined
    const inner = text.slice(1, close)
    return isIP(inner) === 6 ? canonicalAddress(inner) : undefined
  }
  if (isIP(text) !== 0) return canonicalAddress(text)
  const colon = text.indexOf(':')
  if (colon === -1 || !isPortSuffix(text.slice(colon))) return undefined
  const host = text.slice(0, colon)
  return isIP(host) === 4 ? host : undefined
}

/** `:1234` (1–5 digits) or an obfuscated port `:_x`. */
function isPortSuffix(text: string): boolean {
  if (text.length < 2 || text[0] !== ':') return false
  const port = text.slice(1)
  if (port.startsWith('_')) return isObfuscated(port)
  if (port.length > 5) return false
  for (let i = 0; i < port.length; i++) {
    const c = port.charCodeAt(i)
    if (c < 48 || c > 57) return false
  }
  return true
}

/** RFC 7239 obfnode / obfport: `_` then letters, digits, `.`, `_`, `-`. */
function isObfuscated(text: string): boolean {
  if (text.length < 2 || text[0] !== '_') return false
  for (let i = 1; i < text.length; i++) {
    const c = text.charCodeAt(i)
    const ok = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 46 || c === 95 || c === 45
    if (!ok) return false
  }
  return true
}

/** RFC 7230 tchar. */
function isTokenChar(c: number): boolean {
  if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)) return true
  // ! # $ % & ' * + - . ^ _ ` | ~
  return c === 33 || (c >= 35 && c <= 39) || c === 42 || c === 43 || c === 45 || c === 46 || c === 94 || c === 95 || c === 96 || c === 124 || c === 126
}

function trimBlanks(text: string): string {
  let start = 0
  let end = text.length
  while (start < end && (text[start] === ' ' || text[start] === '\t')) start++
  while (end > start && (text[end - 1] === ' ' || text[end - 1] === '\t')) end--
  return text.slice(start, end)
}
