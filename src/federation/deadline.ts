/** a deadline whose timer fired this much later than due (at least; see `lateSlackMs`) was held up by this process, not by the peer */
const MIN_SLACK_MS = 250
const MAX_SLACK_MS = 1_000
/** how many times one deadline is given its full length again (each only after a late firing) */
const MAX_EXTENSIONS = 4

/** How late a `timeoutMs` timer may fire before the lateness counts as this process's stall. */
export function lateSlackMs(timeoutMs: number): number {
  return Math.min(MAX_SLACK_MS, Math.max(MIN_SLACK_MS, timeoutMs / 4))
}

/**
 * An AbortSignal that aborts with a TimeoutError `timeoutMs` after now, as `AbortSignal.timeout`
 * does, unless its timer fires late: then this process was not running meanwhile (frozen by
 * SIGSTOP, a paused VM, a long GC or a blocked event loop) and whatever the other side sent is
 * still unread in the socket, so the wait starts again for `timeoutMs` (at most MAX_EXTENSIONS
 * times). A peer cannot make this process's timers late: one that stays silent is timed out as
 * before. Without this a member frozen while its membership exchange was in flight refused the
 * peer it was talking to when it resumed (its own deadline had passed), and both stayed apart for
 * the whole refusal back-off (found by the netns fault suite: SIGSTOP of a member, then 2001 for
 * code the refused peer held).
 */
export function stallAwareTimeout(timeoutMs: number): AbortSignal {
  const controller = new AbortController()
  const slack = lateSlackMs(timeoutMs)
  let extensions = 0
  const arm = (): void => {
    const due = Date.now() + timeoutMs
    const timer = setTimeout(() => {
      if (Date.now() - due > slack && extensions < MAX_EXTENSIONS) {
        extensions++
        arm()
        return
      }
      controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))
    }, timeoutMs)
    timer.unref()
  }
  arm()
  return controller.signal
}
