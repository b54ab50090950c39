import { createRequire } from 'node:module'
import type * as Helix from 'graphql-helix' with { 'resolution-mode': 'require' }

/**
 * graphql-helix, loaded through its CommonJS build: its ESM build ships declarations NodeNext
 * cannot find. Both builds import the same (CommonJS) graphql as the rest of the door.
 */
const helix = createRequire(import.meta.url)('graphql-helix') as typeof Helix

export const getGraphQLParameters: typeof Helix.getGraphQLParameters = helix.getGraphQLParameters
export const processRequest: typeof Helix.processRequest = helix.processRequest
export type HelixRequest = Helix.Request
