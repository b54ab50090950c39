from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateRUFIDRequest(_message.Message):
    __slots__ = ("function_name", "source_code", "signature", "language", "tags", "description", "manifest_json", "lockfile_json", "limits")
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_CODE_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_JSON_FIELD_NUMBER: _ClassVar[int]
    LOCKFILE_JSON_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    function_name: str
    source_code: str
    signature: str
    language: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    description: str
    manifest_json: str
    lockfile_json: str
    limits: ExecutionLimits
    def __init__(self, function_name: _Optional[str] = ..., source_code: _Optional[str] = ..., signature: _Optional[str] = ..., language: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., description: _Optional[str] = ..., manifest_json: _Optional[str] = ..., lockfile_json: _Optional[str] = ..., limits: _Optional[_Union[ExecutionLimits, _Mapping]] = ...) -> None: ...

class ExecutionLimits(_message.Message):
    __slots__ = ("timeout_ms", "memory_mb", "cpu_ms")
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    CPU_MS_FIELD_NUMBER: _ClassVar[int]
    timeout_ms: int
    memory_mb: int
    cpu_ms: int
    def __init__(self, timeout_ms: _Optional[int] = ..., memory_mb: _Optional[int] = ..., cpu_ms: _Optional[int] = ...) -> None: ...

class CreateRUFIDResponse(_message.Message):
    __slots__ = ("rufid", "import_statement", "share_url", "rufid_short", "version", "content_digest", "api_endpoint", "created", "full_rufid")
    RUFID_FIELD_NUMBER: _ClassVar[int]
    IMPORT_STATEMENT_FIELD_NUMBER: _ClassVar[int]
    SHARE_URL_FIELD_NUMBER: _ClassVar[int]
    RUFID_SHORT_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CONTENT_DIGEST_FIELD_NUMBER: _ClassVar[int]
    API_ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    FULL_RUFID_FIELD_NUMBER: _ClassVar[int]
    rufid: str
    import_statement: str
    share_url: str
    rufid_short: str
    version: str
    content_digest: str
    api_endpoint: str
    created: bool
    full_rufid: str
    def __init__(self, rufid: _Optional[str] = ..., import_statement: _Optional[str] = ..., share_url: _Optional[str] = ..., rufid_short: _Optional[str] = ..., version: _Optional[str] = ..., content_digest: _Optional[str] = ..., api_endpoint: _Optional[str] = ..., created: _Optional[bool] = ..., full_rufid: _Optional[str] = ...) -> None: ...

class ResolveRUFIDRequest(_message.Message):
    __slots__ = ("rufid", "version")
    RUFID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    rufid: str
    version: str
    def __init__(self, rufid: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class ResolveRUFIDResponse(_message.Message):
    __slots__ = ("function_id", "rufid", "version", "accessible", "cached", "resolution_time_ms", "content_digest", "function_name", "signature", "language", "manifest_json", "lockfile_json", "rufid_short", "created_at", "full_rufid")
    FUNCTION_ID_FIELD_NUMBER: _ClassVar[int]
    RUFID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ACCESSIBLE_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    CONTENT_DIGEST_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_JSON_FIELD_NUMBER: _ClassVar[int]
    LOCKFILE_JSON_FIELD_NUMBER: _ClassVar[int]
    RUFID_SHORT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    FULL_RUFID_FIELD_NUMBER: _ClassVar[int]
    function_id: str
    rufid: str
    version: str
    accessible: bool
    cached: bool
    resolution_time_ms: float
    content_digest: str
    function_name: str
    signature: str
    language: str
    manifest_json: str
    lockfile_json: str
    rufid_short: str
    created_at: str
    full_rufid: str
    def __init__(self, function_id: _Optional[str] = ..., rufid: _Optional[str] = ..., version: _Optional[str] = ..., accessible: _Optional[bool] = ..., cached: _Optional[bool] = ..., resolution_time_ms: _Optional[float] = ..., content_digest: _Optional[str] = ..., function_name: _Optional[str] = ..., signature: _Optional[str] = ..., language: _Optional[str] = ..., manifest_json: _Optional[str] = ..., lockfile_json: _Optional[str] = ..., rufid_short: _Optional[str] = ..., created_at: _Optional[str] = ..., full_rufid: _Optional[str] = ...) -> None: ...

class ExecuteFunctionRequest(_message.Message):
    __slots__ = ("rufid", "version", "arguments_json")
    RUFID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    rufid: str
    version: str
    arguments_json: str
    def __init__(self, rufid: _Optional[str] = ..., version: _Optional[str] = ..., arguments_json: _Optional[str] = ...) -> None: ...

class ExecuteFunctionResponse(_message.Message):
    __slots__ = ("result_json", "execution_time_ms", "status", "execution_id", "rufid_short", "full_rufid", "cached", "receipt_json")
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    RUFID_SHORT_FIELD_NUMBER: _ClassVar[int]
    FULL_RUFID_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_JSON_FIELD_NUMBER: _ClassVar[int]
    result_json: str
    execution_time_ms: float
    status: str
    execution_id: str
    rufid_short: str
    full_rufid: str
    cached: bool
    receipt_json: str
    def __init__(self, result_json: _Optional[str] = ..., execution_time_ms: _Optional[float] = ..., status: _Optional[str] = ..., execution_id: _Optional[str] = ..., rufid_short: _Optional[str] = ..., full_rufid: _Optional[str] = ..., cached: _Optional[bool] = ..., receipt_json: _Optional[str] = ...) -> None: ...

class StreamRequest(_message.Message):
    __slots__ = ("rufid",)
    RUFID_FIELD_NUMBER: _ClassVar[int]
    rufid: str
    def __init__(self, rufid: _Optional[str] = ...) -> None: ...

class ExecutionEvent(_message.Message):
    __slots__ = ("execution_id", "rufid", "rufid_short", "version", "tenant_id", "function_name", "status", "execution_time_ms", "error_code", "timestamp", "full_rufid", "receipt_digest", "cached")
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    RUFID_FIELD_NUMBER: _ClassVar[int]
    RUFID_SHORT_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    FULL_RUFID_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_DIGEST_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    execution_id: str
    rufid: str
    rufid_short: str
    version: str
    tenant_id: str
    function_name: str
    status: str
    execution_time_ms: float
    error_code: int
    timestamp: str
    full_rufid: str
    receipt_digest: str
    cached: bool
    def __init__(self, execution_id: _Optional[str] = ..., rufid: _Optional[str] = ..., rufid_short: _Optional[str] = ..., version: _Optional[str] = ..., tenant_id: _Optional[str] = ..., function_name: _Optional[str] = ..., status: _Optional[str] = ..., execution_time_ms: _Optional[float] = ..., error_code: _Optional[int] = ..., timestamp: _Optional[str] = ..., full_rufid: _Optional[str] = ..., receipt_digest: _Optional[str] = ..., cached: _Optional[bool] = ...) -> None: ...
