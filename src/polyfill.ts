/**
 * Node 20 lacks `Promise.withResolvers`, which libp2p 3 uses. This module must be evaluated
 * before anything else: the entry points import it first, vitest loads it as a setup file.
 */
interface WithResolvers<T> {
  promise: Promise<T>
  resolve: (value: T | PromiseLike<T>) => void
  reject: (reason?: unknown) => void
}

const P = Promise as unknown as { withResolvers?: <T>() => WithResolvers<T> }
if (typeof P.withResolvers !== 'function') {
  P.withResolvers = function withResolvers<T>(): WithResolvers<T> {
    let resolve!: WithResolvers<T>['resolve']
    let reject!: WithResolvers<T>['reject']
    const promise = new Promise<T>((res, rej) => {
      resolve = res
      reject = rej
    })
    return { promise, resolve, reject }
  }
}

export {}
