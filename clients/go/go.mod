module github.com/svc-node/svc-node/clients/go

go 1.22
