package svc_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	svc "github.com/svc-node/svc-node/clients/go"
)

// seen is one request as the test server received it.
type seen struct {
	Method string
	Path   string // decoded path
	Raw    string // path as sent (escaped)
	Query  map[string][]string
	Header http.Header
	Body   []byte
}

// jsonBody decodes the request body into a generic value.
func (s seen) jsonBody(t *testing.T) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(s.Body, &v); err != nil {
		t.Fatalf("request body %q is not JSON: %v", s.Body, err)
	}
	return v
}

// server is a loopback test server that records every request and answers with handle.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, body []byte)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, seen{r.Method, r.URL.Path, r.URL.EscapedPath(), r.URL.Query(), r.Header.Clone(), body})
		s.mu.Unlock()
		handle(w, r, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.reqs...)
}

func (s *server) last(t *testing.T) seen {
	t.Helper()
	r := s.requests()
	if len(r) == 0 {
		t.Fatal("no request reached the server")
	}
	return r[len(r)-1]
}

// reply returns a handler that answers every request with status and the JSON text body.
func reply(status int, body string) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func mustJSON(t *testing.T, text string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("bad test JSON %q: %v", text, err)
	}
	return v
}

func checkRequest(t *testing.T, got seen, method, path string, wantBody string) {
	t.Helper()
	if got.Method != method || got.Path != path {
		t.Errorf("request = %s %s, want %s %s", got.Method, got.Path, method, path)
	}
	if wantBody == "" {
		if len(got.Body) != 0 {
			t.Errorf("unexpected request body %s", got.Body)
		}
		return
	}
	if ct := got.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if b, w := got.jsonBody(t), mustJSON(t, wantBody); !reflect.DeepEqual(b, w) {
		t.Errorf("request body\n got: %s\nwant: %s", got.Body, wantBody)
	}
}

const (
	short = "tUwBWSc8Nozv"
	full  = "rufid:tUwBWSc8Nozv:v1:acme"
)

