# The svc sandbox's Python prelude (src/engine/sandbox/python-prelude.py; read by python-interpreter.ts,
# copied beside it into dist/ by the build, exercised by test/python/test_prelude.py under CPython).
#
# Python run once in every fresh Pyodide interpreter, in a private namespace (not `__main__`, not
# in `sys.modules`). It hardens the interpreter and defines what the worker calls:
#
# - `prepare(source)` compiles a function's source: the code object (the worker keeps it per key),
#   or the JSON of `{ kind: 'syntax', message }`.
# - a call is two calls from the worker, passing the same `state` dict (the worker's):
#   `call(state, code, args_json, name, site, stash, max_log_bytes, instance, restore, seed)`
#   restores the interpreter (below), captures the standard streams and runs the call's own code —
#   loading the source, binding the arguments, the call, its coroutine, encoding the result —,
#   records what happened in `state`, raises nothing and returns whether the restore completed;
#   `finish(state, limited)` returns the JSON envelope `{ ok, json?, kind?, error?, lines, used,
#   truncated }` (a success without output: `S` followed by the result's JSON), where `kind` is
#   `missing` | `args` | `threw` | `load` | `result` | `interrupted` | `memory` | `unsupported` |
#   `internal`, and puts back what the call changed of `sys.modules`, `sys.path` and the streams.
#   `instance` is the dict the worker keeps for a warm function (its module globals and function,
#   reused by its next call when no other function ran in between; emptied when a call loads
#   nothing or ends at a limit), None for a call in fresh globals; `restore` is False when the
#   previous call of the interpreter was this same warm function (see below); `limited`: the
#   worker interrupted the call at its time or CPU limit.
# - `install(staging, wheels_json)` unpacks wheels under /tmp (the worker moves the directory into
#   /lib/svc-deps, where calls cannot write); `forget_site(site)` after the worker removed one.
#
# Guards. None of them relies on state Python code can reach or change (issue 27): a function can
# get hold of this namespace (any prelude function's `__globals__`, the frame under its call, a
# traceback, a trace function…) and rebind or empty it — the worker restores it from its own copy
# before `call` and before `finish`, and nothing in it switches a guard.
# - The audit hook (`_audit`, installed last and referenced by nothing but the interpreter) refuses
#   process, socket, ctypes, gc-introspection and audit-hook events, the import of `js`,
#   `pyodide_js`, `pyodide*`, `_pyodide*`, `ctypes` and `micropip` (which are out of `sys.modules`
#   for good) and the execution of their code, the prelude's frames to `sys._getframe`, writes
#   outside /tmp and /home/pyodide, directory descriptors elsewhere, and changing the code or
#   defaults of functions the call did not define — always, not while a flag says so. It holds no
#   state: the sets it checks are constants of its code, the rest default arguments; no closure
#   cells (writable), no globals; it checks its arguments' types exactly and calls none of their
#   methods (a path that is neither str nor bytes nor int is converted by its own `__fspath__`,
#   which can mislead that one check, as it could mislead the operation itself).
# - Interrupts (the time and CPU limits) are decided by the worker: it delivers SIGINT only while
#   `call` runs (or, when code the call left made `finish` run long past the limit, there), after
#   putting `signal.default_int_handler` back as the handler through `_signal.signal`
#   it holds itself; whatever handler a function installs is replaced when it matters. A function
#   still running 250 ms after the interrupt loses its interpreter (python-interpreter.ts).
# - `time.sleep` waits in short interruptible host waits; the recursion limit is capped.
#
# Between calls of one scope (scopes never share an interpreter: python-runtime.ts keeps one per
# scope, so nothing below is a boundary between tenants): before each call the worker restores
# this namespace from its own copy (a C-level dict operation). When the previous call of the
# interpreter was the same warm function (the default context mode), that is all that is restored
# besides what the limits rely on (streams, hooks, trace and profile functions, recursion and
# int-digit limits, the SIGINT handler, the environment, `sys.path`, `sys.meta_path`, the blocked
# modules): the function sees what its own earlier calls left, as in a warm process. Otherwise
# (another function ran in between, or the function asks for a fresh context) the function's
# module is loaded again in fresh globals, the worker also restores the builtins from its copy,
# and `_enter` restores the attributes of the commonly used stdlib modules
# (`_PROTECTED_MODULE_NAMES`), the json and logging classes and the prelude's classes,
# `sys.modules` (the baseline; modules a call imported are discarded after it, except a dependency
# set's, kept per set), `sys` attributes, standard streams, hooks, recursion and int-digit limits,
# the SIGINT handler, environment, logging handlers and loggers, warning filters, the `re` caches,
# gc callbacks, debug flags and garbage, and `sys.monitoring` tools. After each call the worker
# empties /tmp and /home/pyodide and resets the working directory. Not reset: attributes of
# stdlib modules outside that list, attributes of stdlib classes other than those named, contents
# of other mutable stdlib containers and C-level registries (codecs, copyreg), and an object
# planted in a protected module with an `__eq__` that lies about equality. A deliberately hostile
# function can reach these and affect later calls of its own scope on the same worker; it reaches
# no other scope's interpreter, no guard and nothing of the host. Code of a function that runs
# while the interpreter is restored or put back (a `__del__`, an `__eq__`, a trace function it
# left) is interrupted like the call's own once the call is past its limit, and the interpreter is
# then replaced.
import builtins, sys, os, io, json, time, signal, _signal, inspect, importlib, traceback, operator, gc, types, posix, zipfile, shutil
import json.encoder, json.decoder, json.scanner
# in the baseline modules, so that a function's "import random" is this module (deterministic calls seed it)
import random as _random_module

