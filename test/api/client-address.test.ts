// The caller's address behind trusted proxies (api/client-address.ts): the X-Forwarded-For and
// Forwarded (RFC 7239) parsers, the walk from the right past trusted proxies, CIDR parsing, and the
// rule that only a trusted connection's headers are read. Parsing is linear in the header.
import type { IncomingMessage } from 'node:http'
import { describe, expect, it } from 'vitest'
import {
  callerOf, canonicalAddress, CONNECTION_ADDRESSES, createClientAddresses, MAX_FORWARDING_HEADER_CHARS, parseCidr, parseForwarded, parseXForwardedFor,
} from '../../src/api/client-address.js'
import { loadConfig } from '../../src/daemon/config.js'

const request = (remoteAddress: string, headers: Record<string, string | string[]>): IncomingMessage =>
  ({ socket: { remoteAddress }, headers }) as unknown as IncomingMessage

describe('X-Forwarded-For', () => {
  it('reads IPv4, IPv6 bare and bracketed, with ports, and unknown; left to right', () => {
    expect(parseXForwardedFor('203.0.113.7')).toEqual(['203.0.113.7'])
    expect(parseXForwardedFor('203.0.113.7, 10.0.0.1,10.0.0.2')).toEqual(['203.0.113.7', '10.0.0.1', '10.0.0.2'])
    expect(parseXForwardedFor('203.0.113.7:51234,\t[2001:DB8::1]:443 , 2001:db8:0:0::2, [::1]')).toEqual(['203.0.113.7', '2001:db8::1', '2001:db8::2', '::1'])
    expect(parseXForwardedFor('unknown, 10.0.0.1')).toEqual([null, '10.0.0.1'])
    expect(parseXForwardedFor('::ffff:192.0.2.1')).toEqual(['192.0.2.1'])
  })

  it('refuses garbage, empty entries, bad ports, host names and oversized values as a whole', () => {
    for (const bad of ['', ' ', 'evil', '203.0.113.7,', ',203.0.113.7', '1.2.3.4,,5.6.7.8', '1.2.3.4:', '1.2.3.4:123456', '1.2.3.4:http',
      '[2001:db8::1', '[1.2.3.4]', '2001:db8::1:80:90:1:2:3:4', 'example.com', '01.2.3.4', '1.2.3.4 5.6.7.8', '"1.2.3.4"']) {
      expect(parseXForwardedFor(bad), bad).toBeUndefined()
    }
    expect(parseXForwardedFor(`${'1.2.3.4,'.repeat(MAX_FORWARDING_HEADER_CHARS / 8)}1.2.3.4`)).toBeUndefined()
  })
})

describe('Forwarded (RFC 7239)', () => {
  it('reads the for= node of each element, quoted or not, IPv6 bracketed with a port, case-insensitive names', () => {
    expect(parseForwarded('for=192.0.2.60;proto=http;by=203.0.113.43')).toEqual(['192.0.2.60'])
    expect(parseForwarded('For="[2001:db8:cafe::17]:4711"')).toEqual(['2001:db8:cafe::17'])
    expect(parseForwarded('for=192.0.2.43, for=198.51.100.17;by=10.0.0.1')).toEqual(['192.0.2.43', '198.51.100.17'])
    expect(parseForwarded('for="192.0.2.43:8080" ; proto=https ,FOR=10.0.0.9')).toEqual(['192.0.2.43', '10.0.0.9'])
    expect(parseForwarded('proto=https;host="a,b;c"')).toEqual([null])
    expect(parseForwarded('for="\\"weird\\""')).toBeUndefined()
  })

  it('unknown and obfuscated nodes are null (no address); empty elements are skipped', () => {
    expect(parseForwarded('for=unknown, for=_hidden, for="_SEVKISEK", for=10.0.0.1')).toEqual([null, null, null, '10.0.0.1'])
    expect(parseForwarded('for="10.0.0.1:_port"')).toEqual(['10.0.0.1'])
    expect(parseForwarded('for=10.0.0.1, , for=10.0.0.2')).toEqual(['10.0.0.1', '10.0.0.2'])
  })

  it('refuses what does not parse', () => {
    for (const bad of ['', ',', 'for', 'for=', 'for=1.2.3.4;for=5.6.7.8', 'for="1.2.3.4', 'for=[2001:db8::1]', 'for=1.2.3.4:80', 'for=evil',
      'for="_bad!"', 'for=1.2.3.4 x', '=1.2.3.4', 'fo r=1.2.3.4', 'for="[2001:db8::1]:x"', 'for="2001:db8::1"extra']) {
      expect(parseForwarded(bad), bad).toBeUndefined()
    }
    expect(parseForwarded(`for=1.2.3.4;proto="${'x'.repeat(MAX_FORWARDING_HEADER_CHARS)}"`)).toBeUndefined()
  })

  it('is linear: a header of the longest size with hostile shapes parses (or is refused) without backtracking', () => {
    const hostile = [
      `for="${'\\"'.repeat(MAX_FORWARDING_HEADER_CHARS / 2 - 8)}`,
      ';'.repeat(MAX_FORWARDING_HEADER_CHARS),
      `${'for=1.2.3.4,'.repeat(MAX_FORWARDING_HEADER_CHARS / 12)}`.slice(0, MAX_FORWARDING_HEADER_CHARS),
      ' '.repeat(MAX_FORWARDING_HEADER_CHARS - 1) + 'x',
    ]
    for (const value of hostile) {
      expect(() => parseForwarded(value)).not.toThrow()
      expect(() => parseXForwardedFor(value)).not.toThrow()
    }
  })
})

