"""Drives the client openapi-python-client generated from /openapi.json (package `svc_generated`)
against a live daemon: create a function, resolve it, execute it, fetch the backup archive.
Prints one JSON line of what it got; test/contract/generated-clients.test.ts asserts on it.

usage: python3 drive.py BASE_URL API_KEY   (with the generated package on PYTHONPATH)
"""
import json
import sys

from svc_generated import AuthenticatedClient
from svc_generated.api.default import (
    get_api_v1_admin_backup,
    post_api_v1_functions_by_rufid_execute,
    post_api_v1_functions_create,
    post_api_v1_functions_resolve,
)
from svc_generated.models import (
    CreateFunctionRequest,
    CreateResult,
    Error,
    ExecuteRequest,
    ExecutionResult,
    ResolveRequest,
    Resolution,
)
from svc_generated.types import File


def main() -> None:
    client = AuthenticatedClient(base_url=sys.argv[1], token=sys.argv[2], raise_on_unexpected_status=True)
    created = post_api_v1_functions_create.sync_detailed(
        client=client,
        body=CreateFunctionRequest(
            function_name="add",
            language="javascript",
            source_code="function add(a, b) {\n  return a + b\n}\n",
            signature="(a, b)",
        ),
    )
    assert isinstance(created.parsed, CreateResult), created.content
    resolved = post_api_v1_functions_resolve.sync(client=client, body=ResolveRequest(rufid=created.parsed.rufid))
    assert isinstance(resolved, Resolution), resolved
    executed = post_api_v1_functions_by_rufid_execute.sync(
        rufid=resolved.rufid_short, client=client, body=ExecuteRequest(arguments=[2, 3])
    )
    assert isinstance(executed, ExecutionResult), executed
    # an unknown function answers the typed Error model
    missing = post_api_v1_functions_resolve.sync(client=client, body=ResolveRequest(rufid="0" * 12))
    assert isinstance(missing, Error), missing
    backup = get_api_v1_admin_backup.sync(client=client)
    assert isinstance(backup, File), backup
    print(json.dumps({
        "created": {"status": int(created.status_code), "rufid": created.parsed.rufid},
        "resolved": {"rufid_short": resolved.rufid_short, "function_name": resolved.function_name, "language": resolved.language},
        "executed": {"result": executed.result, "status": executed.status, "rufid_short": executed.rufid_short},
        "missing": {"code": missing.error.code, "name": missing.error.name},
        "backup_magic": list(backup.payload.read(2)),
    }))


main()
