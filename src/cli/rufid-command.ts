import { readFileSync } from 'node:fs'
import { Command } from 'commander'
import { computeRufid, formatRufid } from '../core/rufid.js'
import { deriveSignature } from '../core/signature.js'
import { CliError, action } from './connection.js'

interface VectorCase {
  id: string
  function_name: string
  signature: string
  language: string
  source_code: string
  rufid_short: string
  sha256_hex: string
}

/** `svc rufid …`: compute RUFIDs locally, exactly as the daemon does. */
export function rufidCommand(): Command {
  const cmd = new Command('rufid').description('compute RUFIDs locally (RUFID v1)')

  cmd.command('compute')
    .description('print the RUFID of a function definition')
    .requiredOption('--name <function_name>', 'function name')
    .option('--signature <signature>', 'textual signature, e.g. "(a, b)" (default: derived from the source as rufid-v1 §10 says)')
    .requiredOption('--language <language>', 'language, e.g. python, javascript, typescript, go')
    .option('--file <path>', 'source file (default: standard input)')
    .option('--tenant <tenant_id>', 'also print the full v1 form for this tenant')
    .option('--json', 'print JSON')
    .action(action((opts: { name: string; signature?: string; language: string; file?: string; tenant?: string; json?: boolean }) => {
      let source_code: string
      try {
        source_code = readFileSync(opts.file ?? 0, 'utf8')
      } catch (err) {
        throw new CliError(1006, 'VALIDATION_FAILED', `cannot read ${opts.file ?? 'standard input'}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
      }
      const signature = opts.signature ?? deriveSignature({ function_name: opts.name, language: opts.language, source_code })
      const r = computeRufid({ function_name: opts.name, signature, language: opts.language, source_code })
      const full = opts.tenant ? formatRufid(r.rufid_short, 1, opts.tenant) : undefined
      if (opts.json) {
        process.stdout.write(JSON.stringify({ rufid_short: r.rufid_short, content_digest: r.content_digest, signature, ...(full && { rufid: full }) }) + '\n')
      } else {
        process.stdout.write(`${r.rufid_short}${full ? `  ${full}` : ''}\n`)
      }
    }))

  cmd.command('vectors')
    .description('compute the RUFID of every case of a vectors file and compare with its expectation')
    .argument('[file]', 'vectors file', 'test/vectors/rufid-v1.json')
    .action((file: string) => {
      const { cases } = JSON.parse(readFileSync(file, 'utf8')) as { cases: VectorCase[] }
      let mismatches = 0
      for (const c of cases) {
        const r = computeRufid(c)
        const ok = r.rufid_short === c.rufid_short && r.content_digest === c.sha256_hex
        if (!ok) mismatches++
        process.stdout.write(`${ok ? 'ok      ' : 'MISMATCH'}  ${r.rufid_short}  expected ${c.rufid_short}  ${c.id}\n`)
      }
      process.stdout.write(`${cases.length - mismatches} of ${cases.length} vectors match\n`)
      if (mismatches > 0) process.exitCode = 1
    })
  return cmd
}
