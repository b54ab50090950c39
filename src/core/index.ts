export * from './errors.js'
export * from './rufid.js'
