"""Runs the sandbox's Python prelude (src/engine/sandbox/python-prelude.py) in this CPython process
as the worker runs it in Pyodide: executed once in a private namespace, then `prepare` and, for
each call, `call` and `finish` called for each case read as JSON from stdin (one
interpreter, cases in order, as one tenant's calls), the answers printed as one JSON line.

What the worker does around a call is done here too: before it, the prelude's namespace (and,
when the call restores, the builtins) are put back from copies the harness took after loading;
an interrupter thread armed with the call's deadline interrupts the main thread every 20 ms once
the deadline has passed, and the SIGINT handler (the prelude installs the harness's `gate` in
place of signal.default_int_handler) raises KeyboardInterrupt only while `call` (the call's own
code) runs — the worker's gate (python-interpreter.ts) does the same. (The gate also puts the
handler back before each interrupt; a thread cannot do that under CPython, so that part is tested
through the worker.)

The prelude installs an audit hook that cannot be removed, so it runs here, in a process of its
own, never inside pytest.
"""
import _thread
import builtins
import json
import sys
import threading
import time

prelude_file = sys.argv[1]
with open(prelude_file, encoding='utf-8') as f:
    prelude = f.read()
# the harness's own JSON functions, bound before any call can replace the json module's
dumps, loads = json.dumps, json.loads
cases = loads(sys.stdin.read())
out = sys.stdout
real_sleep = time.sleep
monotonic = time.monotonic
armed = [None]  # the deadline (time.monotonic) of the running call, None while disarmed
in_run = [False]  # the call's own code is running (the worker's gate: 'user' phase)
fired = [False]


def host_wait(ms):
    real_sleep(ms / 1000.0)


def interrupter():
    while True:
        deadline = armed[0]
        if deadline is not None and in_run[0] and monotonic() >= deadline:
            fired[0] = True
            _thread.interrupt_main()
        real_sleep(0.02)


def gate(signum, frame):
    # the worker's gate delivers an interrupt only into the call's own code
    if in_run[0]:
        raise KeyboardInterrupt


namespace = {'_host_wait': host_wait}
exec(compile(prelude, '<svc-prelude>', 'exec'), namespace)
namespace['_default_int_handler'] = gate
namespace_copy = dict(namespace)
builtins_copy = dict(builtins.__dict__)
prepare, call, finish = namespace['prepare'], namespace['call'], namespace['finish']
threading.Thread(target=interrupter, daemon=True).start()
instances = {}
answers = []
state = {}
for case in cases:
    code = prepare(case['source'])
    if isinstance(code, str):
        answers.append(loads(code))
        continue
    instance = instances.setdefault(case['warm'], {}) if case.get('warm') else None
    restore = case.get('restore', True)
    timeout_ms = case.get('timeout_ms', 5000)
    namespace.clear()
    namespace.update(namespace_copy)
    if restore:
        builtins.__dict__.clear()
        builtins.__dict__.update(builtins_copy)
    fired[0] = False
    armed[0] = monotonic() + timeout_ms / 1000.0
    in_run[0] = True
    try:
        call(state, code, dumps(case.get('args', {})), case['name'], '', None, case.get('max_log_bytes', 4096), instance, restore)
    finally:
        in_run[0] = False
    namespace.clear()
    namespace.update(namespace_copy)
    answer = finish(state, fired[0])
    armed[0] = None
    parsed = {'ok': True, 'json': answer[1:], 'compact': True} if answer.startswith('S') else loads(answer)
    parsed['interrupted'] = fired[0]
    answers.append(parsed)
out.write(dumps(answers) + '\n')
out.flush()
