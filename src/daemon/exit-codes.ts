/**
 * How `svc-node start` ends, one code per cause an operator (or a supervisor such as systemd)
 * must tell apart. 3–8 are conditions a restart cannot fix: a supervisor should not restart on them
 * (systemd: `RestartPreventExitStatus=2 3 4 5 6 7 8`), so a broken data directory never becomes a
 * crash loop. The README's runbook says what to do for each.
 */
export const EXIT_CODES = {
  /** stopped on SIGINT/SIGTERM after draining */
  stopped: 0,
  /** failed to start for another reason (e.g. the port is taken), or a second signal */
  failed: 1,
  /** the configuration is invalid (the message names the key) */
  config_invalid: 2,
  /** the data directory cannot be created or written (permissions, a read-only file system) */
  data_dir_not_writable: 3,
  /** another process (a running node, `svc keys create --admin`) holds the data directory */
  data_dir_in_use: 4,
  /** the database's files fail their checks: refused rather than opened with data silently dropped */
  data_corrupted: 5,
  /** the data directory holds a data format this version does not read (written by a newer one) */
  data_format_mismatch: 6,
  /** no space left on the data directory's file system to open the database */
  disk_full: 7,
  /**
   * execution.os_isolation is `required` and no OS wall for the sandbox workers works on this host,
   * or execution.cgroups is `required` and the workers cannot be put in cgroups here
   */
  sandbox_isolation_unavailable: 8,
  /**
   * stopped on SIGINT/SIGTERM at the end of its shutdown grace (server.shutdown_grace_ms) without
   * writing everything (typically a full disk): the `stop incomplete` log line counts the execution
   * records, audit entries and statistics lost. A restart is safe (not in the list above)
   */
  stop_incomplete: 9,
} as const

export type ExitReason = keyof typeof EXIT_CODES