_FILENAME = 'function.py'
_PRELUDE_FILE = '<svc-prelude>'
_HOME = '/home/pyodide'
_BLOCKED = frozenset(('js', 'pyodide_js', 'pyodide', '_pyodide', '_pyodide_core', 'micropip', 'pyodide_http', 'ctypes', '_ctypes'))

# The audit hook, installed last (when the baseline is taken): the guards that hold whatever a call
# does. Nothing in it can be changed from Python: it is referenced by nothing but the interpreter (no
# function, frame, module or gc route leads to it), it has no closure cells (they are writable) and
# no globals (a frame's f_globals is a live dict); the sets it checks are constants of its code, and
# every name it uses is a default argument bound here (a frame's f_locals can rebind those only for
# the rest of that one event). It checks the types of the event's arguments exactly and calls no
# method of them, so no function's code runs inside it while it decides (the one exception: a path
# argument that is neither str nor bytes nor int is converted with its own __fspath__, which can
# only mislead that one path check). CPython runs audit hooks with tracing off.
def _absolute(path, *, _type=type, _str=str, _bytes=bytes, _issubclass=issubclass, _fspath=posix.fspath,
              _str_copy=str.__str__, _bytes_copy=bytes.__bytes__, _getcwd=posix.getcwd):
    kind = _type(path)
    if kind is not _str and kind is not _bytes:
        if not (_issubclass(kind, _str) or _issubclass(kind, _bytes)):
            path = _fspath(path)
            kind = _type(path)
        path = _str_copy(path) if _issubclass(kind, _str) else _bytes_copy(path)
    if _type(path) is _bytes:
        path = path.decode('utf-8', 'surrogateescape')
    if not path.startswith('/'):
        path = _getcwd() + '/' + path
    parts = []
    for part in path.split('/'):
        if part == '' or part == '.':
            continue
        if part == '..':
            if parts:
                parts.pop()
        else:
            parts.append(part)
    return '/' + '/'.join(parts)

def _writable(path, *, _type=type, _int=int, _bool=bool, _absolute=_absolute):
    if _type(path) is _int or _type(path) is _bool:
        return False
    full = _absolute(path)
    return (full == '/dev/null' or full == '/tmp' or full.startswith('/tmp/')
            or full == '/home/pyodide' or full.startswith('/home/pyodide/'))

def _audit(event, args, *, _type=type, _str=str, _int=int, _len=len, _str_copy=str.__str__,
           _function=types.FunctionType, _code=types.CodeType, _frame=types.FrameType, _stat=posix.stat,
           _absolute=_absolute, _writable=_writable, _OSError=OSError,
           _PermissionError=PermissionError, _ImportError=ImportError,
           _write_flags=os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND):
    # (the event is always an exact str made by the interpreter; the most frequent ones first)
    if event == 'object.__getattr__' or event == 'compile':
        return
    if event == 'object.__setattr__' or event == 'object.__delattr__':
        target = args[0]
        if (_type(target) is _function and args[1] in {'__code__', '__defaults__', '__kwdefaults__'}
                and target.__code__.co_filename != 'function.py'):
            raise _PermissionError(f"changing '{args[1]}' of a function the call did not define is not permitted in the sandbox")
        return
    if event == 'exec':
        code = args[0]
        if _type(code) is _code and code.co_filename.startswith(
                ('/lib/python313.zip/pyodide/', '/lib/python313.zip/_pyodide/', '/lib/python313.zip/ctypes/',
                 '/lib/python3.13/site-packages/pyodide/', '/lib/python3.13/site-packages/_pyodide/',
                 '/lib/python3.13/site-packages/micropip/', '/lib/python3.13/site-packages/pyodide_http/')):
            raise _ImportError(f"loading '{code.co_filename}' is not permitted in the sandbox")
        return
    if event == 'import':
        name = args[0]
        if _type(name) is not _str:
            name = _str_copy(name)
        if name.partition('.')[0] in {'js', 'pyodide_js', 'pyodide', '_pyodide', '_pyodide_core', 'micropip',
                                      'pyodide_http', 'ctypes', '_ctypes'}:
            raise _ImportError(f"module '{name}' is not available in the sandbox")
        return
    if event == 'sys._getframe':
        frame = args[0]
        if _type(frame) is _frame and frame.f_code.co_filename == '<svc-prelude>':
            raise _PermissionError("the sandbox's own frames are not accessible")
        return
    if event in {'os.system', 'os.exec', 'os.posix_spawn', 'os.spawn', 'os.fork', 'os.forkpty', 'os.kill',
                 'os.killpg', 'os.symlink', 'os.link', 'os.chroot', 'os.mknod', 'os.mkfifo', 'os.add_dll_directory',
                 'os.startfile', 'subprocess.Popen', 'pty.spawn', 'webbrowser.open', 'sys.addaudithook',
                 'gc.get_objects', 'gc.get_referrers', 'gc.get_referents', 'sys._current_frames',
                 'sys._current_exceptions', 'socket.__new__', 'socket.bind', 'socket.connect', 'socket.getaddrinfo',
                 'socket.gethostbyname', 'socket.gethostbyaddr', 'socket.gethostname', 'socket.sethostname',
                 'socket.getnameinfo', 'socket.getservbyname', 'socket.getservbyport', 'socket.sendmsg',
                 'socket.sendto', 'sys.remote_exec', 'cpython.remote_debugger_script'} \
            or event.startswith(('ctypes.', '_posixsubprocess')):
        raise _PermissionError(f"'{event}' is not permitted in the sandbox")
    if event == 'open':
        path, mode, flags = args
        if _type(path) is _int:
            return
        if _type(mode) is _str:
            writing = 'w' in mode or 'a' in mode or 'x' in mode or '+' in mode
        else:
            writing = (_type(flags) is _int and (flags & _write_flags) != 0) or _type(flags) is not _int
        if writing:
            if not _writable(path):
                raise _PermissionError(f"writing '{_absolute(path)}' is not permitted in the sandbox (only under /tmp)")
        elif mode is None and not _writable(path):
            # a directory descriptor would let dir_fd-relative calls write anywhere
            try:
                is_dir = (_stat(_absolute(path)).st_mode & 0o170000) == 0o040000
            except _OSError:
                is_dir = False
            if is_dir:
                raise _PermissionError(f"opening the directory '{_absolute(path)}' as a descriptor is not permitted in the sandbox")
        return
    if event in {'os.remove', 'os.rmdir', 'os.mkdir', 'os.chmod', 'os.chown', 'os.truncate', 'os.utime', 'os.chflags',
                 'os.lchflags', 'os.setxattr', 'os.removexattr', 'shutil.rmtree', 'shutil.chown', 'shutil.make_archive'}:
        checked = (0,)
    elif event in {'os.rename', 'shutil.move'}:
        checked = (0, 1)
    elif event in {'shutil.copyfile', 'shutil.copymode', 'shutil.copystat', 'shutil.copytree', 'shutil.unpack_archive'}:
        checked = (1,)
    else:
        return
    for i in checked:
        if i < _len(args) and args[i] is not None and not _writable(args[i]):
            raise _PermissionError(f"'{event}' on '{_absolute(args[i])}' is not permitted in the sandbox (only under /tmp)")

