package svc

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error codes. They are the same on every protocol (decisions.md "Errors").
const (
	CodeInvalidRUFID          = 1001 // INVALID_RUFID, HTTP 400
	CodeRUFIDNotFound         = 1002 // RUFID_NOT_FOUND, HTTP 404
	CodePermissionDenied      = 1003 // PERMISSION_DENIED, HTTP 403 (401 without valid credentials)
	CodeExecutionTimeout      = 1004 // EXECUTION_TIMEOUT, HTTP 408
	CodeRateLimited           = 1005 // RATE_LIMITED, HTTP 429 with Retry-After
	CodeValidationFailed      = 1006 // VALIDATION_FAILED, HTTP 400 / 422
	CodeExecutionFailed       = 1007 // EXECUTION_FAILED, HTTP 422
	CodeRUFIDCollision        = 1008 // RUFID_COLLISION, HTTP 409
	CodeInternalError         = 1009 // INTERNAL_ERROR (daemon addition), HTTP 500
	CodeServiceUnavailable    = 1010 // SERVICE_UNAVAILABLE (daemon addition), HTTP 503
	CodeNotFound              = 1011 // NOT_FOUND (daemon addition: not a function; details.resource), HTTP 404
	CodeFederationUnreachable = 2001 // FEDERATION_UNREACHABLE, HTTP 502
	CodeSyncConflict          = 2002 // SYNC_CONFLICT, HTTP 409
)

var codeNames = map[int]string{
	CodeInvalidRUFID:          "INVALID_RUFID",
	CodeRUFIDNotFound:         "RUFID_NOT_FOUND",
	CodePermissionDenied:      "PERMISSION_DENIED",
	CodeExecutionTimeout:      "EXECUTION_TIMEOUT",
	CodeRateLimited:           "RATE_LIMITED",
	CodeValidationFailed:      "VALIDATION_FAILED",
	CodeExecutionFailed:       "EXECUTION_FAILED",
	CodeRUFIDCollision:        "RUFID_COLLISION",
	CodeInternalError:         "INTERNAL_ERROR",
	CodeServiceUnavailable:    "SERVICE_UNAVAILABLE",
	CodeNotFound:              "NOT_FOUND",
	CodeFederationUnreachable: "FEDERATION_UNREACHABLE",
	CodeSyncConflict:          "SYNC_CONFLICT",
}

// CodeName returns the name of a known error code ("RUFID_NOT_FOUND" for 1002), or "".
func CodeName(code int) string { return codeNames[code] }

