package svc_test

// The Go client against the shared vocabulary ../operations.json (issue 13 §4): every operation is
// a method of *svc.Client under its PascalCase name taking a context.Context first, and every
// error code has its sentinel (errors.Is) named as the TypeScript and Python classes are. The
// TypeScript (test/client/vocabulary.test.ts) and Python (tests/test_vocabulary.py) suites check
// the same file.

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	svc "github.com/svc-node/svc-node/clients/go"
)

type vocabulary struct {
	Operations []struct {
		ID         string    `json:"id"`
		HTTP       *[]string `json:"http"`
		ClientSide string    `json:"client_side"`
		Go         string    `json:"go"`
	} `json:"operations"`
	Errors []struct {
		Code int    `json:"code"`
		Name string `json:"name"`
		Go   string `json:"go"`
	} `json:"errors"`
	ClientErrors []struct {
		Name string `json:"name"`
		Go   string `json:"go"`
	} `json:"client_errors"`
}

func loadVocabulary(t *testing.T) vocabulary {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "operations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v vocabulary
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Operations) == 0 || len(v.Errors) == 0 {
		t.Fatal("operations.json lists no operations or errors")
	}
	return v
}

var goInitialisms = map[string]string{"api": "API", "id": "ID", "rufid": "RUFID", "url": "URL"}

func goNameOf(id string) string {
	var sb strings.Builder
	for _, w := range strings.Split(id, "_") {
		if up, ok := goInitialisms[w]; ok {
			sb.WriteString(up)
		} else {
			sb.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return sb.String()
}

func TestVocabularyOperationsAreClientMethods(t *testing.T) {
	ctxType := reflect.TypeOf((*context.Context)(nil)).Elem()
	client := reflect.TypeOf(&svc.Client{})
	for _, op := range loadVocabulary(t).Operations {
		t.Run(op.ID, func(t *testing.T) {
			if op.Go != goNameOf(op.ID) {
				t.Fatalf("the Go name of %s is %s by the naming rule, operations.json says %s", op.ID, goNameOf(op.ID), op.Go)
			}
			m, ok := client.MethodByName(op.Go)
			if !ok {
				t.Fatalf("*svc.Client has no method %s (operation %s of clients/operations.json)", op.Go, op.ID)
			}
			if op.ID == "function" {
				return // the handle is built without asking the node: no context
			}
			if m.Type.NumIn() < 2 || m.Type.In(1) != ctxType {
				t.Errorf("%s does not take a context.Context first: %s", op.Go, m.Type)
			}
		})
	}
}

// sentinels lists the package's errors.Is targets by name; TestVocabularyErrorSentinels checks it
// against the package's own declarations (go/parser), so it cannot name one that does not exist.
var sentinels = map[string]error{
	"ErrInvalidRUFID": svc.ErrInvalidRUFID, "ErrRUFIDNotFound": svc.ErrRUFIDNotFound, "ErrPermissionDenied": svc.ErrPermissionDenied,
	"ErrExecutionTimeout": svc.ErrExecutionTimeout, "ErrRateLimited": svc.ErrRateLimited, "ErrValidationFailed": svc.ErrValidationFailed,
	"ErrExecutionFailed": svc.ErrExecutionFailed, "ErrRUFIDCollision": svc.ErrRUFIDCollision, "ErrInternal": svc.ErrInternal,
	"ErrServiceUnavailable": svc.ErrServiceUnavailable, "ErrNotFound": svc.ErrNotFound, "ErrFederationUnreachable": svc.ErrFederationUnreachable,
	"ErrSyncConflict": svc.ErrSyncConflict, "ErrConnectionFailed": svc.ErrConnectionFailed, "ErrWaitTimeout": svc.ErrWaitTimeout,
}

func declaredVars(t *testing.T) map[string]bool {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.VAR {
					for _, spec := range g.Specs {
						for _, n := range spec.(*ast.ValueSpec).Names {
							out[n.Name] = true
						}
					}
				}
			}
		}
	}
	return out
}

func TestVocabularyErrorSentinels(t *testing.T) {
	v := loadVocabulary(t)
	declared := declaredVars(t)
	for _, e := range v.Errors {
		t.Run(e.Name, func(t *testing.T) {
			if !declared[e.Go] {
				t.Fatalf("the package declares no %s (error %d of clients/operations.json)", e.Go, e.Code)
			}
			target, ok := sentinels[e.Go]
			if !ok {
				t.Fatalf("%s is not in this test's sentinel table", e.Go)
			}
			got := error(&svc.Error{Code: e.Code, Name: e.Name, HTTPStatus: 400})
			if !errors.Is(got, target) {
				t.Errorf("errors.Is(error %d, %s) is false", e.Code, e.Go)
			}
			if svc.CodeName(e.Code) != e.Name {
				t.Errorf("CodeName(%d) = %q, want %q", e.Code, svc.CodeName(e.Code), e.Name)
			}
		})
	}
	for _, e := range v.ClientErrors {
		if !declared[e.Go] || sentinels[e.Go] == nil {
			t.Errorf("the package declares no %s (client error %s)", e.Go, e.Name)
		}
	}
}

func TestVocabularyInREADME(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range loadVocabulary(t).Operations {
		if !strings.Contains(string(readme), "| `"+op.ID+"` | `"+op.Go+"` |") {
			t.Errorf("README.md does not name %s (operation %s)", op.Go, op.ID)
		}
	}
}
