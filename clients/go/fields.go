package svc

import (
	"fmt"
	"regexp"
	"strconv"
)

// Field names every client exposes the same way, whatever node version answers:
//
//   - every body that names a function carries rufid_short (the 12-character hash) and full_rufid
//     (rufid:<short>:v<n>:<tenant>); "rufid" keeps the meaning the spec gives it per body
//     (metadata: short; create, resolution, execution record, events: full). A node that sends
//     only one of them gets the other derived here;
//   - the execution record says tenant_id; older nodes say tenant (kept one release as a deprecated
//     alias), which is read when tenant_id is absent.
//
// Nothing is invented: a form that cannot be derived (no version or tenant known) stays empty. The
// TypeScript (src/client/fields.ts) and Python (svc/_fields.py) clients apply the same rules.

var versionPattern = regexp.MustCompile(`^v[1-9][0-9]*$`)

// parseVersionLabel checks a version label "v<n>" (*Error 1001 otherwise, as the node answers).
func parseVersionLabel(v string) (string, error) {
	if !versionPattern.MatchString(v) {
		return "", &Error{Code: CodeInvalidRUFID, Name: "INVALID_RUFID", Message: fmt.Sprintf("malformed version label: %q", v),
			Details: map[string]any{"version": v}}
	}
	return v, nil
}

// fillRUFIDForms sets *short and *full when empty, from rufid (either form), the other form, and
// version plus tenant.
func fillRUFIDForms(rufid string, short, full *string, version, tenant string) {
	if *full == "" && fullRUFIDPattern.MatchString(rufid) {
		*full = rufid
	}
	if *short == "" {
		if m := fullRUFIDPattern.FindStringSubmatch(*full); m != nil {
			*short = m[1]
		} else if shortRUFIDPattern.MatchString(rufid) {
			*short = rufid
		}
	}
	if *full == "" && *short != "" && versionPattern.MatchString(version) && tenant != "" {
		if n, err := strconv.Atoi(version[1:]); err == nil {
			*full = FormatRUFID(*short, n, tenant)
		}
	}
}

// normalizer is implemented by answers that name functions; Client.do calls it after decoding.
type normalizer interface{ normalize() }

func normalizeAll[T any, P interface {
	*T
	normalizer
}](items []T) {
	for i := range items {
		P(&items[i]).normalize()
	}
}
