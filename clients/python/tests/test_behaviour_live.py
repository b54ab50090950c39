"""The shared behaviour list (``clients/behaviour.json``) run by the Python client against a live
node started by this module (``svc-node start`` from the built dist/, native auth, test mode).

The TypeScript (test/client/behaviour-live.test.ts) and Go (behaviour_live_test.go) suites run the
same list. A scenario of the list without an implementation here fails; so does an implementation
the list does not name. Needs ``npm run build`` in the repository root (never skipped).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import svc
from live_node import ADMIN_KEY

BEHAVIOUR = json.loads((Path(__file__).resolve().parents[2] / "behaviour.json").read_text("utf-8"))
LISTED = [s["id"] for s in BEHAVIOUR["scenarios"]]
TENANT = "default"


@pytest.fixture(scope="module")
def admin(live_node):
    return svc.Client(url=live_node.url, token=ADMIN_KEY, timeout=20)


def js(name, params, body):
    return {"function_name": name, "signature": "(%s)" % params, "language": "javascript",
            "source_code": "function %s(%s) {\n  %s\n}\n" % (name, params, body)}


def manifest_of(name):
    return {"schemaVersion": "1.0", "name": name, "entrypoint": "main:%s" % name,
            "runtime": {"language": "javascript", "version": "20"}}


def create_resolve_execute_delete(admin):
    fn = js("bhAdd", "a, b", "return a + b")
    local = svc.compute_rufid(fn["function_name"], fn["signature"], fn["language"], fn["source_code"])
    created = admin.create(**fn)
    assert created["created"] is True and created["version"] == "v1"
    assert created["rufid_short"] == local.rufid_short
    assert created["full_rufid"] == "rufid:%s:v1:%s" % (local.rufid_short, TENANT)
    again = admin.create(**fn)
    assert (again["created"], again["rufid_short"], again["full_rufid"]) == (False, local.rufid_short, created["full_rufid"])
    resolved = admin.resolve(created["rufid_short"])
    assert (resolved["rufid_short"], resolved["full_rufid"], resolved["function_name"]) == (local.rufid_short, created["full_rufid"], "bhAdd")
    run = admin.execute(created["rufid_short"], {"a": 2, "b": 3})
    assert (run["result"], run["rufid_short"], run["full_rufid"]) == (5, local.rufid_short, created["full_rufid"])
    assert admin.execute(created["rufid_short"], [2, 3])["result"] == 5
    v2 = admin.create(**js("bhAdd", "a, b", "return a + b + 0"))
    assert v2["version"] == "v2" and v2["created"] is True and v2["rufid_short"] != created["rufid_short"]
    assert admin.execute(created["rufid_short"], {"a": 2, "b": 3}, version="v1")["result"] == 5
    with pytest.raises(svc.RufidNotFoundError):
        admin.execute(created["rufid_short"], {"a": 2, "b": 3}, version="v2")
    assert created["full_rufid"] in admin.delete_function(created["rufid_short"])["deleted"]
    with pytest.raises(svc.RufidNotFoundError) as gone:
        admin.resolve(created["rufid_short"])
    assert (gone.value.code, gone.value.http_status) == (1002, 404)


def errors_by_class(admin):
    with pytest.raises(svc.InvalidRufidError) as local:
        admin.resolve("not a rufid")
    assert (local.value.code, local.value.http_status) == (1001, None)
    with pytest.raises(svc.InvalidRufidError) as remote:
        admin.request("POST", "/api/v1/functions/resolve", {"rufid": "bad!"})
    assert (remote.value.code, remote.value.name, remote.value.http_status) == (1001, "INVALID_RUFID", 400)
    with pytest.raises(svc.RufidNotFoundError) as missing:
        admin.resolve("AAAAAAAAAAAA")
    assert (missing.value.code, missing.value.name, missing.value.http_status) == (1002, "RUFID_NOT_FOUND", 404)
    with pytest.raises(svc.NotFoundError) as no_execution:
        admin.get_execution("ex_00000000000000000000000000")
    assert (no_execution.value.code, no_execution.value.name, no_execution.value.http_status) == (1011, "NOT_FOUND", 404)
    assert no_execution.value.details["resource"] == "execution"
    with pytest.raises(svc.PermissionDeniedError) as anonymous:
        admin.with_options(token="").list_functions()
    assert (anonymous.value.code, anonymous.value.http_status, anonymous.value.unauthenticated) == (1003, 401, True)
    with pytest.raises(svc.ValidationFailedError) as invalid:
        admin.request("POST", "/api/v1/functions/create", {"function_name": "bhBad", "signature": "()", "language": "javascript"})
    assert (invalid.value.code, invalid.value.name) == (1006, "VALIDATION_FAILED") and invalid.value.message
    boom = admin.create(**js("bhBoom", "", "throw new Error('boom')"))
    with pytest.raises(svc.ExecutionFailedError) as failed:
        admin.execute(boom["rufid_short"])
    assert (failed.value.code, failed.value.name) == (1007, "EXECUTION_FAILED") and failed.value.http_status >= 400


def remote_function_call(admin):
    created = admin.create(**js("bhSum", "a, b", "return a + b"))
    add = admin.function(created["rufid_short"])
    assert add(2, 3) == 5
    assert add(a=20, b=22) == 42
    with pytest.raises(svc.RufidNotFoundError) as unknown:
        admin.import_function("AAAAAAAAAAAA")
    assert "AAAAAAAAAAAA" in unknown.value.message


def publish(admin):
    published = admin.publish("bhTriple", "node20", "function bhTriple(x) {\n  return 3 * x\n}\n")
    short = published["rufid_short"]
    assert len(short) == 12
    assert published["full_rufid"] == "rufid:%s:%s:%s" % (short, published["version"], TENANT)
    resolved = admin.resolve(short)
    assert (resolved["function_name"], resolved["language"], resolved["full_rufid"]) == ("bhTriple", "javascript", published["full_rufid"])
    assert admin.execute(short, [14])["result"] == 42


def async_execution_logs(admin):
    created = admin.create(**js("bhGreet", "event", "console.log('hello ' + event.name)\n  return 'hi ' + event.name"))
    ref = admin.execute_async(created["rufid_short"], {"name": "ada"})
    assert ref["execution_id"].startswith("ex_") and ref["rufid_short"] == created["rufid_short"]
    done = admin.wait_execution(ref["execution_id"], timeout=20)
    assert (done["status"], done["result"]) == ("success", "hi ada")
    record = admin.get_execution(ref["execution_id"])
    assert (record["tenant_id"], record["rufid_short"], record["full_rufid"]) == (TENANT, created["rufid_short"], created["full_rufid"])
    logs = admin.execution_logs(ref["execution_id"])
    assert "hello ada" in json.dumps(logs["logs"])
    assert (logs["rufid_short"], logs["full_rufid"]) == (created["rufid_short"], created["full_rufid"])


def metadata_list_telemetry(admin):
    fn = js("bhSquare", "x", "return x * x")
    created = admin.create(**fn, tags=["bh-meta"])
    assert admin.execute(created["rufid_short"], [7])["result"] == 49
    meta = admin.get_function(created["rufid_short"])
    assert (meta["rufid"], meta["rufid_short"], meta["full_rufid"], meta["function_name"]) == (
        created["rufid_short"], created["rufid_short"], created["full_rufid"], "bhSquare")
    assert meta["metrics"]["usage_count"] >= 1
    assert created["rufid_short"] in [f["rufid_short"] for f in admin.list_functions(search="bhSquare")["items"]]
    source = admin.get_function_source(created["rufid_short"])
    assert (source["source_code"], source["signature"], source["rufid_short"], source["full_rufid"], source["version"]) == (
        fn["source_code"], fn["signature"], created["rufid_short"], created["full_rufid"], "v1")
    assert all(created["rufid_short"] in source["imports"][lang] for lang in ("typescript", "python", "go"))
    telemetry = admin.telemetry(created["rufid_short"], "5m")
    assert telemetry["window"] == "5m" and telemetry["executions"] >= 1
    assert (telemetry["rufid_short"], telemetry["full_rufid"]) == (created["rufid_short"], created["full_rufid"])
    series = admin.telemetry_series(created["rufid_short"], window="1h", buckets=6)
    assert (series["window"], series["rufid_short"], series["full_rufid"]) == ("1h", created["rufid_short"], created["full_rufid"])
    assert len(series["buckets"]) == 6 and sum(b["executions"] for b in series["buckets"]) >= 1


def search_paging(admin):
    for n in ("One", "Two", "Three"):
        admin.create(**js("bhPage" + n, "x", "return x"), tags=["bh-paging"])
    first = admin.search("", tags=["bh-paging"], limit=2)
    assert len(first["items"]) == 2
    assert first["pagination"] == {"total": 3, "limit": 2, "offset": 0, "next_offset": 2}
    second = admin.search("", tags=["bh-paging"], limit=2, offset=2)
    assert len(second["items"]) == 1 and second["pagination"]["next_offset"] is None
    assert first["aggregations"]["language"]["javascript"] == 3
    assert len({f["rufid_short"] for f in first["items"] + second["items"]}) == 3
    (author, count), = first["aggregations"]["author"].items()
    assert count == 3
    assert admin.search("", tags=["bh-paging"], author=author)["pagination"]["total"] == 3
    assert admin.search("", tags=["bh-paging"], author=author + "-other")["pagination"]["total"] == 0


def deploy_invoke_branch(admin):
    name = "bhMul"
    first = admin.deploy(**js(name, "a, b", "return a * b"), manifest=manifest_of(name), branch="staging")
    assert (first["branch"], first["branch_created"], first["moved"], first["previous_version"], first["version"]) == (
        "staging", True, True, None, "v1")
    assert first["branch_key"].startswith("svcbk_")
    assert admin.invoke(name, "staging", {"a": 6, "b": 7})["result"] == 42
    second = admin.deploy(**js(name, "a, b", "return a * b * 10"), manifest=manifest_of(name), branch="staging",
                          branch_key=first["branch_key"])
    assert (second["moved"], second["previous_version"], second["version"], second["branch_created"]) == (True, "v1", "v2", False)
    invoked = admin.invoke(name, "staging", [6, 7])
    assert (invoked["result"], invoked["version"], invoked["branch"], invoked["rufid_short"], invoked["full_rufid"]) == (
        420, "v2", "staging", second["rufid_short"], second["full_rufid"])
    with pytest.raises(svc.PermissionDeniedError):
        admin.deploy(**js(name, "a, b", "return 0"), manifest=manifest_of(name), branch="staging")


def versions_branches_export(admin):
    name = "bhVer"
    v1 = admin.deploy(**js(name, "x", "return x + 1"), manifest=manifest_of(name), branch="main")
    v2 = admin.deploy(**js(name, "x", "return x + 2"), manifest=manifest_of(name), branch="main", branch_key=v1["branch_key"])
    versions = admin.list_versions(v2["rufid_short"])
    assert versions["function_name"] == name
    assert [v["version"] for v in versions["versions"]] == ["v1", "v2"]
    assert [v["rufid_short"] for v in versions["versions"]] == [v1["rufid_short"], v2["rufid_short"]]
    assert [(h["branch"], h["version"], h["full_rufid"]) for h in versions["heads"]] == [("main", "v2", v2["full_rufid"])]
    heads = admin.list_branches(name)
    assert [(h["function_name"], h["branch"], h["version"], h["rufid_short"]) for h in heads] == [(name, "main", "v2", v2["rufid_short"])]
    exported = admin.export_function(v1["rufid_short"], "v1")
    assert (exported["version"], exported["function_name"], exported["manifest"], exported["rufid_short"], exported["full_rufid"]) == (
        "v1", name, manifest_of(name), v1["rufid_short"], v1["full_rufid"])
    assert exported["lockfile"]["schemaVersion"] == "1.0"


def subscription_execution_event(admin):
    created = admin.create(**js("bhEvent", "x", "return x"))
    with admin.subscribe_executions(created["rufid_short"]) as executions, admin.subscribe_system() as system:
        run = admin.execute(created["rufid_short"], [1])
        event = executions.next_event(timeout=20)
        assert (event["execution_id"], event["rufid_short"], event["full_rufid"], event["status"], event["tenant_id"]) == (
            run["execution_id"], created["rufid_short"], created["full_rufid"], "success", TENANT)
        assert system.next_event(timeout=20)["type"] == "node.started"
    assert executions.closed and system.closed
    assert list(executions) == []  # a closed subscription ends the iteration


def api_key_mint_revoke(admin):
    target = admin.create(**js("bhKeyed", "x", "return x + 1"))
    minted = admin.create_api_key("bh-exec", ["functions:execute"], expires_days=1)
    assert minted["api_key"].startswith("svck_")
    keyed = admin.with_options(token=minted["api_key"])
    assert keyed.execute(target["rufid_short"], [1])["result"] == 2
    with pytest.raises(svc.PermissionDeniedError) as denied:
        keyed.create(**js("bhNope", "", "return 1"))
    assert (denied.value.http_status, denied.value.unauthenticated) == (403, False)
    listed = admin.list_api_keys()
    mine = [k for k in listed if k["key_id"] == minted["key_id"]]
    assert mine and mine[0]["name"] == "bh-exec" and mine[0]["scopes"] == ["functions:execute"]
    assert minted["api_key"] not in json.dumps(listed)
    revoked = admin.revoke_api_key(minted["key_id"])
    assert revoked["key_id"] == minted["key_id"] and revoked["revoked_at"][:2] == "20"
    with pytest.raises(svc.PermissionDeniedError) as refused:
        keyed.execute(target["rufid_short"], [1])
    assert (refused.value.http_status, refused.value.unauthenticated) == (401, True)


def native_execute(admin):
    fn = js("bhNative", "a, b", "return a * b")
    short = svc.compute_rufid(fn["function_name"], fn["signature"], fn["language"], fn["source_code"]).rufid_short
    run = admin.execute_native("rufid:" + short, {"a": 6, "b": 7}, function_name=fn["function_name"], source_code=fn["source_code"])
    assert (run["result"], run["registered"]) == (42, True)


def node_and_federation_reads(admin):
    assert admin.health()["status"] == "ok"
    assert admin.readiness()["status"] == "ready"
    about = admin.node_info()
    assert (about["name"], about["ready"], about["status"], about["auth_mode"], about["federation"]) == (
        "svc-node", True, "ready", "native", {"enabled": False})
    assert about["protocol_version"] == svc.PROTOCOL_VERSION
    me = admin.whoami()
    assert (me["tenant_id"], me["admin"]) == (TENANT, True) and "rufid.admin" in me["permissions"]
    audit = admin.list_audit_entries(limit=5)
    assert 0 < len(audit["items"]) <= 5
    # a node without federation: 409 federation_disabled (nothing was unreachable: not 2001)
    for call in (admin.list_nodes, admin.federation_members):
        with pytest.raises(svc.ValidationFailedError) as refused:
            call()
        assert (refused.value.http_status, refused.value.details.get("reason")) == (409, "federation_disabled")


SCENARIOS = {f.__name__: f for f in (
    create_resolve_execute_delete, errors_by_class, remote_function_call, publish, async_execution_logs,
    metadata_list_telemetry, search_paging, deploy_invoke_branch, versions_branches_export,
    subscription_execution_event, api_key_mint_revoke, native_execute, node_and_federation_reads,
)}


def test_implements_exactly_the_listed_scenarios():
    assert sorted(SCENARIOS) == sorted(LISTED)


@pytest.mark.parametrize("scenario", LISTED)
def test_behaviour(scenario, admin):
    run = SCENARIOS.get(scenario)
    assert run is not None, "scenario %s of clients/behaviour.json has no Python implementation" % scenario
    run(admin)
