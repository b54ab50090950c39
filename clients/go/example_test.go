package svc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	svc "github.com/svc-node/svc-node/clients/go"
)

// fakeNode is a tiny stand-in for svc-node so the examples run without a daemon: it assigns
// RUFIDs with the real algorithm and "executes" every function by adding its arguments.
func fakeNode() *httptest.Server {
	type stored struct{ req svc.CreateRequest }
	functions := map[string]stored{}
	writeErr := func(w http.ResponseWriter, status, code int, msg string) {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"code": code, "name": svc.CodeName(code), "message": msg, "details": map[string]any{},
		}})
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		switch {
		case r.URL.Path == "/api/v1/functions/create":
			var req svc.CreateRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				writeErr(w, 400, svc.CodeValidationFailed, err.Error())
				return
			}
			rc := svc.ComputeRUFID(svc.RUFIDInput{FunctionName: req.FunctionName, Signature: req.Signature,
				Language: req.Language, SourceCode: req.SourceCode})
			functions[rc.RUFIDShort] = stored{req}
			w.WriteHeader(201)
			_ = enc.Encode(svc.CreateResponse{
				RUFID: svc.FormatRUFID(rc.RUFIDShort, 1, "default"), RUFIDShort: rc.RUFIDShort, Version: "v1",
				ContentDigest: rc.ContentDigest, Created: true,
				ImportStatement: fmt.Sprintf("client.Function(%q)", rc.RUFIDShort),
				APIEndpoint:     "/api/v1/functions/" + rc.RUFIDShort + "/execute",
			})
		case r.URL.Path == "/api/v1/functions/resolve":
			var req struct{ RUFID string }
			_ = json.NewDecoder(r.Body).Decode(&req)
			fn, ok := functions[req.RUFID]
			if !ok {
				writeErr(w, 404, svc.CodeRUFIDNotFound, "no function "+req.RUFID)
				return
			}
			_ = enc.Encode(svc.ResolveResponse{FunctionID: "fn-" + req.RUFID, RUFID: svc.FormatRUFID(req.RUFID, 1, "default"),
				Version: "v1", Accessible: true, FunctionName: fn.req.FunctionName, Signature: fn.req.Signature, Language: fn.req.Language})
		case strings.HasSuffix(r.URL.Path, "/execute"):
			short := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/functions/"), "/execute")
			if _, ok := functions[short]; !ok {
				writeErr(w, 404, svc.CodeRUFIDNotFound, "no function "+short)
				return
			}
			var req struct{ Arguments []float64 }
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				writeErr(w, 400, svc.CodeValidationFailed, err.Error())
				return
			}
			sum := 0.0
			for _, a := range req.Arguments {
				sum += a
			}
			_ = enc.Encode(map[string]any{"result": sum, "execution_time_ms": 0.1, "status": "success", "execution_id": "ex-1"})
		default:
			writeErr(w, 404, svc.CodeRUFIDNotFound, "no route")
		}
	}))
}

// The whole round trip: create a function, resolve it, execute it, and call it through the Go
// form of a direct import, client.Function(<rufid_short>).
func Example() {
	node := fakeNode() // in real use: svc.NewFromEnv(), or svc.New("http://127.0.0.1:8080", ...)
	defer node.Close()
	client := svc.New(node.URL, svc.WithToken("my-api-key"))
	ctx := context.Background()

	created, err := client.Create(ctx, svc.CreateRequest{
		FunctionName: "add",
		Signature:    "(a, b)",
		Language:     "javascript",
		SourceCode:   "function add(a, b) {\n  return a + b\n}\n",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(created.RUFIDShort, created.RUFID)

	resolved, err := client.Resolve(ctx, created.RUFIDShort, "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resolved.FunctionName, resolved.Signature, resolved.Version)

	res, err := client.Execute(ctx, created.RUFIDShort, []any{1, 2})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, string(res.Result))

	add := client.Function(created.RUFIDShort)
	sum, err := add.Call(ctx, 2, 3)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sum)
	// Output:
	// U0muCVj82BcK rufid:U0muCVj82BcK:v1:default
	// add (a, b) v1
	// success 3
	// 5
}

func ExampleFunction_Call() {
	node := fakeNode()
	defer node.Close()
	client := svc.New(node.URL)
	ctx := context.Background()

	created, err := client.Create(ctx, svc.CreateRequest{
		FunctionName: "add", Signature: "(a, b)", Language: "javascript", SourceCode: "function add(a, b) {\n  return a + b\n}\n",
	})
	if err != nil {
		log.Fatal(err)
	}
	add := client.Function(created.RUFIDShort)
	sum, err := add.Call(ctx, 2, 3)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sum)
	// Output: 5
}

func ExampleComputeRUFID() {
	rc := svc.ComputeRUFID(svc.RUFIDInput{
		FunctionName: "add",
		Signature:    "(a, b)",
		Language:     "python",
		SourceCode:   "# adds two numbers\ndef add(a, b):  # inline\n    return a + b\n",
	})
	fmt.Printf("%q\n", rc.NormalizedCode)
	fmt.Println(rc.RUFIDShort)
	// Output:
	// "def add(a, b):\n    return a + b"
	// tUwBWSc8Nozv
}

func ExampleParseRUFID() {
	r, err := svc.ParseRUFID("rufid:tUwBWSc8Nozv:v2:acme")
	fmt.Println(r.Short, r.Version, r.Tenant, err)

	_, err = svc.ParseRUFID("not-a-rufid")
	fmt.Println(svc.IsInvalidRUFID(err), errors.Is(err, svc.ErrInvalidRUFID))
	// Output:
	// tUwBWSc8Nozv 2 acme <nil>
	// true true
}

func ExampleIsNotFound() {
	node := fakeNode()
	defer node.Close()
	client := svc.New(node.URL)

	_, err := client.Function("AAAAAAAAAAAA").Call(context.Background(), 1)
	var se *svc.Error
	switch {
	case svc.IsNotFound(err) && errors.As(err, &se):
		fmt.Println(se.Code, se.Name, se.HTTPStatus)
	case err != nil:
		fmt.Println("other error:", err)
	}
	// Output: 1002 RUFID_NOT_FOUND 404
}
