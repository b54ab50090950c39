import { Command, InvalidArgumentError } from 'commander'

const port = (value: string): number => {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number')
  return n
}

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
      const [{ ConfigError, loadConfig }, { createDaemon }, { createLogger }] = await Promise.all([
        import('../daemon/config.js'), import('../daemon/daemon.js'), import('../daemon/logger.js'),
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
          process.exit(2)
        }
        throw err
      }
      const logger = createLogger({ level: config.log.level, format: config.log.format })
      process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection'))
      const daemon = createDaemon(config, { logger })
      let stopping = false
      const shutdown = (signal: string): void => {
        if (stopping) {
          logger.warn({ signal }, 'second signal: exiting now')
          process.exit(1)
        }
        stopping = true
        logger.info({ signal }, 'shutdown requested')
        daemon.stop().then(
          () => process.exit(0),
          (err: unknown) => {
            logger.error({ err }, 'shutdown failed')
            process.exit(1)
          },
        )
      }
      process.on('SIGINT', () => shutdown('SIGINT'))
      process.on('SIGTERM', () => shutdown('SIGTERM'))
      try {
        await daemon.start()
      } catch (err) {
        logger.fatal({ err }, `svc-node failed to start: ${(err as Error).message}`)
        await daemon.stop().catch(() => undefined)
        process.exit(1)
      }
    })
}
