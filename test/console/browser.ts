// Debian's Chromium driven by playwright-core, for the operator console's tests (scripts/setup.sh
// installs /usr/bin/chromium). Each browser gets a fresh profile directory, removed at close.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type BrowserContext, type Page } from 'playwright-core'

export const CHROMIUM = process.env.SVC_TEST_CHROMIUM ?? '/usr/bin/chromium'
/** Screenshots of every page land here (gitignored; CI keeps them as artifacts). */
export const SCREENSHOTS = fileURLToPath(new URL('../../.test-results/console/', import.meta.url))

// without the background-networking flags Chromium keeps calling home, which a closed network floods
const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
]

export interface TestBrowser {
  context: BrowserContext
  page: Page
  close(): Promise<void>
}

export async function launchBrowser(): Promise<TestBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'svc-console-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, args: FLAGS, viewport: { width: 1366, height: 900 }, timeout: 60_000,
  })
  context.setDefaultTimeout(20_000)
  const page = context.pages()[0] ?? await context.newPage()
  return {
    context,
    page,
    async close() {
      await context.close().catch(() => undefined)
      rmSync(profile, { recursive: true, force: true })
    },
  }
}

/**
 * Everything that went wrong on a page: page errors, console errors, failed requests, answers ≥ 400
 * and dialogs (dismissed). `expect(pattern)` allows the next problems matching it (a step that
 * provokes a refusal on purpose).
 */
export class PageWatch {
  readonly problems: string[] = []
  readonly dialogs: string[] = []
  private allowed: RegExp[] = []

  constructor(page: Page) {
    page.on('pageerror', (err) => this.report(`page error: ${err.message}`))
    page.on('console', (msg) => {
      if (msg.type() === 'error') this.report(`console error: ${msg.text()}`)
    })
    page.on('requestfailed', (req) => {
      // a navigation away from a page aborts its pending requests; that is not a failure of the node
      if (req.failure()?.errorText === 'net::ERR_ABORTED') return
      this.report(`request failed: ${req.method()} ${req.url()} ${req.failure()?.errorText ?? ''}`)
    })
    page.on('response', (res) => {
      if (res.status() >= 400) this.report(`HTTP ${res.status()}: ${res.request().method()} ${res.url()}`)
    })
    page.on('dialog', (dialog) => {
      this.dialogs.push(`${dialog.type()}: ${dialog.message()}`)
      void dialog.dismiss().catch(() => undefined)
    })
  }

  /** Allows problems matching `pattern` while `step` runs. */
  async allowing<T>(pattern: RegExp, step: () => Promise<T>): Promise<T> {
    this.allowed.push(pattern)
    try {
      return await step()
    } finally {
      this.allowed = this.allowed.filter((p) => p !== pattern)
    }
  }

  private report(problem: string): void {
    if (this.allowed.some((p) => p.test(problem))) return
    this.problems.push(problem)
  }
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

/** axe-core's serious and critical violations on the page as it is now (WCAG 2.x A and AA rules). */
export async function seriousViolations(page: Page): Promise<string[]> {
  // evaluated through the DevTools protocol: the page's CSP (script-src 'self') does not apply
  await page.evaluate(axeSource)
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: unknown, opts: unknown): Promise<{ violations: Array<{ id: string; impact: string; help: string; nodes: Array<{ target: unknown }> }> }> } }).axe
    const r = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }, resultTypes: ['violations'] })
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.slice(0, 3).map((n) => JSON.stringify(n.target)) }))
  })
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.targets.join(' ')}`)
}

/** How many CSS pixels the page is wider than the viewport (0: no horizontal scrolling). */
export async function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth) - document.documentElement.clientWidth)
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true })
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true })
}

/** Every visible control a keyboard user must reach on the page, described for messages. */
export async function focusableControls(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const all = [...document.querySelectorAll<HTMLElement>('a[href], button:not([disabled]), input:not([disabled]):not([type="hidden"]), select:not([disabled]), textarea:not([disabled]), summary, [tabindex="0"]')]
    return all.filter((el) => {
      const r = el.getBoundingClientRect()
      // checkVisibility: not inside a closed <details> (content-visibility: hidden) or display: none
      return r.width > 0 && r.height > 0 && el.checkVisibility({ visibilityProperty: true }) && el.tabIndex >= 0
    }).map((el) => `${el.tagName.toLowerCase()}#${el.id}|${(el.getAttribute('aria-label') ?? el.textContent ?? '').trim().slice(0, 40)}|${el.getAttribute('href') ?? ''}`)
  })
}

/** Presses Tab from the top of the page and returns what got focus, in order. */
export async function tabThrough(page: Page, presses: number): Promise<string[]> {
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
  await page.evaluate(() => window.scrollTo(0, 0))
  const seen: string[] = []
  for (let i = 0; i < presses; i++) {
    await page.keyboard.press('Tab')
    seen.push(await page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null
      if (!el || el === document.body) return 'body'
      return `${el.tagName.toLowerCase()}#${el.id}|${(el.getAttribute('aria-label') ?? el.textContent ?? '').trim().slice(0, 40)}|${el.getAttribute('href') ?? ''}`
    }))
  }
  return seen
}
