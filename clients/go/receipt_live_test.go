package svc_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	svc "github.com/svc-node/svc-node/clients/go"
)

// liveReceiptPath is the receipt a live, federated daemon signed (scripts/make-live-receipt.mjs),
// unless SVC_LIVE_RECEIPT is set.
func liveReceiptPath() string {
	if p := os.Getenv("SVC_LIVE_RECEIPT"); p != "" {
		return p
	}
	return filepath.Join("..", "..", "test", "vectors", "receipt-live.json")
}

type liveReceipt struct {
	receiptVectors
	PeerID string          `json:"peer_id"`
	Args   json.RawMessage `json:"args"`
	Result json.RawMessage `json:"result"`
}

func loadLiveReceipt(t *testing.T) liveReceipt {
	t.Helper()
	data, err := os.ReadFile(liveReceiptPath())
	if err != nil {
		t.Fatalf("reading the live receipt: %v", err)
	}
	var v liveReceipt
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("parsing the live receipt: %v", err)
	}
	if len(v.Cases) == 0 || v.Cases[0].ID != "live-valid" {
		t.Fatal("the live receipt file has no live-valid case first")
	}
	return v
}

// Every case of the live receipt gets the verdict the file (and the TypeScript verifier) gives:
// valid against the federation CA with its arguments and result; tampered copies, a wrong result
// or arguments and a foreign CA fail with the named failure.
func TestLiveReceiptCases(t *testing.T) {
	v := loadLiveReceipt(t)
	for _, c := range v.Cases {
		c := c
		t.Run(c.ID, func(t *testing.T) {
			got := verdictOf(t, v.receiptVectors, c)
			if len(got) != len(c.Expect) {
				t.Fatalf("verdict %v, want %v", got, c.Expect)
			}
			for k, want := range c.Expect {
				if got[k] != want {
					t.Fatalf("verdict %v, want %v", got, c.Expect)
				}
			}
		})
	}
}

// The daemon's receipt vouches for exactly the call in the file: the digests this client computes
// from the arguments and the result are the ones the daemon signed.
func TestLiveReceiptVouchesForItsCall(t *testing.T) {
	v := loadLiveReceipt(t)
	now, err := time.Parse(time.RFC3339Nano, v.Now)
	if err != nil {
		t.Fatal(err)
	}
	verified, err := svc.VerifyReceipt(v.Cases[0].Receipt, svc.VerifyReceiptOptions{
		CACertPEM: []byte(v.Certificates["ca"].PEM), Args: v.Args, Result: v.Result, Now: now,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !verified.Certified || verified.PeerID != v.PeerID || !verified.CheckedArguments || !verified.CheckedResult {
		t.Fatalf("verified %+v, want certified, signed by %s, arguments and result checked", verified, v.PeerID)
	}
	args, err := svc.ArgumentsDigest(v.Args)
	if err != nil || args != verified.Receipt["arguments_digest"] {
		t.Errorf("arguments digest %s (%v), the daemon signed %v", args, err, verified.Receipt["arguments_digest"])
	}
	result, err := svc.ResultDigest(v.Result)
	if err != nil || result != verified.Receipt["result_digest"] {
		t.Errorf("result digest %s (%v), the daemon signed %v", result, err, verified.Receipt["result_digest"])
	}
}
