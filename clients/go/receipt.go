package svc

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Execution receipts, format version 1 (docs/receipts.md): what a node signs about one
// execution, verified here exactly as the daemon (src/core/receipt.ts) and the Python client
// verify it; all three are checked against test/vectors/receipts-v1.json.

// ReceiptSigningPrefix is the domain separation prefix of the signed bytes.
const ReceiptSigningPrefix = "svc-node/receipt/v1\n"

// Receipt failures: ReceiptError.Failure names the first check that failed.
const (
	ReceiptMalformed         = "malformed"
	ReceiptBadSignature      = "bad_signature"
	ReceiptForeignCA         = "foreign_ca"
	ReceiptNotCertified      = "not_certified"
	ReceiptPeerIDMismatch    = "peer_id_mismatch"
	ReceiptNotYetValid       = "not_yet_valid"
	ReceiptExpired           = "expired"
	ReceiptRevoked           = "revoked"
	ReceiptArgumentsMismatch = "arguments_mismatch"
	ReceiptResultMismatch    = "result_mismatch"
)

// ReceiptError is a receipt that does not verify. It unwraps to an *Error with code 1006
// (VALIDATION_FAILED), so errors.Is(err, svc.ErrValidationFailed) holds.
type ReceiptError struct {
	Failure string
	Message string
}

func (e *ReceiptError) Error() string {
	return "svc: receipt " + strings.ReplaceAll(e.Failure, "_", " ") + ": " + e.Message
}

// Unwrap returns the VALIDATION_FAILED error carrying the failure in its details.
func (e *ReceiptError) Unwrap() error {
	return &Error{Code: CodeValidationFailed, Name: "VALIDATION_FAILED", Message: e.Error(), Details: map[string]any{"failure": e.Failure}}
}

// VerifyReceiptOptions says what to check beyond the receipt itself.
type VerifyReceiptOptions struct {
	// CACertPEM is the federation CA; nil: the certificate is not checked against a CA.
	CACertPEM []byte
	// Revoked lists revoked node certificates: serial numbers or SHA-256 fingerprints (hex, any case, colons allowed).
	Revoked []string
	// Args is the JSON text of the call's arguments; nil: not checked. `null` means no arguments ({}).
	Args json.RawMessage
	// Result is the JSON text of the result; nil: not checked. `null` is a result.
	Result json.RawMessage
	// Now is the verification time; zero: time.Now().
	Now time.Time
}

// VerifiedReceipt is what verification established.
type VerifiedReceipt struct {
	// Receipt is the decoded receipt (numbers as json.Number).
	Receipt map[string]any
	// Digest is the SHA-256 hex of the signed bytes: the receipt's identity.
	Digest string
	PeerID string
	// Certified is true when the certificate was checked against a CA.
	Certified                       bool
	CertificateSerial               string
	CertificateFingerprint256       string
	CheckedArguments, CheckedResult bool
}

