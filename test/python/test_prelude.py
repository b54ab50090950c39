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
