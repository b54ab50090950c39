import { readFileSync } from 'node:fs'
import { Command } from 'commander'
import { isReceiptError, verifyReceipt, type VerifyReceiptOptions } from '../core/receipt.js'

/** Exit codes of `svc receipts verify`. */
export const RECEIPT_EXIT = { valid: 0, invalid: 1, unusable: 2 } as const

class UsageError extends Error {}

const readText = (file: string, what: string): string => {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8')
  } catch (err) {
    throw new UsageError(`cannot read ${what} ${file}: ${(err as Error).message}`)
  }
}

/** `JSON` or `@file` holding JSON. */
function jsonOption(value: string, what: string): unknown {
  const text = value.startsWith('@') ? readText(value.slice(1), what) : value
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new UsageError(`${what} is not JSON: ${(err as Error).message}`)
  }
}

/** `a,b,…` or `@file` with serials or fingerprints separated by commas or lines. */
function revokedOption(value: string): string[] {
  const text = value.startsWith('@') ? readText(value.slice(1), 'the revocation list') : value
  return text.split(/[,\n]/).map((s) => s.trim()).filter((s) => s.length > 0 && !s.startsWith('#'))
}

interface VerifyOptions {
  ca?: string
  revoked?: string
  args?: string
  result?: string
  now?: string
  json?: boolean
}

/** `svc receipts …`: execution receipts (docs/receipts.md). */
export function receiptsCommand(): Command {
  const cmd = new Command('receipts').description('execution receipts (docs/receipts.md)')
  cmd.command('verify')
    .description('verify a receipt: its signature, its signer\'s certificate, and the arguments and result when given.\n' +
      `Exit status ${RECEIPT_EXIT.valid}: valid; ${RECEIPT_EXIT.invalid}: not valid; ${RECEIPT_EXIT.unusable}: the inputs could not be read.`)
    .argument('<file>', 'the receipt (JSON), or an execution record with a `receipt` member; - for standard input')
    .option('--ca <file>', 'the federation CA certificate (PEM); without it the signer is not checked against a CA')
    .option('--revoked <list>', 'revoked node certificates: serials or SHA-256 fingerprints, comma-separated, or @file')
    .option('--args <json>', 'the call\'s arguments (JSON, or @file) to compare with arguments_digest')
    .option('--result <json>', 'the result (JSON, or @file) to compare with result_digest')
    .option('--now <time>', 'verify at this ISO 8601 time instead of now')
    .option('--json', 'print the verdict as JSON')
    .action((file: string, opts: VerifyOptions) => {
      let receipt: unknown
      const options: VerifyReceiptOptions = {}
      try {
        const text = readText(file, 'the receipt')
        try {
          receipt = JSON.parse(text)
        } catch (err) {
          throw new UsageError(`${file} is not JSON: ${(err as Error).message}`)
        }
        // an execution record (GET /v1/executions/{id}) carries its receipt as a member
        const record = receipt as Record<string, unknown> | null
        if (typeof record === 'object' && record !== null && !('signature' in record) && typeof record.receipt === 'object' && record.receipt !== null) {
          receipt = record.receipt
        }
        if (opts.ca !== undefined) options.caCertPem = readText(opts.ca, 'the CA certificate')
        if (opts.revoked !== undefined) options.revoked = revokedOption(opts.revoked)
        if (opts.args !== undefined) options.args = jsonOption(opts.args, '--args')
        if (opts.result !== undefined) options.result = jsonOption(opts.result, '--result')
        if (opts.now !== undefined) {
          const now = new Date(opts.now)
          if (Number.isNaN(now.getTime())) throw new UsageError(`--now ${opts.now} is not an ISO 8601 time`)
          options.now = now
        }
      } catch (err) {
        if (!(err instanceof UsageError)) throw err
        process.stderr.write(`svc receipts verify: ${err.message}\n`)
        process.exitCode = RECEIPT_EXIT.unusable
        return
      }

      try {
        const v = verifyReceipt(receipt, options)
        if (opts.json) {
          process.stdout.write(JSON.stringify({
            valid: true, certified: v.certified, digest: v.digest, peer_id: v.peerId, rufid: v.receipt.rufid, status: v.receipt.status,
            certificate: v.certificate, checked: v.checked,
          }) + '\n')
        } else {
          const r = v.receipt
          const lines = [
            `valid receipt ${v.digest}`,
            `  signer      ${v.peerId}`,
            `  certificate ${v.certificate.serial} (${v.certified ? 'issued by the federation CA' : 'NOT checked against a CA: give --ca'}), valid until ${v.certificate.validTo}`,
            `  function    ${r.rufid}`,
            `  execution   ${r.execution_id} ${r.status}${r.error_code === null ? '' : ` (error ${r.error_code})`}, ${r.started_at} → ${r.finished_at}`,
            `  arguments   ${v.checked.arguments ? 'match' : 'not checked (give --args)'}`,
            `  result      ${v.checked.result ? 'matches' : r.result_digest === null ? 'none (an error)' : 'not checked (give --result)'}`,
          ]
          process.stdout.write(lines.join('\n') + '\n')
        }
        if (!v.certified) process.stderr.write('svc receipts verify: warning: the signer was not checked against a federation CA (--ca)\n')
        process.exitCode = RECEIPT_EXIT.valid
      } catch (err) {
        if (isReceiptError(err)) {
          process.stdout.write(opts.json ? JSON.stringify({ valid: false, failure: err.failure, message: err.message }) + '\n' : `invalid receipt (${err.failure}): ${err.message}\n`)
          process.exitCode = RECEIPT_EXIT.invalid
          return
        }
        process.stderr.write(`svc receipts verify: ${(err as Error).message}\n`)
        process.exitCode = RECEIPT_EXIT.unusable
      }
    })
  return cmd
}
