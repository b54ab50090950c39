package svc_test

// Issue 8's scenario against a live daemon started by this test (native test mode): compute a
// RUFID locally, create the function, check the node's RUFID equals the local one, resolve,
// execute, read the execution, provoke 1001, 1002 and 1003, and call the function through
// client.Function(short).Call.
//
// The daemon is `node <repo>/bin/svc-node.js start` from the built dist/: without it the test
// FAILS (it is never skipped) — run `npm run build` in the repository root first. The node runs
// JavaScript today, so the function stored here is JavaScript.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	svc "github.com/svc-node/svc-node/clients/go"
)

const liveAdminKey = "svck_go-live-test_0123456789abcdefghijklmnop"

var liveAdd = svc.CreateRequest{
	FunctionName: "add",
	Signature:    "(a, b)",
	Language:     "javascript",
	SourceCode:   "// adds two numbers\nfunction add(a, b) {\n  return a + b\n}\n",
	Tags:         []string{"math"},
}

type liveDaemon struct {
	url    string
	cmd    *exec.Cmd
	mu     sync.Mutex
	output strings.Builder
	exited chan struct{}
}

func (d *liveDaemon) log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.output.String()
}

// startLiveDaemon starts svc-node on a free loopback port and waits (bounded) for the JSON log
// line `svc-node listening` that carries its URL. The process is stopped when t ends.
func startLiveDaemon(t *testing.T) *liveDaemon {
	t.Helper()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	built := filepath.Join(repo, "dist", "cli", "svc-node.js")
	if _, err := os.Stat(built); err != nil {
		t.Fatalf("the daemon is not built (%s is missing): run `npm run build` in %s first", built, repo)
	}
	node := os.Getenv("NODE")
	if node == "" {
		if node, err = exec.LookPath("node"); err != nil {
			t.Fatalf("node (Node.js >= 20.19) is not on PATH: the live daemon test needs it")
		}
	}
	dataDir := t.TempDir()
	cmd := exec.Command(node, filepath.Join(repo, "bin", "svc-node.js"), "start")
	cmd.Dir = repo
	env := []string{}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "SVC_URL" || k == "SVC_TOKEN" || k == "SVC_NAMESPACE" || k == "SVC_CONFIG" {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env,
		"API_HOST=127.0.0.1", "API_PORT=0", "SVC_DATA_DIR="+dataDir, "LOG_FORMAT=json", "LOG_LEVEL=info",
		"AUTH_PROVIDER=native", "ENABLE_TEST_MODE=true", "DEPLOYMENT_MODE=test", "ADMIN_API_KEY="+liveAdminKey,
		"SVC_SANDBOX_WORKERS=1",
	)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the daemon: %v", err)
	}
	d := &liveDaemon{cmd: cmd, exited: make(chan struct{})}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
		found := false
		for sc.Scan() {
			line := sc.Text()
			d.mu.Lock()
			d.output.WriteString(line + "\n")
			d.mu.Unlock()
			if found || !strings.Contains(line, "svc-node listening") {
				continue
			}
			var entry struct {
				Msg string `json:"msg"`
				URL string `json:"url"`
			}
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "svc-node listening" && entry.URL != "" {
				found = true
				urls <- entry.URL
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-d.exited
		}
	})
	select {
	case d.url = <-urls:
		return d
	case <-d.exited:
		t.Fatalf("the daemon exited before listening:\n%s", d.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("the daemon did not report `svc-node listening` within 30s:\n%s", d.log())
	}
	return nil
}