sys.dont_write_bytecode = True
sys.dont_write_bytecode = True

class _BlockedFinder:
    # the same refusal for importlib's own machinery (the audit hook refuses the import event too)
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition('.')[0] in _BLOCKED:
            raise ImportError(f"module '{name}' is not available in the sandbox", name=name)
        return None

sys.meta_path.insert(0, _BlockedFinder)

# The worker delivers its interrupt (the time or CPU limit) as SIGINT, only while the call's code
# runs, and puts this stateless builtin back as the handler each time before it does: whatever a
# function installs for SIGINT (signal.signal, a fresh _signal module) is replaced when it matters.
_SIGINT = int(signal.SIGINT)
_default_int_handler = signal.default_int_handler
_set_signal_handler = _signal.signal
_get_signal_handler = _signal.getsignal
_set_signal_handler(_SIGINT, _default_int_handler)

def _no_scheduling(*args, **kwargs):
    raise RuntimeError('Python functions run without an event loop: nothing can be scheduled')

# WebLoop's timer is a JS function: no Python code may be scheduled to run between calls
_webloop = sys.modules.get('pyodide.webloop')
if _webloop is not None and hasattr(_webloop, 'scheduleCallback'):
    _webloop.scheduleCallback = _no_scheduling
del _webloop

# time.sleep in WebAssembly spins and cannot be interrupted: sleep in short host waits instead,
# letting time.sleep(0) check the interrupt buffer between them
_real_sleep = time.sleep
_monotonic = time.monotonic

def _sleep(secs):
    secs = float(secs)
    if secs != secs or secs < 0:
        raise ValueError('sleep length must be non-negative')
    end = _monotonic() + secs
    while True:
        left = end - _monotonic()
        if left <= 0:
            break
        _host_wait(min(left, 0.01) * 1000.0)
        _real_sleep(0)

time.sleep = _sleep

_real_setrecursionlimit = sys.setrecursionlimit
_MAX_RECURSION = max(sys.getrecursionlimit(), 2000)

def _setrecursionlimit(limit):
    # deeper Python recursion would overflow the stack the interpreter runs on
    if not isinstance(limit, int):
        raise TypeError('an integer is required')
    _real_setrecursionlimit(min(limit, _MAX_RECURSION))

sys.setrecursionlimit = _setrecursionlimit

# Commonly used stdlib modules are loaded now and their attributes are restored before every call
# (checking every module would cost milliseconds); a module a call imports beyond the baseline is
# discarded after that call.
_PROTECTED_MODULE_NAMES = (
    'builtins', 'sys', 'os', 'posixpath', 'io', 'time', 'signal', 'inspect', 'importlib', 'traceback', 'operator',
    'gc', 'types', 'shutil', 'zipfile', 'json', 'json.encoder', 'json.decoder', 'json.scanner',
    'abc', 'base64', 'bisect', 'calendar', 'collections', 'collections.abc', 'contextlib', 'copy', 'csv',
    'dataclasses', 'datetime', 'decimal', 'enum', 'fractions', 'functools', 'hashlib', 'heapq', 'itertools',
    'logging', 'math', 'numbers', 'random', 're', 'statistics', 'string', 'struct', 'textwrap', 'typing',
    'urllib.parse', 'uuid', 'warnings', 'weakref',
)
for _name in _PROTECTED_MODULE_NAMES:
    try:
        importlib.import_module(_name)
    except ImportError:
        pass
del _name

# ---- the baseline, restored before every call ----

_is = operator.is_
import collections as _collections
_deque = _collections.deque

def _drain(iterator):
    # runs an iterator of C calls to its end without a Python-level loop
    _deque(iterator, 0)
_MappingProxy = types.MappingProxyType

def _Frozen(d):
    # a dict's content as two plain tuples, so nothing can alter a snapshot
    return (tuple(d), tuple(d.values()))

