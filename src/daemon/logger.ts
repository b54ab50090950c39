import { pino, type Logger } from 'pino'

export interface LoggerInit {
  level: string
  format: 'auto' | 'json' | 'pretty'
  name?: string
}

/** Structured JSON logs (pino); human-readable through pino-pretty on a terminal or when asked. */
export function createLogger(init: LoggerInit): Logger {
  const pretty = init.format === 'pretty' || (init.format === 'auto' && process.stdout.isTTY === true)
  const options = {
    name: init.name ?? 'svc-node',
    level: init.level,
    base: { pid: process.pid },
    redact: { paths: ['req.headers.authorization', '*.authorization', '*.api_key', 'api_key'], censor: '[redacted]' },
  }
  if (!pretty) return pino(options)
  return pino({ ...options, transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } })
}
