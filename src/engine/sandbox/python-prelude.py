# The svc sandbox's Python prelude (src/engine/sandbox/python-prelude.py; read by python-interpreter.ts,
# copied beside it into dist/ by the build, exercised by test/python/test_prelude.py under CPython).
#
# Python run once in every fresh Pyodide interpreter, in a private namespace (not `__main__`, not
# in `sys.modules`). It hardens the interpreter and defines what the worker calls:
#
# - `prepare(source)` compiles a function's source: the code object (the worker keeps it per key),
#   or the JSON of `{ kind: 'syntax', message }`.
# - `invoke(code, name, args_json, site, stash, timeout_ms, max_log_bytes, instance, restore)` runs
#   one call and returns the JSON envelope `{ ok, json?, kind?, error?, lines, used, truncated }`
#   (a success without output: `S` followed by the result's JSON), where `kind` is `missing` | `args` | `threw` | `load` | `result` | `timeout` | `memory` |
#   `unsupported`. `instance` is the dict the worker keeps for a warm function (its module globals
#   and function, reused by its next call when no other function ran in between; emptied when a
#   call loads nothing or ends at a limit), None for a call in fresh globals; `restore` is False
#   when the previous call of the interpreter was this same warm function (see below).
# - `install(staging, wheels_json)` unpacks wheels under /tmp (the worker moves the directory into
#   /lib/svc-deps, where calls cannot write); `forget_site(site)` after the worker removed one.
#
# Guards (Python level; the JS layer in python-interpreter.ts holds without them):
# - an audit hook, referenced by nothing but the interpreter and built only from immutable values
#   and builtin functions, refuses process, socket, ctypes, gc-introspection and audit-hook events,
#   writes outside /tmp and /home/pyodide, directory descriptors elsewhere, and changing the code or
#   defaults of functions the call did not define;
# - while user code runs, `js`, `pyodide_js`, `pyodide.*`, `_pyodide*`, `ctypes` and `micropip` are
#   out of `sys.modules` and refused by an import guard, and the prelude's frames are refused to
#   `sys._getframe`;
# - KeyboardInterrupt from the worker's interrupter thread only counts while user code runs and
#   its deadline has passed; `time.sleep` waits in short interruptible host waits; the recursion
#   limit is capped.
#
# Between calls of one tenant (tenants never share an interpreter: python-runtime.ts keeps one per
# tenant, so nothing below is a boundary between tenants): before each call the worker restores
# this namespace from its own copy (a C-level dict operation, before any Python runs). When the
# previous call of the interpreter was the same warm function (the default context mode), that is
# all that is restored besides what the guards and limits rely on (streams, hooks, trace and
# profile functions, recursion and int-digit limits, the SIGINT handler, the environment,
# `sys.path`, the blocked modules): the function sees what its own earlier calls left, as in a
# warm process. Otherwise (another function ran in between, or the function asks for a fresh
# context) the function's module is loaded again in fresh globals, the worker also restores the
# builtins from its copy, and `_enter` restores the attributes
# of the commonly used stdlib modules (`_PROTECTED_MODULE_NAMES`), the json and logging classes
# and the prelude's classes, `sys.modules` (the baseline; modules a call imported are discarded
# after it, except a dependency set's, kept per set), `sys` attributes, standard
# streams, hooks, recursion and int-digit limits, the SIGINT handler, environment, logging
# handlers and loggers, warning filters, the `re` caches, gc callbacks and `sys.monitoring` tools.
# After each call the worker empties /tmp and /home/pyodide and resets the working directory.
# Not reset: attributes of stdlib modules outside that list, attributes of stdlib classes other
# than those named, contents of other mutable stdlib containers and C-level registries (codecs,
# copyreg), and an object planted in a protected module with an `__eq__` that lies about
# equality. A deliberately hostile function can reach these (for instance through a frame's
# `f_back`) and affect later calls of its own tenant on the same worker; it reaches no other
# tenant's interpreter and nothing of the host.
import builtins, sys, os, io, json, time, signal, _signal, inspect, importlib, traceback, operator, gc, types, posix, zipfile, shutil
import json.encoder, json.decoder, json.scanner
# in the baseline modules, so that a function's "import random" is this module (deterministic calls seed it)
import random as _random_module

_FILENAME = 'function.py'
_PRELUDE_FILE = '<svc-prelude>'
_HOME = '/home/pyodide'
_BLOCKED = frozenset(('js', 'pyodide_js', 'pyodide', '_pyodide', '_pyodide_core', 'micropip', 'pyodide_http', 'ctypes', '_ctypes'))

# user code is running: import guard, frame guard and interrupts apply (reset by every call)
_user = [False]
_deadline = [0.0]

def _install_audit_hook():
    # Everything the hook uses is bound here, as immutable values or builtin functions, and the
    # hook is referenced by nothing but the interpreter: rebinding names in modules or in this
    # namespace does not change what it allows.
    denied = frozenset((
        'os.system', 'os.exec', 'os.posix_spawn', 'os.spawn', 'os.fork', 'os.forkpty', 'os.kill', 'os.killpg',
        'os.symlink', 'os.link', 'os.chroot', 'os.mknod', 'os.mkfifo', 'os.add_dll_directory', 'os.startfile',
        'subprocess.Popen', 'pty.spawn', 'webbrowser.open', 'sys.addaudithook',
        'gc.get_objects', 'gc.get_referrers', 'gc.get_referents', 'sys._current_frames', 'sys._current_exceptions',
        'socket.__new__', 'socket.bind', 'socket.connect', 'socket.getaddrinfo', 'socket.gethostbyname',
        'socket.gethostbyaddr', 'socket.gethostname', 'socket.sethostname', 'socket.getnameinfo',
        'socket.getservbyname', 'socket.getservbyport', 'socket.sendmsg', 'socket.sendto',
        'sys.remote_exec', 'cpython.remote_debugger_script',
    ))
    path_events = {
        'os.remove': (0,), 'os.rmdir': (0,), 'os.rename': (0, 1), 'os.mkdir': (0,), 'os.chmod': (0,),
        'os.chown': (0,), 'os.truncate': (0,), 'os.utime': (0,), 'os.chflags': (0,), 'os.lchflags': (0,),
        'os.setxattr': (0,), 'os.removexattr': (0,), 'shutil.rmtree': (0,), 'shutil.move': (0, 1),
        'shutil.copyfile': (1,), 'shutil.copymode': (1,), 'shutil.copystat': (1,), 'shutil.copytree': (1,),
        'shutil.chown': (0,), 'shutil.unpack_archive': (1,), 'shutil.make_archive': (0,),
    }.get
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    code_attributes = frozenset(('__code__', '__defaults__', '__kwdefaults__'))
    blocked = _BLOCKED
    user = _user
    getcwd = posix.getcwd
    fspath = posix.fspath
    stat = posix.stat
    isinstance_ = isinstance
    getattr_ = getattr
    bool_ = bool
    len_ = len
    str_ = str
    bytes_ = bytes
    int_ = int
    function_type = types.FunctionType
    PermissionError_ = PermissionError
    ImportError_ = ImportError
    user_file = _FILENAME
    prelude_file = _PRELUDE_FILE

    def absolute(path):
        if not isinstance_(path, (str_, bytes_)):
            path = fspath(path)
        if isinstance_(path, bytes_):
            path = path.decode('utf-8', 'surrogateescape')
        if not path.startswith('/'):
            path = getcwd() + '/' + path
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

    def writable(path):
        if isinstance_(path, int_):
            return False
        full = absolute(path)
        return (full == '/dev/null' or full == '/tmp' or full.startswith('/tmp/')
                or full == '/home/pyodide' or full.startswith('/home/pyodide/'))

    def audit(event, args):
        if event in denied or event.startswith('ctypes.') or event.startswith('_posixsubprocess'):
            raise PermissionError_(f"'{event}' is not permitted in the sandbox")
        if event == 'open':
            path, mode, flags = args
            if isinstance_(path, int_):
                return
            if isinstance_(mode, str_):
                writing = 'w' in mode or 'a' in mode or 'x' in mode or '+' in mode
            else:
                writing = bool_((flags or 0) & write_flags)
            if writing:
                if not writable(path):
                    raise PermissionError_(f"writing '{path}' is not permitted in the sandbox (only under /tmp)")
            elif mode is None and not writable(path):
                # a directory descriptor would let dir_fd-relative calls write anywhere
                try:
                    is_dir = (stat(absolute(path)).st_mode & 0o170000) == 0o040000
                except OSError:
                    is_dir = False
                if is_dir:
                    raise PermissionError_(f"opening the directory '{path}' as a descriptor is not permitted in the sandbox")
            return
        if event == 'object.__setattr__' or event == 'object.__delattr__':
            target = args[0]
            if isinstance_(target, function_type) and args[1] in code_attributes and target.__code__.co_filename != user_file:
                raise PermissionError_(f"changing '{args[1]}' of a function the call did not define is not permitted in the sandbox")
            return
        if event == 'import':
            if user[0] and str_(args[0]).partition('.')[0] in blocked:
                raise ImportError_(f"module '{args[0]}' is not available in the sandbox")
            return
        if event == 'sys._getframe':
            if user[0] and args and getattr_(getattr_(args[0], 'f_code', None), 'co_filename', None) == prelude_file:
                raise PermissionError_("the sandbox's own frames are not accessible")
            return
        positions = path_events(event)
        if positions is not None:
            for i in positions:
                if i < len_(args) and args[i] is not None and not writable(args[i]):
                    raise PermissionError_(f"'{event}' on '{args[i]}' is not permitted in the sandbox (only under /tmp)")

    sys.addaudithook(audit)

_install_audit_hook()
del _install_audit_hook
sys.dont_write_bytecode = True

_real_import = builtins.__import__

def _guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    if _user[0] and level == 0 and name.partition('.')[0] in _BLOCKED:
        raise ImportError(f"module '{name}' is not available in the sandbox", name=name)
    return _real_import(name, globals, locals, fromlist, level)

builtins.__import__ = _guarded_import

class _BlockedFinder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if _user[0] and name.partition('.')[0] in _BLOCKED:
            raise ImportError(f"module '{name}' is not available in the sandbox", name=name)
        return None

sys.meta_path.insert(0, _BlockedFinder)

def _on_interrupt(signum, frame):
    if _user[0] and time.monotonic() >= _deadline[0]:
        raise KeyboardInterrupt('time limit')

signal.signal(signal.SIGINT, _on_interrupt)
_SIGINT = int(signal.SIGINT)

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

def _enter(site, stash, full=True):
    # Everything user code could have changed since the baseline, put back before it runs again.
    # (The worker restores this namespace and the builtins from its own copies first.) Not full:
    # the previous call of this interpreter was the same warm function, which sees the state its
    # own calls left; only what the prelude's guards and limits rely on is put back.
    modules = sys.modules
    if full:
        for live, snapshot in _snapshots:
            _restore_dict(live, snapshot)
        for cls, snapshot in _class_snapshots:
            _restore_class(cls, snapshot)
        _restore_dict(modules, _baseline_frozen)
    (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__) = _streams
    (sys.displayhook, sys.excepthook, sys.breakpointhook, sys.unraisablehook) = _hooks
    if sys.gettrace() is not None:
        sys.settrace(None)
    if sys.getprofile() is not None:
        sys.setprofile(None)
    if sys.getrecursionlimit() != _recursion_limit:
        _real_setrecursionlimit(_recursion_limit)
    if sys.get_int_max_str_digits() != _int_max_str_digits:
        sys.set_int_max_str_digits(_int_max_str_digits)
    if _signal.getsignal(_SIGINT) is not _on_interrupt:
        signal.signal(signal.SIGINT, _on_interrupt)
    if os.environ._data is not _env_data or _env_data != _env_snapshot:
        os.environ._data = _env_data
        for key in [k for k in _env_data if k not in _env_snapshot]:
            os.unsetenv(key)
        _env_data.clear()
        _env_data.update(_env_snapshot)
        for key, value in _env_snapshot.items():
            os.putenv(key, value)
    if full:
        _reset_shared_state()
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
    untouched = _same(modules, _baseline_user_view)
    if not untouched and prefix and stash is not None and keep_deps:
        for name, mod in list(modules.items()):
            if _baseline_modules.get(name) is mod:
                continue
            origin = _origin(mod)
            if origin and origin.startswith(prefix):
                kept[name] = mod
    if untouched:
        # the call imported and replaced nothing: only the blocked modules _enter took out return
        modules.update(_blocked_items)
    else:
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
        super().__init__(message)
        self.details = details

class _NotJson(Exception):
    pass

class _Encoder(json.JSONEncoder):
    def default(self, o):
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

def _user_traceback(exc):
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != _FILENAME:
        tb = tb.tb_next
    try:
        return ''.join(traceback.format_exception(type(exc), exc, tb))[-8000:]
    except BaseException:
        return ''

def _describe(exc):
    try:
        message = str(exc)
    except BaseException:
        message = '<unprintable exception>'
    return {'name': type(exc).__name__, 'message': message[:2000], 'stack': _user_traceback(exc)}

def _drive(coro):
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
    for s in streams:
        s.finish()
    if fields.get('ok') is True and 'json' in fields and not capture.lines and not capture.truncated:
        # the common answer, compactly: S and the result's JSON
        return 'S' + fields['json']
    fields['lines'] = capture.lines
    fields['used'] = capture.used
    fields['truncated'] = capture.truncated
    return _envelope_dumps(fields)


