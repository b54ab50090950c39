// Package svc is the Go client of svc-node, a daemon that stores content-addressed functions
// (identified by RUFIDs) and executes them.
//
// It covers the REST groups of the service: the core group under /api/v1/functions (create,
// resolve, execute, get, list, delete), the /v1 group (publish, asynchronous executions,
// marketplace search, telemetry) and the native group (API keys, native execution). It also
// computes RUFIDs locally (ComputeRUFID) exactly as the daemon does.
//
// Go has no import hook, so the Go form of a direct import is a call through the client:
//
//	add := client.Function("tUwBWSc8Nozv")
//	sum, err := add.Call(ctx, 2, 3)
package svc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// ClientVersion is the version of this client library (sent in User-Agent).
const ClientVersion = "0.1.0"

// ProtocolVersion is the svc protocol version this client speaks (service-spec §9); a node
// states its own in NodeInfo.ProtocolVersion.
const ProtocolVersion = "2.0.0"

// Environment variables read by NewFromEnv.
const (
	EnvURL       = "SVC_URL"
	EnvToken     = "SVC_TOKEN"
	EnvNamespace = "SVC_NAMESPACE"
)

// NamespaceHeader scopes a call to a namespace/tenant.
const NamespaceHeader = "X-Svc-Namespace"

// maxResponseBytes bounds how much of a response body is read.
const maxResponseBytes = 64 << 20

// Client talks to one svc-node. It is safe for concurrent use; With returns a modified copy.
type Client struct {
	baseURL      string
	token        string
	namespace    string
	httpClient   *http.Client
	timeout      time.Duration
	userAgent    string
	pollInterval time.Duration
	maxPoll      time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithToken sets the bearer token sent as `Authorization: Bearer <token>` (an API key or JWT).
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithNamespace sets the X-Svc-Namespace header sent with every call.
func WithNamespace(namespace string) Option { return func(c *Client) { c.namespace = namespace } }

// WithHTTPClient uses h for requests (for TLS settings, proxies, transports in tests). The client
// is never modified.
func WithHTTPClient(h *http.Client) Option {
	return func(c *Client) {
		if h != nil {
			c.httpClient = h
		}
	}
}

// WithTimeout bounds every single HTTP request (each poll of WaitExecution separately). Zero, the
// default, means only the caller's context bounds a request.
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithUserAgent replaces the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithPollInterval sets the first delay between polls of WaitExecution (default 50ms); the delay
// doubles after each poll up to max(1s, first delay).
func WithPollInterval(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.pollInterval = d
		}
	}
}

// New returns a client for the node at baseURL (e.g. "http://127.0.0.1:8080"; a path prefix is
// kept, a trailing slash is ignored).
func New(baseURL string, opts ...Option) *Client {
	c := &Client{
		baseURL:      strings.TrimRight(baseURL, "/"),
		httpClient:   http.DefaultClient,
		userAgent:    "svc-go/" + ClientVersion,
		pollInterval: 50 * time.Millisecond,
		maxPoll:      time.Second,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// NewFromEnv returns a client configured from SVC_URL (required), SVC_TOKEN and SVC_NAMESPACE;
// opts are applied after the environment.
func NewFromEnv(opts ...Option) (*Client, error) {
	base := strings.TrimSpace(os.Getenv(EnvURL))
	if base == "" {
		return nil, fmt.Errorf("svc: %s is not set", EnvURL)
	}
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("svc: %s=%q is not an absolute URL", EnvURL, base)
	}
	var envOpts []Option
	if t := os.Getenv(EnvToken); t != "" {
		envOpts = append(envOpts, WithToken(t))
	}
	if ns := os.Getenv(EnvNamespace); ns != "" {
		envOpts = append(envOpts, WithNamespace(ns))
	}
	return New(base, append(envOpts, opts...)...), nil
}

// With returns a copy of c with opts applied (e.g. another token or namespace); c is unchanged.
func (c *Client) With(opts ...Option) *Client {
	cp := *c
	for _, o := range opts {
		o(&cp)
	}
	return &cp
}

// BaseURL returns the node address the client talks to.
func (c *Client) BaseURL() string { return c.baseURL }

// Namespace returns the X-Svc-Namespace value, "" when none is sent.
func (c *Client) Namespace() string { return c.namespace }

// Do sends one request to path (relative to the base URL, may carry a query string) with body
// encoded as JSON (none when nil), and decodes a 2xx response into out (skipped when out is nil
// or the body is empty; a *json.RawMessage receives the raw body). A non-2xx response is
// returned as *Error. Do is the escape hatch for endpoints this package does not wrap.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	_, err := c.do(ctx, method, path, body, out)
	return err
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) (int, error) {
	return c.doAccepting(ctx, method, path, body, out, 0)
}

