"""Runs the sandbox's Python prelude (src/engine/sandbox/python-prelude.py) in this CPython process
as the worker runs it in Pyodide: executed once in a private namespace, then `prepare` and `invoke`
called for each case read as JSON from stdin (one interpreter, cases in order, as one tenant's
calls), the answers printed as one JSON line. An interrupter thread does what the worker's does
(python-interpreter.ts): armed with a call's deadline, it interrupts the main thread every 20 ms
once the deadline has passed, until the call returns.

The prelude installs an audit hook that cannot be removed, so it runs here, in a process of its
own, never inside pytest.
"""
import _thread
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
armed = [None]  # the deadline (time.monotonic) of the running call, None while disarmed


def host_wait(ms):
    real_sleep(ms / 1000.0)


def interrupter():
    while True:
        deadline = armed[0]
        if deadline is not None and time.monotonic() >= deadline:
            _thread.interrupt_main()
        real_sleep(0.02)


namespace = {'_host_wait': host_wait}
exec(compile(prelude, '<svc-prelude>', 'exec'), namespace)
prepare, invoke = namespace['prepare'], namespace['invoke']
threading.Thread(target=interrupter, daemon=True).start()
instances = {}
answers = []
for case in cases:
    code = prepare(case['source'])
    if isinstance(code, str):
        answers.append(loads(code))
        continue
    instance = instances.setdefault(case['warm'], {}) if case.get('warm') else None
    timeout_ms = case.get('timeout_ms', 5000)
    armed[0] = time.monotonic() + timeout_ms / 1000.0
    answer = invoke(code, case['name'], dumps(case.get('args', {})), '', None,
                    timeout_ms, case.get('max_log_bytes', 4096), instance, case.get('restore', True))
    armed[0] = None
    answers.append({'ok': True, 'json': answer[1:], 'compact': True} if answer.startswith('S') else loads(answer))
out.write(dumps(answers) + '\n')
out.flush()
