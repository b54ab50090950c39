// The part of oidc-provider (no bundled types) the suite's authorization server uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http'

  export interface ProviderToken {
    clientId?: string
    scope?: string
  }

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>)
    callback(): (req: IncomingMessage, res: ServerResponse) => void
    on(event: string, listener: (...args: unknown[]) => void): this
    ClientCredentials: { find(value: string): Promise<{ destroy(): Promise<void> } | undefined> }
  }
}
