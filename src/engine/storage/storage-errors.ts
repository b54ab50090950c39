import { SvcError } from '../../core/errors.js'

/**
 * The data directory holds another data format than this code reads. A newer format means a newer
 * svc-node wrote it (never downgrade in place: restore a backup made by this version instead); an
 * older one means a migration this version does not have.
 */
export class DataFormatMismatch extends SvcError {
  readonly stored: unknown
  readonly expected: number

  constructor(stored: unknown, expected: number) {
    const newer = typeof stored === 'number' && stored > expected
    super(
      'INTERNAL_ERROR',
      `data directory holds data format ${String(stored)}; this svc-node reads format ${expected}` +
        (newer ? ' (a newer svc-node wrote it: run that version, or restore a backup made by this one)' : ' (no migration from that format exists)'),
      { details: { stored, expected, reason: newer ? 'data_format_newer' : 'data_format_unknown' } },
    )
    this.stored = stored
    this.expected = expected
  }
}

/** Files of the LevelDB directory that fail their checks before it is opened (see leveldb-files.ts). */
export class StorageCorrupted extends SvcError {
  readonly problems: ReadonlyArray<{ file: string; problem: string }>

  constructor(location: string, problems: ReadonlyArray<{ file: string; problem: string }>) {
    super('INTERNAL_ERROR', `the database in ${location} is corrupted: ${problems.map((p) => `${p.file}: ${p.problem}`).join('; ')}`, {
      details: { location, problems, reason: 'storage_corrupted' },
    })
    this.problems = problems
  }
}
