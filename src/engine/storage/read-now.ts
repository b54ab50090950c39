/** What `readNow` needs of a database or sublevel (abstract-level 3: `getSync` where the store supports it). */
interface PointReadable {
  readonly status: string
  readonly supports: { getSync?: boolean }
  get(key: string): Promise<unknown>
  getSync(key: string): unknown
}

/**
 * A point read answered in this turn of the event loop while the database is open.
 *
 * An awaited `get` is a round trip through libuv's thread pool and back through the event loop:
 * LevelDB answers a key of a small catalog from its memtable or block cache in microseconds, but on
 * a busy machine each of those turns waits for a core (a replicated change was ~10 of them, and
 * applying one took a member 50-70 ms that way with 20 daemons on 2 cores). `getSync` reads in place
 * (classic-level and memory-level support it); a read LevelDB has to take from disk blocks the
 * event loop for that read, which for the catalog's point reads is a page-cache hit.
 *
 * While the database is not open (opening, or reopening after a write failed: NodeDatabase) the
 * async `get` is used, which waits for it as every other read does. The value is returned as is
 * (undefined when the key is absent); callers may `await` it either way.
 */
export function readNow<T = unknown>(db: unknown, key: string): T | undefined | Promise<T | undefined> {
  const d = db as PointReadable
  if (d.status === 'open' && d.supports.getSync === true) return d.getSync(key) as T | undefined
  return d.get(key) as Promise<T | undefined>
}
