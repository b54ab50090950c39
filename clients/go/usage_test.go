package svc_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The module path github.com/svc-node/svc-node/clients/go cannot be fetched yet, so a program of
// its own module uses this checkout through a replace directive or a go.work. These tests build
// such a program exactly as a user would (examples/from-checkout), with the module proxy off: no
// download, only the checkout.

const wantRUFID = "tUwBWSc8Nozv" // add(a, b) in Python, rufid-v1 vectors

func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the go command is not found (PATH or GOROOT): %v", err)
	}
	return p
}

// buildAndRun builds the main package in dir into a temporary binary and returns what it prints.
func buildAndRun(t *testing.T, dir string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "hello")
	build := exec.CommandContext(ctx, goTool(t), "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), append([]string{"GOPROXY=off", "GOFLAGS=-buildvcs=false -mod=readonly"}, env...)...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in %s: %v\n%s", dir, err, out)
	}
	run := exec.CommandContext(ctx, bin)
	run.Env = append(os.Environ(), "SVC_URL=")
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("running the example: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func moduleDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The example as committed: its go.mod requires the module and replaces it with ../.. (this checkout).
func TestUsageExampleBuildsFromTheCheckout(t *testing.T) {
	if got := buildAndRun(t, filepath.Join("examples", "from-checkout"), "GOWORK=off"); got != wantRUFID {
		t.Fatalf("example printed %q, want %q", got, wantRUFID)
	}
}

// A user's module anywhere on disk: require + replace with the checkout's absolute path.
func TestUsageWithReplaceFromAnotherDirectory(t *testing.T) {
	dir := t.TempDir()
	goMod := "module example.com/hello\n\ngo 1.22\n\nrequire github.com/svc-node/svc-node/clients/go v0.0.0\n\n" +
		"replace github.com/svc-node/svc-node/clients/go => " + moduleDir(t) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(goMod), 0o644); err != nil {
		t.Fatal(err)
	}
	main := readFile(t, filepath.Join("examples", "from-checkout", "main.go"))
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := buildAndRun(t, dir, "GOWORK=off"); got != wantRUFID {
		t.Fatalf("program printed %q, want %q", got, wantRUFID)
	}
}

// A go.work that uses the user's module and the checkout's: no require nor replace in go.mod.
func TestUsageWithGoWork(t *testing.T) {
	work := t.TempDir()
	hello := filepath.Join(work, "hello")
	if err := os.Mkdir(hello, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hello, "go.mod"), []byte("module example.com/hello\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	main := readFile(t, filepath.Join("examples", "from-checkout", "main.go"))
	if err := os.WriteFile(filepath.Join(hello, "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	goWork := "go 1.22\n\nuse (\n\t./hello\n\t" + moduleDir(t) + "\n)\n"
	if err := os.WriteFile(filepath.Join(work, "go.work"), []byte(goWork), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := buildAndRun(t, hello, "GOWORK="+filepath.Join(work, "go.work")); got != wantRUFID {
		t.Fatalf("program printed %q, want %q", got, wantRUFID)
	}
}

// The README shows the example's go.mod as it is (the file the test above builds).
func TestReadmeShowsTheExampleGoMod(t *testing.T) {
	readme := readFile(t, "README.md")
	goMod := readFile(t, filepath.Join("examples", "from-checkout", "go.mod"))
	if !strings.Contains(readme, goMod) {
		t.Fatalf("README.md does not show examples/from-checkout/go.mod as it is:\n%s", goMod)
	}
}