var (
	payloadMembers      = []string{"receipt_version", "execution_id", "rufid", "content_digest", "lockfile_digest", "arguments_digest", "status", "result_digest", "error_code", "limits", "started_at", "finished_at", "peer_id"}
	limitMembers        = []string{"timeout_ms", "cpu_ms", "memory_mb"}
	executionIDRe       = regexp.MustCompile(`^ex_[0-9A-HJKMNP-TV-Z]{26}$`)
	hexDigestRe         = regexp.MustCompile(`^[0-9a-f]{64}$`)
	timestampRe         = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$`)
	signatureRe         = regexp.MustCompile(`^[A-Za-z0-9_-]{86}$`)
	pemCertificateRe    = regexp.MustCompile(`^[ \t\r\n]*-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----[ \t\r\n]*$`)
	ed25519PeerIDPrefix = []byte{0x00, 0x24, 0x08, 0x01, 0x12, 0x20}
)

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

func malformedReceipt(format string, args ...any) *ReceiptError {
	return &ReceiptError{Failure: ReceiptMalformed, Message: fmt.Sprintf(format, args...)}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ArgumentsDigest is `arguments_digest` of the JSON text of a call's arguments: a named object
// or a positional array as given; `null` (no arguments) is {}.
func ArgumentsDigest(args json.RawMessage) (string, error) {
	c, err := CanonicalJSON(args)
	if err != nil {
		return "", err
	}
	if string(c) == "null" {
		c = []byte("{}")
	}
	if c[0] != '{' && c[0] != '[' {
		return "", fmt.Errorf("%w: arguments must be an object of named arguments or an array", ErrNoCanonicalForm)
	}
	return sha256Hex(c), nil
}

// ResultDigest is `result_digest` of the JSON text of a result.
func ResultDigest(result json.RawMessage) (string, error) { return JSONDigest(result) }

// LockfileDigest is `lockfile_digest` of the JSON text of a lockfile; `null` for a version without one.
func LockfileDigest(lockfile json.RawMessage) (string, error) { return JSONDigest(lockfile) }

func base58Decode(s string) ([]byte, error) {
	n := new(big.Int)
	for _, c := range s {
		i := strings.IndexRune(base58Alphabet, c)
		if i < 0 {
			return nil, fmt.Errorf("%q is not a base58btc character", c)
		}
		n.Mul(n, big.NewInt(58))
		n.Add(n, big.NewInt(int64(i)))
	}
	zeros := len(s) - len(strings.TrimLeft(s, "1"))
	return append(make([]byte, zeros), n.Bytes()...), nil
}

func base58Encode(b []byte) string {
	n := new(big.Int).SetBytes(b)
	var out []byte
	mod := new(big.Int)
	for n.Sign() > 0 {
		n.DivMod(n, big.NewInt(58), mod)
		out = append([]byte{base58Alphabet[mod.Int64()]}, out...)
	}
	zeros := len(b) - len(bytes.TrimLeft(b, "\x00"))
	return strings.Repeat("1", zeros) + string(out)
}

// Ed25519KeyOfPeerID returns the raw Ed25519 public key a libp2p PeerId embeds: the PeerId is
// base58btc of the identity multihash `00 24` of the PublicKey protobuf `08 01 12 20 <key>`.
func Ed25519KeyOfPeerID(peerID string) (ed25519.PublicKey, error) {
	if len(peerID) < 46 || len(peerID) > 60 {
		return nil, fmt.Errorf("not an Ed25519 PeerId")
	}
	b, err := base58Decode(peerID)
	if err != nil {
		return nil, err
	}
	if len(b) != len(ed25519PeerIDPrefix)+ed25519.PublicKeySize || !bytes.HasPrefix(b, ed25519PeerIDPrefix) {
		return nil, fmt.Errorf("not an Ed25519 PeerId (expected an identity multihash of an Ed25519 libp2p public key)")
	}
	if base58Encode(b) != peerID {
		return nil, fmt.Errorf("not the canonical base58btc form of a PeerId")
	}
	return ed25519.PublicKey(b[len(ed25519PeerIDPrefix):]), nil
}

func normalizeCertificateID(s string) string {
	s = strings.ToLower(strings.NewReplacer(":", "", " ", "", "\t", "", "\n", "", "\r", "").Replace(s))
	return strings.TrimLeft(s, "0")
}

// integerValue returns the value of a JSON number that is an integer (5000 and 5000.0 alike).
func integerValue(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53-1 {
		return 0, false
	}
	return int64(f), true
}

func positiveInteger(v any) bool {
	n, ok := integerValue(v)
	return ok && n > 0
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return truncate(string(b), 80)
}

// signingBytes is the prefix followed by the JCS of the payload members.
func signingBytes(r map[string]any) ([]byte, error) {
	payload := make(map[string]any, len(payloadMembers))
	for _, k := range payloadMembers {
		payload[k] = r[k]
	}
	var out bytes.Buffer
	out.WriteString(ReceiptSigningPrefix)
	if err := writeCanonical(&out, payload); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func checkPayload(r map[string]any) (ed25519.PublicKey, error) {
	if v, ok := integerValue(r["receipt_version"]); !ok || v != 1 {
		return nil, malformedReceipt("receipt_version %s is not 1", show(r["receipt_version"]))
	}
	str := func(k string) (string, bool) { s, ok := r[k].(string); return s, ok }
	matches := func(k string, re *regexp.Regexp) bool { s, ok := str(k); return ok && re.MatchString(s) }
	expect := func(ok bool, member, what string) error {
		if !ok {
			return malformedReceipt("%s must be %s, not %s", member, what, show(r[member]))
		}
		return nil
	}
	checks := []error{
		expect(matches("execution_id", executionIDRe), "execution_id", "an execution id (ex_ and 26 Crockford base32 characters)"),
		expect(matches("rufid", fullRUFIDPattern), "rufid", "a full RUFID"),
		expect(matches("content_digest", hexDigestRe), "content_digest", "a lowercase SHA-256 hex digest"),
		expect(matches("lockfile_digest", hexDigestRe), "lockfile_digest", "a lowercase SHA-256 hex digest"),
		expect(matches("arguments_digest", hexDigestRe), "arguments_digest", "a lowercase SHA-256 hex digest"),
	}
	status, _ := str("status")
	checks = append(checks,
		expect(status == "success" || status == "error" || status == "timeout", "status", "success, error or timeout"),
		expect(r["result_digest"] == nil || matches("result_digest", hexDigestRe), "result_digest", "null or a lowercase SHA-256 hex digest"),
		expect(r["error_code"] == nil || positiveInteger(r["error_code"]), "error_code", "null or a positive integer"),
	)
	for _, err := range checks {
		if err != nil {
			return nil, err
		}
	}
	limits, ok := r["limits"].(map[string]any)
	if !ok {
		return nil, malformedReceipt("limits must be an object")
	}
	if len(limits) != len(limitMembers) {
		return nil, malformedReceipt("limits must have exactly %s", strings.Join(limitMembers, ", "))
	}
	for _, k := range limitMembers {
		v, present := limits[k]
		if !present {
			return nil, malformedReceipt("limits must have exactly %s", strings.Join(limitMembers, ", "))
		}
		if !positiveInteger(v) {
			return nil, malformedReceipt("limits.%s must be a positive integer", k)
		}
	}
	for _, k := range []string{"started_at", "finished_at"} {
		s, ok := str(k)
		valid := ok && timestampRe.MatchString(s)
		if valid {
			_, err := time.Parse(time.RFC3339Nano, s)
			valid = err == nil
		}
		if err := expect(valid, k, "a UTC time YYYY-MM-DDTHH:MM:SS.sssZ"); err != nil {
			return nil, err
		}
	}
	peerID, _ := str("peer_id")
	key, err := Ed25519KeyOfPeerID(peerID)
	if err != nil {
		return nil, malformedReceipt("peer_id %s: %v", show(r["peer_id"]), err)
	}
	return key, nil
}

func consistencyFault(r map[string]any) string {
	rufid := r["rufid"].(string)
	digest, _ := hex.DecodeString(r["content_digest"].(string))
	if b := Base62(digest); len(b) < 12 || b[:12] != strings.Split(rufid, ":")[1] {
		return fmt.Sprintf("content_digest %s is not the content of %s", r["content_digest"], rufid)
	}
	status := r["status"].(string)
	hasResult, hasError := r["result_digest"] != nil, r["error_code"] != nil
	if status == "success" && (!hasResult || hasError) {
		return "a success has a result_digest and no error_code"
	}
	if status != "success" && (hasResult || !hasError) {
		article := "a"
		if status == "error" {
			article = "an"
		}
		return fmt.Sprintf("%s %s has an error_code and no result_digest", article, status)
	}
	if code, _ := integerValue(r["error_code"]); status == "timeout" && code != CodeExecutionTimeout {
		return "a timeout has error_code 1004"
	}
	if r["finished_at"].(string) < r["started_at"].(string) {
		return "finished_at is before started_at"
	}
	return ""
}

func parseCertificatePEM(text []byte) (*x509.Certificate, error) {
	block, rest := pem.Decode(text)
	if block == nil || block.Type != "CERTIFICATE" || len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("not one PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

func certificateFault(cert, ca *x509.Certificate, peerID string, now time.Time, revoked map[string]bool) *ReceiptError {
	if ca != nil {
		sameName := bytes.Equal(cert.RawIssuer, ca.RawSubject) || cert.Issuer.String() == ca.Subject.String()
		if !sameName || cert.CheckSignatureFrom(ca) != nil {
			return &ReceiptError{ReceiptForeignCA, fmt.Sprintf("certificate of %s is not issued by the federation CA %s", cert.Subject, ca.Subject)}
		}
	}
	if cert.IsCA {
		return &ReceiptError{ReceiptNotCertified, "the certificate is a CA certificate, not a node certificate"}
	}
	var bound []string
	for _, u := range cert.URIs {
		if s := u.String(); strings.HasPrefix(s, "libp2p:") {
			bound = append(bound, strings.TrimPrefix(s, "libp2p:"))
		}
	}
	if len(bound) == 0 {
		return &ReceiptError{ReceiptNotCertified, "the certificate binds no PeerId (no URI:libp2p: subject alternative name)"}
	}
	found := false
	for _, p := range bound {
		found = found || p == peerID
	}
	if !found {
		return &ReceiptError{ReceiptPeerIDMismatch, fmt.Sprintf("the certificate binds %s, not %s", strings.Join(bound, ", "), peerID)}
	}
	if now.Before(cert.NotBefore) {
		return &ReceiptError{ReceiptNotYetValid, "the certificate is valid from " + cert.NotBefore.UTC().Format(time.RFC3339)}
	}
	if now.After(cert.NotAfter) {
		return &ReceiptError{ReceiptExpired, "the certificate expired at " + cert.NotAfter.UTC().Format(time.RFC3339)}
	}
	if revoked[normalizeCertificateID(cert.SerialNumber.Text(16))] || revoked[normalizeCertificateID(sha256Hex(cert.Raw))] {
		return &ReceiptError{ReceiptRevoked, fmt.Sprintf("certificate %X is revoked", cert.SerialNumber)}
	}
	return nil
}

// VerifyReceipt verifies the JSON text of a receipt as docs/receipts.md §5 says: its shape, the
// Ed25519 signature under the key its PeerId embeds, its consistency, its certificate (against
// opts.CACertPEM when given: issued by the CA, a node certificate, binding the PeerId; then valid
// at opts.Now and not revoked), and the arguments and result when given. It returns what was
// established, or a *ReceiptError naming the first check that failed. An unreadable CA
// certificate is an *Error with code 1006 (the caller's input, not a verdict on the receipt).
func VerifyReceipt(receipt []byte, opts VerifyReceiptOptions) (*VerifiedReceipt, error) {
	var ca *x509.Certificate
	if opts.CACertPEM != nil {
		c, err := parseCertificatePEM(opts.CACertPEM)
		if err != nil {
			return nil, &Error{Code: CodeValidationFailed, Name: "VALIDATION_FAILED", Message: "the CA certificate is not an X.509 certificate: " + err.Error()}
		}
		ca = c
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	revoked := map[string]bool{}
	for _, id := range opts.Revoked {
		revoked[normalizeCertificateID(id)] = true
	}

	// 1. shape
	decoded, err := decodeStrictJSON(receipt)
	if err != nil {
		return nil, malformedReceipt("%v", err)
	}
	r, ok := decoded.(map[string]any)
	if !ok {
		return nil, malformedReceipt("a receipt is a JSON object")
	}
	known := map[string]bool{"certificate": true, "signature": true}
	for _, k := range payloadMembers {
		known[k] = true
	}
	var unknown []string
	for k := range r {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, malformedReceipt("unknown members %s", strings.Join(unknown, ", "))
	}
	for k := range known {
		if _, present := r[k]; !present {
			return nil, malformedReceipt("member %s is missing", k)
		}
	}
	key, err := checkPayload(r)
	if err != nil {
		return nil, err
	}
	sigText, _ := r["signature"].(string)
	if !signatureRe.MatchString(sigText) {
		return nil, malformedReceipt("signature must be a 64-byte signature in unpadded base64url")
	}
	signature, err := base64.RawURLEncoding.Strict().DecodeString(sigText)
	if err != nil || len(signature) != ed25519.SignatureSize || base64.RawURLEncoding.EncodeToString(signature) != sigText {
		return nil, malformedReceipt("signature is not the canonical base64url of 64 bytes")
	}
	pemText, _ := r["certificate"].(string)
	if !pemCertificateRe.MatchString(pemText) {
		return nil, malformedReceipt("certificate must be one PEM certificate")
	}
	cert, err := parseCertificatePEM([]byte(pemText))
	if err != nil {
		return nil, malformedReceipt("certificate is not an X.509 certificate: %v", err)
	}

	// 2. signature
	signed, err := signingBytes(r)
	if err != nil {
		return nil, malformedReceipt("%v", err)
	}
	if !ed25519.Verify(key, signed, signature) {
		return nil, &ReceiptError{ReceiptBadSignature, "the signature does not verify under the key of PeerId " + r["peer_id"].(string)}
	}

	// 3. consistency
	if fault := consistencyFault(r); fault != "" {
		return nil, malformedReceipt("%s", fault)
	}

	// 4. certificate
	if fault := certificateFault(cert, ca, r["peer_id"].(string), now, revoked); fault != nil {
		return nil, fault
	}

	// 5. arguments and result
	if opts.Args != nil {
		digest, err := ArgumentsDigest(opts.Args)
		if err != nil {
			return nil, &ReceiptError{ReceiptArgumentsMismatch, "the arguments have no canonical JSON form: " + err.Error()}
		}
		if digest != r["arguments_digest"] {
			return nil, &ReceiptError{ReceiptArgumentsMismatch, fmt.Sprintf("the arguments digest is %s, the receipt says %s", digest, r["arguments_digest"])}
		}
	}
	if opts.Result != nil {
		if r["result_digest"] == nil {
			return nil, &ReceiptError{ReceiptResultMismatch, fmt.Sprintf("the receipt records error %s (%s), not a result", r["error_code"], r["status"])}
		}
		digest, err := ResultDigest(opts.Result)
		if err != nil {
			return nil, &ReceiptError{ReceiptResultMismatch, "the result has no canonical JSON form: " + err.Error()}
		}
		if digest != r["result_digest"] {
			return nil, &ReceiptError{ReceiptResultMismatch, fmt.Sprintf("the result digest is %s, the receipt says %s", digest, r["result_digest"])}
		}
	}
	return &VerifiedReceipt{
		Receipt:                   r,
		Digest:                    sha256Hex(signed),
		PeerID:                    r["peer_id"].(string),
		Certified:                 ca != nil,
		CertificateSerial:         fmt.Sprintf("%X", cert.SerialNumber),
		CertificateFingerprint256: sha256Hex(cert.Raw),
		CheckedArguments:          opts.Args != nil,
		CheckedResult:             opts.Result != nil,
	}, nil
}
