"""The generated gRPC stubs ``svc.v1`` beside the REST client, against a live node's gRPC door.

``from svc.v1 import svc_protocol_pb2_grpc`` must work in the same environment as ``import svc``
(the stubs live in the client package). Needs grpcio and protobuf (the ``grpc`` extra of svc-node-client;
scripts/setup.sh installs them) and the built daemon: without either these tests FAIL (never skip).
"""

from __future__ import annotations

import json

import pytest

import svc
from live_node import ADMIN_KEY

try:
    import grpc
    from svc.v1 import svc_protocol_pb2 as pb
    from svc.v1 import svc_protocol_pb2_grpc as rpc
except ImportError as e:  # pragma: no cover - a missing install is a failure, not a skip
    grpc = None
    IMPORT_ERROR = e


@pytest.fixture(scope="module")
def node(live_node):
    if grpc is None:
        pytest.fail("grpcio/protobuf are not installed (pip install './clients/python[grpc]', or scripts/setup.sh): %s" % IMPORT_ERROR)
    if not live_node.grpc_address:
        pytest.fail("the daemon reported no gRPC address:\n" + "".join(live_node.output))
    return live_node


@pytest.fixture(scope="module")
def stub(node):
    channel = grpc.insecure_channel(node.grpc_address)
    try:
        yield rpc.SvcProtocolServiceStub(channel)
    finally:
        channel.close()


AUTH = [("authorization", "Bearer " + ADMIN_KEY)]
ADD = dict(function_name="grpcAdd", signature="(a, b)", language="javascript",
           source_code="function grpcAdd(a, b) {\n  return a + b\n}\n")


def test_the_stubs_and_the_rest_client_share_one_package():
    import os

    import svc.v1
    from svc.v1 import svc_protocol_pb2_grpc

    assert os.path.dirname(os.path.dirname(svc.v1.__file__)) == os.path.dirname(svc.__file__)
    assert svc_protocol_pb2_grpc is rpc and hasattr(rpc, "SvcProtocolServiceStub")
    assert callable(svc.Client)


def test_create_resolve_execute_over_grpc_equal_the_local_rufid(node, stub):
    local = svc.compute_rufid(ADD["function_name"], ADD["signature"], ADD["language"], ADD["source_code"])
    created = stub.CreateRUFID(pb.CreateRUFIDRequest(**ADD), metadata=AUTH, timeout=20)
    assert created.rufid_short == local.rufid_short and created.rufid == "rufid:%s:v1:default" % local.rufid_short
    assert created.created is True and created.full_rufid == created.rufid
    again = stub.CreateRUFID(pb.CreateRUFIDRequest(**ADD), metadata=AUTH, timeout=20)
    assert again.rufid == created.rufid and again.created is False
    # `optional bool created = 8`: explicit presence, so a repeat create says false on the wire
    assert pb.CreateRUFIDResponse.DESCRIPTOR.fields_by_name["created"].has_presence
    assert again.HasField("created") and created.HasField("created")

    resolved = stub.ResolveRUFID(pb.ResolveRUFIDRequest(rufid=created.rufid_short), metadata=AUTH, timeout=20)
    assert (resolved.rufid, resolved.function_name, resolved.signature) == (created.rufid, "grpcAdd", "(a, b)")
    run = stub.ExecuteFunction(pb.ExecuteFunctionRequest(rufid=created.rufid_short, arguments_json=json.dumps([2, 3])),
                               metadata=AUTH, timeout=20)
    assert json.loads(run.result_json) == 5 and run.status == "success"
    assert (resolved.full_rufid, run.rufid_short, run.full_rufid) == (created.rufid, created.rufid_short, created.rufid)
    # the REST client sees the same function and the same execution
    rest = svc.Client(url=node.url, token=ADMIN_KEY, timeout=20)
    assert rest.get_execution(run.execution_id)["full_rufid"] == created.rufid


def test_grpc_errors_carry_the_svc_code(stub):
    with pytest.raises(grpc.RpcError) as missing:
        stub.ResolveRUFID(pb.ResolveRUFIDRequest(rufid="AAAAAAAAAAAA"), metadata=AUTH, timeout=20)
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    trailers = dict(missing.value.trailing_metadata() or ())
    assert (trailers.get("svc-error-code"), trailers.get("svc-error-name")) == ("1002", "RUFID_NOT_FOUND")
    with pytest.raises(grpc.RpcError) as anonymous:
        stub.ResolveRUFID(pb.ResolveRUFIDRequest(rufid="AAAAAAAAAAAA"), timeout=20)
    assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED
