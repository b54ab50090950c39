"""Python client of svc-node: RUFID computation, a REST client and the ``svc.rufid`` import hook.

    import svc
    svc.configure(url="http://127.0.0.1:8080", token="...")
    from svc.rufid import tUwBWSc8Nozv as add
    add(2, 3)  # executed on the node
"""

from .client import (
    DEFAULT_URL,
    PROTOCOL_VERSION,
    Client,
    RemoteFunction,
    Response,
    WaitTimeoutError,
    __version__,
    configure,
    get_client,
)
from .errors import (
    ConnectionError,  # noqa: A004 - deprecated alias of SvcConnectionError, not the builtin
    ExecutionFailedError,
    ExecutionTimeoutError,
    FederationUnreachableError,
    InternalError,
    InvalidRufidError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    RufidCollisionError,
    RufidNotFoundError,
    ServiceUnavailableError,
    SvcConnectionError,
    SvcError,
    SyncConflictError,
    ValidationError,
    ValidationFailedError,
    error_class_for,
)
from .rufid_algo import (
    BASE62_ALPHABET,
    ParsedRufid,
    RufidComputation,
    base62,
    canonical_string,
    compute_rufid,
    format_rufid,
    import_name,
    import_statement,
    is_full_rufid,
    is_rufid,
    is_short_rufid,
    language_family,
    normalize_source,
    parse_rufid,
    parse_version_label,
    prepare_source,
    rufid_short,
    validate_rufid,
)
from .signature import derive_signature

# `ConnectionError` is left out of __all__ so that `from svc import *` never shadows the builtin.
__all__ = [
    "DEFAULT_URL", "PROTOCOL_VERSION", "Client", "RemoteFunction", "Response", "WaitTimeoutError", "__version__",
    "configure", "get_client",
    "SvcError", "InvalidRufidError", "RufidNotFoundError", "PermissionDeniedError",
    "ExecutionTimeoutError", "RateLimitedError", "ValidationFailedError", "ValidationError", "ExecutionFailedError",
    "RufidCollisionError", "FederationUnreachableError", "SyncConflictError", "InternalError", "ServiceUnavailableError",
    "NotFoundError", "SvcConnectionError", "error_class_for",
    "BASE62_ALPHABET", "ParsedRufid", "RufidComputation", "base62", "canonical_string",
    "compute_rufid", "format_rufid", "import_name", "import_statement", "is_full_rufid",
    "is_rufid", "is_short_rufid", "language_family", "normalize_source", "parse_rufid",
    "parse_version_label", "prepare_source", "rufid_short", "validate_rufid", "derive_signature",
]
