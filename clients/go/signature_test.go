package svc_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	svc "github.com/svc-node/svc-node/clients/go"
)

// signatureVector is one case of test/vectors/signature-v1.json: a Signature and the RUFID of the
// source with it, or an Error.
type signatureVector struct {
	ID           string   `json:"id"`
	Covers       []string `json:"covers"`
	FunctionName string   `json:"function_name"`
	Language     string   `json:"language"`
	SourceCode   string   `json:"source_code"`
	Signature    *string  `json:"signature"`
	SHA256Hex    string   `json:"sha256_hex"`
	RUFIDShort   string   `json:"rufid_short"`
	Error        *struct {
		Code   int    `json:"code"`
		Name   string `json:"name"`
		Reason string `json:"reason"`
	} `json:"error"`
}

// signatureVectorsPath is the shared file, relative to this package, unless SVC_SIGNATURE_VECTORS is set.
func signatureVectorsPath() string {
	if p := os.Getenv("SVC_SIGNATURE_VECTORS"); p != "" {
		return p
	}
	return filepath.Join("..", "..", "test", "vectors", "signature-v1.json")
}

func loadSignatureVectors(t *testing.T) []signatureVector {
	t.Helper()
	path := signatureVectorsPath()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading signature vectors (set SVC_SIGNATURE_VECTORS to override the path): %v", err)
	}
	var file struct {
		Cases []signatureVector `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	if len(file.Cases) < 30 {
		t.Fatalf("%s: %d cases, want at least 30", path, len(file.Cases))
	}
	return file.Cases
}

func TestSignatureVectors(t *testing.T) {
	families := map[svc.LanguageFamily]bool{}
	for _, v := range loadSignatureVectors(t) {
		families[svc.Family(v.Language)] = true
		t.Run(v.ID, func(t *testing.T) {
			if (v.Signature == nil) == (v.Error == nil) {
				t.Fatalf("a case has either a signature or an error")
			}
			got, err := svc.DeriveSignature(v.FunctionName, v.Language, v.SourceCode)
			rc, cerr := svc.ComputeRUFIDDerivingSignature(svc.RUFIDInput{FunctionName: v.FunctionName, Language: v.Language, SourceCode: v.SourceCode})
			if v.Signature != nil {
				if err != nil {
					t.Fatalf("DeriveSignature: %v", err)
				}
				if got != *v.Signature {
					t.Fatalf("signature %q, want %q", got, *v.Signature)
				}
				if cerr != nil {
					t.Fatalf("ComputeRUFIDDerivingSignature: %v", cerr)
				}
				if rc.RUFIDShort != v.RUFIDShort || rc.ContentDigest != v.SHA256Hex {
					t.Fatalf("RUFID %s (%s), want %s (%s)", rc.RUFIDShort, rc.ContentDigest, v.RUFIDShort, v.SHA256Hex)
				}
				explicit := svc.ComputeRUFID(svc.RUFIDInput{FunctionName: v.FunctionName, Signature: *v.Signature, Language: v.Language, SourceCode: v.SourceCode})
				if explicit.RUFIDShort != v.RUFIDShort {
					t.Fatalf("explicit signature: RUFID %s, want %s", explicit.RUFIDShort, v.RUFIDShort)
				}
				return
			}
			for label, e := range map[string]error{"DeriveSignature": err, "ComputeRUFIDDerivingSignature": cerr} {
				var se *svc.Error
				if !errors.As(e, &se) {
					t.Fatalf("%s: got %v (signature %q), want a *svc.Error", label, e, got)
				}
				if se.Code != v.Error.Code || se.Name != v.Error.Name || se.Details["reason"] != v.Error.Reason {
					t.Fatalf("%s: %d %s %v, want %d %s %s", label, se.Code, se.Name, se.Details["reason"], v.Error.Code, v.Error.Name, v.Error.Reason)
				}
				if !svc.IsValidationFailed(e) || se.HTTPStatus != 0 {
					t.Fatalf("%s: not a local validation failure: %v", label, e)
				}
				if se.Details["function_name"] != v.FunctionName || !strings.Contains(se.Message, strconv.Quote(v.FunctionName)) || !strings.Contains(se.Message, "explicit signature") {
					t.Fatalf("%s: the message must name the function and ask for a signature: %q", label, se.Message)
				}
			}
		})
	}
	for _, f := range []svc.LanguageFamily{svc.FamilyPython, svc.FamilyJS, svc.FamilyGo, svc.FamilyPlain} {
		if !families[f] {
			t.Errorf("no vector of family %s", f)
		}
	}
}

func TestDeriveSignatureSpecExamples(t *testing.T) {
	for _, c := range []struct{ name, language, source, want string }{
		{"add", "python", "def add(a: int, b: int = (1)) -> int:\n  return a", "(a: int, b: int = (1))"},
		{"f", "js", "function f(a, b = g(1), { c } = {}) {}", "(a, b = g(1), { c } = {})"},
		{"h", "javascript", "const h = x => x", "(x)"},
		{" add\t", "python", "def add(a):\n  return a", "(a)"},
	} {
		got, err := svc.DeriveSignature(c.name, c.language, c.source)
		if err != nil || got != c.want {
			t.Errorf("DeriveSignature(%q): %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

func TestComputeRUFIDDerivingSignatureKeepsAGivenSignature(t *testing.T) {
	in := svc.RUFIDInput{FunctionName: "add", Signature: "(x, y)", Language: "python", SourceCode: "def add(a, b):\n    return a + b\n"}
	rc, err := svc.ComputeRUFIDDerivingSignature(in)
	if err != nil || rc.RUFIDShort != svc.ComputeRUFID(in).RUFIDShort {
		t.Fatalf("got %v, %v", rc, err)
	}
}

// TestDeriveSignatureIsLinear derives sources of ~1 MB shaped so that a derivation rescanning
// the text for each candidate takes hours; this one takes milliseconds. A generous deadline, not a
// measured time, fails it.
func TestDeriveSignatureIsLinear(t *testing.T) {
	cases := []struct{ language, name, source string }{
		{"js", "add", strings.Repeat("const add2 = (a) => a\n", 48_000)},
		{"js", "add", strings.Repeat("add: b ", 150_000)},
		{"js", "add", strings.Repeat("add = (): b ", 90_000)},
		{"js", "add", strings.Repeat("add = (", 100_000) + strings.Repeat(")", 100_000)},
		{"go", "F", strings.Repeat("func (", 120_000) + strings.Repeat(")", 120_000)},
		{"python", "f", strings.Repeat("def g(", 150_000)},
	}
	done := make(chan []error, 1)
	go func() {
		var errs []error
		for _, c := range cases {
			_, err := svc.DeriveSignature(c.name, c.language, c.source)
			errs = append(errs, err)
		}
		done <- errs
	}()
	select {
	case errs := <-done:
		for i, err := range errs {
			if !svc.IsValidationFailed(err) || len(cases[i].source) < 700_000 {
				t.Errorf("case %d: %v", i, err)
			}
		}
	case <-time.After(60 * time.Second):
		t.Fatal("deriving 6 sources of ~1 MB took more than a minute")
	}
}
