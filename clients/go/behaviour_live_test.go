package svc_test

// The shared behaviour list (../behaviour.json) run by the Go client against a live node started
// by this test (`svc-node start` from the built dist/, native auth, test mode). The TypeScript
// (test/client/behaviour-live.test.ts) and Python (tests/test_behaviour_live.py) suites run the
// same list. A listed scenario without an implementation here fails, and so does an
// implementation the list does not name. Needs `npm run build` (never skipped).

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	svc "github.com/svc-node/svc-node/clients/go"
)

const bhTenant = "default"

func js(name, params, body string) svc.CreateRequest {
	return svc.CreateRequest{FunctionName: name, Signature: "(" + params + ")", Language: "javascript",
		SourceCode: "function " + name + "(" + params + ") {\n  " + body + "\n}\n"}
}

func manifestOf(name string) map[string]any {
	return map[string]any{"schemaVersion": "1.0", "name": name, "entrypoint": "main:" + name,
		"runtime": map[string]any{"language": "javascript", "version": "20"}}
}

// must(call())(t) is call()'s value, or the test's end with call()'s error.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func wantErr(t *testing.T, err error, target error, what string) *svc.Error {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
	e, _ := svc.AsError(err)
	return e
}

func resultOf(t *testing.T, r *svc.ExecuteResponse) any {
	t.Helper()
	var v any
	if err := r.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

var behaviourScenarios = map[string]func(t *testing.T, ctx context.Context, admin *svc.Client){
	"create_resolve_execute_delete": func(t *testing.T, ctx context.Context, admin *svc.Client) {
		fn := js("bhAdd", "a, b", "return a + b")
		local := svc.ComputeRUFID(svc.RUFIDInput{FunctionName: fn.FunctionName, Signature: fn.Signature, Language: fn.Language, SourceCode: fn.SourceCode})
		created := must(admin.Create(ctx, fn))(t)
		if !created.Created || created.RUFIDShort != local.RUFIDShort || created.FullRUFID != "rufid:"+local.RUFIDShort+":v1:"+bhTenant {
			t.Fatalf("create: %+v", created)
		}
		again := must(admin.Create(ctx, fn))(t)
		if again.Created || again.FullRUFID != created.FullRUFID {
			t.Errorf("create again: %+v", again)
		}
		resolved := must(admin.Resolve(ctx, created.RUFIDShort, ""))(t)
		if resolved.RUFIDShort != local.RUFIDShort || resolved.FullRUFID != created.FullRUFID || resolved.FunctionName != "bhAdd" {
			t.Errorf("resolve: %+v", resolved)
		}
		named := must(admin.Execute(ctx, created.RUFIDShort, map[string]any{"a": 2, "b": 3}))(t)
		if v := resultOf(t, named); v != 5.0 || named.RUFIDShort != local.RUFIDShort || named.FullRUFID != created.FullRUFID {
			t.Errorf("named: %v %+v", v, named)
		}
		if v := resultOf(t, must(admin.Execute(ctx, created.RUFIDShort, []any{2, 3}))(t)); v != 5.0 {
			t.Errorf("positional: %v", v)
		}
		v2 := must(admin.Create(ctx, js("bhAdd", "a, b", "return a + b + 0")))(t)
		if v2.Version != "v2" || !v2.Created || v2.RUFIDShort == created.RUFIDShort {
			t.Errorf("v2: %+v", v2)
		}
		if v := resultOf(t, must(admin.Execute(ctx, created.RUFIDShort, []any{2, 3}, svc.AtVersion("v1")))(t)); v != 5.0 {
			t.Errorf("at v1: %v", v)
		}
		_, err := admin.Execute(ctx, created.RUFIDShort, []any{2, 3}, svc.AtVersion("v2"))
		wantErr(t, err, svc.ErrRUFIDNotFound, "execute the first hash at v2")
		deleted := must(admin.DeleteFunction(ctx, created.RUFIDShort, ""))(t)
		if len(deleted.Deleted) != 1 || deleted.Deleted[0] != created.FullRUFID {
			t.Errorf("deleted: %v", deleted.Deleted)
		}
		_, err = admin.Resolve(ctx, created.RUFIDShort, "")
		if e := wantErr(t, err, svc.ErrRUFIDNotFound, "resolve a deleted function"); e.HTTPStatus != 404 {
			t.Errorf("HTTP %d", e.HTTPStatus)
		}
	},

	"errors_by_class": func(t *testing.T, ctx context.Context, admin *svc.Client) {
		_, err := admin.Resolve(ctx, "not a rufid", "")
		if e := wantErr(t, err, svc.ErrInvalidRUFID, "local 1001"); e.HTTPStatus != 0 {
			t.Errorf("a local check has HTTP %d", e.HTTPStatus)
		}
		err = admin.Do(ctx, "POST", "/api/v1/functions/resolve", map[string]any{"rufid": "bad!"}, nil)
		if e := wantErr(t, err, svc.ErrInvalidRUFID, "remote 1001"); e.HTTPStatus != 400 || e.Name != "INVALID_RUFID" {
			t.Errorf("remote 1001: %+v", e)
		}
		_, err = admin.Resolve(ctx, "AAAAAAAAAAAA", "")
		if e := wantErr(t, err, svc.ErrRUFIDNotFound, "1002"); e.HTTPStatus != 404 || e.Name != "RUFID_NOT_FOUND" {
			t.Errorf("1002: %+v", e)
		}
		_, err = admin.GetExecution(ctx, "ex_00000000000000000000000000")
		if e := wantErr(t, err, svc.ErrNotFound, "1011"); e.HTTPStatus != 404 || e.Name != "NOT_FOUND" || e.Details["resource"] != "execution" || !svc.IsResourceNotFound(err) {
			t.Errorf("1011: %+v", e)
		}
		_, err = admin.With(svc.WithToken("")).ListFunctions(ctx, svc.ListOptions{})
		if e := wantErr(t, err, svc.ErrPermissionDenied, "no credentials"); e.HTTPStatus != 401 || !svc.IsUnauthenticated(err) {
			t.Errorf("401: %+v", e)
		}
		err = admin.Do(ctx, "POST", "/api/v1/functions/create", map[string]any{"function_name": "bhBad", "signature": "()", "language": "javascript"}, nil)
		if e := wantErr(t, err, svc.ErrValidationFailed, "1006"); e.Name != "VALIDATION_FAILED" || e.Message == "" {
			t.Errorf("1006: %+v", e)
		}
		boom := must(admin.Create(ctx, js("bhBoom", "", "throw new Error('boom')")))(t)
		_, err = admin.Execute(ctx, boom.RUFIDShort, nil)
		if e := wantErr(t, err, svc.ErrExecutionFailed, "1007"); e.Name != "EXECUTION_FAILED" || e.HTTPStatus < 400 {
			t.Errorf("1007: %+v", e)
		}
	},

	"remote_function_call": func(t *testing.T, ctx context.Context, admin *svc.Client) {
		created := must(admin.Create(ctx, js("bhSum", "a, b", "return a + b")))(t)
		sum := admin.Function(created.RUFIDShort)
		if v := must(sum.Call(ctx, 2, 3))(t); v != 5.0 {
			t.Errorf("Call: %v", v)
		}
		if v := must(sum.CallNamed(ctx, map[string]any{"a": 20, "b": 22}))(t); v != 42.0 {
			t.Errorf("CallNamed: %v", v)
		}
		_, err := admin.ImportFunction(ctx, "AAAAAAAAAAAA")
		if e := wantErr(t, err, svc.ErrRUFIDNotFound, "import unknown"); !strings.Contains(e.Message, "AAAAAAAAAAAA") {
			t.Errorf("message does not name the RUFID: %q", e.Message)
		}
	},

	"publish": func(t *testing.T, ctx context.Context, admin *svc.Client) {
		published := must(admin.Publish(ctx, svc.PublishRequest{Name: "bhTriple", Runtime: "node20", Source: "function bhTriple(x) {\n  return 3 * x\n}\n"}))(t)
		if len(published.RUFIDShort) != 12 || published.FullRUFID != "rufid:"+published.RUFIDShort+":"+published.Version+":"+bhTenant {
			t.Fatalf("publish: %+v", published)
		}
		resolved := must(admin.Resolve(ctx, published.RUFIDShort, ""))(t)
		if resolved.FunctionName != "bhTriple" || resolved.Language != "javascript" || resolved.FullRUFID != published.FullRUFID {
			t.Errorf("resolve: %+v", resolved)
		}
		if v := resultOf(t, must(admin.Execute(ctx, published.RUFIDShort, []any{14}))(t)); v != 42.0 {
			t.Errorf("execute: %v", v)
		}
	},

	"async_execution_logs": func(t *testing.T, ctx context.Context, admin *svc.Client) {
		created := must(admin.Create(ctx, js("bhGreet", "event", "console.log('hello ' + event.name)\n  return 'hi ' + event.name")))(t)
		ref := must(admin.ExecuteAsync(ctx, created.RUFIDShort, map[string]any{"name": "ada"}))(t)
		if !strings.HasPrefix(ref.ExecutionID, "ex_") || ref.RUFIDShort != created.RUFIDShort {
			t.Fatalf("ref: %+v", ref)
		}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		done := must(admin.WaitExecution(wctx, ref.ExecutionID))(t)
		var result string
		if done.Status != "success" || done.Decode(&result) != nil || result != "hi ada" {
			t.Errorf("done: %+v", done)
		}
		record := must(admin.GetExecution(ctx, ref.ExecutionID))(t)
		if record.TenantID != bhTenant || record.RUFIDShort != created.RUFIDShort || record.FullRUFID != created.FullRUFID {
			t.Errorf("record: tenant %q short %q full %q", record.TenantID, record.RUFIDShort, record.FullRUFID)
		}
		logs := must(admin.ExecutionLogs(ctx, ref.ExecutionID))(t)
		if b, _ := json.Marshal(logs.Logs); !strings.Contains(string(b), "hello ada") {
			t.Errorf("logs: %s", b)
		}
		if logs.RUFIDShort != created.RUFIDShort || logs.FullRUFID != created.FullRUFID {
			t.Errorf("logs name %q %q", logs.RUFIDShort, logs.FullRUFID)
		}
	},

	"metadata_list_telemetry": func(t *testing.T, ctx context.Context, admin *svc.Client) {
		fn := js("bhSquare", "x", "return x * x")
		fn.Tags = []string{"bh-meta"}
		created := must(admin.Create(ctx, fn))(t)
		if v := resultOf(t, must(admin.Execute(ctx, created.RUFIDShort, []any{7}))(t)); v != 49.0 {
			t.Errorf("execute: %v", v)
		}
		meta := must(admin.GetFunction(ctx, created.RUFIDShort, ""))(t)
		if meta.RUFID != created.RUFIDShort || meta.RUFIDShort != created.RUFIDShort || meta.FullRUFID != created.FullRUFID || meta.Metrics == nil || meta.Metrics.UsageCount < 1 {
			t.Errorf("metadata: %+v", meta)
		}
		listed := must(admin.ListFunctions(ctx, svc.ListOptions{Search: "bhSquare"}))(t)
		found := false
		for _, f := range listed.Items {
			found = found || f.RUFIDShort == created.RUFIDShort
		}
		if !found {
			t.Errorf("list: %+v", listed.Items)
		}
		source := must(admin.GetFunctionSource(ctx, created.RUFIDShort, ""))(t)
		if source.SourceCode != fn.SourceCode || source.Signature != fn.Signature || source.RUFIDShort != created.RUFIDShort ||
			source.FullRUFID != created.FullRUFID || source.Version != "v1" {
			t.Errorf("source: %+v", source)
		}
		for lang, stmt := range map[string]string{"typescript": source.Imports.TypeScript, "python": source.Imports.Python, "go": source.Imports.Go} {
			if !strings.Contains(stmt, created.RUFIDShort) {
				t.Errorf("%s import %q does not name %s", lang, stmt, created.RUFIDShort)
			}
		}
		tel := must(admin.Telemetry(ctx, created.RUFIDShort, "5m"))(t)
		if tel.Window != "5m" || tel.Executions < 1 || tel.RUFIDShort != created.RUFIDShort || tel.FullRUFID != created.FullRUFID {
			t.Errorf("telemetry: %+v", tel)
		}
		series := must(admin.TelemetrySeries(ctx, created.RUFIDShort, svc.TelemetrySeriesOptions{Window: "1h", Buckets: 6}))(t)
		var runs int64
		for _, b := range series.Buckets {
			runs += b.Executions
		}
		if series.Window != "1h" || len(series.Buckets) != 6 || runs < 1 || series.RUFIDShort != created.RUFIDShort || series.FullRUFID != created.FullRUFID {
			t.Errorf("series: %+v", series)
		}
	},

	"search_paging": func(t *testing.T, ctx context.Context, admin *svc.Client) {
		for _, n := range []string{"One", "Two", "Three"} {
			fn := js("bhPage"+n, "x", "return x")
			fn.Tags = []string{"bh-paging"}
			must(admin.Create(ctx, fn))(t)
		}
		first := must(admin.Search(ctx, svc.SearchOptions{Tags: []string{"bh-paging"}, Limit: 2}))(t)
		if len(first.Items) != 2 || first.Pagination.Total != 3 || first.Pagination.NextOffset == nil || *first.Pagination.NextOffset != 2 {
			t.Fatalf("first page: %+v", first.Pagination)
		}
		second := must(admin.Search(ctx, svc.SearchOptions{Tags: []string{"bh-paging"}, Limit: 2, Offset: 2}))(t)
		if len(second.Items) != 1 || second.Pagination.NextOffset != nil {
			t.Errorf("second page: %+v", second.Pagination)
		}
		if first.Aggregations.Language["javascript"] != 3 {
			t.Errorf("aggregations: %+v", first.Aggregations)
		}
		seen := map[string]bool{}
		for _, f := range append(first.Items, second.Items...) {
			seen[f.RUFIDShort] = true
		}
		if len(seen) != 3 {
			t.Errorf("distinct items: %v", seen)
		}
		if len(first.Aggregations.Author) != 1 {
			t.Fatalf("author facet: %+v", first.Aggregations.Author)
		}
		for author, count := range first.Aggregations.Author {
			byAuthor := must(admin.Search(ctx, svc.SearchOptions{Tags: []string{"bh-paging"}, Author: author}))(t)
			other := must(admin.Search(ctx, svc.SearchOptions{Tags: []string{"bh-paging"}, Author: author + "-other"}))(t)
			if count != 3 || byAuthor.Pagination.Total != 3 || other.Pagination.Total != 0 {
				t.Errorf("author %q: facet %d, by author %d, another author %d", author, count, byAuthor.Pagination.Total, other.Pagination.Total)
			}
		}
	},

	"deploy_invoke_branch": func(t *testing.T, ctx context.Context, admin *svc.Client) {
		name := "bhMul"
		first := must(admin.Deploy(ctx, svc.DeployRequest{CreateRequest: withManifest(js(name, "a, b", "return a * b"), name), Branch: "staging"}))(t)
		if first.Branch != "staging" || !first.BranchCreated || !first.Moved || first.PreviousVersion != nil || first.Version != "v1" || !strings.HasPrefix(first.BranchKey, "svcbk_") {
			t.Fatalf("first deploy: %+v", first)
		}
		inv := must(admin.Invoke(ctx, name, "staging", map[string]any{"a": 6, "b": 7}))(t)
		if v := resultOf(t, &inv.ExecuteResponse); v != 42.0 {
			t.Errorf("invoke v1: %v", v)
		}
		second := must(admin.Deploy(ctx, svc.DeployRequest{CreateRequest: withManifest(js(name, "a, b", "return a * b * 10"), name), Branch: "staging", BranchKey: first.BranchKey}))(t)
		if !second.Moved || second.PreviousVersion == nil || *second.PreviousVersion != "v1" || second.Version != "v2" || second.BranchCreated {
			t.Errorf("second deploy: %+v", second)
		}
		inv = must(admin.Invoke(ctx, name, "staging", []any{6, 7}))(t)
		if v := resultOf(t, &inv.ExecuteResponse); v != 420.0 || inv.Version != "v2" || inv.Branch != "staging" || inv.RUFIDShort != second.RUFIDShort || inv.FullRUFID != second.FullRUFID {
			t.Errorf("invoke v2: %v %+v", v, inv)
		}
		_, err := admin.Deploy(ctx, svc.DeployRequest{CreateRequest: withManifest(js(name, "a, b", "return 0"), name), Branch: "staging"})
		wantErr(t, err, svc.ErrPermissionDenied, "deploy without the key")
	},

	"versions_branches_export": func(t *testing.T, ctx context.Context, admin *svc.Client) {
		name := "bhVer"
		v1 := must(admin.Deploy(ctx, svc.DeployRequest{CreateRequest: withManifest(js(name, "x", "return x + 1"), name), Branch: "main"}))(t)
		v2 := must(admin.Deploy(ctx, svc.DeployRequest{CreateRequest: withManifest(js(name, "x", "return x + 2"), name), Branch: "main", BranchKey: v1.BranchKey}))(t)
		versions := must(admin.ListVersions(ctx, v2.RUFIDShort))(t)
		var labels, shorts []string
		for _, v := range versions.Versions {
			labels, shorts = append(labels, v.Version), append(shorts, v.RUFIDShort)
		}
		if versions.FunctionName != name || !reflect.DeepEqual(labels, []string{"v1", "v2"}) || !reflect.DeepEqual(shorts, []string{v1.RUFIDShort, v2.RUFIDShort}) {
			t.Errorf("versions: %v %v", labels, shorts)
		}
		if len(versions.Heads) != 1 || versions.Heads[0].Branch != "main" || versions.Heads[0].Version != "v2" || versions.Heads[0].FullRUFID != v2.FullRUFID {
			t.Errorf("heads: %+v", versions.Heads)
		}
		heads := must(admin.ListBranches(ctx, name))(t)
		if len(heads) != 1 || heads[0].FunctionName != name || heads[0].Version != "v2" || heads[0].RUFIDShort != v2.RUFIDShort {
			t.Errorf("branches: %+v", heads)
		}
		exported := must(admin.ExportFunction(ctx, v1.RUFIDShort, "v1"))(t)
		if exported.Version != "v1" || exported.FunctionName != name || !reflect.DeepEqual(exported.Manifest, manifestOf(name)) ||
			exported.RUFIDShort != v1.RUFIDShort || exported.FullRUFID != v1.FullRUFID || exported.Lockfile["schemaVersion"] != "1.0" {
			t.Errorf("export: %+v", exported)
		}
	},

	"subscription_execution_event": func(t *testing.T, ctx context.Context, admin *svc.Client) {
		created := must(admin.Create(ctx, js("bhEvent", "x", "return x")))(t)
		executions := must(admin.SubscribeExecutions(ctx, created.RUFIDShort))(t)
		defer executions.Close()
		system := must(admin.SubscribeSystem(ctx))(t)
		defer system.Close()
		run := must(admin.Execute(ctx, created.RUFIDShort, []any{1}))(t)
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		ev := must(executions.Next(wctx))(t)
		if ev.ExecutionID != run.ExecutionID || ev.RUFIDShort != created.RUFIDShort || ev.FullRUFID != created.FullRUFID || ev.Status != "success" || ev.TenantID != bhTenant {
			t.Errorf("event: %+v", ev)
		}
		if sys := must(system.Next(wctx))(t); sys.Type != "node.started" {
			t.Errorf("first system event: %+v", sys)
		}
		_ = executions.Close()
		if _, err := executions.Next(wctx); !errors.Is(err, svc.ErrSubscriptionClosed) {
			t.Errorf("after Close: %v", err)
		}
	},

	"api_key_mint_revoke": func(t *testing.T, ctx context.Context, admin *svc.Client) {
		target := must(admin.Create(ctx, js("bhKeyed", "x", "return x + 1")))(t)
		minted := must(admin.CreateAPIKey(ctx, svc.APIKeyRequest{Name: "bh-exec", Scopes: []string{"functions:execute"}, ExpiresDays: 1}))(t)
		if !strings.HasPrefix(minted.APIKey, "svck_") {
			t.Fatalf("minted: %+v", minted)
		}
		keyed := admin.With(svc.WithToken(minted.APIKey))
		if v := resultOf(t, must(keyed.Execute(ctx, target.RUFIDShort, []any{1}))(t)); v != 2.0 {
			t.Errorf("keyed execute: %v", v)
		}
		_, err := keyed.Create(ctx, js("bhNope", "", "return 1"))
		if e := wantErr(t, err, svc.ErrPermissionDenied, "create with an execute key"); e.HTTPStatus != 403 || svc.IsUnauthenticated(err) {
			t.Errorf("403: %+v", e)
		}
		keys := must(admin.ListAPIKeys(ctx))(t)
		var mine *svc.APIKeyInfo
		for i := range keys {
			if keys[i].KeyID == minted.KeyID {
				mine = &keys[i]
			}
		}
		if mine == nil || mine.Name != "bh-exec" || !reflect.DeepEqual(mine.Scopes, []string{"functions:execute"}) {
			t.Errorf("listed: %+v", mine)
		}
		if b, _ := json.Marshal(keys); strings.Contains(string(b), minted.APIKey) {
			t.Error("the listing shows a secret")
		}
		revoked := must(admin.RevokeAPIKey(ctx, minted.KeyID))(t)
		if revoked.KeyID != minted.KeyID || !strings.HasPrefix(revoked.RevokedAt, "20") {
			t.Errorf("revoked: %+v", revoked)
		}
		_, err = keyed.Execute(ctx, target.RUFIDShort, []any{1})
		if e := wantErr(t, err, svc.ErrPermissionDenied, "revoked key"); e.HTTPStatus != 401 {
			t.Errorf("revoked key: HTTP %d", e.HTTPStatus)
		}
	},

	"native_execute": func(t *testing.T, ctx context.Context, admin *svc.Client) {
		fn := js("bhNative", "a, b", "return a * b")
		short := svc.ComputeRUFID(svc.RUFIDInput{FunctionName: fn.FunctionName, Signature: fn.Signature, Language: fn.Language, SourceCode: fn.SourceCode}).RUFIDShort
		run := must(admin.ExecuteNative(ctx, svc.NativeExecuteRequest{RUFID: "rufid:" + short, FunctionName: fn.FunctionName, SourceCode: fn.SourceCode, InputData: map[string]any{"a": 6, "b": 7}}))(t)
		var v float64
		if err := run.Decode(&v); err != nil || v != 42 || !run.Registered {
			t.Errorf("native: %v %+v", err, run)
		}
	},

	"node_and_federation_reads": func(t *testing.T, ctx context.Context, admin *svc.Client) {
		if h := must(admin.Health(ctx))(t); h.Status != "ok" {
			t.Errorf("health: %+v", h)
		}
		if r := must(admin.Readiness(ctx))(t); r.Status != "ready" {
			t.Errorf("readiness: %+v", r)
		}
		about := must(admin.NodeInfo(ctx))(t)
		if about.Name != "svc-node" || !about.Ready || about.Status != "ready" || about.AuthMode != "native" || about.Federation.Enabled || about.ProtocolVersion != svc.ProtocolVersion {
			t.Errorf("node info: %+v", about)
		}
		me := must(admin.Whoami(ctx))(t)
		if me.TenantID != bhTenant || !me.Admin || !slices.Contains(me.Permissions, "rufid.admin") {
			t.Errorf("whoami: %+v", me)
		}
		audit := must(admin.ListAuditEntries(ctx, svc.AuditQuery{Limit: 5}))(t)
		if len(audit.Items) == 0 || len(audit.Items) > 5 {
			t.Errorf("audit: %d items", len(audit.Items))
		}
		// a node without federation: 409 federation_disabled (nothing was unreachable: not 2001)
		_, err := admin.ListNodes(ctx)
		if e := wantErr(t, err, svc.ErrValidationFailed, "list nodes without federation"); e.HTTPStatus != 409 || e.Details["reason"] != "federation_disabled" {
			t.Errorf("list nodes without federation: %+v", e)
		}
		_, err = admin.FederationMembers(ctx)
		if e := wantErr(t, err, svc.ErrValidationFailed, "federation members without federation"); e.HTTPStatus != 409 || e.Details["reason"] != "federation_disabled" {
			t.Errorf("federation members without federation: %+v", e)
		}
	},
}

func withManifest(r svc.CreateRequest, name string) svc.CreateRequest {
	r.Manifest = manifestOf(name)
	return r
}

func TestBehaviourLive(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "behaviour.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Scenarios []struct {
			ID string `json:"id"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	var listed, implemented []string
	for _, s := range list.Scenarios {
		listed = append(listed, s.ID)
	}
	for id := range behaviourScenarios {
		implemented = append(implemented, id)
	}
	sort.Strings(listed)
	sort.Strings(implemented)
	if !reflect.DeepEqual(listed, implemented) {
		t.Errorf("implemented scenarios %v differ from ../behaviour.json %v", implemented, listed)
	}

	d := startLiveDaemon(t)
	admin := svc.New(d.url, svc.WithToken(liveAdminKey), svc.WithTimeout(20*time.Second))
	for _, s := range list.Scenarios {
		t.Run(s.ID, func(t *testing.T) {
			run, ok := behaviourScenarios[s.ID]
			if !ok {
				t.Fatalf("scenario %s of ../behaviour.json has no Go implementation", s.ID)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			run(t, ctx, admin)
		})
	}
}
