import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** the real `svc` program, as installed (`bin/svc.js` → dist/; run `npm run build` first) */
export const SVC_BIN = fileURLToPath(new URL('../../bin/svc.js', import.meta.url))

export interface SvcRun {
  status: number | null
  stdout: string
  stderr: string
}

/**
 * Runs `svc <args>` (bin/svc.js, the entry the package installs) in `cwd` with a clean CLI
 * environment: no SVC_* variables and no user config file unless the test sets them.
 */
export function runSvc(args: string[], options: { env?: Record<string, string>; cwd?: string } = {}): Promise<SvcRun> {
  if (!existsSync(new URL('../../dist/cli/svc.js', import.meta.url))) {
    return Promise.reject(new Error('dist/cli/svc.js is missing: run `npm run build` before the CLI tests'))
  }
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SVC_')) env[k] = v
  env.XDG_CONFIG_HOME = '/nonexistent-svc-test-config'
  Object.assign(env, options.env)
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC_BIN, ...args], { cwd: options.cwd ?? ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')))
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')))
    child.once('error', reject)
    child.once('close', (status) => resolve({ status, stdout, stderr }))
  })
}
