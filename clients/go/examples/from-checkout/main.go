// Command hello uses the svc-node Go client from a checkout of the repository, as a program of
// its own module would (go.mod: require + replace; or a go.work). It computes a RUFID locally and,
// when SVC_URL is set, resolves it on that node.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	svc "github.com/svc-node/svc-node/clients/go"
)

func main() {
	source := "def add(a, b):\n    return a + b\n"
	local := svc.ComputeRUFID(svc.RUFIDInput{FunctionName: "add", Signature: "(a, b)", Language: "python", SourceCode: source})
	fmt.Println(local.RUFIDShort) // tUwBWSc8Nozv

	if os.Getenv("SVC_URL") == "" {
		return
	}
	client, err := svc.NewFromEnv() // SVC_URL, SVC_TOKEN, SVC_NAMESPACE
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resolved, err := client.Resolve(ctx, local.RUFIDShort, "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resolved.FunctionName, resolved.Version)
}