func TestLiveDaemon(t *testing.T) {
	d := startLiveDaemon(t)
	admin := svc.New(d.url, svc.WithToken(liveAdminKey), svc.WithTimeout(15*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var short string

	t.Run("local RUFID equals the node's", func(t *testing.T) {
		local := svc.ComputeRUFID(svc.RUFIDInput{FunctionName: liveAdd.FunctionName, Signature: liveAdd.Signature,
			Language: liveAdd.Language, SourceCode: liveAdd.SourceCode})
		created, err := admin.Create(ctx, liveAdd)
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		short = created.RUFIDShort
		if created.RUFIDShort != local.RUFIDShort || created.ContentDigest != local.ContentDigest {
			t.Fatalf("node %s/%s, local %s/%s", created.RUFIDShort, created.ContentDigest, local.RUFIDShort, local.ContentDigest)
		}
		if want := svc.FormatRUFID(local.RUFIDShort, 1, "default"); created.RUFID != want || !created.Created {
			t.Fatalf("created %+v, want RUFID %s and Created", created, want)
		}
		again, err := admin.Create(ctx, liveAdd)
		if err != nil || again.RUFIDShort != short || again.Created {
			t.Fatalf("second Create: %+v, %v (want the same RUFID, Created false)", again, err)
		}
	})
	if short == "" {
		t.Fatal("no function was created; the remaining steps need it")
	}

	t.Run("resolve, execute, read the execution", func(t *testing.T) {
		resolved, err := admin.Resolve(ctx, short, "v1")
		if err != nil {
			t.Fatalf("Resolve: %v", err)
		}
		if resolved.RUFID != svc.FormatRUFID(short, 1, "default") || resolved.FunctionName != "add" ||
			resolved.Signature != "(a, b)" || !resolved.Accessible || resolved.RUFIDShort != short || resolved.CreatedAt == "" {
			t.Fatalf("Resolve: %+v", resolved)
		}
		res, err := admin.Execute(ctx, short, map[string]any{"a": 2, "b": 3})
		if err != nil {
			t.Fatalf("Execute: %v", err)
		}
		var sum int
		if err := res.Decode(&sum); err != nil || sum != 5 || res.Status != svc.StatusSuccess || res.ExecutionID == "" {
			t.Fatalf("Execute: %+v (sum %d, %v)", res, sum, err)
		}
		rec, err := admin.GetExecution(ctx, res.ExecutionID)
		if err != nil {
			t.Fatalf("GetExecution: %v", err)
		}
		sum = 0
		if err := rec.Decode(&sum); err != nil || sum != 5 || rec.Status != svc.StatusSuccess || rec.Err() != nil ||
			rec.ExecutionID != res.ExecutionID || rec.RUFID != svc.FormatRUFID(short, 1, "default") ||
			rec.Version != "v1" || rec.TenantID != "default" || rec.FunctionName != "add" || rec.FinishedAt == "" {
			t.Fatalf("GetExecution: %+v (sum %d, %v)", rec, sum, err)
		}
		logs, err := admin.ExecutionLogs(ctx, res.ExecutionID)
		if err != nil || logs.ExecutionID != res.ExecutionID || logs.Status != svc.StatusSuccess {
			t.Fatalf("ExecutionLogs: %+v, %v", logs, err)
		}
	})

	t.Run("client.Function(short).Call(ctx, 2, 3) is 5", func(t *testing.T) {
		add := admin.Function(short)
		v, err := add.Call(ctx, 2, 3)
		if err != nil || v != float64(5) {
			t.Fatalf("Call: %v, %v", v, err)
		}
		var n int
		if err := add.CallNamedInto(ctx, &n, map[string]any{"a": 20, "b": 22}); err != nil || n != 42 {
			t.Fatalf("CallNamedInto: %d, %v", n, err)
		}
	})

	t.Run("asynchronous execution", func(t *testing.T) {
		ref, err := admin.ExecuteAsync(ctx, short, map[string]any{"a": 2, "b": 3})
		if err != nil || ref.ExecutionID == "" {
			t.Fatalf("ExecuteAsync: %+v, %v", ref, err)
		}
		wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
		defer wcancel()
		rec, err := admin.WaitExecution(wctx, ref.ExecutionID)
		if err != nil {
			t.Fatalf("WaitExecution: %v", err)
		}
		var sum int
		if err := rec.Decode(&sum); err != nil || sum != 5 || rec.Status != svc.StatusSuccess {
			t.Fatalf("WaitExecution: %+v", rec)
		}
	})

	t.Run("metadata, listing, search, telemetry", func(t *testing.T) {
		fn, err := admin.GetFunction(ctx, short, "")
		if err != nil || fn.RUFID != short || fn.FullRUFID != svc.FormatRUFID(short, 1, "default") || fn.Metrics == nil || fn.Metrics.UsageCount < 3 {
			t.Fatalf("GetFunction: %+v, %v", fn, err)
		}
		list, err := admin.ListFunctions(ctx, svc.ListOptions{Search: "add", Tags: []string{"math"}})
		if err != nil || len(list.Items) == 0 || list.Items[0].RUFID != short {
			t.Fatalf("ListFunctions: %+v, %v", list, err)
		}
		found, err := admin.Search(ctx, svc.SearchOptions{Q: "add", Language: "javascript"})
		if err != nil || len(found.Items) == 0 || found.Aggregations.Language["javascript"] < 1 {
			t.Fatalf("Search: %+v, %v", found, err)
		}
		tel, err := admin.Telemetry(ctx, short, "5m")
		if err != nil || tel.RUFID != short || tel.Window != "5m" || tel.Executions < 3 {
			t.Fatalf("Telemetry: %+v, %v", tel, err)
		}
	})

	t.Run("1001 INVALID_RUFID", func(t *testing.T) {
		// past the client's own check, so that the node answers
		err := admin.Do(ctx, "POST", "/api/v1/functions/resolve", map[string]any{"rufid": "bad-rufid!"}, nil)
		e, ok := svc.AsError(err)
		if !errors.Is(err, svc.ErrInvalidRUFID) || !svc.IsInvalidRUFID(err) || !ok || e.HTTPStatus != 400 || e.Name != "INVALID_RUFID" {
			t.Fatalf("node's 1001: %v", err)
		}
		// the client refuses it itself, without a request
		_, err = admin.Resolve(ctx, "bad-rufid!", "")
		if e, ok := svc.AsError(err); !ok || e.Code != svc.CodeInvalidRUFID || e.HTTPStatus != 0 {
			t.Fatalf("local 1001: %v", err)
		}
	})

	t.Run("1002 RUFID_NOT_FOUND", func(t *testing.T) {
		_, err := admin.Resolve(ctx, "AAAAAAAAAAAA", "")
		e, ok := svc.AsError(err)
		if !errors.Is(err, svc.ErrRUFIDNotFound) || !svc.IsNotFound(err) || !ok || e.HTTPStatus != 404 || e.Details["rufid"] != "AAAAAAAAAAAA" {
			t.Fatalf("Resolve of an unknown RUFID: %v", err)
		}
		if _, err := admin.Function("AAAAAAAAAAAA").Call(ctx, 2, 3); !svc.IsNotFound(err) {
			t.Fatalf("Call of an unknown RUFID: %v", err)
		}
	})

	t.Run("1003 PERMISSION_DENIED: read-only key (403) and no token (401)", func(t *testing.T) {
		key, err := admin.CreateAPIKey(ctx, svc.APIKeyRequest{Name: "read-only", Scopes: []string{"functions:read"}, ExpiresDays: 1})
		if err != nil || key.APIKey == "" || key.TenantID != "default" || len(key.Scopes) != 1 {
			t.Fatalf("CreateAPIKey: %+v, %v", key, err)
		}
		reader := admin.With(svc.WithToken(key.APIKey))
		if _, err := reader.Resolve(ctx, short, ""); err != nil {
			t.Fatalf("a read-only key resolves: %v", err)
		}
		_, err = reader.Create(ctx, svc.CreateRequest{FunctionName: "add2", Signature: "(a, b)", Language: "javascript",
			SourceCode: "function add2(a, b) { return a + b }"})
		e, ok := svc.AsError(err)
		if !errors.Is(err, svc.ErrPermissionDenied) || !svc.IsPermissionDenied(err) || svc.IsUnauthenticated(err) || !ok || e.HTTPStatus != 403 {
			t.Fatalf("read-only Create: %v", err)
		}
		_, err = admin.With(svc.WithToken("")).Resolve(ctx, short, "")
		e, ok = svc.AsError(err)
		if !svc.IsPermissionDenied(err) || !svc.IsUnauthenticated(err) || !ok || e.HTTPStatus != 401 || !e.Unauthenticated() {
			t.Fatalf("no token: %v", err)
		}

		keys, err := admin.ListAPIKeys(ctx)
		if err != nil {
			t.Fatalf("ListAPIKeys: %v", err)
		}
		listed := false
		for _, k := range keys {
			listed = listed || k.KeyID == key.KeyID
		}
		if !listed {
			t.Fatalf("ListAPIKeys lacks %s: %+v", key.KeyID, keys)
		}
		revoked, err := admin.RevokeAPIKey(ctx, key.KeyID)
		if err != nil || revoked.KeyID != key.KeyID || revoked.RevokedAt == "" {
			t.Fatalf("RevokeAPIKey: %+v, %v", revoked, err)
		}
		if _, err := reader.Resolve(ctx, short, ""); !svc.IsUnauthenticated(err) {
			t.Fatalf("a revoked key: %v", err)
		}
	})

	t.Run("the README quick start runs as written", func(t *testing.T) {
		runReadmeQuickStart(t, ctx, d.url)
	})

	t.Run("the daemon is still up", func(t *testing.T) {
		select {
		case <-d.exited:
			t.Fatalf("the daemon exited:\n%s", d.log())
		default:
		}
		var health map[string]any
		if err := admin.Do(ctx, "GET", "/healthz", nil, &health); err != nil || health["status"] != "ok" {
			t.Fatalf("/healthz: %v %v", health, err)
		}
	})
}

// runReadmeQuickStart builds the README's quick start (only the URL and the token replaced) as a
// program of its own against this checkout of the package, runs it, and compares its output with
// what the README's comments say it prints.
func runReadmeQuickStart(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "```go\npackage main\n")
	if start < 0 {
		t.Fatal("README.md has no ```go block with package main")
	}
	body := text[start+len("```go\n"):]
	body = body[:strings.Index(body, "```")]
	program := strings.Replace(strings.Replace(body, `"http://127.0.0.1:8080"`, strconvQuote(url), 1), `"svck_..."`, strconvQuote(liveAdminKey), 1)
	if program == body {
		t.Fatal("the quick start does not name http://127.0.0.1:8080 and svck_...")
	}
	var want []string
	for _, line := range strings.Split(body, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "fmt.Println(") && strings.Contains(trimmed, "// ") {
			want = append(want, strings.TrimSpace(trimmed[strings.Index(trimmed, "// ")+3:]))
		}
	}
	pkgDir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module readme.example/quickstart\n\ngo 1.22\n\nrequire github.com/svc-node/svc-node/clients/go v0.0.0\n\n" +
		"replace github.com/svc-node/svc-node/clients/go => " + pkgDir + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		if _, statErr := os.Stat(goBin); statErr != nil {
			t.Fatalf("the go command is not on PATH (needed to run the README quick start): %v", err)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(rctx, goBin, "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run of the README quick start: %v\n%s", err, out)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the README quick start printed\n%s\nits comments say\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
