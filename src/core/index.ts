export * from './errors.js'
export * from './rufid.js'
export * from './canonical-json.js'
export * from './signature.js'
