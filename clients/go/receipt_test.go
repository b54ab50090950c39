package svc_test

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	svc "github.com/svc-node/svc-node/clients/go"
)

type receiptVectors struct {
	Now          string `json:"now"`
	Peers        map[string]string
	Certificates map[string]struct {
		PEM string `json:"pem"`
	} `json:"certificates"`
	JCS []struct {
		ID        string  `json:"id"`
		JSON      string  `json:"json"`
		Canonical *string `json:"canonical"`
	} `json:"jcs"`
	Cases []receiptCase `json:"cases"`
}

type receiptCase struct {
	ID      string          `json:"id"`
	Receipt json.RawMessage `json:"receipt"`
	Verify  struct {
		CA         *string  `json:"ca"`
		Revoked    []string `json:"revoked"`
		ArgsJSON   *string  `json:"args_json"`
		ResultJSON *string  `json:"result_json"`
	} `json:"verify"`
	Expect map[string]any `json:"expect"`
}

// receiptVectorsPath is the shared receipt vectors file, unless SVC_RECEIPT_VECTORS is set.
func receiptVectorsPath() string {
	if p := os.Getenv("SVC_RECEIPT_VECTORS"); p != "" {
		return p
	}
	return filepath.Join("..", "..", "test", "vectors", "receipts-v1.json")
}

func loadReceiptVectors(t *testing.T) receiptVectors {
	t.Helper()
	data, err := os.ReadFile(receiptVectorsPath())
	if err != nil {
		t.Fatalf("reading receipt vectors: %v", err)
	}
	var v receiptVectors
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("parsing receipt vectors: %v", err)
	}
	if len(v.Cases) == 0 || len(v.JCS) == 0 {
		t.Fatal("no receipt vectors")
	}
	return v
}

func verdictOf(t *testing.T, v receiptVectors, c receiptCase) map[string]any {
	t.Helper()
	now, err := time.Parse(time.RFC3339Nano, v.Now)
	if err != nil {
		t.Fatal(err)
	}
	opts := svc.VerifyReceiptOptions{Now: now, Revoked: c.Verify.Revoked}
	if c.Verify.CA != nil {
		opts.CACertPEM = []byte(v.Certificates[*c.Verify.CA].PEM)
	}
	if c.Verify.ArgsJSON != nil {
		opts.Args = json.RawMessage(*c.Verify.ArgsJSON)
	}
	if c.Verify.ResultJSON != nil {
		opts.Result = json.RawMessage(*c.Verify.ResultJSON)
	}
	verified, err := svc.VerifyReceipt(c.Receipt, opts)
	if err != nil {
		var re *svc.ReceiptError
		if !errors.As(err, &re) {
			t.Fatalf("not a ReceiptError: %v", err)
		}
		if !errors.Is(err, svc.ErrValidationFailed) || svc.ErrorCode(err) != svc.CodeValidationFailed {
			t.Errorf("a ReceiptError is VALIDATION_FAILED: %v", err)
		}
		if e, _ := svc.AsError(err); e.Details["failure"] != re.Failure {
			t.Errorf("details.failure %v, want %s", e.Details["failure"], re.Failure)
		}
		return map[string]any{"valid": false, "failure": re.Failure}
	}
	return map[string]any{"valid": true, "certified": verified.Certified, "digest": verified.Digest}
}

func TestReceiptVectors(t *testing.T) {
	v := loadReceiptVectors(t)
	failures := map[string]bool{}
	for _, c := range v.Cases {
		c := c
		t.Run(c.ID, func(t *testing.T) {
			got := verdictOf(t, v, c)
			if got["valid"] == false {
				failures[got["failure"].(string)] = true
			}
			if len(got) != len(c.Expect) {
				t.Fatalf("verdict %v, want %v", got, c.Expect)
			}
			for k, want := range c.Expect {
				if got[k] != want {
					t.Errorf("verdict %v, want %v", got, c.Expect)
					break
				}
			}
		})
	}
	for _, f := range []string{svc.ReceiptMalformed, svc.ReceiptBadSignature, svc.ReceiptForeignCA, svc.ReceiptNotCertified, svc.ReceiptPeerIDMismatch, svc.ReceiptNotYetValid, svc.ReceiptExpired, svc.ReceiptRevoked, svc.ReceiptArgumentsMismatch, svc.ReceiptResultMismatch} {
		if !failures[f] {
			t.Errorf("no vector fails with %s", f)
		}
	}
}

