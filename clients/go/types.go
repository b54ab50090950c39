package svc

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ---- core group --------------------------------------------------------------------------

// CreateRequest is the body of POST /api/v1/functions/create (service-spec §2.3).
type CreateRequest struct {
	FunctionName string   `json:"function_name"`
	SourceCode   string   `json:"source_code"`
	Signature    string   `json:"signature"`
	Language     string   `json:"language"`
	Description  string   `json:"description,omitempty"`
	Tags         []string `json:"tags,omitempty"`
	// Manifest is a function.svc.json object (a map or a struct); without a Lockfile the server
	// computes one.
	Manifest any `json:"manifest,omitempty"`
	// Lockfile is a function.lock.json object; its manifest_digest must match Manifest.
	Lockfile any `json:"lockfile,omitempty"`
	// ManifestText and LockfileText are the files exactly as written (they must parse to Manifest
	// and Lockfile); export gives them back byte for byte.
	ManifestText string `json:"manifest_text,omitempty"`
	LockfileText string `json:"lockfile_text,omitempty"`
	// Limits are per-function limits, capped by the node's maximums.
	Limits *FunctionLimits `json:"limits,omitempty"`
}

// FunctionLimits are a function's own execution limits.
type FunctionLimits struct {
	TimeoutMS int `json:"timeout_ms,omitempty"`
	MemoryMB  int `json:"memory_mb,omitempty"`
	CPUMS     int `json:"cpu_ms,omitempty"`
}

// CreateResponse is the answer to Create.
type CreateResponse struct {
	RUFID           string `json:"rufid"`       // full form rufid:<short>:v<n>:<tenant>
	RUFIDShort      string `json:"rufid_short"` // 12 characters
	FullRUFID       string `json:"full_rufid"`  // rufid:<short>:v<n>:<tenant>
	Version         string `json:"version"`     // "v<n>"
	ContentDigest   string `json:"content_digest"`
	ImportStatement string `json:"import_statement"`
	ShareURL        string `json:"share_url"`
	APIEndpoint     string `json:"api_endpoint"`
	Created         bool   `json:"created"`
}

func (r *CreateResponse) normalize() {
	fillRUFIDForms(r.RUFID, &r.RUFIDShort, &r.FullRUFID, r.Version, "")
}

type resolveRequest struct {
	RUFID   string `json:"rufid"`
	Version string `json:"version,omitempty"`
}

// ResolveResponse is the answer to Resolve (service-spec §2.7, plus manifest and lockfile).
type ResolveResponse struct {
	FunctionID       string         `json:"function_id"`
	RUFID            string         `json:"rufid"`       // full form
	RUFIDShort       string         `json:"rufid_short"` // 12 characters
	FullRUFID        string         `json:"full_rufid"`
	Version          string         `json:"version"`
	Accessible       bool           `json:"accessible"`
	Cached           bool           `json:"cached"`
	ResolutionTimeMS float64        `json:"resolution_time_ms"`
	ContentDigest    string         `json:"content_digest"`
	FunctionName     string         `json:"function_name"`
	Signature        string         `json:"signature"`
	Language         string         `json:"language"`
	CreatedAt        string         `json:"created_at"`
	Manifest         map[string]any `json:"manifest"`
	Lockfile         map[string]any `json:"lockfile"`
	ManifestText     *string        `json:"manifest_text"`
	LockfileText     *string        `json:"lockfile_text"`
}

func (r *ResolveResponse) normalize() {
	fillRUFIDForms(r.RUFID, &r.RUFIDShort, &r.FullRUFID, r.Version, "")
}

type executeRequest struct {
	Arguments any    `json:"arguments"`
	Version   string `json:"version,omitempty"`
}

// ExecuteResponse is the answer to Execute.
type ExecuteResponse struct {
	// Result is the function's return value as JSON; see Decode and Value.
	Result          json.RawMessage `json:"result"`
	ExecutionTimeMS float64         `json:"execution_time_ms"`
	Status          string          `json:"status"` // "success" for a successful run
	ExecutionID     string          `json:"execution_id"`
	// RUFIDShort and FullRUFID name the function and version that ran (empty from older nodes,
	// which did not send them).
	RUFIDShort string `json:"rufid_short,omitempty"`
	FullRUFID  string `json:"full_rufid,omitempty"`
	// Error is set if a server reports a failed run in a 2xx body instead of an error response.
	Error *Error `json:"error,omitempty"`
}

