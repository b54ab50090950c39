/** The logging the federation needs (pino's shape: an object, then a message). */
export interface FederationLogger {
  debug(obj: object, msg?: string): void
  info(obj: object, msg?: string): void
  warn(obj: object, msg?: string): void
  error(obj: object, msg?: string): void
}

export const noopLogger: FederationLogger = { debug() {}, info() {}, warn() {}, error() {} }