// Error is a failure reported by svc-node (decoded from the REST error body
// `{"error": {"code", "name", "message", "details"}}`) or detected by the client before sending
// (a malformed RUFID: Code 1001, HTTPStatus 0).
//
// Errors compare with errors.Is by Code: errors.Is(err, svc.ErrRUFIDNotFound).
type Error struct {
	Code    int            `json:"code"`
	Name    string         `json:"name"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	// HTTPStatus is the response status, 0 when the error did not come from a response.
	HTTPStatus int `json:"-"`
	// RetryAfter is the server's Retry-After (1005 RATE_LIMITED), 0 when absent.
	RetryAfter time.Duration `json:"-"`
}

func (e *Error) Error() string {
	var sb strings.Builder
	sb.WriteString("svc: ")
	switch {
	case e.Name != "" && e.Code != 0:
		fmt.Fprintf(&sb, "%s (%d)", e.Name, e.Code)
	case e.Code != 0:
		fmt.Fprintf(&sb, "error %d", e.Code)
	case e.HTTPStatus != 0:
		fmt.Fprintf(&sb, "HTTP %d", e.HTTPStatus)
	default:
		sb.WriteString("error")
	}
	if e.Message != "" {
		sb.WriteString(": ")
		sb.WriteString(e.Message)
	}
	if e.HTTPStatus != 0 && e.Code != 0 {
		fmt.Fprintf(&sb, " [HTTP %d]", e.HTTPStatus)
	}
	return sb.String()
}

// Is makes errors.Is(err, target) true when target is an *Error with the same non-zero Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code != 0 && t.Code == e.Code
}

// Unauthenticated reports a 401: no credentials or invalid credentials (code 1003).
func (e *Error) Unauthenticated() bool { return e.HTTPStatus == http.StatusUnauthorized }

// Sentinels for errors.Is. Only Code is compared.
var (
	ErrInvalidRUFID          = &Error{Code: CodeInvalidRUFID, Name: "INVALID_RUFID"}
	ErrRUFIDNotFound         = &Error{Code: CodeRUFIDNotFound, Name: "RUFID_NOT_FOUND"}
	ErrPermissionDenied      = &Error{Code: CodePermissionDenied, Name: "PERMISSION_DENIED"}
	ErrExecutionTimeout      = &Error{Code: CodeExecutionTimeout, Name: "EXECUTION_TIMEOUT"}
	ErrRateLimited           = &Error{Code: CodeRateLimited, Name: "RATE_LIMITED"}
	ErrValidationFailed      = &Error{Code: CodeValidationFailed, Name: "VALIDATION_FAILED"}
	ErrExecutionFailed       = &Error{Code: CodeExecutionFailed, Name: "EXECUTION_FAILED"}
	ErrRUFIDCollision        = &Error{Code: CodeRUFIDCollision, Name: "RUFID_COLLISION"}
	ErrInternal              = &Error{Code: CodeInternalError, Name: "INTERNAL_ERROR"}
	ErrServiceUnavailable    = &Error{Code: CodeServiceUnavailable, Name: "SERVICE_UNAVAILABLE"}
	ErrNotFound              = &Error{Code: CodeNotFound, Name: "NOT_FOUND"}
	ErrFederationUnreachable = &Error{Code: CodeFederationUnreachable, Name: "FEDERATION_UNREACHABLE"}
	ErrSyncConflict          = &Error{Code: CodeSyncConflict, Name: "SYNC_CONFLICT"}
)

// Client-side failures (no code from the node), for errors.Is.
var (
	// ErrConnectionFailed: the node could not be reached or did not answer (refused, DNS, TLS,
	// WithTimeout elapsed). A cancelled or expired caller context is reported as the context's
	// error, not as this.
	ErrConnectionFailed = errors.New("svc: connection failed")
	// ErrWaitTimeout: WaitExecution's context expired before the execution finished (the
	// execution itself may still complete); errors.Is(err, context.DeadlineExceeded) holds too.
	ErrWaitTimeout = errors.New("svc: wait timeout")
)

// AsError returns the *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) && e != nil {
		return e, true
	}
	return nil, false
}

// ErrorCode returns the svc error code in err's chain, or 0.
func ErrorCode(err error) int {
	if e, ok := AsError(err); ok {
		return e.Code
	}
	return 0
}

func hasCode(err error, code int) bool { return ErrorCode(err) == code }

// IsInvalidRUFID reports error 1001.
func IsInvalidRUFID(err error) bool { return hasCode(err, CodeInvalidRUFID) }

// IsNotFound reports error 1002 RUFID_NOT_FOUND (a function or version); see IsResourceNotFound for 1011.
func IsNotFound(err error) bool { return hasCode(err, CodeRUFIDNotFound) }

// IsResourceNotFound reports error 1011 NOT_FOUND: something that is not a function does not exist
// (an execution, its receipt, an API key, a branch; Details["resource"] names which).
func IsResourceNotFound(err error) bool { return hasCode(err, CodeNotFound) }

// IsPermissionDenied reports error 1003 (both 401 and 403).
func IsPermissionDenied(err error) bool { return hasCode(err, CodePermissionDenied) }

// IsUnauthenticated reports a 401 response (no or invalid credentials).
func IsUnauthenticated(err error) bool {
	e, ok := AsError(err)
	return ok && e.Unauthenticated()
}

// IsExecutionTimeout reports error 1004.
func IsExecutionTimeout(err error) bool { return hasCode(err, CodeExecutionTimeout) }

// IsRateLimited reports error 1005; see Error.RetryAfter.
func IsRateLimited(err error) bool { return hasCode(err, CodeRateLimited) }

// IsValidationFailed reports error 1006.
func IsValidationFailed(err error) bool { return hasCode(err, CodeValidationFailed) }

// IsExecutionFailed reports error 1007.
func IsExecutionFailed(err error) bool { return hasCode(err, CodeExecutionFailed) }

// IsCollision reports error 1008.
func IsCollision(err error) bool { return hasCode(err, CodeRUFIDCollision) }

// IsFederationUnreachable reports error 2001.
func IsFederationUnreachable(err error) bool { return hasCode(err, CodeFederationUnreachable) }

// IsSyncConflict reports error 2002.
func IsSyncConflict(err error) bool { return hasCode(err, CodeSyncConflict) }

// statusFallbackCodes give a code to error responses without an svc error body where the status
// alone is unambiguous. A bare 404 or 502 is not mapped: it may come from a proxy or a wrong
// base URL rather than from svc-node.
var statusFallbackCodes = map[int]int{
	http.StatusUnauthorized:    CodePermissionDenied,
	http.StatusForbidden:       CodePermissionDenied,
	http.StatusRequestTimeout:  CodeExecutionTimeout,
	http.StatusTooManyRequests: CodeRateLimited,
}

// decodeErrorResponse builds the *Error for a non-2xx response.
func decodeErrorResponse(resp *http.Response, body []byte) *Error {
	e := &Error{HTTPStatus: resp.StatusCode}
	var envelope struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &envelope) == nil && len(envelope.Error) > 0 {
		var inner Error
		var msg string
		switch {
		case json.Unmarshal(envelope.Error, &inner) == nil:
			e.Code, e.Name, e.Message, e.Details = inner.Code, inner.Name, inner.Message, inner.Details
		case json.Unmarshal(envelope.Error, &msg) == nil:
			e.Message = msg
		}
	}
	if e.Code == 0 {
		e.Code = statusFallbackCodes[resp.StatusCode]
	}
	if e.Name == "" {
		e.Name = CodeName(e.Code)
	}
	if e.Message == "" {
		text := strings.TrimSpace(string(body))
		if len(text) > 200 {
			text = text[:200] + "…"
		}
		if text == "" {
			text = http.StatusText(resp.StatusCode)
		}
		e.Message = text
	}
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	if e.RetryAfter == 0 && e.Details != nil {
		if v, ok := e.Details["retry_after_seconds"].(float64); ok && v > 0 && v < math.MaxInt32 {
			e.RetryAfter = time.Duration(v * float64(time.Second))
		}
	}
	return e
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP-date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if !(secs > 0 && secs <= math.MaxInt32) { // also rejects NaN
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
