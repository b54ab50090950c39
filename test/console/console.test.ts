// The operator console in a real browser (Debian's Chromium through playwright-core) against a real
// daemon process in standard auth mode, used the way a new operator would: the printed URL and the
// printed admin key, then publish, find, run and watch functions, mint and revoke a key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { removeDir, startDaemonProcess, type DaemonProcess } from '../fixtures/daemon-process.js'
import {
  focusableControls, horizontalOverflow, launchBrowser, PageWatch, screenshot, seriousViolations, tabThrough, type TestBrowser,
} from './browser.js'

const PAGES = ['catalog', 'publish', 'run', 'live', 'federation', 'keys', 'audit', 'node'] as const
const XSS = {
  description: '<img src=x onerror="alert(1)"> described',
  // tags and key names (the author) cannot hold markup (the node refuses it); a RUFID in a failed request can, and is audited
  rufid: '<img src=q onerror=alert(2)>',
  comment: '// <script>alert(3)</script> and <img src=z onerror=alert(5)>',
  log: '<img src=y onerror=alert(4)>',
  result: '<b id="injected">bold</b>',
}

describe('the operator console in Chromium', () => {
  let d: DaemonProcess
  let adminKey: string
  let consoleUrl: string
  let browser: TestBrowser
  let page: Page
  let watch: PageWatch
  let addShort: string
  let failingShort: string
  let xssShort: string

  const rest = async <T = Record<string, unknown>>(method: string, path: string, body?: unknown, key = adminKey): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${d.url}${path}`, {
      method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const text = await res.text()
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as T }
  }
  const publish = async (fn: Record<string, unknown>): Promise<string> => {
    const r = await rest<{ rufid_short: string }>('POST', '/api/v1/functions/create', fn)
    expect(r.status, JSON.stringify(r.body)).toBeLessThan(300)
    return r.body.rufid_short
  }
  /** Goes to a console page and waits until its heading is there. */
  const open = async (hash: string): Promise<void> => {
    await page.goto(`${consoleUrl}#/${hash}`)
    await page.locator('#page-title').waitFor()
  }

  beforeAll(async () => {
    d = await startDaemonProcess({ env: { AUTH_PROVIDER: 'standard' }, startTimeoutMs: 60_000 })
    adminKey = /ADMIN_API_KEY=(\S+)/.exec(d.output())![1]!
    consoleUrl = /svc-node console: (\S+)/.exec(d.output())![1]!
    addShort = await publish({
      function_name: 'add', signature: '(a, b)', language: 'javascript', tags: ['math'], description: 'adds two numbers',
      source_code: 'function add(a, b) {\n  console.log("adding", a, b)\n  return a + b\n}\n',
    })
    failingShort = await publish({
      function_name: 'explode', signature: '(reason)', language: 'javascript', tags: ['demo'],
      source_code: 'function explode(reason) {\n  console.error("about to fail:", reason)\n  throw new Error("boom: " + reason)\n}\n',
    })
    for (let i = 0; i < 21; i++) {
      await publish({ function_name: `calc_${i}`, signature: '(x)', language: 'javascript', tags: ['batch'], source_code: `function calc_${i}(x) { return x * ${i} }` })
    }
    await publish({ function_name: 'py_square', signature: '(x)', language: 'python', tags: ['snake'], source_code: 'def py_square(x):\n    return x * x\n' })
    xssShort = await publish({
      function_name: 'markup', signature: '()', language: 'javascript', description: XSS.description, tags: ['markup-test'],
      source_code: `${XSS.comment}\nfunction markup() {\n  console.log(${JSON.stringify(XSS.log)})\n  return ${JSON.stringify(XSS.result)}\n}\n`,
    })
    browser = await launchBrowser()
    page = browser.page
    watch = new PageWatch(page)
  }, 180_000)

  afterAll(async () => {
    await browser?.close()
    await d?.stop()
    if (d) removeDir(d.dataDir)
  })

  it('the daemon prints the console URL beside the one-time admin key', () => {
    expect(consoleUrl).toBe(`${d.url}/console/`)
    const lines = d.output().split('\n')
    const key = lines.findIndex((l) => l.startsWith('ADMIN_API_KEY='))
    const url = lines.findIndex((l) => l.startsWith('svc-node console: '))
    expect(key).toBeGreaterThanOrEqual(0)
    expect(url).toBeGreaterThan(key)
    expect(lines[url]).toContain('sign in with the ADMIN_API_KEY above')
  })

  it('sign-in: a wrong key gets a clear message, the printed admin key signs in', async () => {
    await page.goto(d.url + '/')
    expect(page.url()).toBe(consoleUrl)
    await page.locator('#token').waitFor()
    await watch.allowing(/401|Unauthorized/, async () => {
      await page.fill('#token', 'svck_not_a_real_key')
      await page.getByRole('button', { name: 'Sign in' }).click()
      await expect(page.locator('#sign-in-error').textContent()).resolves.toContain('This key was refused')
    })
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0)
    await page.fill('#token', adminKey)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('heading', { name: 'Catalog' }).waitFor()
    expect(page.url()).toContain('#/catalog')
    // the key is in sessionStorage only: never in the URL, never in localStorage or a cookie
    expect(page.url()).not.toContain(adminKey)
    expect(await page.evaluate(() => Object.values(sessionStorage))).toContain(adminKey)
    expect(await page.evaluate(() => localStorage.length)).toBe(0)
    expect(await browser.context.cookies()).toEqual([])
  })

  it('catalog: functions published through the API are found by search, facets and pages', async () => {
    await open('catalog')
    await page.locator('.result-count').waitFor()
    expect(await page.locator('.result-count').textContent()).toBe('Showing 1–20 of 25 functions')
    await page.getByRole('button', { name: 'Next page' }).click()
    await page.getByText('Showing 21–25 of 25 functions').waitFor()
    expect(await page.locator('.card').count()).toBe(5)

    await page.fill('#catalog-q', 'adds')
    await page.getByRole('button', { name: 'Search', exact: true }).click()
    await page.getByText('Showing 1–1 of 1 functions').waitFor()
    expect(await page.locator('.card-title a').textContent()).toBe('add')

    await page.getByRole('button', { name: 'Clear filters' }).click()
    await page.getByText('Showing 1–20 of 25 functions').waitFor()
    await page.locator('.facet-value', { hasText: 'python' }).click()
    await page.getByText('Showing 1–1 of 1 functions').waitFor()
    expect(await page.locator('.card-title a').textContent()).toBe('py_square')
    expect(await page.locator('.facet-value', { hasText: 'python' }).getAttribute('aria-pressed')).toBe('true')

    await open('catalog?tags=batch')
    await page.getByText('Showing 1–20 of 21 functions').waitFor()
    // the author facet filters too (one author here: the admin key)
    const author = page.locator('section[aria-label="Filter by author"] .facet-value').first()
    expect(await author.locator('.count').textContent()).toBe('21')
    await author.click()
    await page.getByText('Showing 1–20 of 21 functions').waitFor()
    expect(page.url()).toContain('author=')
    await screenshot(page, 'catalog-filtered')
  })

  it('function page: highlighted source, RUFID with copy, imports per client, versions, telemetry charts', async () => {
    await rest('POST', `/api/v1/functions/${addShort}/execute`, { arguments: { a: 1, b: 2 } })
    await open(`functions/${addShort}`)
    await page.locator('pre.code code.hljs').waitFor()
    expect(await page.locator('pre.code code').first().textContent()).toBe('function add(a, b) {\n  console.log("adding", a, b)\n  return a + b\n}\n')
    expect(await page.locator('pre.code .hljs-keyword').first().textContent()).toBe('function')
    expect(await page.locator('#full-rufid').textContent()).toBe(`rufid:${addShort}:v1:default`)
    const imports = await page.locator('dl.imports dd code').allTextContents()
    expect(imports).toEqual([
      `const add = (await import('svc://${addShort}')).default`,
      expect.stringMatching(new RegExp(`^from svc\\.rufid import _?${addShort} as add$`)),
      `add := client.Function("${addShort}")`,
    ])
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: d.url })
    await page.getByRole('button', { name: 'Copy the full RUFID' }).click()
    await page.getByText('Copied').first().waitFor()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(`rufid:${addShort}:v1:default`)
    expect(await page.locator('figure.chart').count()).toBe(3)
    expect(await page.locator('figure.chart rect.series-1').count()).toBe(30)
    // the one execution is in the executions chart's numbers
    const counts = await page.locator('figure.chart').first().locator('tbody tr td:nth-child(2)').allTextContents()
    expect(counts.map(Number).reduce((a, b) => a + b, 0)).toBe(1)
    expect(await page.locator('table', { hasText: 'Version' }).first().locator('tbody tr').count()).toBe(1)
  })

  it('publish page: the node derives the signature, the answer says new or already existed', async () => {
    await open('publish')
    await page.fill('#publish-source', 'function mul(a, b) {\n  return a * b\n}\n')
    await expect.poll(() => page.inputValue('#publish-name')).toBe('mul')
    await expect.poll(() => page.inputValue('#publish-signature'), { timeout: 10_000 }).toBe('(a, b)')
    await page.fill('#publish-tags', 'math, console')
    await page.getByRole('button', { name: 'Publish', exact: true }).click()
    await page.getByRole('heading', { name: 'Published: a new function version' }).waitFor()
    const rufid = await page.locator('#published-rufid').textContent()
    expect(rufid).toMatch(/^rufid:[A-Za-z0-9]{12}:v1:default$/)
    await page.getByRole('button', { name: 'Publish', exact: true }).click()
    await page.getByRole('heading', { name: 'Already published: identical content has this RUFID' }).waitFor()
    expect(await page.locator('#published-rufid').textContent()).toBe(rufid)
    const found = await rest<{ tags: string[]; signature: string }>('GET', `/api/v1/functions/${rufid!.split(':')[1]}`)
    expect(found.body).toMatchObject({ tags: ['math', 'console'], signature: '(a, b)' })

    // a refused publish shows code, name and the JSON pointer of each problem
    await page.fill('#publish-name', 'mul2')
    await page.fill('#publish-signature', '(a, b)')
    await page.locator('details.field summary').click()
    await page.fill('#publish-manifest', '{"name": 5}')
    await watch.allowing(/HTTP (400|422): POST .*\/functions\/create|status of (400|422)/, async () => {
      await page.getByRole('button', { name: 'Publish', exact: true }).click()
      await page.getByText('Not published').waitFor()
    })
    expect(await page.locator('.error .code-badge').textContent()).toBe('1006')
    expect(await page.locator('.error .error-name').textContent()).toBe('VALIDATION_FAILED')
    expect(await page.locator('.error .problems li').count()).toBeGreaterThan(0)
  })

  it('run page: arguments prefilled from the signature, result and logs; the event is on the Live page', async () => {
    await open(`run/${addShort}`)
    await expect.poll(() => page.inputValue('#run-arguments')).toBe('{\n  "a": null,\n  "b": null\n}')
    await page.fill('#run-arguments', '{"a": 2, "b": 3}')
    await page.getByRole('button', { name: 'Run', exact: true }).click()
    await page.locator('#run-result').waitFor()
    expect(await page.locator('#run-result').textContent()).toBe('5')
    await page.locator('.log-message').first().waitFor()
    expect(await page.locator('.log-message').first().textContent()).toBe('adding 2 3')
    // the console's event socket has been open since sign-in: the Live page lists the execution
    await page.getByRole('link', { name: 'Live' }).click()
    await page.getByRole('heading', { name: 'Live events' }).waitFor()
    await page.getByText('Connected: events appear as they happen.').waitFor()
    const row = page.locator('tr.event-execution', { hasText: addShort }).first()
    await row.waitFor()
    expect(await row.locator('.status-badge').textContent()).toBe('success')
    // and one that happens while the Live page is open appears too
    const before = await page.locator('tr.event-execution', { hasText: addShort }).count()
    await rest('POST', `/api/v1/functions/${addShort}/execute`, { arguments: [40, 2] })
    await expect.poll(() => page.locator('tr.event-execution', { hasText: addShort }).count()).toBe(before + 1)
    await page.selectOption('#live-status', 'error')
    await expect.poll(() => page.locator('tr.event-execution').count()).toBe(0)
    await page.selectOption('#live-status', 'all')
  })

  it('run page: a failing function shows code, name, message, details and its logs', async () => {
    await open(`run/${failingShort}`)
    await expect.poll(() => page.inputValue('#run-arguments')).toContain('"reason"')
    await page.fill('#run-arguments', '{"reason": "testing"}')
    await watch.allowing(/HTTP 422: POST .*\/execute|status of 422/, async () => {
      await page.getByRole('button', { name: 'Run', exact: true }).click()
      await page.getByText('The execution failed').waitFor()
    })
    expect(await page.locator('.error .code-badge').textContent()).toBe('1007')
    expect(await page.locator('.error .error-name').textContent()).toBe('EXECUTION_FAILED')
    expect(await page.locator('.error .error-message').textContent()).toContain('boom: testing')
    await page.locator('.log-message').first().waitFor()
    expect(await page.locator('.log-message').first().textContent()).toBe('about to fail: testing')
  })

  it('keys: a minted key is shown once with a copy button, works, and stops working once revoked', async () => {
    await open('keys')
    await page.fill('#key-name', 'ci-pipeline')
    await page.getByRole('button', { name: 'Mint key' }).click()
    const secret = await page.locator('#minted-secret').inputValue()
    expect(secret).toMatch(/^svck_/)
    expect(await page.getByRole('button', { name: 'Copy the new API key' }).isVisible()).toBe(true)
    expect((await rest('GET', '/api/v1/auth/whoami', undefined, secret)).status).toBe(200)
    await page.getByRole('button', { name: 'I have copied it' }).click()
    await page.reload()
    await page.locator('table.keys tbody tr', { hasText: 'ci-pipeline' }).waitFor()
    expect(await page.content()).not.toContain(secret)
    const row = page.locator('table.keys tbody tr', { hasText: 'ci-pipeline' })
    await row.getByRole('button', { name: /Revoke key ci-pipeline/ }).click()
    await row.getByRole('button', { name: 'Yes, revoke' }).click()
    await expect.poll(() => row.textContent()).toContain('revoked')
    expect((await rest('GET', '/api/v1/auth/whoami', undefined, secret)).status).toBe(401)
  })

  it('names, descriptions, tags, source, logs and results holding markup and <script> stay inert text', async () => {
    const injected = async (): Promise<number> => page.evaluate(() =>
      document.querySelectorAll('img[src="x"], img[src="y"], img[src="z"], img[src="q"], #injected, main script').length)
    await open('catalog?q=described')
    await page.locator('.card').first().waitFor()
    expect(await page.locator('.card .description').textContent()).toBe(XSS.description)
    expect(await injected()).toBe(0)
    await open(`functions/${xssShort}`)
    await page.locator('pre.code code').waitFor()
    expect(await page.locator('pre.code code').first().textContent()).toContain(XSS.comment)
    expect(await page.locator('p.description').textContent()).toBe(XSS.description)
    expect(await injected()).toBe(0)
    await open(`run/${xssShort}`)
    await expect.poll(() => page.inputValue('#run-arguments')).toBe('{}')
    await page.getByRole('button', { name: 'Run', exact: true }).click()
    await page.locator('#run-result').waitFor()
    expect(await page.locator('#run-result').textContent()).toBe(JSON.stringify(XSS.result))
    await page.locator('.log-message').first().waitFor()
    expect(await page.locator('.log-message').first().textContent()).toBe(XSS.log)
    expect(await injected()).toBe(0)
    await page.getByRole('link', { name: 'Live' }).click()
    await page.locator('tr.event-execution', { hasText: 'markup' }).first().waitFor()
    expect(await injected()).toBe(0)
    // a request naming a RUFID full of markup is refused, and audited with what it named
    expect((await rest('GET', `/api/v1/functions/${encodeURIComponent(XSS.rufid)}`)).status).toBe(400)
    await open('audit')
    await page.fill('#audit-rufid', XSS.rufid)
    await page.getByRole('button', { name: 'Apply' }).click()
    await page.locator('table.audit code', { hasText: XSS.rufid }).first().waitFor()
    expect(await page.locator('table.audit tbody tr').count()).toBe(1)
    expect(await injected()).toBe(0)
    expect(watch.dialogs).toEqual([])
  })

  it('every page: no serious or critical axe violation, no horizontal overflow at phone and laptop widths', async () => {
    const pages = [...PAGES, `functions/${addShort}`, `run/${addShort}`]
    const report: string[] = []
    for (const [width, height, label] of [[1366, 900, 'laptop'], [390, 844, 'phone']] as const) {
      await page.setViewportSize({ width, height })
      for (const p of pages) {
        await open(p)
        await page.waitForLoadState('networkidle')
        await page.locator('[role="status"]:has-text("Loading")').waitFor({ state: 'detached' }).catch(() => undefined)
        const overflow = await horizontalOverflow(page)
        if (overflow > 0) report.push(`${label} ${p}: ${overflow}px wider than the viewport`)
        if (label === 'laptop') for (const v of await seriousViolations(page)) report.push(`${p}: ${v}`)
        await screenshot(page, `${label}-${p.replace(/\//g, '-')}`)
      }
    }
    await page.setViewportSize({ width: 1366, height: 900 })
    expect(report).toEqual([])
  })

  it('keyboard: Tab reaches every control of a page in order, and Enter follows a link', async () => {
    for (const p of ['catalog', 'publish', 'keys', `functions/${addShort}`]) {
      await open(p)
      await page.waitForLoadState('networkidle')
      await page.reload()
      await page.locator('#page-title').waitFor()
      await page.waitForLoadState('networkidle')
      const controls = await focusableControls(page)
      const visited = await tabThrough(page, controls.length + 10)
      expect(visited[0], 'the skip link comes first').toContain('Skip to content')
      expect(controls.filter((c) => !visited.includes(c)), `${p}: controls Tab never reached`).toEqual([])
    }
    await open('catalog')
    await page.reload()
    await page.locator('#page-title').waitFor()
    await page.keyboard.press('Tab')
    await page.keyboard.press('Enter')
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('page-title')
    await page.reload()
    await page.locator('#page-title').waitFor()
    for (let i = 0; i < 15; i++) {
      await page.keyboard.press('Tab')
      if ((await page.evaluate(() => document.activeElement?.textContent)) === 'Publish') break
    }
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { name: 'Publish a function' }).waitFor()
    expect(page.url()).toContain('#/publish')
  })

  it('sign-out forgets the key; the sign-in page passes axe too', async () => {
    await open('catalog')
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.locator('#token').waitFor()
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0)
    expect(await seriousViolations(page)).toEqual([])
    expect(await horizontalOverflow(page)).toBe(0)
    await screenshot(page, 'laptop-sign-in')
    await page.reload()
    await page.locator('#token').waitFor()
  })

  it('no page error, console error, failed request or dialog on any page', () => {
    expect(watch.problems).toEqual([])
    expect(watch.dialogs).toEqual([])
  })
})