def _same(live, snapshot):
    # Tuple comparison runs in C and takes identical items as equal without calling __eq__, so an
    # unchanged dict costs nanoseconds per entry. A changed entry is compared with ==: an object
    # planted with an __eq__ that claims equality passes (a per-entry identity check would cost
    # about a millisecond per call in WebAssembly; id() is itself an audit event).
    # (Keys are not compared: replacing a key changes the values' order unless it was the last one.)
    return len(live) == len(snapshot[0]) and snapshot[1] == tuple(live.values())

def _restore_dict(live, snapshot):
    if not _same(live, snapshot):
        live.clear()
        live.update(zip(snapshot[0], snapshot[1]))

def _restore_class(cls, snapshot):
    current = cls.__dict__
    if _same(current, snapshot):
        return
    names = snapshot[0]
    for name in [n for n in current if n not in names]:
        try:
            delattr(cls, name)
        except (AttributeError, TypeError):
            pass
    for name, value in zip(snapshot[0], snapshot[1]):
        if current.get(name, _restore_class) is not value and name not in ('__dict__', '__weakref__'):
            try:
                setattr(cls, name, value)
            except (AttributeError, TypeError):
                pass

_BASE_PATH = tuple(p for p in sys.path if p)
_env_data = os.environ._data
_env_snapshot = _MappingProxy(dict(_env_data))
_recursion_limit = sys.getrecursionlimit()
_int_max_str_digits = sys.get_int_max_str_digits()
_streams = (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__)
_hooks = (sys.displayhook, sys.excepthook, sys.breakpointhook, sys.unraisablehook)
_monitoring = getattr(sys, 'monitoring', None)
_MONITORING_EVENTS = tuple(getattr(_monitoring.events, n) for n in dir(_monitoring.events) if n.isupper() and n != 'NO_EVENTS') if _monitoring else ()

def _reset_monitoring():
    for tool in range(6):
        if _monitoring.get_tool(tool) is None:
            continue
        try:
            _monitoring.set_events(tool, 0)
            for event in _MONITORING_EVENTS:
                _monitoring.register_callback(tool, event, None)
            _monitoring.free_tool_id(tool)
        except Exception:
            pass

import logging, warnings, re
_logging_root = logging.root
_logging_handlers = tuple(logging.root.handlers)
_logging_level = logging.root.level
_logging_names = frozenset(logging.Logger.manager.loggerDict)
_logging_manager = logging.Logger.manager
_logger_class = logging.getLoggerClass()
_warning_filters = tuple(warnings.filters)
_re_caches = tuple(c for c in (getattr(re, '_cache', None), getattr(re, '_cache2', None)) if isinstance(c, dict))

def _reset_shared_state():
    # containers inside stdlib modules that module-level restoring does not reach
    root = _logging_root
    if not _same_list(root.handlers, _logging_handlers):
        root.handlers[:] = _logging_handlers
    if root.level != _logging_level:
        root.setLevel(_logging_level)
    loggers = _logging_manager.loggerDict
    if len(loggers) != len(_logging_names):
        for name in [n for n in loggers if n not in _logging_names]:
            del loggers[name]
    if _logging_manager.disable:
        _logging_manager.disable = 0
    if warnings.filters is not None and not _same_list(warnings.filters, _warning_filters):
        warnings.filters[:] = _warning_filters
        warnings._filters_mutated()
    for cache in _re_caches:
        if cache:
            cache.clear()
    if gc.callbacks:
        gc.callbacks.clear()
    if not gc.isenabled():
        gc.enable()
    if _gc_get_debug():
        _gc_set_debug(0)
    if _gc_garbage:
        _gc_garbage.clear()
    if _monitoring is not None:
        _reset_monitoring()

def _same_list(live, snapshot):
    return len(live) == len(snapshot) and all(map(_is, live, snapshot))

def _origin(mod):
    spec = getattr(mod, '__spec__', None)
    origin = getattr(spec, 'origin', None) if spec is not None else None
    if not isinstance(origin, str):
        origin = getattr(mod, '__file__', None)
    return origin if isinstance(origin, str) else None

_gettrace, _settrace, _getprofile, _setprofile = sys.gettrace, sys.settrace, sys.getprofile, sys.setprofile
_getrecursionlimit = sys.getrecursionlimit
_get_int_max_str_digits, _set_int_max_str_digits = sys.get_int_max_str_digits, sys.set_int_max_str_digits
_unsetenv, _putenv = os.unsetenv, os.putenv
_gc_get_debug, _gc_set_debug, _gc_garbage = gc.get_debug, gc.set_debug, gc.garbage

def _enter(site, stash, full=True):
    # Everything user code could have changed since the baseline, put back before it runs again.
    # (The worker restores this namespace and the builtins from its own copies first.) Not full:
    # the previous call of this interpreter was the same warm function, which sees the state its
    # own calls left; only what the prelude's limits rely on is put back. (The guards do not rely
    # on any of it: the audit hook and the worker's interrupt hold whatever a call changes.)
    modules = sys.modules
    if full:
        for live, snapshot in _snapshots:
            _restore_dict(live, snapshot)
        for cls, snapshot in _class_snapshots:
            _restore_class(cls, snapshot)
        _restore_dict(modules, _baseline_frozen)
    (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__) = _streams
    (sys.displayhook, sys.excepthook, sys.breakpointhook, sys.unraisablehook) = _hooks
    if _gettrace() is not None:
        _settrace(None)
    if _getprofile() is not None:
        _setprofile(None)
    if _getrecursionlimit() != _recursion_limit:
        _real_setrecursionlimit(_recursion_limit)
    if _get_int_max_str_digits() != _int_max_str_digits:
        _set_int_max_str_digits(_int_max_str_digits)
    if _get_signal_handler(_SIGINT) is not _default_int_handler:
        _set_signal_handler(_SIGINT, _default_int_handler)
    if os.environ._data is not _env_data or _env_data != _env_snapshot:
        os.environ._data = _env_data
        for key in [k for k in _env_data if k not in _env_snapshot]:
            _unsetenv(key)
        _env_data.clear()
        _env_data.update(_env_snapshot)
        for key, value in _env_snapshot.items():
            _putenv(key, value)
    if full:
        _reset_shared_state()
    meta_path = sys.meta_path
    if not _same_list(meta_path, _meta_path):
        meta_path[:] = _meta_path
    sys.path[:] = ([site] if site else []) + list(_BASE_PATH)
    _drain(map(modules.pop, _blocked_names, _no_defaults))
    if stash:
        modules.update(stash)