func TestHeaders(t *testing.T) {
	s := newServer(t, reply(200, `{"items":[],"pagination":{"total":0,"limit":20,"offset":0,"next_offset":null}}`))
	c := svc.New(s.URL, svc.WithToken("tok-123"), svc.WithNamespace("team-a"))
	if _, err := c.ListFunctions(context.Background(), svc.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	h := s.last(t).Header
	if got := h.Get("Authorization"); got != "Bearer tok-123" {
		t.Errorf("Authorization = %q", got)
	}
	if got := h.Get("X-Svc-Namespace"); got != "team-a" {
		t.Errorf("X-Svc-Namespace = %q", got)
	}
	if got := h.Get("Accept"); got != "application/json" {
		t.Errorf("Accept = %q", got)
	}
	if got := h.Get("User-Agent"); !strings.HasPrefix(got, "svc-go/") {
		t.Errorf("User-Agent = %q", got)
	}

	// Without token and namespace neither header is sent.
	if _, err := svc.New(s.URL).ListFunctions(context.Background(), svc.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	h = s.last(t).Header
	if _, ok := h["Authorization"]; ok {
		t.Errorf("Authorization sent without a token: %q", h.Get("Authorization"))
	}
	if _, ok := h["X-Svc-Namespace"]; ok {
		t.Errorf("X-Svc-Namespace sent without a namespace")
	}
}

func TestWithCopiesClient(t *testing.T) {
	s := newServer(t, reply(204, ""))
	base := svc.New(s.URL+"/", svc.WithToken("admin"))
	other := base.With(svc.WithToken("minted"), svc.WithNamespace("ns2"))
	if err := other.Delete(context.Background(), short); err != nil {
		t.Fatal(err)
	}
	if got := s.last(t).Header.Get("Authorization"); got != "Bearer minted" {
		t.Errorf("copy sent %q", got)
	}
	if err := base.Delete(context.Background(), short); err != nil {
		t.Fatal(err)
	}
	last := s.last(t)
	if got := last.Header.Get("Authorization"); got != "Bearer admin" {
		t.Errorf("original changed: %q", got)
	}
	if last.Header.Get("X-Svc-Namespace") != "" || base.Namespace() != "" || other.Namespace() != "ns2" {
		t.Errorf("namespace leaked into the original client")
	}
	checkRequest(t, last, "DELETE", "/api/v1/functions/"+short, "")
}

func TestBaseURLPathPrefix(t *testing.T) {
	s := newServer(t, reply(201, `{"rufid":"`+full+`"}`))
	c := svc.New(s.URL + "/node-1/")
	if c.BaseURL() != s.URL+"/node-1" {
		t.Errorf("BaseURL = %q", c.BaseURL())
	}
	if _, err := c.Create(context.Background(), svc.CreateRequest{FunctionName: "f"}); err != nil {
		t.Fatal(err)
	}
	if p := s.last(t).Path; p != "/node-1/api/v1/functions/create" {
		t.Errorf("path = %q", p)
	}
}

func TestNewFromEnv(t *testing.T) {
	s := newServer(t, reply(200, `{"function_id":"fn1","rufid":"`+short+`"}`))
	t.Setenv("SVC_URL", s.URL)
	t.Setenv("SVC_TOKEN", "env-token")
	t.Setenv("SVC_NAMESPACE", "env-ns")
	c, err := svc.NewFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resolve(context.Background(), short, ""); err != nil {
		t.Fatal(err)
	}
	h := s.last(t).Header
	if h.Get("Authorization") != "Bearer env-token" || h.Get("X-Svc-Namespace") != "env-ns" {
		t.Errorf("headers from env: %v", h)
	}
	// Options passed to NewFromEnv win over the environment.
	c, err = svc.NewFromEnv(svc.WithToken("explicit"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resolve(context.Background(), short, ""); err != nil {
		t.Fatal(err)
	}
	if got := s.last(t).Header.Get("Authorization"); got != "Bearer explicit" {
		t.Errorf("Authorization = %q", got)
	}

	t.Setenv("SVC_URL", "")
	if _, err := svc.NewFromEnv(); err == nil {
		t.Error("NewFromEnv without SVC_URL succeeded")
	}
	t.Setenv("SVC_URL", "not a url")
	if _, err := svc.NewFromEnv(); err == nil {
		t.Error("NewFromEnv with a relative SVC_URL succeeded")
	}
}

func TestCreate(t *testing.T) {
	s := newServer(t, reply(201, `{"rufid":"`+full+`","rufid_short":"`+short+`","version":"v1",
		"content_digest":"ea0b","import_statement":"from svc.rufid import `+short+` as add",
		"share_url":"https://share.example/`+short+`","api_endpoint":"/api/v1/functions/`+short+`/execute","created":true}`))
	c := svc.New(s.URL, svc.WithToken("t"))
	got, err := c.Create(context.Background(), svc.CreateRequest{
		FunctionName: "add", SourceCode: "def add(a, b):\n    return a + b\n", Signature: "(a, b)", Language: "python",
		Description: "adds", Tags: []string{"math"},
		Manifest: map[string]any{"schemaVersion": "1.0", "name": "add"},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkRequest(t, s.last(t), "POST", "/api/v1/functions/create", `{"function_name":"add",
		"source_code":"def add(a, b):\n    return a + b\n","signature":"(a, b)","language":"python",
		"description":"adds","tags":["math"],"manifest":{"schemaVersion":"1.0","name":"add"}}`)
	want := svc.CreateResponse{
		RUFID: full, RUFIDShort: short, FullRUFID: full, Version: "v1", ContentDigest: "ea0b",
		ImportStatement: "from svc.rufid import " + short + " as add", ShareURL: "https://share.example/" + short,
		APIEndpoint: "/api/v1/functions/" + short + "/execute", Created: true,
	}
	if *got != want {
		t.Errorf("response\n got: %+v\nwant: %+v", *got, want)
	}

	// Optional fields are omitted when empty.
	if _, err := c.Create(context.Background(), svc.CreateRequest{FunctionName: "f", SourceCode: "", Signature: "()", Language: "js"}); err != nil {
		t.Fatal(err)
	}
	checkRequest(t, s.last(t), "POST", "/api/v1/functions/create",
		`{"function_name":"f","source_code":"","signature":"()","language":"js"}`)
}

func TestResolve(t *testing.T) {
	s := newServer(t, reply(200, `{"function_id":"fn-1","rufid":"`+full+`","version":"v2","accessible":true,
		"cached":true,"resolution_time_ms":0.4,"content_digest":"abc","function_name":"add","signature":"(a, b)",
		"language":"python","manifest":{"name":"add"},"lockfile":null}`))
	c := svc.New(s.URL)
	got, err := c.Resolve(context.Background(), short, "v2")
	if err != nil {
		t.Fatal(err)
	}
	checkRequest(t, s.last(t), "POST", "/api/v1/functions/resolve", `{"rufid":"`+short+`","version":"v2"}`)
	if got.FunctionID != "fn-1" || got.RUFID != full || got.Version != "v2" || !got.Accessible || !got.Cached ||
		got.ResolutionTimeMS != 0.4 || got.FunctionName != "add" || got.Signature != "(a, b)" ||
		got.Language != "python" || got.Manifest["name"] != "add" || got.Lockfile != nil || got.ContentDigest != "abc" {
		t.Errorf("response = %+v", got)
	}
	if _, err := c.Resolve(context.Background(), full, ""); err != nil {
		t.Fatal(err)
	}
	checkRequest(t, s.last(t), "POST", "/api/v1/functions/resolve", `{"rufid":"`+full+`"}`)
}

func TestExecute(t *testing.T) {
	s := newServer(t, reply(200, `{"result":{"sum":5},"execution_time_ms":1.5,"status":"success","execution_id":"ex-1"}`))
	c := svc.New(s.URL)
	got, err := c.Execute(context.Background(), short, map[string]any{"a": 2, "b": 3})
	if err != nil {
		t.Fatal(err)
	}
	checkRequest(t, s.last(t), "POST", "/api/v1/functions/"+short+"/execute", `{"arguments":{"a":2,"b":3}}`)
	if got.Status != "success" || got.ExecutionTimeMS != 1.5 || got.ExecutionID != "ex-1" || got.Err() != nil {
		t.Errorf("response = %+v", got)
	}
	var out struct{ Sum int }
	if err := got.Decode(&out); err != nil || out.Sum != 5 {
		t.Errorf("Decode = %+v, %v", out, err)
	}
	if v, err := got.Value(); err != nil || !reflect.DeepEqual(v, map[string]any{"sum": 5.0}) {
		t.Errorf("Value = %#v, %v", v, err)
	}

	if _, err := c.Execute(context.Background(), full, []int{2, 3}); err != nil {
		t.Fatal(err)
	}
	checkRequest(t, s.last(t), "POST", "/api/v1/functions/"+full+"/execute", `{"arguments":[2,3]}`)

	if _, err := c.Execute(context.Background(), short, nil); err != nil {
		t.Fatal(err)
	}
	checkRequest(t, s.last(t), "POST", "/api/v1/functions/"+short+"/execute", `{"arguments":{}}`)
}

func TestGetListDelete(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		switch {
		case r.Method == "GET" && r.URL.Path == "/api/v1/functions":
			next := "null"
			if r.URL.Query().Get("offset") == "" {
				next = "1"
			}
			fmt.Fprintf(w, `{"items":[{"rufid":"%s","function_name":"add","signature":"(a, b)","language":"python",
				"version":"v1","created_at":"2024-01-01T00:00:00Z","author":"a@example.com","tenant_id":"acme",
				"tags":["math"],"dependencies":["numpy"],"metrics":{"usage_count":3,"avg_execution_time_ms":2.5,"success_rate":1}}],
				"pagination":{"total":2,"limit":1,"offset":0,"next_offset":%s}}`, short, next)
		case r.Method == "GET":
			fmt.Fprintf(w, `{"rufid":"%s","function_name":"add","version":"v1","tenant_id":"acme","source_code":"x"}`, short)
		default:
			w.WriteHeader(200)
			_, _ = io.WriteString(w, `{"deleted":["`+full+`"]}`)
		}
	})
	c := svc.New(s.URL)
	ctx := context.Background()

	fn, err := c.GetFunction(ctx, short, "")
	if err != nil {
		t.Fatal(err)
	}
	checkRequest(t, s.last(t), "GET", "/api/v1/functions/"+short, "")
	if fn.RUFID != short || fn.RUFIDShort != short || fn.FullRUFID != full || fn.FunctionName != "add" || fn.TenantID != "acme" || fn.SourceCode != "x" {
		t.Errorf("GetFunction = %+v", fn)
	}

	list, err := c.ListFunctions(ctx, svc.ListOptions{Search: "add two", Tags: []string{"math", " ", "util"}, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	req := s.last(t)
	checkRequest(t, req, "GET", "/api/v1/functions", "")
	wantQuery := map[string][]string{"search": {"add two"}, "tags": {"math,util"}, "limit": {"1"}}
	if !reflect.DeepEqual(req.Query, wantQuery) {
		t.Errorf("query = %v, want %v", req.Query, wantQuery)
	}
	if len(list.Items) != 1 || list.Items[0].Metrics == nil || list.Items[0].Metrics.UsageCount != 3 ||
		list.Items[0].Author != "a@example.com" || !reflect.DeepEqual(list.Items[0].Dependencies, []string{"numpy"}) {
		t.Errorf("items = %+v", list.Items)
	}
	if list.Pagination.Total != 2 || list.Pagination.NextOffset == nil || *list.Pagination.NextOffset != 1 {
		t.Errorf("pagination = %+v", list.Pagination)
	}
	list, err = c.ListFunctions(ctx, svc.ListOptions{Offset: 1})
	if err != nil {
		t.Fatal(err)
	}
	if q := s.last(t).Query; !reflect.DeepEqual(q, map[string][]string{"offset": {"1"}}) {
		t.Errorf("query = %v", q)
	}
	if list.Pagination.NextOffset != nil {
		t.Errorf("next_offset null decoded as %v", *list.Pagination.NextOffset)
	}

	deleted, err := c.DeleteFunction(ctx, full, "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(deleted.Deleted, []string{full}) {
		t.Errorf("deleted = %v", deleted.Deleted)
	}
	checkRequest(t, s.last(t), "DELETE", "/api/v1/functions/"+full, "")
	// the deprecated name still works
	if err := c.Delete(ctx, full); err != nil {
		t.Fatal(err)
	}
}

func TestPublish(t *testing.T) {
	s := newServer(t, reply(201, `{"rufid":"`+full+`","rufid_short":"`+short+`","version":"v1",
		"import_statement":"imp","share_url":"https://s/`+short+`"}`))
	src := "def add(a, b):\n    return a + b  # ünïcode ✓\n"
	got, err := svc.New(s.URL).Publish(context.Background(), svc.PublishRequest{
		Name: "add", Runtime: "python3.12", Source: src, Description: "d", Tags: []string{"x"},
	})
	if err != nil {
		t.Fatal(err)
	}
	req := s.last(t)
	checkRequest(t, req, "POST", "/v1/functions", `{"name":"add","runtime":"python3.12","source":"`+
		base64.StdEncoding.EncodeToString([]byte(src))+`","description":"d","tags":["x"]}`)
	var body struct{ Source string }
	_ = json.Unmarshal(req.Body, &body)
	if dec, err := base64.StdEncoding.DecodeString(body.Source); err != nil || string(dec) != src {
		t.Errorf("source round trip: %q, %v", dec, err)
	}
	// the node sent no full_rufid: the client derives it from rufid
	want := svc.PublishResponse{RUFID: full, RUFIDShort: short, FullRUFID: full, Version: "v1", ImportStatement: "imp", ShareURL: "https://s/" + short}
	if *got != want {
		t.Errorf("response = %+v", *got)
	}
}

func TestAsyncExecution(t *testing.T) {
	var polls atomic.Int32
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		switch {
		case r.Method == "POST":
			w.WriteHeader(202)
			_, _ = io.WriteString(w, `{"execution_id":"ex/42","status":"queued"}`)
		case strings.HasSuffix(r.URL.Path, "/logs"):
			_, _ = io.WriteString(w, `{"execution_id":"ex/42","logs":[{"level":"info","message":"hello","at":"t1"},"bare"]}`)
		default:
			status := [...]string{"queued", "running", "success"}[min(int(polls.Add(1))-1, 2)]
			fmt.Fprintf(w, `{"execution_id":"ex/42","rufid":"%s","version":1,"status":"%s","result":%s}`,
				full, status, map[bool]string{true: "7", false: "null"}[status == "success"])
		}
	})
	c := svc.New(s.URL, svc.WithPollInterval(time.Millisecond))
	ctx := context.Background()

	ref, err := c.ExecuteAsync(ctx, short, map[string]any{"n": 7})
	if err != nil {
		t.Fatal(err)
	}
	checkRequest(t, s.last(t), "POST", "/v1/functions/"+short+"/executions", `{"n":7}`)
	if ref.ExecutionID != "ex/42" || ref.Status != "queued" {
		t.Errorf("ref = %+v", ref)
	}
	if _, err := c.ExecuteAsync(ctx, short, nil); err != nil {
		t.Fatal(err)
	}
	checkRequest(t, s.last(t), "POST", "/v1/functions/"+short+"/executions", `{}`)

	exec, err := c.WaitExecution(ctx, ref.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if n := polls.Load(); n != 3 {
		t.Errorf("polled %d times, want 3", n)
	}
	checkRequest(t, s.last(t), "GET", "/v1/executions/ex/42", "")
	if raw := s.last(t).Raw; raw != "/v1/executions/ex%2F42" {
		t.Errorf("execution id not escaped: %s", raw)
	}
	var n int
	if exec.Status != "success" || exec.Version != "v1" || exec.Err() != nil || exec.Decode(&n) != nil || n != 7 {
		t.Errorf("execution = %+v (n=%d)", exec, n)
	}

	logs, err := c.ExecutionLogs(ctx, "ex/42")
	if err != nil {
		t.Fatal(err)
	}
	checkRequest(t, s.last(t), "GET", "/v1/executions/ex/42/logs", "")
	if len(logs.Logs) != 2 || logs.Logs[0].Level != "info" || logs.Text() != "hello\nbare" {
		t.Errorf("logs = %+v", logs)
	}

	if _, err := c.GetExecution(ctx, " "); !svc.IsValidationFailed(err) {
		t.Errorf("empty execution id: %v", err)
	}
}

func TestExecutionLogsBareArray(t *testing.T) {
	s := newServer(t, reply(200, `[{"level":"log","message":"a","at":"t"}]`))
	logs, err := svc.New(s.URL).ExecutionLogs(context.Background(), "ex1")
	if err != nil {
		t.Fatal(err)
	}
	if logs.ExecutionID != "ex1" || len(logs.Logs) != 1 || logs.Logs[0].Message != "a" {
		t.Errorf("logs = %+v", logs)
	}
}

func TestWaitExecutionBoundedByContext(t *testing.T) {
	s := newServer(t, reply(200, `{"execution_id":"ex1","status":"running"}`))
	c := svc.New(s.URL, svc.WithPollInterval(2*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	start := time.Now()
	exec, err := c.WaitExecution(ctx, "ex1")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if exec == nil || exec.Status != "running" || exec.Done() {
		t.Errorf("last record = %+v", exec)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("WaitExecution overran its context")
	}
	if len(s.requests()) < 2 {
		t.Errorf("polled %d times", len(s.requests()))
	}
}

// The deadline lands while the second poll is in flight: the caller still gets the record of
// the first poll, not nil.
func TestWaitExecutionDeadlineDuringPoll(t *testing.T) {
	var polls atomic.Int32
	release := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if polls.Add(1) > 1 {
			select { // hold the poll past the caller's deadline (bounded by the test's end)
			case <-release:
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		reply(200, `{"execution_id":"ex1","status":"queued"}`)(w, r, nil)
	})
	t.Cleanup(func() { close(release) }) // runs before the server's Close (cleanups are LIFO)
	c := svc.New(s.URL, svc.WithPollInterval(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	exec, err := c.WaitExecution(ctx, "ex1")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if exec == nil || exec.Status != "queued" {
		t.Fatalf("last record = %+v, want the queued record of the first poll", exec)
	}
	if polls.Load() < 2 {
		t.Errorf("polled %d times, want the deadline to land during the second poll", polls.Load())
	}
}

func TestFailedExecutionRecord(t *testing.T) {
	s := newServer(t, reply(200, `{"execution_id":"ex1","status":"error","error":{"code":1007,"name":"EXECUTION_FAILED","message":"boom"}}`))
	exec, err := svc.New(s.URL).WaitExecution(context.Background(), "ex1")
	if err != nil {
		t.Fatal(err)
	}
	if e := exec.Err(); !svc.IsExecutionFailed(e) || !strings.Contains(e.Error(), "boom") {
		t.Errorf("Err() = %v", e)
	}
	timeout := &svc.Execution{Status: "timeout"}
	if !svc.IsExecutionTimeout(timeout.Err()) {
		t.Errorf("timeout record Err() = %v", timeout.Err())
	}
	if (&svc.Execution{Status: "running"}).Err() == nil {
		t.Error("running record has no error")
	}
}

func TestSearchAndTelemetry(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if strings.HasPrefix(r.URL.Path, "/v1/marketplace") {
			_, _ = io.WriteString(w, `{"items":[{"rufid":"`+short+`","function_name":"add"}],
				"pagination":{"total":1,"limit":10,"offset":5,"next_offset":null},
				"aggregations":{"language":{"python":1},"tags":{"math":1},"author":{"a@x":1}}}`)
			return
		}
		_, _ = io.WriteString(w, `{"rufid":"`+short+`","window":"15m","executions":12,
			"latency_ms":{"p50":1,"p95":2,"p99":3,"max":4},"error_rate":0.25,
			"cost":{"cpu_ms_total":10,"cpu_ms_avg":0.8,"memory_bytes_avg":1024}}`)
	})
	c := svc.New(s.URL)
	res, err := c.Search(context.Background(), svc.SearchOptions{Q: "add", Language: "python", Author: "key:bob", Tags: []string{"math", "x"}, Limit: 10, Offset: 5})
	if err != nil {
		t.Fatal(err)
	}
	req := s.last(t)
	checkRequest(t, req, "GET", "/v1/marketplace/functions/search", "")
	want := map[string][]string{"q": {"add"}, "language": {"python"}, "author": {"key:bob"}, "tags": {"math,x"}, "limit": {"10"}, "offset": {"5"}}
	if !reflect.DeepEqual(req.Query, want) {
		t.Errorf("query = %v", req.Query)
	}
	if len(res.Items) != 1 || res.Aggregations.Language["python"] != 1 || res.Aggregations.Author["a@x"] != 1 || res.Pagination.Offset != 5 {
		t.Errorf("search = %+v", res)
	}

	tel, err := c.Telemetry(context.Background(), full, "15m")
	if err != nil {
		t.Fatal(err)
	}
	req = s.last(t)
	checkRequest(t, req, "GET", "/v1/telemetry/functions/"+full, "")
	if !reflect.DeepEqual(req.Query, map[string][]string{"window": {"15m"}}) {
		t.Errorf("query = %v", req.Query)
	}
	// an older node names the function by rufid only: RUFIDShort is derived from it
	wantTel := svc.Telemetry{RUFID: short, RUFIDShort: short, Window: "15m", Executions: 12, LatencyMS: svc.Latency{P50: 1, P95: 2, P99: 3, Max: 4},
		ErrorRate: 0.25, Cost: svc.Cost{CPUMSTotal: 10, CPUMSAvg: 0.8, MemoryBytesAvg: 1024}}
	if *tel != wantTel {
		t.Errorf("telemetry = %+v", *tel)
	}
	if _, err := c.Telemetry(context.Background(), short, ""); err != nil {
		t.Fatal(err)
	}
	if len(s.last(t).Query) != 0 {
		t.Errorf("empty window sent: %v", s.last(t).Query)
	}
}

func TestAPIKeysAndNativeExecute(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if r.URL.Path == "/api/v1/auth/v2/api-keys" {
			w.WriteHeader(201)
			_, _ = io.WriteString(w, `{"api_key":"svc_secret","key_id":"k1","name":"ci","scopes":["functions:execute"],"expires_at":"2030-01-01T00:00:00Z"}`)
			return
		}
		_, _ = io.WriteString(w, `{"execution_id":"ex9","status":"success","result":5,"execution_time_ms":3}`)
	})
	admin := svc.New(s.URL, svc.WithToken("admin-key"))
	key, err := admin.CreateAPIKey(context.Background(), svc.APIKeyRequest{Name: "ci", Scopes: []string{"functions:execute"}, ExpiresDays: 30})
	if err != nil {
		t.Fatal(err)
	}
	req := s.last(t)
	checkRequest(t, req, "POST", "/api/v1/auth/v2/api-keys", `{"name":"ci","scopes":["functions:execute"],"expires_days":30}`)
	if req.Header.Get("Authorization") != "Bearer admin-key" {
		t.Errorf("minting without the admin bearer")
	}
	if key.APIKey != "svc_secret" || key.KeyID != "k1" || key.Name != "ci" || key.ExpiresAt == "" || len(key.Scopes) != 1 {
		t.Errorf("key = %+v", key)
	}

	svcClient := admin.With(svc.WithToken(key.APIKey))
	res, err := svcClient.ExecuteNative(context.Background(), svc.NativeExecuteRequest{
		RUFID: "rufid:" + short, FunctionName: "add", Namespace: "acme", SourceCode: "src", InputData: map[string]any{"a": 2, "b": 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	req = s.last(t)
	checkRequest(t, req, "POST", "/api/v1/execution/execute",
		`{"rufid":"rufid:`+short+`","function_name":"add","namespace":"acme","source_code":"src","input_data":{"a":2,"b":3}}`)
	if req.Header.Get("Authorization") != "Bearer svc_secret" {
		t.Errorf("native execute sent %q", req.Header.Get("Authorization"))
	}
	var n int
	if res.ExecutionID != "ex9" || res.ExecutionTimeMS != 3 || res.Decode(&n) != nil || n != 5 {
		t.Errorf("native = %+v", res)
	}
}

func TestErrorDecoding(t *testing.T) {
	type helper func(error) bool
	cases := []struct {
		code, status int
		name         string
		is           helper
		sentinel     *svc.Error
	}{
		{svc.CodeInvalidRUFID, 400, "INVALID_RUFID", svc.IsInvalidRUFID, svc.ErrInvalidRUFID},
		{svc.CodeRUFIDNotFound, 404, "RUFID_NOT_FOUND", svc.IsNotFound, svc.ErrRUFIDNotFound},
		{svc.CodePermissionDenied, 403, "PERMISSION_DENIED", svc.IsPermissionDenied, svc.ErrPermissionDenied},
		{svc.CodeExecutionTimeout, 408, "EXECUTION_TIMEOUT", svc.IsExecutionTimeout, svc.ErrExecutionTimeout},
		{svc.CodeRateLimited, 429, "RATE_LIMITED", svc.IsRateLimited, svc.ErrRateLimited},
		{svc.CodeValidationFailed, 422, "VALIDATION_FAILED", svc.IsValidationFailed, svc.ErrValidationFailed},
		{svc.CodeExecutionFailed, 422, "EXECUTION_FAILED", svc.IsExecutionFailed, svc.ErrExecutionFailed},
		{svc.CodeRUFIDCollision, 409, "RUFID_COLLISION", svc.IsCollision, svc.ErrRUFIDCollision},
		{svc.CodeNotFound, 404, "NOT_FOUND", svc.IsResourceNotFound, svc.ErrNotFound},
		{svc.CodeFederationUnreachable, 502, "FEDERATION_UNREACHABLE", svc.IsFederationUnreachable, svc.ErrFederationUnreachable},
		{svc.CodeSyncConflict, 409, "SYNC_CONFLICT", svc.IsSyncConflict, svc.ErrSyncConflict},
	}
	wantCodes := []int{1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1011, 2001, 2002}
	for i, tc := range cases {
		if tc.code != wantCodes[i] || svc.CodeName(tc.code) != tc.name || tc.sentinel.Name != tc.name {
			t.Errorf("constant for %s = %d (name %q)", tc.name, tc.code, svc.CodeName(tc.code))
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"error":{"code":%d,"name":%q,"message":"msg %d","details":{"rufid":%q,"n":%d}}}`,
				tc.code, tc.name, tc.code, short, tc.code)
			s := newServer(t, reply(tc.status, body))
			_, err := svc.New(s.URL).Resolve(context.Background(), short, "")
			var se *svc.Error
			if !errors.As(err, &se) {
				t.Fatalf("err = %T %v, want *svc.Error", err, err)
			}
			if se.Code != tc.code || se.Name != tc.name || se.Message != fmt.Sprintf("msg %d", tc.code) ||
				se.HTTPStatus != tc.status || se.Details["rufid"] != short || se.Details["n"] != float64(tc.code) {
				t.Errorf("error = %+v", se)
			}
			if !tc.is(err) || !errors.Is(err, tc.sentinel) || svc.ErrorCode(err) != tc.code {
				t.Errorf("helpers do not recognise %v", err)
			}
			for _, other := range cases {
				if other.code != tc.code && (other.is(err) || errors.Is(err, other.sentinel)) {
					t.Errorf("%v also matches %s", err, other.name)
				}
			}
			if se.Unauthenticated() {
				t.Errorf("Unauthenticated() on HTTP %d", tc.status)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.name) || !strings.Contains(msg, fmt.Sprint(tc.code)) || !strings.Contains(msg, "msg") {
				t.Errorf("Error() = %q", msg)
			}
			// Wrapped errors are still recognised.
			wrapped := fmt.Errorf("ctx: %w", err)
			if !tc.is(wrapped) || !errors.Is(wrapped, tc.sentinel) {
				t.Errorf("wrapped error not recognised")
			}
		})
	}
}

func TestUnauthenticated(t *testing.T) {
	s := newServer(t, reply(401, `{"error":{"code":1003,"name":"PERMISSION_DENIED","message":"missing credentials"}}`))
	_, err := svc.New(s.URL).Execute(context.Background(), short, nil)
	se, ok := svc.AsError(err)
	if !ok || !se.Unauthenticated() || !svc.IsUnauthenticated(err) || !svc.IsPermissionDenied(err) {
		t.Errorf("401 = %v", err)
	}

	// A 401 without an svc body is still 1003 and unauthenticated.
	s2 := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { w.WriteHeader(401) })
	_, err = svc.New(s2.URL).Execute(context.Background(), short, nil)
	if se, ok := svc.AsError(err); !ok || se.Code != 1003 || se.Name != "PERMISSION_DENIED" || !se.Unauthenticated() {
		t.Errorf("bare 401 = %#v", err)
	}

	// 403 is permission denied but not unauthenticated.
	s3 := newServer(t, reply(403, `{"error":{"code":1003,"name":"PERMISSION_DENIED","message":"no"}}`))
	_, err = svc.New(s3.URL).Execute(context.Background(), short, nil)
	if !svc.IsPermissionDenied(err) || svc.IsUnauthenticated(err) {
		t.Errorf("403 = %v", err)
	}
}

func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name, header string
		min, max     time.Duration
	}{
		{"seconds", "7", 7 * time.Second, 7 * time.Second},
		{"http-date", time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat), 85 * time.Second, 91 * time.Second},
		{"absent", "", 0, 0},
		{"garbage", "soon", 0, 0},
		{"negative", "-3", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				w.WriteHeader(429)
				_, _ = io.WriteString(w, `{"error":{"code":1005,"name":"RATE_LIMITED","message":"slow down"}}`)
			})
			_, err := svc.New(s.URL).Function(short).Call(context.Background(), 1)
			se, ok := svc.AsError(err)
			if !ok || !svc.IsRateLimited(err) || se.HTTPStatus != 429 {
				t.Fatalf("err = %v", err)
			}
			if se.RetryAfter < tc.min || se.RetryAfter > tc.max {
				t.Errorf("RetryAfter = %v, want [%v, %v]", se.RetryAfter, tc.min, tc.max)
			}
		})
	}
}

func TestNonSvcErrorBody(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if r.URL.Path == "/api/v1/functions/"+short {
			w.WriteHeader(404)
			_, _ = io.WriteString(w, "404 page not found")
			return
		}
		w.WriteHeader(502)
		_, _ = io.WriteString(w, "<html>Bad Gateway</html>")
	})
	c := svc.New(s.URL)
	_, err := c.GetFunction(context.Background(), short, "")
	se, ok := svc.AsError(err)
	if !ok || se.HTTPStatus != 404 || se.Code != 0 || svc.IsNotFound(err) || se.Message != "404 page not found" {
		t.Errorf("bare 404 = %#v", err)
	}
	_, err = c.Resolve(context.Background(), short, "")
	se, ok = svc.AsError(err)
	if !ok || se.HTTPStatus != 502 || svc.IsFederationUnreachable(err) || !strings.Contains(err.Error(), "HTTP 502") {
		t.Errorf("bare 502 = %v", err)
	}
}

func TestMalformedSuccessBody(t *testing.T) {
	s := newServer(t, reply(200, `{"rufid": 12`))
	_, err := svc.New(s.URL).Resolve(context.Background(), short, "")
	if err == nil {
		t.Fatal("malformed JSON accepted")
	}
	if _, ok := svc.AsError(err); ok {
		t.Errorf("a decoding failure is not a server error: %v", err)
	}
}

func TestInvalidRUFIDNeverSent(t *testing.T) {
	s := newServer(t, reply(200, `{}`))
	c := svc.New(s.URL)
	ctx := context.Background()
	bad := "../admin?x=1"
	checks := map[string]error{}
	_, checks["Execute"] = c.Execute(ctx, bad, nil)
	_, checks["Resolve"] = c.Resolve(ctx, "short", "")
	_, checks["GetFunction"] = c.GetFunction(ctx, bad, "")
	_, checks["DeleteFunction"] = c.DeleteFunction(ctx, bad, "")
	_, checks["ExecuteAsync"] = c.ExecuteAsync(ctx, bad, nil)
	_, checks["Telemetry"] = c.Telemetry(ctx, "rufid:tUwBWSc8Nozv:v0:acme", "")
	_, checks["Call"] = c.Function(bad).Call(ctx, 1, 2)
	for name, err := range checks {
		se, ok := svc.AsError(err)
		if !ok || se.Code != svc.CodeInvalidRUFID || se.HTTPStatus != 0 || !errors.Is(err, svc.ErrInvalidRUFID) {
			t.Errorf("%s: err = %v, want 1001", name, err)
		}
	}
	if n := len(s.requests()); n != 0 {
		t.Errorf("%d requests sent with a malformed RUFID", n)
	}
}

func TestContextCancellation(t *testing.T) {
	arrived := make(chan struct{}, 1)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	c := svc.New(s.URL)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	start := time.Now()
	_, err := c.Function(short).Call(ctx, 2, 3)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Error("cancellation did not abort the request")
	}

	// An already cancelled context sends nothing.
	before := len(s.requests())
	if _, err := c.Execute(ctx, short, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	if len(s.requests()) != before {
		t.Error("request sent with a cancelled context")
	}
}

func TestWithTimeout(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	_, err := svc.New(s.URL, svc.WithTimeout(30*time.Millisecond)).Resolve(context.Background(), short, "")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want DeadlineExceeded", err)
	}
}

type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestWithHTTPClient(t *testing.T) {
	s := newServer(t, reply(200, `{"result":1,"status":"success"}`))
	tr := &countingTransport{}
	hc := &http.Client{Transport: tr}
	if _, err := svc.New(s.URL, svc.WithHTTPClient(hc), svc.WithTimeout(time.Second)).Execute(context.Background(), short, nil); err != nil {
		t.Fatal(err)
	}
	if tr.n.Load() != 1 {
		t.Errorf("custom transport used %d times", tr.n.Load())
	}
	if hc.Timeout != 0 {
		t.Error("the caller's http.Client was modified")
	}
}

// addServer executes "add" by summing the arguments it receives, positional or named (in
// signature order a, b), so results depend on what the client actually sent.
func addServer(t *testing.T) *server {
	return newServer(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		var req struct {
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(body, &req)
		var nums []float64
		if json.Unmarshal(req.Arguments, &nums) != nil {
			var named map[string]float64
			if err := json.Unmarshal(req.Arguments, &named); err != nil {
				w.WriteHeader(400)
				fmt.Fprintf(w, `{"error":{"code":1006,"name":"VALIDATION_FAILED","message":%q}}`, err.Error())
				return
			}
			nums = []float64{named["a"], named["b"]}
		}
		if len(nums) != 2 {
			w.WriteHeader(422)
			fmt.Fprintf(w, `{"error":{"code":1007,"name":"EXECUTION_FAILED","message":"add takes 2 arguments, got %d"}}`, len(nums))
			return
		}
		fmt.Fprintf(w, `{"result":%v,"execution_time_ms":0.1,"status":"success","execution_id":"e"}`, nums[0]+nums[1])
	})
}

func TestFunctionCall(t *testing.T) {
	s := addServer(t)
	c := svc.New(s.URL)
	add := c.Function(short)
	if add.RUFID() != short {
		t.Errorf("RUFID() = %q", add.RUFID())
	}
	ctx := context.Background()

	got, err := add.Call(ctx, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	checkRequest(t, s.last(t), "POST", "/api/v1/functions/"+short+"/execute", `{"arguments":[2,3]}`)
	if got != 5.0 {
		t.Errorf("add(2, 3) = %#v", got)
	}
	if got, err := add.Call(ctx, 40, 2.5); err != nil || got != 42.5 {
		t.Errorf("add(40, 2.5) = %v, %v", got, err)
	}

	got, err = add.CallNamed(ctx, map[string]any{"b": 10, "a": 1})
	if err != nil || got != 11.0 {
		t.Errorf("CallNamed = %v, %v", got, err)
	}
	checkRequest(t, s.last(t), "POST", "/api/v1/functions/"+short+"/execute", `{"arguments":{"a":1,"b":10}}`)

	var n int
	if err := add.CallInto(ctx, &n, 20, 22); err != nil || n != 42 {
		t.Errorf("CallInto = %d, %v", n, err)
	}
	var f float64
	if err := add.CallNamedInto(ctx, &f, map[string]any{"a": 0.5, "b": 0.25}); err != nil || f != 0.75 {
		t.Errorf("CallNamedInto = %v, %v", f, err)
	}

	// No arguments: an empty positional list; the server reports a 1007.
	_, err = add.Call(ctx)
	checkRequest(t, s.last(t), "POST", "/api/v1/functions/"+short+"/execute", `{"arguments":[]}`)
	if !svc.IsExecutionFailed(err) || !strings.Contains(err.Error(), "got 0") {
		t.Errorf("add() = %v", err)
	}
	var wrongType struct{}
	if err := add.CallInto(ctx, &wrongType, 1, 2); err == nil {
		t.Error("decoding a number into a struct succeeded")
	}
}

func TestFunctionCallFailedStatusIn2xx(t *testing.T) {
	s := newServer(t, reply(200, `{"result":null,"status":"timeout","execution_time_ms":1000}`))
	_, err := svc.New(s.URL).Function(short).Call(context.Background())
	if !svc.IsExecutionTimeout(err) {
		t.Errorf("err = %v, want 1004", err)
	}
	s2 := newServer(t, reply(200, `{"status":"error","error":{"code":1007,"message":"TypeError: x"}}`))
	_, err = svc.New(s2.URL).Function(short).Call(context.Background())
	if se, ok := svc.AsError(err); !ok || se.Code != 1007 || se.Name != "EXECUTION_FAILED" || se.Message != "TypeError: x" {
		t.Errorf("err = %#v", err)
	}
}

func TestListAndRevokeAPIKeys(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, `{"items":[{"key_id":"k1","name":"ci","tenant_id":"acme","scopes":["admin"],"created_at":"t1","expires_at":"t2"}]}`)
			return
		}
		_, _ = io.WriteString(w, `{"key_id":"k1","revoked_at":"t3"}`)
	})
	admin := svc.New(s.URL, svc.WithToken("admin-key"))
	keys, err := admin.ListAPIKeys(context.Background())
	if err != nil || len(keys) != 1 || keys[0].KeyID != "k1" || keys[0].TenantID != "acme" || keys[0].CreatedAt != "t1" {
		t.Fatalf("ListAPIKeys = %+v, %v", keys, err)
	}
	checkRequest(t, s.last(t), "GET", "/api/v1/auth/v2/api-keys", "")
	revoked, err := admin.RevokeAPIKey(context.Background(), "k1")
	if err != nil || revoked.KeyID != "k1" || revoked.RevokedAt != "t3" {
		t.Fatalf("RevokeAPIKey = %+v, %v", revoked, err)
	}
	checkRequest(t, s.last(t), "DELETE", "/api/v1/auth/v2/api-keys/k1", "")
	if _, err := admin.RevokeAPIKey(context.Background(), " "); !svc.IsValidationFailed(err) {
		t.Fatalf("RevokeAPIKey of an empty id: %v", err)
	}
}