// Decode unmarshals Result into out.
func (r *ExecuteResponse) Decode(out any) error { return decodeResult(r.Result, out) }

// Value returns Result decoded into any (numbers are float64; null or absent is nil).
func (r *ExecuteResponse) Value() (any, error) {
	var v any
	err := r.Decode(&v)
	return v, err
}

// Err returns nil for a successful run, otherwise the run's error as *Error.
func (r *ExecuteResponse) Err() error {
	if r.Status == "" || r.Status == "success" {
		return nil
	}
	return runError(r.Status, r.Error)
}

func decodeResult(raw json.RawMessage, out any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("null")
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("svc: decoding result: %w", err)
	}
	return nil
}

// runError turns a non-success run status into an *Error.
func runError(status string, e *Error) error {
	if e != nil && e.Code != 0 {
		cp := *e
		if cp.Name == "" {
			cp.Name = CodeName(cp.Code)
		}
		return &cp
	}
	code := CodeExecutionFailed
	if status == "timeout" {
		code = CodeExecutionTimeout
	}
	msg := "execution ended with status " + strconv.Quote(status)
	if e != nil && e.Message != "" {
		msg = e.Message
	}
	return &Error{Code: code, Name: CodeName(code), Message: msg}
}

// FunctionMetrics are a function's usage metrics (service-spec §2.2).
type FunctionMetrics struct {
	UsageCount         int64   `json:"usage_count"`
	AvgExecutionTimeMS float64 `json:"avg_execution_time_ms"`
	SuccessRate        float64 `json:"success_rate"`
}

// FunctionInfo is a function's metadata (service-spec §2.2), as returned by GetFunction and in
// listings. Fields a server does not send stay zero.
type FunctionInfo struct {
	RUFID         string           `json:"rufid"`       // short form
	RUFIDShort    string           `json:"rufid_short"` // the same 12 characters
	FullRUFID     string           `json:"full_rufid"`  // rufid:<short>:v<n>:<tenant>
	FunctionName  string           `json:"function_name"`
	Signature     string           `json:"signature"`
	Language      string           `json:"language"`
	Version       string           `json:"version"`
	CreatedAt     string           `json:"created_at"`
	Author        string           `json:"author"`
	TenantID      string           `json:"tenant_id"`
	Description   string           `json:"description,omitempty"`
	Tags          []string         `json:"tags"`
	Dependencies  []string         `json:"dependencies"`
	ContentDigest string           `json:"content_digest,omitempty"`
	Metrics       *FunctionMetrics `json:"metrics,omitempty"`
	SourceCode    string           `json:"source_code,omitempty"`
	Manifest      map[string]any   `json:"manifest,omitempty"`
	Lockfile      map[string]any   `json:"lockfile,omitempty"`
}

func (f *FunctionInfo) normalize() {
	fillRUFIDForms(f.RUFID, &f.RUFIDShort, &f.FullRUFID, f.Version, f.TenantID)
}

// ListOptions are the parameters of ListFunctions.
type ListOptions struct {
	Search string
	Tags   []string
	Limit  int // 0: server default (20)
	Offset int
}

// Pagination is the paging block of listings; NextOffset is nil on the last page.
type Pagination struct {
	Total      int  `json:"total"`
	Limit      int  `json:"limit"`
	Offset     int  `json:"offset"`
	NextOffset *int `json:"next_offset"`
}

// FunctionList is the answer to ListFunctions.
type FunctionList struct {
	Items      []FunctionInfo `json:"items"`
	Pagination Pagination     `json:"pagination"`
}

func (l *FunctionList) normalize() { normalizeAll(l.Items) }

// ---- /v1 group ---------------------------------------------------------------------------