def _leave(site, stash, keep_deps):
    # keeps the dependency modules of this set (in the worker's stash for it), discards every
    # other module the call added
    modules = sys.modules
    prefix = site + '/' if site else None
    kept = {}
    untouched = _same(modules, _baseline_frozen)
    if not untouched and prefix and stash is not None and keep_deps:
        for name, mod in list(modules.items()):
            if _baseline_modules.get(name) is mod:
                continue
            origin = _origin(mod)
            if origin and origin.startswith(prefix):
                kept[name] = mod
    if not untouched:
        _restore_dict(modules, _baseline_frozen)
    if stash is not None:
        stash.clear()
        stash.update(kept)
    sys.path[:] = list(_BASE_PATH)
    (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__) = _streams

# ---- captured output ----

class _Capture:
    __slots__ = ('lines', 'used', 'cap', 'truncated')

    def __init__(self, cap):
        self.lines = []
        self.used = 0
        self.cap = cap
        self.truncated = False

    def add(self, level, text):
        if self.truncated:
            return
        data = text.encode('utf-8', 'surrogatepass')
        budget = self.cap - self.used - 1
        if budget >= len(data):
            self.used += len(data) + 1
            self.lines.append([level, text, time.time() * 1000])
            return
        if budget > 0:
            cut = data[:budget].decode('utf-8', 'ignore')
            if cut:
                self.lines.append([level, cut, time.time() * 1000])
        self.truncated = True

class _Stream(io.TextIOBase):
    def __init__(self, capture, level):
        self._capture = capture
        self._level = level
        self._pending = ''

    @property
    def encoding(self):
        return 'utf-8'

    @property
    def errors(self):
        return 'strict'

    def writable(self):
        return True

    def isatty(self):
        return False

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError(f'write() argument must be str, not {type(s).__name__}')
        if type(s) is not str:
            s = _str_copy(s)
        capture = self._capture
        if capture.truncated:
            return len(s)
        data = self._pending + s
        if '\n' in data:
            *complete, data = data.split('\n')
            for line in complete:
                capture.add(self._level, line)
        if len(data) > capture.cap:
            capture.add(self._level, data)
            data = ''
        self._pending = data
        return len(s)

    def finish(self):
        if self._pending:
            self._capture.add(self._level, self._pending)
            self._pending = ''

# ---- calls ----

class _ArgError(Exception):
    def __init__(self, message, **details):
        Exception.__init__(self, message)
        self.details = details

class _NotJson(Exception):
    pass

class _Encoder(json.JSONEncoder):
    def default(self, o, _NotJson=_NotJson, type=type):
        raise _NotJson(type(o).__name__)

_result_encoder = _Encoder(ensure_ascii=False, allow_nan=False, separators=(',', ':'))
_envelope_dumps = json.JSONEncoder(ensure_ascii=True, allow_nan=True, separators=(',', ':')).encode
_loads = json.JSONDecoder().decode
_P = inspect.Parameter
_POSITIONAL = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)

def _describe_params(params):
    out = []
    for p in params:
        if p.kind is _P.VAR_POSITIONAL:
            out.append('*' + p.name)
        elif p.kind is _P.VAR_KEYWORD:
            out.append('**' + p.name)
        else:
            out.append(p.name)
    return out

def _bind(fn, name, args):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    if isinstance(args, list):
        if sig is not None:
            try:
                sig.bind(*args)
            except TypeError as e:
                raise _ArgError(f"arguments do not match the signature {name}{sig}: {e}")
        return args, {}
    if sig is None:
        return [], dict(args)
    params = list(sig.parameters.values())
    named = {p.name for p in params if p.kind not in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD)}
    var_pos = next((p for p in params if p.kind is _P.VAR_POSITIONAL), None)
    var_kw = next((p for p in params if p.kind is _P.VAR_KEYWORD), None)
    rest = dict(args)
    spread = None
    if var_pos is not None and var_pos.name in rest and var_pos.name not in named:
        spread = rest.pop(var_pos.name)
        if not isinstance(spread, list):
            raise _ArgError(f"argument '{var_pos.name}' collects extra positional arguments and must be an array", parameters=_describe_params(params))
    if var_kw is None:
        unknown = [k for k in rest if k not in named]
        if unknown:
            listed = ', '.join(f"'{k}'" for k in unknown)
            declared = ', '.join(_describe_params(params)) or 'no parameters'
            raise _ArgError(
                f"unknown argument{'s' if len(unknown) > 1 else ''} {listed} (the signature declares {declared})",
                unknownArguments=unknown, parameters=_describe_params(params))
    positional = [p for p in params if p.kind in _POSITIONAL]
    last = len(positional) - 1 if spread is not None else -1
    if spread is None:
        for i, p in enumerate(positional):
            if p.kind is _P.POSITIONAL_ONLY and p.name in rest:
                last = i
    pos = []
    for i, p in enumerate(positional[:last + 1]):
        if p.name in rest:
            pos.append(rest.pop(p.name))
        elif p.default is not _P.empty:
            pos.append(p.default)
        else:
            raise _ArgError(f"missing required argument '{p.name}' of {name}{sig}", missingArguments=[p.name])
    if spread is not None:
        pos.extend(spread)
    missing = [p.name for p in params
               if p.default is _P.empty and p.kind in (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY, _P.POSITIONAL_ONLY)
               and p.name not in rest and p not in positional[:last + 1]]
    if missing:
        listed = ', '.join(f"'{m}'" for m in missing)
        raise _ArgError(f"missing required argument{'s' if len(missing) > 1 else ''} {listed} of {name}{sig}", missingArguments=missing)
    try:
        sig.bind(*pos, **rest)
    except TypeError as e:
        raise _ArgError(f"arguments do not match the signature {name}{sig}: {e}")
    return pos, rest

