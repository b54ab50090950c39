package svc_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	svc "github.com/svc-node/svc-node/clients/go"
)

func TestExecutionRecordReadsTenantIDWithTenantAsFallback(t *testing.T) {
	var old svc.Execution
	if err := json.Unmarshal([]byte(`{"execution_id":"ex_1","rufid":"`+full+`","version":"v1","tenant":"acme","status":"success"}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.TenantID != "acme" || old.RUFIDShort != short || old.FullRUFID != full {
		t.Errorf("old node's record read as %+v", old)
	}
	var current svc.Execution
	_ = json.Unmarshal([]byte(`{"execution_id":"ex_2","rufid":"`+full+`","tenant_id":"new","tenant":"old","status":"success"}`), &current)
	if current.TenantID != "new" {
		t.Errorf("tenant_id = %q, want the new field's value", current.TenantID)
	}
}

func TestExecuteAtVersionSendsTheVersion(t *testing.T) {
	s := newServer(t, reply(200, `{"result":5,"status":"success","execution_id":"ex_1"}`))
	c := svc.New(s.URL)
	if _, err := c.Execute(context.Background(), short, []any{2, 3}, svc.AtVersion("v2")); err != nil {
		t.Fatal(err)
	}
	checkRequest(t, s.last(t), "POST", "/api/v1/functions/"+short+"/execute", `{"arguments":[2,3],"version":"v2"}`)
	if _, err := c.Execute(context.Background(), short, nil); err != nil {
		t.Fatal(err)
	}
	checkRequest(t, s.last(t), "POST", "/api/v1/functions/"+short+"/execute", `{"arguments":{}}`)
	if _, err := c.Execute(context.Background(), short, nil, svc.AtVersion("two")); !errors.Is(err, svc.ErrInvalidRUFID) {
		t.Errorf("a malformed version: %v, want 1001", err)
	}
}

func TestUnreachableNodeIsErrConnectionFailed(t *testing.T) {
	s := newServer(t, reply(200, `{}`))
	url := s.URL
	s.Close()
	_, err := svc.New(url).Health(context.Background())
	if !errors.Is(err, svc.ErrConnectionFailed) {
		t.Errorf("err = %v, want ErrConnectionFailed", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = svc.New(url).Health(ctx)
	if !errors.Is(err, context.Canceled) || errors.Is(err, svc.ErrConnectionFailed) {
		t.Errorf("a cancelled call: %v, want context.Canceled only", err)
	}
}
