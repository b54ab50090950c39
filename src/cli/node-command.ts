import { Command, InvalidArgumentError } from 'commander'
import * as connectionHelpers from './connection.js'

const port = (value: string): number => {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number')
  return n
}

/** How long past the shutdown grace a stop may take before the process exits anyway (exit code 9). */
const STOP_WATCHDOG_MARGIN_MS = 1000

/** `start`: runs a node in the foreground until SIGINT/SIGTERM. */
export function startCommand(): Command {
  return new Command('start')
    .description('start a node in the foreground (config: config/default.yaml, $SVC_CONFIG, environment)')
    .option('--host <host>', 'listen address (API_HOST)')
    .option('--port <port>', 'listen port, 0 for any free one (API_PORT)', port)
    .option('--data-dir <dir>', 'data directory (SVC_DATA_DIR)')
    .option('--config <file>', 'YAML file merged over the defaults (SVC_CONFIG)')
    .action(async (opts: { host?: string; port?: number; dataDir?: string; config?: string }) => {
      // loaded here, not at the top: every other `svc` command starts without the daemon's modules
      const [{ ConfigError, loadConfig }, { createDaemon }, { createLogger }, { classifyStartupError }, { EXIT_CODES }] = await Promise.all([
        import('../daemon/config.js'), import('../daemon/daemon.js'), import('../daemon/logger.js'),
        import('../daemon/data-directory.js'), import('../daemon/exit-codes.js'),
      ])
      const env = { ...process.env }
      if (opts.config) env.SVC_CONFIG = opts.config
      const overrides: Record<string, unknown> = {}
      if (opts.host !== undefined || opts.port !== undefined) {
        overrides.server = { ...(opts.host !== undefined && { host: opts.host }), ...(opts.port !== undefined && { port: opts.port }) }
      }
      if (opts.dataDir) overrides.data_dir = opts.dataDir
      let config
      try {
        config = loadConfig({ env, overrides })
      } catch (err) {
        if (err instanceof ConfigError) {
          process.stderr.write(`svc-node: ${err.message}\n`)
          process.exit(EXIT_CODES.config_invalid)
        }
        throw err
      }
      const logger = createLogger({ level: config.log.level, format: config.log.format })
      process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection'))
      // a start-up failure with a known cause: one plain line on stderr, one fatal log entry, its exit code
      const refuse = (err: unknown): never | undefined => {
        const failure = classifyStartupError(err, config.data_dir)
        if (failure === undefined) return undefined
        logger.fatal({ err: failure.cause ?? failure, reason: failure.reason, exit_code: failure.exitCode }, `svc-node cannot start: ${failure.message}`)
        logger.flush?.()
        process.stderr.write(`svc-node: cannot start: ${failure.message} (exit code ${failure.exitCode})\n`)
        process.exit(failure.exitCode)
      }
      let daemon: ReturnType<typeof createDaemon>
      try {
        daemon = createDaemon(config, { logger })
      } catch (err) {
        refuse(err)
        throw err
      }
      let stopping = false
      const shutdown = (signal: string): void => {
        if (stopping) {
          logger.warn({ signal }, 'second signal: exiting now')
          process.exit(EXIT_CODES.failed)
        }
        stopping = true
        logger.info({ signal }, 'shutdown requested')
        // the stop bounds each of its steps by the grace; this is the last resort should one not be
        const watchdog = setTimeout(() => {
          logger.error({ grace_ms: config.server.shutdown_grace_ms }, 'stop incomplete: the stop did not end within the shutdown grace; exiting')
          logger.flush?.()
          process.exit(EXIT_CODES.stop_incomplete)
        }, config.server.shutdown_grace_ms + STOP_WATCHDOG_MARGIN_MS)
        watchdog.unref()
        daemon.stop().then(
          (report) => {
            logger.flush?.()
            process.exit(report.complete ? EXIT_CODES.stopped : EXIT_CODES.stop_incomplete)
          },
          (err: unknown) => {
            logger.error({ err }, 'shutdown failed')
            process.exit(EXIT_CODES.failed)
          },
        )
      }
      process.on('SIGINT', () => shutdown('SIGINT'))
      process.on('SIGTERM', () => shutdown('SIGTERM'))
      try {
        await daemon.start()
      } catch (err) {
        await daemon.stop().catch(() => undefined)
        refuse(err)
        logger.fatal({ err }, `svc-node failed to start: ${(err as Error).message}`)
        process.exit(EXIT_CODES.failed)
      }
    })
}

/**
 * `svc node backup | restore | check`: a running node's backup through its admin route, and the
 * offline restore and check of a stopped node's data directory (src/cli/node-tools.ts, loaded when
 * one of them runs).
 */
export function nodeToolCommands(): Command[] {
  const tools = () => import('./node-tools.js')
  const { action, withConnection } = connectionHelpers
  const backup = withConnection(new Command('backup'))
    .description("stream a running node's database (one consistent snapshot) into the archive --out names: gzip-compressed JSON lines, checked whole before it is kept; needs an operator's key (an admin of the node's admin tenant)")
    .requiredOption('--out <archive>', 'the archive to write, gzip-compressed JSON lines: name it .jsonl.gz (refused if it exists)')
    .option('--json', 'print the summary as JSON')
    .addHelpText('after', `
The archive is gzip-compressed JSON lines (zcat it to read it): a header line, one line per
database record, a trailer with the record count and a SHA-256 of everything before it. It holds
the node's database, not its identity (peer-key, cert/): keep those with its configuration.

Example:
  svc node backup --out backups/node-$(date +%F).jsonl.gz
  svc node restore backups/node-2026-11-28.jsonl.gz --data-dir /var/lib/svc-node`)
    .action(action(async (opts: Parameters<Awaited<ReturnType<typeof tools>>['backupNode']>[0]) => (await tools()).backupNode(opts)))
  const restore = new Command('restore')
    .description("check a backup archive whole, then write it into a stopped node's data directory (refused if it holds a database, unless --force)")
    .argument('<archive>', 'the archive svc node backup wrote (gzip-compressed JSON lines, .jsonl.gz)')
    .option('--data-dir <dir>', 'the data directory (default: the node configuration\'s data_dir)')
    .option('--force', 'replace a database already there (it is kept as catalog.replaced-<time>)')
    .option('--dry-run', 'only check the archive')
    .option('--keep-identity', 'keep the directory\'s federation identity (peer-key); by default it is set aside and the node starts as a new member')
    .option('--json', 'print the summary as JSON')
    .action(action(async (file: string, opts: Parameters<Awaited<ReturnType<typeof tools>>['restoreNode']>[1]) => (await tools()).restoreNode(file, opts)))
  const check = new Command('check')
    .description("verify a stopped node's data directory: LevelDB's files, every function's digest, ledger and versions, branch heads, replication log (exit 0 consistent, 1 problems, 2 cannot check)")
    .option('--data-dir <dir>', 'the data directory (default: the node configuration\'s data_dir)')
    .option('--repair', 'fix what is repairable (damaged files: the database is copied aside, then LevelDB salvages what it can read)')
    .option('--json', 'print the report as JSON')
    .action(action(async (opts: Parameters<Awaited<ReturnType<typeof tools>>['checkNode']>[0]) => (await tools()).checkNode(opts)))
  return [backup, restore, check]
}