_CoroutineType = types.CoroutineType
_CodeType = types.CodeType
_str_copy = str.__str__
_CO_VARARGS = inspect.CO_VARARGS
_CO_VARKEYWORDS = inspect.CO_VARKEYWORDS
_FunctionType = type(_describe_params)
_plans = {}

def _plan_of(fn):
    # (positional names, positional-only count, keyword-only names, *name, **name, accepted names)
    # read from the code object of a plain function; None for anything inspect must look at
    if type(fn) is not _FunctionType or '__wrapped__' in fn.__dict__ or '__signature__' in fn.__dict__:
        return None
    co = fn.__code__
    plan = _plans.get(co)
    if plan is None:
        n = co.co_argcount
        k = co.co_kwonlyargcount
        names = co.co_varnames
        i = n + k
        var_pos = names[i] if co.co_flags & _CO_VARARGS else None
        if var_pos is not None:
            i += 1
        var_kw = names[i] if co.co_flags & _CO_VARKEYWORDS else None
        plan = (names[:n], co.co_posonlyargcount, names[n:n + k], var_pos, var_kw, frozenset(names[:n + k]))
        if len(_plans) > 4096:
            _plans.clear()
        _plans[co] = plan
    return plan

def _signature_text(fn, name):
    try:
        return f'{name}{inspect.signature(fn)}'
    except (TypeError, ValueError):
        return name

def _missing_error(fn, name, missing):
    listed = ', '.join(f"'{m}'" for m in missing)
    return _ArgError(f"missing required argument{'s' if len(missing) > 1 else ''} {listed} of {_signature_text(fn, name)}", missingArguments=missing)

def _bind_plain(fn, name, args, plan):
    positional, posonly, kwonly, var_pos, var_kw, accepted = plan
    if type(args) is dict and var_pos is None and not kwonly and len(args) == len(positional):
        # every parameter named, nothing else: the values in parameter order
        try:
            return [args[p] for p in positional], {}
        except KeyError:
            pass
    defaults = fn.__defaults__ or ()
    kwdefaults = fn.__kwdefaults__ or {}
    first_default = len(positional) - len(defaults)
    if isinstance(args, list):
        if len(args) > len(positional) and var_pos is None:
            raise _ArgError(f"arguments do not match the signature {_signature_text(fn, name)}: {len(args)} positional arguments given, at most {len(positional)} accepted")
        missing = [p for i, p in enumerate(positional) if len(args) <= i < first_default]
        missing += [k for k in kwonly if k not in kwdefaults]
        if missing:
            raise _missing_error(fn, name, missing)
        return args, {}
    rest = dict(args)
    spread = None
    if var_pos is not None and var_pos in rest and var_pos not in accepted:
        spread = rest.pop(var_pos)
        if not isinstance(spread, list):
            raise _ArgError(f"argument '{var_pos}' collects extra positional arguments and must be an array")
    if var_kw is None:
        unknown = [k for k in rest if k not in accepted]
        if unknown:
            declared = list(positional) + ([f'*{var_pos}'] if var_pos else []) + list(kwonly)
            listed = ', '.join(f"'{k}'" for k in unknown)
            raise _ArgError(
                f"unknown argument{'s' if len(unknown) > 1 else ''} {listed} (the signature declares {', '.join(declared) or 'no parameters'})",
                unknownArguments=unknown, parameters=declared)
    last = len(positional) - 1 if spread is not None else -1
    if spread is None:
        for i in range(posonly):
            if positional[i] in rest:
                last = i
    pos = []
    missing = []
    for i in range(last + 1):
        p = positional[i]
        if p in rest:
            pos.append(rest.pop(p))
        elif i >= first_default:
            pos.append(defaults[i - first_default])
        else:
            missing.append(p)
    if spread is not None:
        pos.extend(spread)
    for i in range(last + 1, first_default):
        if positional[i] not in rest:
            missing.append(positional[i])
    for k in kwonly:
        if k not in rest and k not in kwdefaults:
            missing.append(k)
    if missing:
        raise _missing_error(fn, name, missing)
    return pos, rest

# What runs after the call's own code in `run` binds what it uses as default arguments: the call
# may have rebound any name in this namespace (the worker restores it only before enter and finish).

def _user_traceback(exc, *, _format=traceback.format_exception, type=type, BaseException=BaseException):
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != 'function.py':
        tb = tb.tb_next
    try:
        return ''.join(_format(type(exc), exc, tb))[-8000:]
    except BaseException:
        return ''

