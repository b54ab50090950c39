// The protocol version the node advertises is the spec's (service-spec §9, Version History: 2.0.0),
// under the header/metadata name the clients read.
import { describe, expect, it } from 'vitest'
import { PROTOCOL_VERSION, PROTOCOL_VERSION_HEADER } from '../../src/core/protocol-version.js'

describe('protocol version', () => {
  it('is 2.0.0, carried as svc-protocol-version', () => {
    expect(PROTOCOL_VERSION).toBe('2.0.0')
    expect(PROTOCOL_VERSION_HEADER).toBe('svc-protocol-version')
  })
})
