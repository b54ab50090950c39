module example.com/hello

go 1.22

require github.com/svc-node/svc-node/clients/go v0.0.0

// The module is not fetchable yet: take it from this checkout (a path relative to this go.mod,
// or an absolute one). Drop this line once the repository is public and a version is tagged.
replace github.com/svc-node/svc-node/clients/go => ../..