func TestReceiptVectorsCanFail(t *testing.T) {
	v := loadReceiptVectors(t)
	for _, c := range v.Cases {
		if c.ID != "valid" {
			continue
		}
		c.Receipt = json.RawMessage(strings.Replace(string(c.Receipt), `"status": "success"`, `"status": "error"`, 1))
		if got := verdictOf(t, v, c); got["failure"] != svc.ReceiptBadSignature {
			t.Fatalf("a changed status verifies: %v", got)
		}
		return
	}
	t.Fatal("no case named valid")
}

func TestJCSVectors(t *testing.T) {
	v := loadReceiptVectors(t)
	for _, c := range v.JCS {
		c := c
		t.Run(c.ID, func(t *testing.T) {
			got, err := svc.CanonicalJSON([]byte(c.JSON))
			if c.Canonical == nil {
				if err == nil || !errors.Is(err, svc.ErrNoCanonicalForm) {
					t.Fatalf("want ErrNoCanonicalForm, got %q, %v", got, err)
				}
				return
			}
			if err != nil || string(got) != *c.Canonical {
				t.Fatalf("got %q (%v)\nwant %q", got, err, *c.Canonical)
			}
		})
	}
}

func TestFormatJSONNumberRoundTripsShortest(t *testing.T) {
	rng := rand.New(rand.NewSource(8785))
	for i := 0; i < 20000; i++ {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		text := svc.FormatJSONNumber(f)
		back, err := strconv.ParseFloat(text, 64)
		if err != nil || back != f {
			t.Fatalf("%v → %q → %v (%v)", f, text, back, err)
		}
	}
	tenth, fifth := 0.1, 0.2 // variables: Go folds constant 0.1+0.2 exactly to 0.3
	for f, want := range map[float64]string{tenth + fifth: "0.30000000000000004", 1e21: "1e+21", 1e20: "100000000000000000000", 1e-6: "0.000001", 1e-7: "1e-7", math.Copysign(0, -1): "0", 1.5e300: "1.5e+300", -5e-324: "-5e-324"} {
		if got := svc.FormatJSONNumber(f); got != want {
			t.Errorf("FormatJSONNumber(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestCanonicalJSONRefusesWhatEncodingJSONWouldAlter(t *testing.T) {
	for _, in := range []string{"[\"\xff\"]", `["\ud800"]`, `["\udc00\ud800"]`, `{"\ud83dx":1}`, `["\ud83d\n"]`} {
		if _, err := svc.CanonicalJSON([]byte(in)); !errors.Is(err, svc.ErrNoCanonicalForm) {
			t.Errorf("CanonicalJSON(%q): %v, want ErrNoCanonicalForm", in, err)
		}
	}
	if got, err := svc.CanonicalJSON([]byte(`["\\ud800", "\ud83d\ude00"]`)); err != nil || string(got) != `["\\ud800","😀"]` {
		t.Errorf("an escaped backslash before u is no escape: %q %v", got, err)
	}
	if _, err := svc.CanonicalJSON([]byte(`{} {}`)); err == nil {
		t.Error("two values accepted")
	}
}

func TestReceiptHelpers(t *testing.T) {
	v := loadReceiptVectors(t)
	if key, err := svc.Ed25519KeyOfPeerID(v.Peers["A"]); err != nil || len(key) != 32 {
		t.Fatalf("Ed25519KeyOfPeerID: %v", err)
	}
	for _, bad := range []string{"QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N", "1" + v.Peers["A"], v.Peers["A"][:len(v.Peers["A"])-1] + "0"} {
		if _, err := svc.Ed25519KeyOfPeerID(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	empty, _ := svc.ArgumentsDigest(json.RawMessage(`{}`))
	if d, err := svc.ArgumentsDigest(json.RawMessage(`null`)); err != nil || d != empty {
		t.Errorf("null arguments are {}: %s %v", d, err)
	}
	if _, err := svc.ArgumentsDigest(json.RawMessage(`5`)); err == nil {
		t.Error("arguments 5 accepted")
	}
	if d, _ := svc.LockfileDigest(json.RawMessage(`null`)); d != "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b" {
		t.Errorf("lockfile digest of null: %s", d)
	}
	var valid receiptCase
	for _, c := range v.Cases {
		if c.ID == "valid" {
			valid = c
		}
	}
	if _, err := svc.VerifyReceipt(valid.Receipt, svc.VerifyReceiptOptions{CACertPEM: []byte("nope")}); svc.ErrorCode(err) != svc.CodeValidationFailed {
		t.Errorf("unreadable CA: %v", err)
	} else if re := (*svc.ReceiptError)(nil); errors.As(err, &re) {
		t.Error("an unreadable CA is not a verdict on the receipt")
	}
}
