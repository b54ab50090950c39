package svc

import (
	"context"
	"fmt"
)

// Function is a callable handle on one RUFID: the Go form of a direct import
// (decisions.md: `client.Function("<rufid_short>")`). It holds no state besides the RUFID; the
// RUFID is checked on the first call.
type Function struct {
	client     *Client
	rufid      string
	resolution *ResolveResponse
}

// Function returns a handle on rufid (short or full form).
func (c *Client) Function(rufid string) *Function { return &Function{client: c, rufid: rufid} }

// RUFID returns the RUFID the handle calls.
func (f *Function) RUFID() string { return f.rufid }

// Call runs the function with positional arguments and returns its result decoded into any
// (JSON numbers become float64). A failed run is an *Error (1007, 1004, …).
func (f *Function) Call(ctx context.Context, args ...any) (any, error) {
	var v any
	err := f.CallInto(ctx, &v, args...)
	return v, err
}

// CallNamed runs the function with named arguments.
func (f *Function) CallNamed(ctx context.Context, args map[string]any) (any, error) {
	var v any
	err := f.CallNamedInto(ctx, &v, args)
	return v, err
}

// CallInto runs the function with positional arguments and unmarshals the result into out.
func (f *Function) CallInto(ctx context.Context, out any, args ...any) error {
	if args == nil {
		args = []any{}
	}
	return f.call(ctx, out, args)
}

// CallNamedInto runs the function with named arguments and unmarshals the result into out.
func (f *Function) CallNamedInto(ctx context.Context, out any, args map[string]any) error {
	if args == nil {
		args = map[string]any{}
	}
	return f.call(ctx, out, args)
}

func (f *Function) call(ctx context.Context, out, args any) error {
	resp, err := f.client.Execute(ctx, f.rufid, args)
	if err != nil {
		return err
	}
	if err := resp.Err(); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return resp.Decode(out)
}

// Resolve resolves the handle's RUFID (newest version unless the RUFID is in full form).
func (f *Function) Resolve(ctx context.Context) (*ResolveResponse, error) {
	return f.client.Resolve(ctx, f.rufid, "")
}

// ImportFunction resolves rufid on the node, then returns its handle (the Go form of the other
// clients' import): an unknown RUFID is *Error 1002 whose message names it and the node.
func (c *Client) ImportFunction(ctx context.Context, rufid string) (*Function, error) {
	if _, err := ParseRUFID(rufid); err != nil {
		return nil, err
	}
	res, err := c.Resolve(ctx, rufid, "")
	if err != nil {
		if e, ok := AsError(err); ok && e.Code == CodeRUFIDNotFound {
			named := *e
			named.Message = fmt.Sprintf("RUFID %s not found on %s", rufid, c.baseURL)
			return nil, &named
		}
		return nil, err
	}
	return &Function{client: c, rufid: rufid, resolution: res}, nil
}

// Resolution returns what ImportFunction resolved (nil for a handle from Function).
func (f *Function) Resolution() *ResolveResponse { return f.resolution }