def _text(value, fallback, *, type=type, str=str, issubclass=issubclass, _str_copy=str.__str__):
    # an exact str (the envelope is encoded after the call's code has ended: nothing of it runs then)
    if type(value) is str:
        return value
    if issubclass(type(value), str):
        return _str_copy(value)
    return fallback

def _describe(exc, *, _text=_text, _user_traceback=_user_traceback, type=type, str=str, BaseException=BaseException):
    try:
        message = _text(str(exc), '<unprintable exception>')
    except BaseException:
        message = '<unprintable exception>'
    try:
        name = _text(type(exc).__name__, 'Exception')
    except BaseException:
        name = 'Exception'
    return {'name': name[:200], 'message': message[:2000], 'stack': _text(_user_traceback(exc), '')}

def _drive(coro, *, _ArgError=_ArgError, StopIteration=StopIteration):
    try:
        yielded = coro.send(None)
        while yielded is None:
            yielded = coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise _ArgError('unsupported')

def prepare(source):
    # the code object (held by the worker for its key), or the JSON of a syntax error
    try:
        return compile(source, _FILENAME, 'exec', dont_inherit=True)
    except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError) as e:
        if isinstance(e, SyntaxError):
            where = f' (line {e.lineno})' if e.lineno else ''
            message = f'{e.msg}{where}'
        else:
            message = f'{type(e).__name__}: {e}'
        return _envelope_dumps({'kind': 'syntax', 'message': message[:2000]})

def _verdict(capture, streams, **fields):
    if type(capture) is not _Capture:
        capture = _Capture(0)
    for s in streams:
        if type(s) is _Stream:
            s.finish()
    if fields.get('ok') is True and not capture.lines and not capture.truncated:
        # the common answer, compactly: S and the result's JSON
        return 'S' + fields['json']
    fields['lines'] = capture.lines
    fields['used'] = capture.used
    fields['truncated'] = capture.truncated
    try:
        return _envelope_dumps(fields)
    except (TypeError, ValueError, RecursionError, OverflowError):
        # the call replaced what its output was captured in: the verdict without it
        fields['lines'] = []
        fields['used'] = 0
        fields['truncated'] = True
        return _envelope_dumps(fields)


def _enter_call(state, name, site, stash, max_log_bytes, instance, restore, seed):
    # Restores the baseline (restore False: the previous call of this interpreter was this warm
    # function, see _enter), seeds a deterministic call and captures the standard streams; the
    # call's name, site, stash and instance stay in state for finish.
    state.clear()
    state['name'] = name
    state['site'] = site
    state['stash'] = stash
    state['instance'] = instance
    _enter(site, stash, restore)
    if seed is not None:
        # a deterministic function: the random module's shared generator starts from the arguments'
        # digest (reseeded from the system after the call, so other functions never see the seed)
        _random_module.seed(int(seed[:32], 16))
        state['seeded'] = True
    if restore and instance is not None:
        # the interpreter was restored to the baseline (another function ran since): the module is
        # loaded again, as what it imported at load time may have been restored away
        instance.clear()
    capture = _Capture(max_log_bytes)
    out = _Stream(capture, 'log')
    err = _Stream(capture, 'error')
    state['capture'] = capture
    state['streams'] = (out, err)
    sys.stdout = sys.__stdout__ = out
    sys.stderr = sys.__stderr__ = err
    sys.stdin = sys.__stdin__ = io.StringIO('')


def call(state, code, args_json, name, site, stash, max_log_bytes, instance=None, restore=True, seed=None, *,
         _enter_call=_enter_call, _CodeType=_CodeType, _builtins=builtins, exec=exec, callable=callable, type=type,
         _loads=_loads, _plan_of=_plan_of, _bind=_bind, _bind_plain=_bind_plain, _CoroutineType=_CoroutineType,
         _drive=_drive, _encode=_result_encoder.encode, _describe=_describe, BaseException=BaseException,
         KeyboardInterrupt=KeyboardInterrupt):
    # The call, the part the worker's interrupt (time and CPU limits) reaches: restoring the
    # interpreter for it (_enter_call), loading the source, binding the arguments, the call, its
    # coroutine and encoding the result. What happened goes into state; nothing is raised (an
    # interrupt can only land in the last steps of the handler, and the worker copes with that
    # too). Returns whether the interpreter was restored: False when an interrupt, or code the call
    # left (an __eq__, a __del__), stopped the restore half-way (the worker then replaces the
    # interpreter).
    phase = 'enter'
    try:
        _enter_call(state, name, site, stash, max_log_bytes, instance, restore, seed)
        phase = 'load'
        if type(code) is not _CodeType:
            state['kind'] = 'internal'
            return True
        if instance is not None and 'fn' in instance:
            g = instance['g']
            fn = instance['fn']
            state['g'] = g
        else:
            g = {'__name__': '__svc_function__', '__builtins__': _builtins}
            state['g'] = g
            exec(code, g)
            fn = g.get(name)
        if not callable(fn):
            state['kind'] = 'missing'
            return True
        state['fn'] = fn
        phase = 'args'
        args = _loads(args_json)
        plan = _plan_of(fn)
        a, kw = _bind(fn, name, args) if plan is None else _bind_plain(fn, name, args, plan)
        phase = 'call'
        result = fn(*a, **kw)
        if type(result) is _CoroutineType:
            phase = 'await'
            result = _drive(result)
        phase = 'result'
        state['json'] = _encode(result)
        state['kind'] = 'ok'
    except BaseException as e:
        try:
            state['phase'] = phase
            state['error'] = e
            if type(e) is not KeyboardInterrupt:
                state['described'] = _describe(e)
        except BaseException:
            pass
    return phase != 'enter'