describe('the walk from the right', () => {
  const trusted = (a: string) => a.startsWith('10.')
  it('skips trusted proxies, stops at the first other address; unknown answers the proxy that reported it', () => {
    expect(callerOf(['203.0.113.7', '10.0.0.2'], '10.0.0.1', trusted)).toBe('203.0.113.7')
    // a client-supplied entry left of the real one is never reached
    expect(callerOf(['6.6.6.6', '203.0.113.7', '10.0.0.2'], '10.0.0.1', trusted)).toBe('203.0.113.7')
    expect(callerOf(['203.0.113.7', null, '10.0.0.2'], '10.0.0.1', trusted)).toBe('10.0.0.2')
    expect(callerOf([null], '10.0.0.1', trusted)).toBe('10.0.0.1')
    // every hop trusted: the farthest
    expect(callerOf(['10.0.0.9', '10.0.0.2'], '10.0.0.1', trusted)).toBe('10.0.0.9')
    expect(callerOf([], '10.0.0.1', trusted)).toBe('10.0.0.1')
  })
})

describe('CIDRs', () => {
  it('parses IPv4 and IPv6 networks and bare addresses; an IPv4-mapped network is IPv4', () => {
    expect(parseCidr('10.0.0.0/8')).toEqual({ family: 'ipv4', address: '10.0.0.0', prefix: 8 })
    expect(parseCidr('127.0.0.1')).toEqual({ family: 'ipv4', address: '127.0.0.1', prefix: 32 })
    expect(parseCidr('2001:DB8::/32')).toEqual({ family: 'ipv6', address: '2001:db8::', prefix: 32 })
    expect(parseCidr('[::1]/128')).toEqual({ family: 'ipv6', address: '::1', prefix: 128 })
    expect(parseCidr('::ffff:10.0.0.0/104')).toEqual({ family: 'ipv4', address: '10.0.0.0', prefix: 8 })
  })

  it('refuses what is not one, saying why', () => {
    for (const bad of ['', '10.0.0.0/33', '10.0.0.0/-1', '10.0.0.0/', '10.0.0.0/8/8', 'localhost', '10.0.0/8', '::/129', '::ffff:10.0.0.0/64', '10.0.0.0/08x']) {
      expect(() => parseCidr(bad), bad).toThrow(/CIDR|prefix/)
    }
  })

  it('server.trusted_proxies: a bad CIDR refuses the configuration, naming the key', () => {
    expect(loadConfig({ env: {}, overrides: { server: { trusted_proxies: ['127.0.0.1/32', '::1', '10.0.0.0/8'] } } }).server.trusted_proxies).toHaveLength(3)
    expect(() => loadConfig({ env: {}, overrides: { server: { trusted_proxies: ['10.0.0.0/40'] } } })).toThrow(/server\.trusted_proxies\.0: .*prefix length/)
    expect(() => loadConfig({ env: {}, overrides: { server: { trusted_proxies: ['proxy.internal'] } } })).toThrow(/server\.trusted_proxies\.0/)
    expect(loadConfig({ env: {} }).server.trusted_proxies).toEqual([])
  })
})

