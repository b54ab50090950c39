"""The sandbox's Python prelude (src/engine/sandbox/python-prelude.py) under CPython: what it
answers for each kind of call, and the guards it installs. The worker runs the same file in
Pyodide (test/engine/sandbox/python-*.test.ts cover that path); here each interpreter is a
subprocess (prelude_harness.py), since the prelude's audit hook cannot be removed once installed.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PRELUDE = HERE.parent.parent / 'src' / 'engine' / 'sandbox' / 'python-prelude.py'


def run_calls(cases):
    """One interpreter, the cases as consecutive calls of one tenant; the answers in order."""
    done = subprocess.run([sys.executable, str(HERE / 'prelude_harness.py'), str(PRELUDE)], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout)
    assert len(answers) == len(cases)
    return answers


def call(source, name, args=None, **options):
    return run_calls([{'source': source, 'name': name, 'args': args or {}, **options}])[0]


def test_a_call_answers_its_result_compactly():
    assert call('def add(a, b):\n    return a + b\n', 'add', {'a': 1, 'b': 2}) == {'ok': True, 'json': '3', 'compact': True, 'interrupted': False}


def test_output_is_captured_with_the_result():
    answer = call("def greet(who):\n    print('hi', who)\n    print('careful', file=__import__('sys').stderr)\n    return who\n", 'greet', {'who': 'ada'})
    assert answer['ok'] is True and answer['json'] == '"ada"'
    assert [(level, text) for level, text, _ in answer['lines']] == [('log', 'hi ada'), ('error', 'careful')]


def test_output_beyond_the_limit_is_truncated():
    answer = call("def chatty():\n    for i in range(1000):\n        print('x' * 50)\n    return 1\n", 'chatty', max_log_bytes=256)
    assert answer['ok'] is True and answer['truncated'] is True
    assert answer['used'] <= 256


@pytest.mark.parametrize('source, name, args, kind', [
    ('def broken(:\n    pass\n', 'broken', {}, 'syntax'),
    ('def f():\n    return 1\n', 'g', {}, 'missing'),
    ('def add(a, b):\n    return a + b\n', 'add', {'a': 1}, 'args'),
    ('def add(a, b):\n    return a + b\n', 'add', {'a': 1, 'b': 2, 'c': 3}, 'args'),
    ('def f():\n    return {1, 2}\n', 'f', {}, 'result'),
    ("def f():\n    return float('nan')\n", 'f', {}, 'result'),
    ("def f():\n    raise ValueError('boom')\n", 'f', {}, 'threw'),
    ("raise RuntimeError('at import')\ndef f():\n    return 1\n", 'f', {}, 'load'),
    # a coroutine that waits for something: nothing could ever resume it
    ("class Later:\n    def __await__(self):\n        yield 'pending'\nasync def f():\n    await Later()\n", 'f', {}, 'unsupported'),
])
def test_each_failure_has_its_kind(source, name, args, kind):
    answer = call(source, name, args)
    assert answer.get('ok') is not True
    assert answer['kind'] == kind


def test_a_coroutine_that_awaits_nothing_runs():
    assert call('async def f(a):\n    return a * 2\n', 'f', {'a': 21})['json'] == '42'


def test_a_thrown_error_shows_the_functions_frames_not_the_preludes():
    answer = call("def f():\n    raise ValueError('boom')\n", 'f')
    assert answer['error']['name'] == 'ValueError' and answer['error']['message'] == 'boom'
    assert 'function.py' in answer['error']['stack']
    assert '<svc-prelude>' not in answer['error']['stack']


def test_an_endless_loop_and_a_long_sleep_end_at_the_deadline_and_the_interpreter_serves_on():
    spin, nap, after = run_calls([
        {'source': 'def spin():\n    while True:\n        pass\n', 'name': 'spin', 'timeout_ms': 200},
        {'source': 'def nap():\n    import time\n    time.sleep(30)\n', 'name': 'nap', 'timeout_ms': 200},
        {'source': 'def ok():\n    return 1\n', 'name': 'ok'},
    ])
    # the envelope says the call was interrupted; the worker names the limit it stopped it at
    assert spin['kind'] == 'interrupted' and nap['kind'] == 'interrupted'
    assert spin['interrupted'] and nap['interrupted']
    assert after['json'] == '1'


@pytest.mark.parametrize('body, message', [
    ("import os\n    return os.system('true')", "'os.system' is not permitted"),
    ("import subprocess\n    return subprocess.run(['true']).returncode", 'is not permitted'),
    ("import socket\n    return socket.socket()", "'socket.__new__' is not permitted"),
    ("import ctypes\n    return 1", "module 'ctypes' is not available in the sandbox"),
    ("import js\n    return 1", "module 'js' is not available in the sandbox"),
    ("open('VICTIM', 'w')\n    return 1", "writing 'VICTIM' is not permitted"),
    ("import os\n    os.mkdir('VICTIM-dir')\n    return 1", "is not permitted in the sandbox (only under /tmp)"),
    ("import sys\n    return sys._getframe(1).f_code.co_filename", "the sandbox's own frames are not accessible"),
])
def test_the_guards_refuse(body, message):
    # a path of this run only: what an earlier run (or a guard that failed then) left cannot decide
    victim = f'/var/tmp/svc-prelude-test-{os.getpid()}'
    try:
        answer = call(f"def f():\n    {body.replace('VICTIM', victim)}\n", 'f')
        assert answer.get('ok') is not True, answer
        assert message.replace('VICTIM', victim) in answer['error']['message']
        assert not os.path.exists(victim) and not os.path.exists(f'{victim}-dir')
    finally:
        if os.path.isfile(victim):
            os.remove(victim)
        if os.path.isdir(f'{victim}-dir'):
            os.rmdir(f'{victim}-dir')


def test_a_function_cannot_add_an_audit_hook():
    # CPython drops the refused hook without raising: the function's hook never sees an event
    source = "def f():\n    import sys\n    seen = []\n    sys.addaudithook(lambda event, args: seen.append(event))\n    compile('1', 'x', 'eval')\n    return len(seen)\n"
    assert call(source, 'f')['json'] == '0'


def test_writing_under_tmp_is_allowed():
    path = f'/tmp/svc-prelude-test-{os.getpid()}'
    source = f"def f():\n    import os\n    with open('{path}', 'w') as out:\n        out.write('x')\n    os.remove('{path}')\n    return 'written'\n"
    assert call(source, 'f')['json'] == '"written"'


def test_a_call_does_not_see_what_another_function_changed():
    taint, clean, env = run_calls([
        {'source': "import os\ndef taint():\n    import json\n    json.dumps = lambda *a, **k: 'tainted'\n    os.environ['SVC_TAINT'] = '1'\n    return 1\n", 'name': 'taint'},
        {'source': "def clean():\n    import json\n    return json.dumps([1])\n", 'name': 'clean'},
        {'source': "import os\ndef env():\n    return os.environ.get('SVC_TAINT')\n", 'name': 'env'},
    ])
    assert taint['json'] == '1'
    assert clean['json'] == '"[1]"'
    assert env['json'] == 'null'


def test_a_warm_function_keeps_its_globals_between_its_own_calls_and_loads_again_after_a_restore():
    counter = 'n = [0]\ndef count():\n    n[0] += 1\n    return n[0]\n'
    first, second, restored = run_calls([
        {'source': counter, 'name': 'count', 'warm': 'w'},
        {'source': counter, 'name': 'count', 'warm': 'w', 'restore': False},
        {'source': counter, 'name': 'count', 'warm': 'w', 'restore': True},
    ])
    assert (first['json'], second['json'], restored['json']) == ('1', '2', '1')


# ---- guards out of reach (issue 27, item 7) ----
# Each route a function has to the prelude's namespace is used to switch off every flag it can
# find there; the guards must not care. (Routes that need Python 3.13 or the worker — the audit
# hook's frame, the SIGINT handler, sys.monitoring — are tested through the worker:
# test/engine/sandbox/python-guards.test.ts.)

SPOIL = '''
def spoil(g):
    if type(g) is not dict:
        return 'no namespace'
    for k in list(g):
        v = g[k]
        if type(v) is list and len(v) == 1:
            v[0] = float('inf') if isinstance(v[0], float) else False
    g['_BLOCKED'] = frozenset()
    return 'spoiled'
'''

ROUTES = {
    'a method of sys.stdout (the known route)': 'g = sys.stdout.write.__func__.__globals__',
    'time.sleep': "g = getattr(time.sleep, '__globals__', None)",
    'sys.setrecursionlimit': "g = getattr(sys.setrecursionlimit, '__globals__', None)",
    'builtins.__import__': "g = getattr(builtins.__import__, '__globals__', None)",
    'the import finder in sys.meta_path': 'g = sys.meta_path[0].find_spec.__globals__',
    'the SIGINT handler': "g = getattr(signal.getsignal(signal.SIGINT), '__globals__', None)",
    'the frame under the call': 'g = sys._getframe(0).f_back.f_globals',
    'a traceback through a prelude function': "try:\n        time.sleep('x')\n    except ValueError as e:\n        g = e.__traceback__.tb_next.tb_frame.f_globals",
    'a trace function': "seen = []\n    def tracer(frame, event, arg):\n        if frame.f_code.co_filename == '<svc-prelude>':\n            seen.append(frame.f_globals)\n    sys.settrace(tracer)\n    time.sleep(0)\n    sys.settrace(None)\n    g = seen[0] if seen else None",
    'a profile function': "seen = []\n    def profiler(frame, event, arg):\n        if frame.f_code.co_filename == '<svc-prelude>':\n            seen.append(frame.f_globals)\n    sys.setprofile(profiler)\n    time.sleep(0)\n    sys.setprofile(None)\n    g = seen[0] if seen else None",
}


def tampering(route, then):
    return f"import sys, time, signal, builtins, gc\n{SPOIL}\ndef f():\n    g = None\n    {ROUTES[route]}\n    spoil(g)\n    {then}\n"


@pytest.mark.parametrize('route', sorted(ROUTES))
def test_no_route_to_the_namespace_switches_the_import_guard_off(route):
    answer = call(tampering(route, 'import ctypes\n    return "imported"'), 'f')
    assert answer.get('ok') is not True, answer
    assert "module 'ctypes' is not available in the sandbox" in answer['error']['message']


@pytest.mark.parametrize('route', sorted(ROUTES))
def test_no_route_to_the_namespace_lets_gc_introspection_through(route):
    answer = call(tampering(route, 'gc.get_objects()\n    return "allowed"'), 'f')
    assert answer.get('ok') is not True, answer
    assert "'gc.get_objects' is not permitted" in answer['error']['message']


def test_the_interrupt_ends_an_endless_loop_after_the_known_route_was_taken():
    spin, after = run_calls([
        {'source': tampering('a method of sys.stdout (the known route)', 'while True:\n        pass'), 'name': 'f', 'timeout_ms': 200},
        {'source': 'def ok():\n    return 1\n', 'name': 'ok'},
    ])
    assert spin.get('kind') in ('interrupted', 'timeout'), spin
    assert after['json'] == '1'


def test_no_prelude_function_holds_a_closure_cell():
    # cells are writable (cell_contents): nothing a guard or the worker's calls read may live in one
    source = ("import sys\ndef f():\n    g = sys._getframe(0).f_back.f_globals\n    found = []\n"
              "    for k, v in list(g.items()):\n        for fn in [v] + [m for m in getattr(v, '__dict__', {}).values()] if isinstance(v, type) else [v]:\n"
              "            fn = getattr(fn, '__func__', fn)\n            code = getattr(fn, '__code__', None)\n            if type(code).__name__ == 'code' and code.co_filename == '<svc-prelude>' and fn.__closure__:\n                found.append(k)\n    return sorted(set(found))\n")
    assert call(source, 'f')['json'] == '[]'