def _verdict_of(state, name):
    kind = state.get('kind')
    if kind == 'ok':
        return {'ok': True, 'json': state['json']}
    if kind == 'missing':
        return {'ok': False, 'kind': 'missing', 'error': {'name': 'NameError', 'message': f"the source does not define a function named '{name}'"}}
    e = state.get('error')
    phase = state.get('phase', 'load')
    described = state.get('described') or {'name': 'Exception', 'message': '', 'stack': ''}
    if kind == 'internal' or e is None:
        return {'ok': False, 'kind': 'internal', 'error': {'name': 'Error', 'message': 'the call produced no verdict'}}
    if phase == 'enter' and type(e) is not KeyboardInterrupt:
        return {'ok': False, 'kind': 'internal', 'error': {'name': described['name'], 'message': f"the interpreter could not be restored for the call: {described['message']}"}}
    if type(e) is KeyboardInterrupt:
        return {'ok': False, 'kind': 'interrupted', 'error': {'name': 'KeyboardInterrupt', 'message': ''}}
    if isinstance(e, MemoryError):
        return {'ok': False, 'kind': 'memory', 'error': described}
    if isinstance(e, _ArgError):
        if phase == 'await':
            return {'ok': False, 'kind': 'unsupported', 'error': {'name': 'RuntimeError', 'message': 'the coroutine awaited an asynchronous operation; Python functions run without an event loop'}}
        return {'ok': False, 'kind': 'args', 'error': {'name': 'TypeError', 'message': described['message'], 'details': e.details}}
    if phase == 'result':
        if isinstance(e, _NotJson):
            return {'ok': False, 'kind': 'result', 'error': {'name': 'TypeError', 'message': described['message']}}
        if isinstance(e, (TypeError, ValueError, RecursionError)):
            what = 'a float that is NaN or infinite' if isinstance(e, ValueError) else described['message']
            return {'ok': False, 'kind': 'result', 'error': {'name': described['name'], 'message': what}}
    return {'ok': False, 'kind': 'threw' if phase != 'load' else 'load', 'error': described}


def finish(state, limited=False):
    # After the call (the interrupt waits): the envelope, what the warm function keeps,
    # and the interpreter put back (modules the call imported, sys.path, streams). limited: the
    # worker interrupted the call at a limit (its module is then loaded again by the next call).
    name = state.get('name', '')
    site = state.get('site', '')
    stash = state.get('stash')
    instance = state.get('instance')
    verdict = _verdict_of(state, name)
    kind = verdict.get('kind')
    limited = limited or kind == 'interrupted' or kind == 'memory'
    loaded = 'fn' in state and not limited
    g = state.get('g')
    if instance is not None and loaded:
        instance['g'] = g
        instance['fn'] = state['fn']
    else:
        if instance is not None:
            instance.clear()
        if type(g) is dict:
            g.clear()
    if state.get('seeded'):
        _random_module.seed()
    _leave(site, stash, not limited)
    capture = state.get('capture')
    streams = state.get('streams', ())
    state.clear()
    return _verdict(capture, streams, **verdict)

# ---- dependency sets ----

def _safe_member(name):
    parts = name.replace('\\', '/').split('/')
    return not name.startswith('/') and '..' not in parts and ':' not in parts[0]

def install(staging, wheels_json):
    # Unpacks the wheels into staging (under /tmp); the worker moves it into place.
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    try:
        for wheel in _loads(wheels_json):
            with zipfile.ZipFile(wheel) as z:
                for member in z.namelist():
                    if not _safe_member(member):
                        raise ValueError(f'unsafe path in wheel {os.path.basename(wheel)}: {member}')
                z.extractall(staging)
            for entry in os.listdir(staging):
                if entry.endswith('.data'):
                    data = os.path.join(staging, entry)
                    for scheme in ('purelib', 'platlib'):
                        src = os.path.join(data, scheme)
                        if os.path.isdir(src):
                            for item in os.listdir(src):
                                shutil.move(os.path.join(src, item), os.path.join(staging, item))
                    shutil.rmtree(data, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    importlib.invalidate_caches()

def forget_site(site):
    # the set's directory is gone (the worker removed it)
    sys.path_importer_cache.pop(site, None)
    importlib.invalidate_caches()

# ---- the baseline ----

# The blocked modules leave sys.modules for good (nothing the worker runs needs them there): an
# import of one is a new import, which the audit hook refuses.
sys.modules.pop('js', None)
_blocked_names = tuple(n for n in sys.modules if n.partition('.')[0] in _BLOCKED)
_no_defaults = (None,) * len(_blocked_names)
_drain(map(sys.modules.pop, _blocked_names, _no_defaults))
_baseline_modules = _MappingProxy(dict(sys.modules))
_baseline_frozen = _Frozen(sys.modules)
_meta_path = tuple(sys.meta_path)
_snapshots = tuple(
    (sys.modules[n].__dict__, _Frozen(sys.modules[n].__dict__))
    for n in _PROTECTED_MODULE_NAMES
    if n in sys.modules
)
_class_snapshots = tuple(
    (c, _Frozen(c.__dict__))
    for c in (json.JSONEncoder, json.JSONDecoder, logging.Logger, logging.Handler, logging.StreamHandler,
              logging.Formatter, logging.RootLogger, _Capture, _Stream, _Encoder, _ArgError, _NotJson, _BlockedFinder)
)

sys.addaudithook(_audit)
del _audit, _absolute, _writable
