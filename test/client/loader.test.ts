import { describe, expect, it } from 'vitest'
import { load, moduleSource, resolve, svcSpecifierTarget } from '../../src/client/loader.js'

describe('svc:// loader hooks', () => {
  it('reads the RUFID out of svc:// and svc: specifiers only', () => {
    expect(svcSpecifierTarget('svc://tUwBWSc8Nozv')).toBe('tUwBWSc8Nozv')
    expect(svcSpecifierTarget('svc:tUwBWSc8Nozv')).toBe('tUwBWSc8Nozv')
    expect(svcSpecifierTarget('SVC://AbC')).toBe('AbC')
    expect(svcSpecifierTarget('svc://bad%20one')).toBe('bad one')
    expect(svcSpecifierTarget('./svc.js')).toBeUndefined()
    expect(svcSpecifierTarget('node:fs')).toBeUndefined()
  })

  it('resolve maps svc:// to a URL the load hook answers, case kept; other specifiers go on', async () => {
    const next = (s: string) => ({ url: `next:${s}` })
    expect(await resolve('svc://tUwBWSc8Nozv', { conditions: [] }, next)).toEqual({ url: 'svc://tUwBWSc8Nozv', format: 'module', shortCircuit: true })
    expect(await resolve('svc://no good', { conditions: [] }, next)).toMatchObject({ url: 'svc://no%20good' })
    expect(await resolve('lodash', { conditions: [] }, next)).toEqual({ url: 'next:lodash' })
    const loaded = await load('svc://tUwBWSc8Nozv', { conditions: [] }, () => ({ format: 'module', source: 'other' }))
    expect(loaded).toMatchObject({ format: 'module', shortCircuit: true })
    expect(String(loaded.source)).toContain('.importFunction("tUwBWSc8Nozv")')
    expect(await load('file:///x.js', { conditions: [] }, () => ({ format: 'module', source: 'other' }))).toEqual({ format: 'module', source: 'other' })
  })

  it('the generated module resolves through the client with the register data only', () => {
    const src = moduleSource('tUwBWSc8Nozv', { url: 'http://node:1', token: 't"k' }, 'file:///c/client.js')
    expect(src).toContain('import { SvcClient } from "file:///c/client.js";')
    expect(src).toContain('new SvcClient({"url":"http://node:1","token":"t\\"k"}).importFunction("tUwBWSc8Nozv")')
    expect(src).toContain('export default fn;')
    // nothing configured: the client reads SVC_URL / SVC_TOKEN / SVC_NAMESPACE at import time
    expect(moduleSource('X', {}, 'file:///c.js')).toContain('new SvcClient({}).importFunction("X")')
    // a hostile specifier cannot inject code
    expect(moduleSource('");process.exit(1);("', {}, 'file:///c.js')).toContain('.importFunction("\\");process.exit(1);(\\"")')
  })
})
