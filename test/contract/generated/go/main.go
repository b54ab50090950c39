// Drives the client oapi-codegen generated from /openapi.json (package svcclient, written beside
// this file by test/contract/generated-clients.test.ts, never committed) against a live daemon:
// create a function, resolve it, execute it, fetch the backup archive. Prints one JSON line of
// what it got; the test asserts on it.
//
// usage: go run . BASE_URL API_KEY
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"svc-generated-check/svcclient"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 3 {
		fail("usage: go run . BASE_URL API_KEY")
	}
	bearer := svcclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+os.Args[2])
		return nil
	})
	client, err := svcclient.NewClientWithResponses(os.Args[1], bearer)
	if err != nil {
		fail("client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	created, err := client.PostApiV1FunctionsCreateWithResponse(ctx, svcclient.CreateFunctionRequest{
		FunctionName: "add",
		Language:     "javascript",
		Signature:    "(a, b)",
		SourceCode:   "function add(a, b) {\n  return a + b\n}\n",
	})
	if err != nil || created.JSON201 == nil && created.JSON200 == nil {
		fail("create: %v %s", err, created.Body)
	}
	made := created.JSON201
	if made == nil {
		made = created.JSON200
	}

	resolved, err := client.PostApiV1FunctionsResolveWithResponse(ctx, svcclient.ResolveRequest{Rufid: made.Rufid})
	if err != nil || resolved.JSON200 == nil {
		fail("resolve: %v %s", err, resolved.Body)
	}

	var args svcclient.Arguments
	if err := args.FromArguments1(svcclient.Arguments1{2, 3}); err != nil {
		fail("arguments: %v", err)
	}
	executed, err := client.PostApiV1FunctionsByRufidExecuteWithResponse(ctx, resolved.JSON200.RufidShort, svcclient.ExecuteRequest{Arguments: &args})
	if err != nil || executed.JSON200 == nil {
		fail("execute: %v %s", err, executed.Body)
	}

	// an unknown function answers the typed Error model
	missing, err := client.PostApiV1FunctionsResolveWithResponse(ctx, svcclient.ResolveRequest{Rufid: "000000000000"})
	if err != nil || missing.JSON404 == nil {
		fail("resolve of an unknown function: %v %d %s", err, missing.StatusCode(), missing.Body)
	}

	backup, err := client.GetApiV1AdminBackupWithResponse(ctx)
	if err != nil || backup.StatusCode() != http.StatusOK || len(backup.Body) < 2 {
		fail("backup: %v %d", err, backup.StatusCode())
	}

	out, _ := json.Marshal(map[string]any{
		"created":      map[string]any{"status": created.StatusCode(), "rufid": made.Rufid},
		"resolved":     map[string]any{"rufid_short": resolved.JSON200.RufidShort, "function_name": resolved.JSON200.FunctionName, "language": resolved.JSON200.Language},
		"executed":     map[string]any{"result": executed.JSON200.Result, "status": executed.JSON200.Status, "rufid_short": executed.JSON200.RufidShort},
		"missing":      map[string]any{"code": missing.JSON404.Error.Code, "name": missing.JSON404.Error.Name},
		"backup_magic": []int{int(backup.Body[0]), int(backup.Body[1])},
	})
	fmt.Println(string(out))
}