def invoke(code, name, args_json, site, stash, timeout_ms, max_log_bytes, instance=None, restore=True, seed=None):
    # instance: the dict the worker keeps for a warm function (its module globals and function,
    # kept between its consecutive calls; emptied when a call loads nothing or ends at a limit, and
    # when the interpreter is restored), or None for a fresh call; restore: False when the previous
    # call of this interpreter was this warm function
    _user[0] = False
    _enter(site, stash, restore)
    if seed is not None:
        # a deterministic function: the random module's shared generator starts from the arguments'
        # digest (reseeded from the system after the call, so other functions never see the seed)
        _random_module.seed(int(seed[:32], 16))
    if restore and instance is not None:
        # the interpreter was restored to the baseline (another function ran since): the module is
        # loaded again, as what it imported at load time may have been restored away
        instance.clear()
    capture = _Capture(max_log_bytes)
    out = _Stream(capture, 'log')
    err = _Stream(capture, 'error')
    if not isinstance(code, types.CodeType):
        _leave(site, stash, True)
        return _verdict(capture, (), ok=False, kind='internal', error={'name': 'Error', 'message': 'no compiled code for the call'})
    args = _loads(args_json)
    keep_deps = True
    phase = 'load'
    verdict = None
    result = None
    fn = None
    held = instance is not None and 'fn' in instance
    if held:
        g = instance['g']
        fn = instance['fn']
    else:
        g = {'__name__': '__svc_function__', '__builtins__': builtins}
    loaded = held
    _deadline[0] = time.monotonic() + timeout_ms / 1000.0
    sys.stdout = sys.__stdout__ = out
    sys.stderr = sys.__stderr__ = err
    sys.stdin = sys.__stdin__ = io.StringIO('')
    _user[0] = True
    try:
        try:
            if not held:
                exec(code, g)
                fn = g.get(name)
            if not callable(fn):
                _user[0] = False
                verdict = {'ok': False, 'kind': 'missing', 'error': {'name': 'NameError', 'message': f"the source does not define a function named '{name}'"}}
            else:
                loaded = True
                phase = 'args'
                plan = _plan_of(fn)
                a, kw = _bind(fn, name, args) if plan is None else _bind_plain(fn, name, args, plan)
                phase = 'call'
                result = fn(*a, **kw)
                if isinstance(result, _CoroutineType):
                    phase = 'await'
                    result = _drive(result)
        finally:
            _user[0] = False
        if verdict is None:
            if time.monotonic() > _deadline[0]:
                raise KeyboardInterrupt('time limit')
            try:
                verdict = {'ok': True, 'json': _result_encoder.encode(result)}
            except _NotJson as e:
                verdict = {'ok': False, 'kind': 'result', 'error': {'name': 'TypeError', 'message': str(e)}}
            except (TypeError, ValueError, RecursionError) as e:
                what = 'a float that is NaN or infinite' if isinstance(e, ValueError) else str(e)
                verdict = {'ok': False, 'kind': 'result', 'error': {'name': type(e).__name__, 'message': what}}
    except KeyboardInterrupt:
        keep_deps = False
        loaded = False
        verdict = {'ok': False, 'kind': 'timeout'}
    except MemoryError as e:
        keep_deps = False
        loaded = False
        verdict = {'ok': False, 'kind': 'memory', 'error': _describe(e)}
    except _ArgError as e:
        if phase == 'await':
            verdict = {'ok': False, 'kind': 'unsupported', 'error': {'name': 'RuntimeError', 'message': 'the coroutine awaited an asynchronous operation; Python functions run without an event loop'}}
        else:
            verdict = {'ok': False, 'kind': 'args', 'error': {'name': 'TypeError', 'message': str(e), 'details': e.details}}
    except BaseException as e:
        verdict = {'ok': False, 'kind': 'threw' if phase != 'load' else 'load', 'error': _describe(e)}
    finally:
        _user[0] = False
        result = None
        if instance is None:
            g.clear()
        elif loaded:
            instance['g'] = g
            instance['fn'] = fn
        else:
            instance.clear()
            g.clear()
        fn = None
        if seed is not None:
            _random_module.seed()
        _leave(site, stash, keep_deps)
    return _verdict(capture, (out, err), **verdict)

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

sys.modules.pop('js', None)
_baseline_modules = _MappingProxy(dict(sys.modules))
_baseline_frozen = _Frozen(sys.modules)
_blocked_names = tuple(n for n in sys.modules if n.partition('.')[0] in _BLOCKED)
# sys.modules as user code sees it: the baseline without the blocked modules
_baseline_user_view = _Frozen({n: m for n, m in sys.modules.items() if n not in _blocked_names})
_blocked_items = tuple((n, sys.modules[n]) for n in _blocked_names)
_no_defaults = (None,) * len(_blocked_names)
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