// doAccepting is do, with one non-2xx status (okStatus, 0 for none) decoded into out instead of
// returned as an error (e.g. 503 of /readyz).
func (c *Client) doAccepting(ctx context.Context, method, path string, body, out any, okStatus int) (int, error) {
	caller := ctx
	var reader io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("svc: encoding %s %s request: %w", method, path, err)
		}
		reader = bytes.NewReader(buf)
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, reader)
	if err != nil {
		return 0, fmt.Errorf("svc: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.setIdentity(req.Header)
	resp, err := c.httpClient.Do(req)
	if err != nil {
		// *url.Error wraps context.Canceled / context.DeadlineExceeded for errors.Is; a failure
		// that is not the caller's context ending is also ErrConnectionFailed.
		if caller.Err() != nil {
			return 0, fmt.Errorf("svc: %s %s: %w", method, path, err)
		}
		return 0, connectionFailed(method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("svc: reading %s %s response: %w", method, path, err)
	}
	if (resp.StatusCode < 200 || resp.StatusCode > 299) && (okStatus == 0 || resp.StatusCode != okStatus) {
		return resp.StatusCode, decodeErrorResponse(resp, data)
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return resp.StatusCode, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.StatusCode, fmt.Errorf("svc: decoding %s %s response (HTTP %d): %w", method, path, resp.StatusCode, err)
	}
	if n, ok := out.(normalizer); ok {
		n.normalize()
	}
	return resp.StatusCode, nil
}

// setIdentity sets the headers every request carries: User-Agent, Authorization, X-Svc-Namespace.
func (c *Client) setIdentity(h http.Header) {
	if c.userAgent != "" {
		h.Set("User-Agent", c.userAgent)
	}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	if c.namespace != "" {
		h.Set(NamespaceHeader, c.namespace)
	}
}

// rufidPath validates a RUFID (short or full form) and escapes it for use in a path.
func rufidPath(rufid string) (string, error) {
	if _, err := ParseRUFID(rufid); err != nil {
		return "", err
	}
	return url.PathEscape(rufid), nil
}

func idPath(kind, id string) (string, error) {
	if strings.TrimSpace(id) == "" {
		return "", &Error{Code: CodeValidationFailed, Name: CodeName(CodeValidationFailed), Message: kind + " is empty"}
	}
	return url.PathEscape(id), nil
}

func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// ---- core group /api/v1/functions --------------------------------------------------------

// Create registers a function (POST /api/v1/functions/create, 201). Creating content the tenant
// already has returns the existing RUFID (Created false when the server says so).
func (c *Client) Create(ctx context.Context, req CreateRequest) (*CreateResponse, error) {
	var out CreateResponse
	if _, err := c.do(ctx, http.MethodPost, "/api/v1/functions/create", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Resolve resolves a RUFID (short or full form; POST /api/v1/functions/resolve). version ("v2")
// is optional: "" asks for the newest version of that hash.
func (c *Client) Resolve(ctx context.Context, rufid, version string) (*ResolveResponse, error) {
	if _, err := ParseRUFID(rufid); err != nil {
		return nil, err
	}
	body := resolveRequest{RUFID: rufid, Version: version}
	var out ResolveResponse
	if _, err := c.do(ctx, http.MethodPost, "/api/v1/functions/resolve", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExecuteOption adjusts one Execute call.
type ExecuteOption func(*executeRequest)

// AtVersion runs that version ("v2") of the hash instead of the newest live one; a version that
// does not carry the hash is *Error 1002.
func AtVersion(version string) ExecuteOption {
	return func(r *executeRequest) { r.Version = version }
}

// Execute runs a function synchronously (POST /api/v1/functions/{rufid}/execute). args is a map
// of named arguments (matched to the parameters in signature order), a slice of positional
// arguments, or nil for none; AtVersion("v2") picks a version. A function that throws is *Error
// 1007, a timeout 1004.
func (c *Client) Execute(ctx context.Context, rufid string, args any, opts ...ExecuteOption) (*ExecuteResponse, error) {
	p, err := rufidPath(rufid)
	if err != nil {
		return nil, err
	}
	if args == nil {
		args = map[string]any{}
	}
	body := executeRequest{Arguments: args}
	for _, o := range opts {
		o(&body)
	}
	if body.Version != "" {
		if _, err := parseVersionLabel(body.Version); err != nil {
			return nil, err
		}
	}
	var out ExecuteResponse
	if _, err := c.do(ctx, http.MethodPost, "/api/v1/functions/"+p+"/execute", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetFunction returns a function's metadata with usage metrics (GET /api/v1/functions/{rufid});
// version "" means the newest live version.
func (c *Client) GetFunction(ctx context.Context, rufid, version string) (*FunctionInfo, error) {
	p, err := rufidPath(rufid)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	setString(q, "version", version)
	var out FunctionInfo
	if _, err := c.do(ctx, http.MethodGet, withQuery("/api/v1/functions/"+p, q), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetFunctionSource returns the source of a version (version "" means the newest live one) with
// its signature, content digest and each client's import statement
// (GET /api/v1/functions/{rufid}/source).
func (c *Client) GetFunctionSource(ctx context.Context, rufid, version string) (*FunctionSource, error) {
	p, err := rufidPath(rufid)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	setString(q, "version", version)
	var out FunctionSource
	if _, err := c.do(ctx, http.MethodGet, withQuery("/api/v1/functions/"+p+"/source", q), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListFunctions lists the caller's functions (GET /api/v1/functions?search=&tags=&limit=&offset=).
// Zero Limit and Offset are not sent (server defaults 20 and 0); Tags are sent comma-separated.
func (c *Client) ListFunctions(ctx context.Context, opts ListOptions) (*FunctionList, error) {
	q := url.Values{}
	setString(q, "search", opts.Search)
	setTags(q, opts.Tags)
	setInt(q, "limit", opts.Limit)
	setInt(q, "offset", opts.Offset)
	var out FunctionList
	if _, err := c.do(ctx, http.MethodGet, withQuery("/api/v1/functions", q), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteResponse is the answer to DeleteFunction.
type DeleteResponse struct {
	// Deleted lists the full RUFIDs tombstoned.
	Deleted []string `json:"deleted"`
}

// DeleteFunction tombstones the version a full RUFID (or version) names, else every live version
// of the hash (DELETE /api/v1/functions/{rufid}). A version number is never reused.
func (c *Client) DeleteFunction(ctx context.Context, rufid, version string) (*DeleteResponse, error) {
	p, err := rufidPath(rufid)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	setString(q, "version", version)
	var out DeleteResponse
	if _, err := c.do(ctx, http.MethodDelete, withQuery("/api/v1/functions/"+p, q), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Delete marks a function version deleted.
//
// Deprecated: use DeleteFunction (the name every svc client uses); kept one release.
func (c *Client) Delete(ctx context.Context, rufid string) error {
	_, err := c.DeleteFunction(ctx, rufid, "")
	return err
}

// ---- /v1 group ---------------------------------------------------------------------------

// Publish publishes a function (POST /v1/functions, 201); the source is base64-encoded on the wire.
func (c *Client) Publish(ctx context.Context, req PublishRequest) (*PublishResponse, error) {
	var out PublishResponse
	if _, err := c.do(ctx, http.MethodPost, "/v1/functions", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExecuteAsync queues an execution (POST /v1/functions/{rufid}/executions, 202). input is the
// free-form JSON object passed to the function (nil sends {}). Follow it with GetExecution or
// WaitExecution.
func (c *Client) ExecuteAsync(ctx context.Context, rufid string, input any) (*ExecutionRef, error) {
	p, err := rufidPath(rufid)
	if err != nil {
		return nil, err
	}
	if input == nil {
		input = map[string]any{}
	}
	var out ExecutionRef
	if _, err := c.do(ctx, http.MethodPost, "/v1/functions/"+p+"/executions", input, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetExecution reads an execution record (GET /v1/executions/{id}).
func (c *Client) GetExecution(ctx context.Context, executionID string) (*Execution, error) {
	p, err := idPath("execution id", executionID)
	if err != nil {
		return nil, err
	}
	var out Execution
	if _, err := c.do(ctx, http.MethodGet, "/v1/executions/"+p, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExecutionLogs reads an execution's captured console output (GET /v1/executions/{id}/logs).
func (c *Client) ExecutionLogs(ctx context.Context, executionID string) (*ExecutionLogs, error) {
	p, err := idPath("execution id", executionID)
	if err != nil {
		return nil, err
	}
	var out ExecutionLogs
	if _, err := c.do(ctx, http.MethodGet, "/v1/executions/"+p+"/logs", nil, &out); err != nil {
		return nil, err
	}
	if out.ExecutionID == "" {
		out.ExecutionID = executionID
	}
	return &out, nil
}

// WaitExecution polls GetExecution until the status is neither queued nor running, and returns
// the final record (whose Err reports a failed run). It stops with ctx's error when ctx ends
// first, returning the last record it read (nil if none was read); give ctx a deadline.
func (c *Client) WaitExecution(ctx context.Context, executionID string) (*Execution, error) {
	delay := c.pollInterval
	maxDelay := max(c.maxPoll, delay)
	var last *Execution
	for {
		exec, err := c.GetExecution(ctx, executionID)
		if err != nil {
			// ctx may end while a poll is in flight: the caller still gets the last record read.
			if ctx.Err() != nil && last != nil {
				return last, waitStopped(executionID, last, ctx.Err())
			}
			return nil, err
		}
		if exec.Done() {
			return exec, nil
		}
		last = exec
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return exec, waitStopped(executionID, exec, ctx.Err())
		case <-t.C:
		}
		delay = min(delay*2, maxDelay)
	}
}

func waitStopped(executionID string, last *Execution, cause error) error {
	if errors.Is(cause, context.DeadlineExceeded) {
		return fmt.Errorf("svc: waiting for execution %s (last status %q): %w: %w", executionID, last.Status, ErrWaitTimeout, cause)
	}
	return fmt.Errorf("svc: waiting for execution %s (last status %q): %w", executionID, last.Status, cause)
}

// Search queries the marketplace (GET /v1/marketplace/functions/search?q=&language=&author=&tags=&limit=&offset=).
func (c *Client) Search(ctx context.Context, opts SearchOptions) (*SearchResult, error) {
	q := url.Values{}
	setString(q, "q", opts.Q)
	setString(q, "language", opts.Language)
	setString(q, "author", opts.Author)
	setTags(q, opts.Tags)
	setInt(q, "limit", opts.Limit)
	setInt(q, "offset", opts.Offset)
	var out SearchResult
	if _, err := c.do(ctx, http.MethodGet, withQuery("/v1/marketplace/functions/search", q), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Telemetry returns a function's latency, error-rate and cost metrics over window (e.g. "15m";
// "" lets the server choose) (GET /v1/telemetry/functions/{rufid}?window=).
func (c *Client) Telemetry(ctx context.Context, rufid, window string) (*Telemetry, error) {
	p, err := rufidPath(rufid)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	setString(q, "window", window)
	var out Telemetry
	if _, err := c.do(ctx, http.MethodGet, withQuery("/v1/telemetry/functions/"+p, q), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// TelemetrySeries returns a function's telemetry per bucket of a window, oldest first
// (GET /v1/telemetry/functions/{rufid}/series?window=&buckets=&version=), for charts.
func (c *Client) TelemetrySeries(ctx context.Context, rufid string, opts TelemetrySeriesOptions) (*TelemetrySeries, error) {
	p, err := rufidPath(rufid)
	if err != nil {
		return nil, err
	}
	if opts.Version != "" {
		if _, err := parseVersionLabel(opts.Version); err != nil {
			return nil, err
		}
	}
	q := url.Values{}
	setString(q, "window", opts.Window)
	setInt(q, "buckets", opts.Buckets)
	setString(q, "version", opts.Version)
	var out TelemetrySeries
	if _, err := c.do(ctx, http.MethodGet, withQuery("/v1/telemetry/functions/"+p+"/series", q), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ---- native group ------------------------------------------------------------------------

// CreateAPIKey mints an API key (POST /api/v1/auth/v2/api-keys); the client's token must hold
// administrative rights. The key value (APIKey.APIKey) is returned exactly once.
func (c *Client) CreateAPIKey(ctx context.Context, req APIKeyRequest) (*APIKey, error) {
	var out APIKey
	if _, err := c.do(ctx, http.MethodPost, "/api/v1/auth/v2/api-keys", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListAPIKeys lists the keys of the caller's tenant, without secrets (GET /api/v1/auth/v2/api-keys,
// admin).
func (c *Client) ListAPIKeys(ctx context.Context) ([]APIKeyInfo, error) {
	var out struct {
		Items []APIKeyInfo `json:"items"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/api/v1/auth/v2/api-keys", nil, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// RevokeAPIKey revokes a key by its id (DELETE /api/v1/auth/v2/api-keys/{key_id}, admin); the key
// is refused (401) from then on.
func (c *Client) RevokeAPIKey(ctx context.Context, keyID string) (*RevokedAPIKey, error) {
	p, err := idPath("key id", keyID)
	if err != nil {
		return nil, err
	}
	var out RevokedAPIKey
	if _, err := c.do(ctx, http.MethodDelete, "/api/v1/auth/v2/api-keys/"+p, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExecuteNative runs a function through the native endpoint (POST /api/v1/execution/execute).
// When the RUFID is unknown and SourceCode hashes to it, the server registers it first.
func (c *Client) ExecuteNative(ctx context.Context, req NativeExecuteRequest) (*NativeExecuteResponse, error) {
	if req.InputData == nil {
		req.InputData = map[string]any{}
	}
	var out NativeExecuteResponse
	if _, err := c.do(ctx, http.MethodPost, "/api/v1/execution/execute", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ---- branches, versions, export ----------------------------------------------------------

// Deploy publishes a function (as Create) and points req.Branch ("" = main) at the version
// (POST /api/v1/functions/deploy). The first deploy to a branch creates it and answers its
// BranchKey once; moving it later needs that key (*Error 1003 otherwise).
func (c *Client) Deploy(ctx context.Context, req DeployRequest) (*DeployResponse, error) {
	var out DeployResponse
	if _, err := c.do(ctx, http.MethodPost, "/api/v1/functions/deploy", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Invoke runs the version the head of branch ("" = main) of functionName points at
// (POST /api/v1/functions/branches/{branch}/invoke); args as in Execute.
func (c *Client) Invoke(ctx context.Context, functionName, branch string, args any) (*InvokeResponse, error) {
	if branch == "" {
		branch = "main"
	}
	p, err := idPath("branch", branch)
	if err != nil {
		return nil, err
	}
	if args == nil {
		args = map[string]any{}
	}
	body := map[string]any{"function_name": functionName, "arguments": args}
	var out InvokeResponse
	if _, err := c.do(ctx, http.MethodPost, "/api/v1/functions/branches/"+p+"/invoke", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListBranches returns the tenant's branch heads, of one function when functionName is not ""
// (GET /api/v1/functions/branches?function_name=).
func (c *Client) ListBranches(ctx context.Context, functionName string) ([]BranchHead, error) {
	q := url.Values{}
	setString(q, "function_name", functionName)
	var out branchList
	if _, err := c.do(ctx, http.MethodGet, withQuery("/api/v1/functions/branches", q), nil, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// ListVersions returns the version ledger of the RUFID's lineage with its branch heads
// (GET /api/v1/functions/{rufid}/versions).
func (c *Client) ListVersions(ctx context.Context, rufid string) (*VersionList, error) {
	p, err := rufidPath(rufid)
	if err != nil {
		return nil, err
	}
	var out VersionList
	if _, err := c.do(ctx, http.MethodGet, "/api/v1/functions/"+p+"/versions", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExportFunction returns the manifest and lockfile of a version, with the texts as they were sent
// (GET /api/v1/functions/{rufid}/export); version "" means the newest.
func (c *Client) ExportFunction(ctx context.Context, rufid, version string) (*ExportedFunction, error) {
	p, err := rufidPath(rufid)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	setString(q, "version", version)
	var out ExportedFunction
	if _, err := c.do(ctx, http.MethodGet, withQuery("/api/v1/functions/"+p+"/export", q), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ---- audit, federation reads, probes -----------------------------------------------------

// Whoami returns who the client's credential is and what it may do (GET /api/v1/auth/whoami);
// without a valid credential it is *Error 1003 (HTTP 401).
func (c *Client) Whoami(ctx context.Context) (*Whoami, error) {
	var out Whoami
	if _, err := c.do(ctx, http.MethodGet, "/api/v1/auth/whoami", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListAuditEntries reads audit entries (GET /api/v1/audit, admin).
func (c *Client) ListAuditEntries(ctx context.Context, query AuditQuery) (*AuditPage, error) {
	q := url.Values{}
	setString(q, "from", query.From)
	setString(q, "to", query.To)
	setString(q, "tenant", query.Tenant)
	setString(q, "operation", query.Operation)
	setString(q, "rufid", query.RUFID)
	setInt(q, "limit", query.Limit)
	setString(q, "cursor", query.Cursor)
	var out AuditPage
	if _, err := c.do(ctx, http.MethodGet, withQuery("/api/v1/audit", q), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListNodes returns the federation members (GET /api/v1/federation/nodes); a node without
// federation answers *Error 1006 with HTTPStatus 409 and Details["reason"] "federation_disabled".
func (c *Client) ListNodes(ctx context.Context) (*FederationNodes, error) {
	var out FederationNodes
	if _, err := c.do(ctx, http.MethodGet, "/api/v1/federation/nodes", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Discover returns the nodes that provide a RUFID (GET /api/v1/federation/discover/{rufid}).
func (c *Client) Discover(ctx context.Context, rufid string) (*Discovery, error) {
	p, err := rufidPath(rufid)
	if err != nil {
		return nil, err
	}
	var out Discovery
	if _, err := c.do(ctx, http.MethodGet, "/api/v1/federation/discover/"+p, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CatalogDigest returns a digest of the replicated catalog (GET /api/v1/federation/catalog/digest).
func (c *Client) CatalogDigest(ctx context.Context) (*CatalogDigest, error) {
	var out CatalogDigest
	if _, err := c.do(ctx, http.MethodGet, "/api/v1/federation/catalog/digest", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListConflicts returns the recorded catalog conflicts (GET /api/v1/federation/conflicts).
func (c *Client) ListConflicts(ctx context.Context) (*ConflictList, error) {
	var out ConflictList
	if _, err := c.do(ctx, http.MethodGet, "/api/v1/federation/conflicts", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// FederationMembers returns every node this one knows, with its certificate, when it was last
// heard from and its catalog digest beside this node's (GET /api/v1/federation/members); a node
// without federation answers *Error 1006 with HTTPStatus 409 and Details["reason"] "federation_disabled".
func (c *Client) FederationMembers(ctx context.Context) (*FederationMembers, error) {
	var out FederationMembers
	if _, err := c.do(ctx, http.MethodGet, "/api/v1/federation/members", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Health reads the node's liveness (GET /healthz).
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var out Health
	if _, err := c.do(ctx, http.MethodGet, "/healthz", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Readiness reads the node's readiness (GET /readyz): "ready", or "starting"/"draining" (answered
// 503, returned without an error).
func (c *Client) Readiness(ctx context.Context) (*Readiness, error) {
	var out Readiness
	if _, err := c.doAccepting(ctx, http.MethodGet, "/readyz", nil, &out, http.StatusServiceUnavailable); err != nil {
		return nil, err
	}
	return &out, nil
}

// NodeInfo reads what the node tells anyone about itself (GET /api/v1/node/info, no credentials
// needed): version, readiness, uptime, how callers authenticate, sandbox workers, federation.
func (c *Client) NodeInfo(ctx context.Context) (*NodeInfo, error) {
	var out NodeInfo
	if _, err := c.do(ctx, http.MethodGet, "/api/v1/node/info", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ---- query helpers -----------------------------------------------------------------------

func setString(q url.Values, key, v string) {
	if v != "" {
		q.Set(key, v)
	}
}

func setInt(q url.Values, key string, v int) {
	if v > 0 {
		q.Set(key, fmt.Sprint(v))
	}
}

func setTags(q url.Values, tags []string) {
	var keep []string
	for _, t := range tags {
		if t = strings.TrimSpace(t); t != "" {
			keep = append(keep, t)
		}
	}
	if len(keep) > 0 {
		q.Set("tags", strings.Join(keep, ","))
	}
}

// errNotDone is used by Execution.Err for records still queued or running.
var errNotDone = errors.New("svc: execution has not finished")