describe('client addresses', () => {
  const addresses = createClientAddresses({ trustedProxies: ['127.0.0.1/32', '10.0.0.0/8', '2001:db8::/32'] })

  it("uses a trusted connection's forwarded address, never an untrusted one's", () => {
    expect(addresses.ofRequest(request('127.0.0.1', { 'x-forwarded-for': '203.0.113.7' }))).toBe('203.0.113.7')
    expect(addresses.ofRequest(request('::ffff:127.0.0.1', { 'x-forwarded-for': '203.0.113.7' }))).toBe('203.0.113.7')
    expect(addresses.ofRequest(request('2001:db8::5', { forwarded: 'for="[2001:db9::7]:99"' }))).toBe('2001:db9::7')
    expect(addresses.ofRequest(request('127.0.0.2', { 'x-forwarded-for': '203.0.113.7' }))).toBe('127.0.0.2')
    expect(addresses.ofRequest(request('192.0.2.1', { forwarded: 'for=203.0.113.7' }))).toBe('192.0.2.1')
    expect(CONNECTION_ADDRESSES.ofRequest(request('127.0.0.1', { 'x-forwarded-for': '203.0.113.7' }))).toBe('127.0.0.1')
  })

  it('walks a chain of trusted proxies from the right; a spoofed entry left of the real client is ignored', () => {
    expect(addresses.ofRequest(request('127.0.0.1', { 'x-forwarded-for': '6.6.6.6, 203.0.113.7, 10.1.2.3' }))).toBe('203.0.113.7')
    // several X-Forwarded-For headers are one list, in order
    expect(addresses.ofRequest(request('127.0.0.1', { 'x-forwarded-for': ['6.6.6.6', '203.0.113.7'] }))).toBe('203.0.113.7')
  })

  it('malformed headers, and two headers that disagree, fall back to the connection', () => {
    expect(addresses.ofRequest(request('127.0.0.1', { 'x-forwarded-for': 'evil' }))).toBe('127.0.0.1')
    expect(addresses.ofRequest(request('127.0.0.1', { forwarded: 'for=' }))).toBe('127.0.0.1')
    // the proxy wrote X-Forwarded-For; the client's own Forwarded would otherwise pick its address
    expect(addresses.ofRequest(request('127.0.0.1', { 'x-forwarded-for': '203.0.113.7', forwarded: 'for=198.51.100.1' }))).toBe('127.0.0.1')
    expect(addresses.ofRequest(request('127.0.0.1', { 'x-forwarded-for': '203.0.113.7', forwarded: 'for=203.0.113.7' }))).toBe('203.0.113.7')
    expect(addresses.ofRequest(request('127.0.0.1', { 'x-forwarded-for': '203.0.113.7', forwarded: 'garbage' }))).toBe('127.0.0.1')
  })

  it('IPv6 rules match IPv6 addresses only: ::/0 trusts no IPv4 client', () => {
    const v6only = createClientAddresses({ trustedProxies: ['::/0'] })
    expect(v6only.of('192.0.2.1', { xForwardedFor: '203.0.113.7' })).toBe('192.0.2.1')
    expect(v6only.of('::ffff:192.0.2.1', { xForwardedFor: '203.0.113.7' })).toBe('::ffff:192.0.2.1')
    expect(v6only.of('2001:db8::1', { xForwardedFor: '203.0.113.7' })).toBe('203.0.113.7')
  })

  it('canonical addresses: IPv6 compressed and lower case, IPv4-mapped as IPv4, zone dropped; none for names', () => {
    expect(canonicalAddress('2001:DB8:0:0:0:0:0:1')).toBe('2001:db8::1')
    expect(canonicalAddress('::ffff:0a00:0001')).toBe('10.0.0.1')
    expect(canonicalAddress('fe80::1%eth0')).toBe('fe80::1')
    expect(canonicalAddress('localhost')).toBeUndefined()
  })
})