// PublishRequest is the body of POST /v1/functions. Source is the raw source text; it is
// base64-encoded when marshalled (the wire field carries base64).
type PublishRequest struct {
	Name        string   `json:"name"`
	Runtime     string   `json:"runtime"` // language plus version, e.g. "python3.12"
	Source      string   `json:"source"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	// Signature is optional: without it the node derives one from the source.
	Signature string `json:"signature,omitempty"`
	Manifest  any    `json:"manifest,omitempty"`
	Lockfile  any    `json:"lockfile,omitempty"`
}

// MarshalJSON writes the wire form, with Source base64-encoded.
func (r PublishRequest) MarshalJSON() ([]byte, error) {
	type wire PublishRequest
	w := wire(r)
	w.Source = base64.StdEncoding.EncodeToString([]byte(r.Source))
	return json.Marshal(w)
}

// PublishResponse is the answer to Publish.
type PublishResponse struct {
	RUFID           string `json:"rufid"` // full form
	RUFIDShort      string `json:"rufid_short"`
	FullRUFID       string `json:"full_rufid"`
	Version         string `json:"version"`
	ImportStatement string `json:"import_statement"`
	ShareURL        string `json:"share_url"`
}

func (r *PublishResponse) normalize() {
	fillRUFIDForms(r.RUFID, &r.RUFIDShort, &r.FullRUFID, r.Version, "")
}

// ExecutionRef is the answer to ExecuteAsync (202). RUFIDShort and FullRUFID are empty from older
// nodes, which did not send them.
type ExecutionRef struct {
	ExecutionID string `json:"execution_id"`
	RUFIDShort  string `json:"rufid_short,omitempty"`
	FullRUFID   string `json:"full_rufid,omitempty"`
	Status      string `json:"status"`
}

// Execution statuses.
const (
	StatusQueued  = "queued"
	StatusRunning = "running"
	StatusSuccess = "success"
	StatusError   = "error"
	StatusTimeout = "timeout"
)

// LogLine is one captured console line of an execution.
type LogLine struct {
	Level   string `json:"level"`
	Message string `json:"message"`
	At      string `json:"at"`
}

// UnmarshalJSON also accepts a bare string as a line's message.
func (l *LogLine) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*l = LogLine{Message: s}
		return nil
	}
	type plain LogLine
	return json.Unmarshal(b, (*plain)(l))
}

// Execution is an execution record (GET /v1/executions/{id}).
type Execution struct {
	ExecutionID     string          `json:"execution_id"`
	RUFID           string          `json:"rufid"`
	RUFIDShort      string          `json:"rufid_short,omitempty"`
	FullRUFID       string          `json:"full_rufid,omitempty"`
	Version         string          `json:"version,omitempty"`   // "v<n>" (a bare number is read as v<n>)
	TenantID        string          `json:"tenant_id,omitempty"` // read from "tenant" on nodes that do not send it yet
	FunctionName    string          `json:"function_name,omitempty"`
	Language        string          `json:"language,omitempty"`
	Status          string          `json:"status"`
	StartedAt       string          `json:"started_at,omitempty"`
	FinishedAt      string          `json:"finished_at,omitempty"`
	ExecutionTimeMS float64         `json:"execution_time_ms,omitempty"`
	CPUTimeMS       float64         `json:"cpu_time_ms,omitempty"`
	MemoryBytes     int64           `json:"memory_bytes,omitempty"`
	Result          json.RawMessage `json:"result,omitempty"`
	Error           *Error          `json:"error,omitempty"`
	Logs            []LogLine       `json:"logs,omitempty"`
}

// UnmarshalJSON reads the record, accepting version as "v<n>" or as a number.
func (e *Execution) UnmarshalJSON(b []byte) error {
	type plain Execution
	aux := struct {
		*plain
		Version json.RawMessage `json:"version"`
		Tenant  string          `json:"tenant"` // deprecated name of tenant_id
	}{plain: (*plain)(e)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	e.Version = versionLabel(aux.Version)
	if e.TenantID == "" {
		e.TenantID = aux.Tenant
	}
	fillRUFIDForms(e.RUFID, &e.RUFIDShort, &e.FullRUFID, e.Version, e.TenantID)
	return nil
}

func versionLabel(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil && n != "" {
		return "v" + n.String()
	}
	return ""
}

// Done reports whether the execution has finished (status neither queued nor running).
func (e *Execution) Done() bool {
	return e.Status != StatusQueued && e.Status != StatusRunning && e.Status != ""
}

// Decode unmarshals Result into out.
func (e *Execution) Decode(out any) error { return decodeResult(e.Result, out) }

// Err returns nil for a successful run, the run's error as *Error for a failed one, and an
// error for a record that has not finished.
func (e *Execution) Err() error {
	switch {
	case e.Status == StatusSuccess:
		return nil
	case !e.Done():
		return errNotDone
	default:
		return runError(e.Status, e.Error)
	}
}

// ExecutionLogs is the answer to ExecutionLogs. A bare JSON array of lines is also accepted.
type ExecutionLogs struct {
	ExecutionID string    `json:"execution_id"`
	RUFIDShort  string    `json:"rufid_short,omitempty"` // empty from older nodes
	FullRUFID   string    `json:"full_rufid,omitempty"`
	Status      string    `json:"status,omitempty"`
	Logs        []LogLine `json:"logs"`
	Truncated   bool      `json:"truncated,omitempty"`
}

// UnmarshalJSON accepts {execution_id, logs, truncated} or a bare array of lines.
func (l *ExecutionLogs) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		return json.Unmarshal(t, &l.Logs)
	}
	type plain ExecutionLogs
	return json.Unmarshal(b, (*plain)(l))
}

// Text joins the log messages with newlines.
func (l *ExecutionLogs) Text() string {
	msgs := make([]string, len(l.Logs))
	for i, line := range l.Logs {
		msgs[i] = line.Message
	}
	return strings.Join(msgs, "\n")
}

// SearchOptions are the parameters of Search.
type SearchOptions struct {
	Q        string
	Language string
	Author   string // exactly this author (the publishing user, e.g. "key:admin")
	Tags     []string
	Limit    int
	Offset   int
}

// SearchAggregations are the facet counts of a marketplace search.
type SearchAggregations struct {
	Language map[string]int `json:"language"`
	Tags     map[string]int `json:"tags"`
	Author   map[string]int `json:"author"`
}

// SearchResult is the answer to Search.
type SearchResult struct {
	Items        []FunctionInfo     `json:"items"`
	Pagination   Pagination         `json:"pagination"`
	Aggregations SearchAggregations `json:"aggregations"`
}

func (r *SearchResult) normalize() { normalizeAll(r.Items) }

// Latency are latency percentiles in milliseconds.
type Latency struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Cost is the resource cost of a function's executions.
type Cost struct {
	CPUMSTotal     float64 `json:"cpu_ms_total"`
	CPUMSAvg       float64 `json:"cpu_ms_avg"`
	MemoryBytesAvg float64 `json:"memory_bytes_avg"`
}

// Telemetry is the answer to Telemetry.
type Telemetry struct {
	RUFID      string  `json:"rufid"` // as asked: the short RUFID, or the full one of a version
	RUFIDShort string  `json:"rufid_short"`
	FullRUFID  string  `json:"full_rufid"` // empty from older nodes when they were asked by the short RUFID
	Window     string  `json:"window"`
	Executions int64   `json:"executions"`
	LatencyMS  Latency `json:"latency_ms"`
	ErrorRate  float64 `json:"error_rate"`
	Cost       Cost    `json:"cost"`
}

func (t *Telemetry) normalize() { fillRUFIDForms(t.RUFID, &t.RUFIDShort, &t.FullRUFID, "", "") }

// TelemetrySeriesOptions are the parameters of TelemetrySeries; zero fields let the node choose
// (window 1h, 30 buckets, every version).
type TelemetrySeriesOptions struct {
	Window  string // a duration such as "15m", "6h", "7d" (at most 30 days)
	Buckets int    // 1 to 240
	Version string // "v2": that version only
}

// TelemetryLatency are the latency percentiles of one bucket, in milliseconds.
type TelemetryLatency struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// TelemetryBucket holds the executions that started in [Start, Start + BucketMS).
type TelemetryBucket struct {
	Start      string           `json:"start"`
	Executions int64            `json:"executions"`
	Errors     int64            `json:"errors"`
	ErrorRate  float64          `json:"error_rate"`
	LatencyMS  TelemetryLatency `json:"latency_ms"`
}

// TelemetrySeries is the answer to TelemetrySeries: the window cut into buckets, oldest first.
type TelemetrySeries struct {
	RUFID      string            `json:"rufid"` // as asked
	RUFIDShort string            `json:"rufid_short"`
	FullRUFID  string            `json:"full_rufid"`
	Window     string            `json:"window"`
	BucketMS   float64           `json:"bucket_ms"`
	Buckets    []TelemetryBucket `json:"buckets"`
}

func (t *TelemetrySeries) normalize() { fillRUFIDForms(t.RUFID, &t.RUFIDShort, &t.FullRUFID, "", "") }

// ---- native group ------------------------------------------------------------------------

// APIKeyRequest is the body of POST /api/v1/auth/v2/api-keys. Scopes: functions:create,
// functions:read, functions:execute, functions:delete, admin.
type APIKeyRequest struct {
	Name        string   `json:"name"`
	Scopes      []string `json:"scopes"`
	ExpiresDays int      `json:"expires_days,omitempty"`
}

// APIKey is a minted key; APIKey (the secret) is shown only once.
type APIKey struct {
	APIKey    string   `json:"api_key"`
	KeyID     string   `json:"key_id"`
	Name      string   `json:"name"`
	TenantID  string   `json:"tenant_id"`
	Scopes    []string `json:"scopes"`
	ExpiresAt string   `json:"expires_at"`
}

// APIKeyInfo is a key as ListAPIKeys shows it: never its secret.
type APIKeyInfo struct {
	KeyID     string   `json:"key_id"`
	Name      string   `json:"name"`
	TenantID  string   `json:"tenant_id"`
	Scopes    []string `json:"scopes"`
	CreatedAt string   `json:"created_at"`
	CreatedBy string   `json:"created_by,omitempty"`
	ExpiresAt string   `json:"expires_at"`
	RevokedAt string   `json:"revoked_at,omitempty"`
}

// RevokedAPIKey is the answer to RevokeAPIKey.
type RevokedAPIKey struct {
	KeyID     string `json:"key_id"`
	RevokedAt string `json:"revoked_at"`
}

// NativeExecuteRequest is the body of POST /api/v1/execution/execute.
type NativeExecuteRequest struct {
	RUFID        string `json:"rufid"`
	FunctionName string `json:"function_name,omitempty"`
	Namespace    string `json:"namespace,omitempty"`
	SourceCode   string `json:"source_code,omitempty"`
	InputData    any    `json:"input_data"`
	Signature    string `json:"signature,omitempty"`
	Language     string `json:"language,omitempty"`
}

// NativeExecuteResponse is the answer to ExecuteNative.
type NativeExecuteResponse struct {
	RUFID           string          `json:"rufid"`
	RUFIDShort      string          `json:"rufid_short"`
	FullRUFID       string          `json:"full_rufid"`
	Registered      bool            `json:"registered"`
	ExecutionID     string          `json:"execution_id"`
	Status          string          `json:"status,omitempty"`
	Result          json.RawMessage `json:"result,omitempty"`
	ExecutionTimeMS float64         `json:"execution_time_ms"`
	Error           *Error          `json:"error,omitempty"`
}

// Decode unmarshals Result into out.
func (r *NativeExecuteResponse) Decode(out any) error { return decodeResult(r.Result, out) }

func (r *NativeExecuteResponse) normalize() {
	fillRUFIDForms(r.RUFID, &r.RUFIDShort, &r.FullRUFID, "", "")
}

// ---- branches, versions, export ----------------------------------------------------------

// DeployRequest is the body of POST /api/v1/functions/deploy: a create body plus the branch
// ("" = main) and its key (needed to move an existing branch; on a new one, optionally your own).
type DeployRequest struct {
	CreateRequest
	Branch    string `json:"branch,omitempty"`
	BranchKey string `json:"branch_key,omitempty"`
}

// BranchHead is a branch head (never its key).
type BranchHead struct {
	FunctionName string `json:"function_name"`
	Branch       string `json:"branch"`
	Version      string `json:"version"`
	RUFID        string `json:"rufid"` // full form
	RUFIDShort   string `json:"rufid_short"`
	FullRUFID    string `json:"full_rufid"`
	CreatedAt    string `json:"created_at"`
	UpdatedAt    string `json:"updated_at"`
	UpdatedBy    string `json:"updated_by"`
}

func (h *BranchHead) normalize() { fillRUFIDForms(h.RUFID, &h.RUFIDShort, &h.FullRUFID, h.Version, "") }

// DeployResponse is the answer to Deploy.
type DeployResponse struct {
	CreateResponse
	FunctionName  string `json:"function_name"`
	Branch        string `json:"branch"`
	BranchCreated bool   `json:"branch_created"`
	// BranchKey is set only when this deploy created the branch: shown once.
	BranchKey       string         `json:"branch_key,omitempty"`
	Moved           bool           `json:"moved"`
	PreviousVersion *string        `json:"previous_version"`
	Head            BranchHead     `json:"head"`
	Manifest        map[string]any `json:"manifest"`
	Lockfile        map[string]any `json:"lockfile"`
}

func (r *DeployResponse) normalize() {
	r.CreateResponse.normalize()
	r.Head.normalize()
}

// InvokeResponse is the answer to Invoke: the execution and the version the head pointed at.
type InvokeResponse struct {
	ExecuteResponse
	RUFID        string `json:"rufid"` // full form
	RUFIDShort   string `json:"rufid_short"`
	FullRUFID    string `json:"full_rufid"`
	Version      string `json:"version"`
	Branch       string `json:"branch"`
	FunctionName string `json:"function_name"`
}

func (r *InvokeResponse) normalize() {
	fillRUFIDForms(r.RUFID, &r.RUFIDShort, &r.FullRUFID, r.Version, "")
}

// VersionEntry is one version of a lineage.
type VersionEntry struct {
	Version          string         `json:"version"`
	RUFID            string         `json:"rufid"` // full form
	RUFIDShort       string         `json:"rufid_short"`
	FullRUFID        string         `json:"full_rufid"`
	ContentDigest    string         `json:"content_digest"`
	CreatedAt        string         `json:"created_at"`
	Author           string         `json:"author"`
	DeletedAt        string         `json:"deleted_at,omitempty"`
	ManifestSnapshot map[string]any `json:"manifest_snapshot"`
	Branches         []any          `json:"branches"`
}

func (v *VersionEntry) normalize() {
	fillRUFIDForms(v.RUFID, &v.RUFIDShort, &v.FullRUFID, v.Version, "")
}

// VersionList is the answer to ListVersions: the version ledger of a lineage and its heads.
type VersionList struct {
	FunctionName string         `json:"function_name"`
	Versions     []VersionEntry `json:"versions"`
	Heads        []BranchHead   `json:"heads"`
}

func (l *VersionList) normalize() {
	normalizeAll(l.Versions)
	normalizeAll(l.Heads)
}

type branchList struct {
	Items []BranchHead `json:"items"`
}

func (l *branchList) normalize() { normalizeAll(l.Items) }

// ExportedFunction is the answer to ExportFunction: the files of a version (texts as sent, or nil).
type ExportedFunction struct {
	RUFID        string         `json:"rufid"` // full form
	RUFIDShort   string         `json:"rufid_short"`
	FullRUFID    string         `json:"full_rufid"`
	Version      string         `json:"version"`
	FunctionName string         `json:"function_name"`
	Manifest     map[string]any `json:"manifest"`
	Lockfile     map[string]any `json:"lockfile"`
	ManifestText *string        `json:"manifest_text"`
	LockfileText *string        `json:"lockfile_text"`
}

func (r *ExportedFunction) normalize() {
	fillRUFIDForms(r.RUFID, &r.RUFIDShort, &r.FullRUFID, r.Version, "")
}

// ---- audit, federation reads, probes -----------------------------------------------------

// AuditQuery filters ListAuditEntries; zero fields are not sent.
type AuditQuery struct {
	From      string // ISO 8601
	To        string
	Tenant    string // a tenant, or "~none" (operators)
	Operation string
	RUFID     string
	Limit     int // at most 1000
	Cursor    string
}

// AuditPage is one page of audit entries; pass NextCursor as Cursor for the next one.
type AuditPage struct {
	Items      []map[string]any `json:"items"`
	NextCursor *string          `json:"next_cursor"`
}

// FederationNodes is the answer to ListNodes.
type FederationNodes struct {
	NodeID string           `json:"node_id"`
	Nodes  []map[string]any `json:"nodes"`
}

// Discovery is the answer to Discover: the nodes that provide a RUFID.
type Discovery struct {
	RUFID         string   `json:"rufid"` // as asked
	RUFIDShort    string   `json:"rufid_short"`
	ContentDigest *string  `json:"content_digest"`
	FunctionName  *string  `json:"function_name"`
	Versions      []string `json:"versions"`
	Nodes         []struct {
		NodeID   string `json:"node_id"`
		Endpoint string `json:"endpoint"`
		Source   string `json:"source"` // self, dht, catalog or member
	} `json:"nodes"`
}

// FederationMember is one node of FederationMembers.
type FederationMember struct {
	NodeID    string `json:"node_id"`
	Endpoint  string `json:"endpoint"`
	Self      bool   `json:"self"`
	Connected bool   `json:"connected"` // connected and verified now (false: known from a registration only)
	// Certificate is nil when the node's certificate is not known.
	Certificate *struct {
		Subject   string `json:"subject"`
		Serial    string `json:"serial"`
		ExpiresAt string `json:"expires_at"`
	} `json:"certificate"`
	VerifiedAt *string `json:"verified_at"`
	LastSeenAt *string `json:"last_seen_at"`
	// Catalog is the member's replicated-catalog digest as it answered just now (nil: it did not
	// answer; Error says why).
	Catalog *struct {
		Digest      string `json:"digest"`
		Entries     int    `json:"entries"`
		BranchMoves int    `json:"branch_moves"`
	} `json:"catalog"`
	Error string `json:"error,omitempty"`
}

// FederationMembers is the answer to FederationMembers.
type FederationMembers struct {
	NodeID    string             `json:"node_id"`   // this node
	Digest    *string            `json:"digest"`    // this node's catalog digest
	Converged bool               `json:"converged"` // every connected member answered this digest
	Members   []FederationMember `json:"members"`
}

// CatalogDigest is a digest of the replicated catalog, to compare nodes.
type CatalogDigest struct {
	Digest  string           `json:"digest"`
	Entries int              `json:"entries"`
	Vector  map[string]int64 `json:"vector"`
}

// ConflictList is the answer to ListConflicts.
type ConflictList struct {
	Items []map[string]any `json:"items"`
}

// Health is the answer to Health (GET /healthz).
type Health struct {
	Status  string  `json:"status"`
	PID     int     `json:"pid"`
	UptimeS float64 `json:"uptime_s"`
}

// Readiness is the answer to Readiness: "ready", or "starting"/"draining" (answered 503).
type Readiness struct {
	Status string `json:"status"`
}

// NodeInfo is the answer to NodeInfo: what a node tells anyone about itself.
type NodeInfo struct {
	Name      string  `json:"name"`
	Version   string  `json:"version"`
	Status    string  `json:"status"` // ready, starting or draining
	Ready     bool    `json:"ready"`
	StartedAt *string `json:"started_at"` // nil while starting
	UptimeS   float64 `json:"uptime_s"`
	AuthMode  string  `json:"auth_mode"` // standard, native or none (no credentials needed)
	Sandbox   struct {
		Workers *int `json:"workers"`
	} `json:"sandbox"`
	Federation struct {
		Enabled bool `json:"enabled"`
	} `json:"federation"`

	// ProtocolVersion is the svc protocol version the node speaks (service-spec §9), e.g. "2.0.0";
	// compare it with this client's ProtocolVersion.
	ProtocolVersion string `json:"protocol_version"`
}

// Whoami is the answer to Whoami: the caller's credential and what it may do.
type Whoami struct {
	TenantID    string   `json:"tenant_id"`
	User        string   `json:"user"`
	Method      string   `json:"method"` // api_key, jwt, oauth, mtls or none
	KeyID       *string  `json:"key_id"`
	Permissions []string `json:"permissions"` // of rufid.create, rufid.read, rufid.execute, rufid.delete, rufid.admin
	Admin       bool     `json:"admin"`
}

// FunctionSource is the answer to GetFunctionSource: a version's source and what a reader needs
// beside it.
type FunctionSource struct {
	RUFID         string `json:"rufid"` // full form
	RUFIDShort    string `json:"rufid_short"`
	FullRUFID     string `json:"full_rufid"`
	Version       string `json:"version"`
	FunctionName  string `json:"function_name"`
	Language      string `json:"language"`
	Signature     string `json:"signature"`
	ContentDigest string `json:"content_digest"`
	SourceCode    string `json:"source_code"`
	// Imports is each client's import statement.
	Imports struct {
		TypeScript string `json:"typescript"`
		Python     string `json:"python"`
		Go         string `json:"go"`
	} `json:"imports"`
}

func (s *FunctionSource) normalize() {
	fillRUFIDForms(s.RUFID, &s.RUFIDShort, &s.FullRUFID, s.Version, "")
}
