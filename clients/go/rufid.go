package svc

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// This file implements RUFID v1 exactly as shared/spec/rufid-v1.md defines it. The daemon
// (src/core/rufid.ts) and the Python client implement the same algorithm; all three are checked
// against test/vectors/rufid-v1.json.
//
// The spec's algorithm is written in characters. Every character it gives a meaning to (quotes,
// backslash, '#', '/', '*', '`', whitespace, LF, CR) is ASCII, and in UTF-8 no byte of a
// multi-byte sequence is ever an ASCII byte, so scanning bytes is equivalent to scanning
// characters: non-ASCII text and emoji are copied through unchanged.

// LanguageFamily is the lexing family a language value maps to (rufid-v1.md §3).
type LanguageFamily string

// The four language families of rufid-v1.md §3.
const (
	FamilyPython LanguageFamily = "python"
	FamilyJS     LanguageFamily = "js"
	FamilyGo     LanguageFamily = "go"
	FamilyPlain  LanguageFamily = "plain"
)

var families = map[string]LanguageFamily{
	"python": FamilyPython, "python3": FamilyPython, "py": FamilyPython,
	"javascript": FamilyJS, "js": FamilyJS, "node": FamilyJS, "nodejs": FamilyJS,
	"typescript": FamilyJS, "ts": FamilyJS, "jsx": FamilyJS, "tsx": FamilyJS,
	"mjs": FamilyJS, "cjs": FamilyJS,
	"go": FamilyGo, "golang": FamilyGo,
}

// Family maps a language value (case-insensitively) to its family; unknown values are plain.
func Family(language string) LanguageFamily {
	if f, ok := families[strings.ToLower(language)]; ok {
		return f
	}
	return FamilyPlain
}

// asciiSpace is what rufid-v1.md §2.3 trims from function_name and signature.
const asciiSpace = " \t\n\r\f\v"

// TrimASCIISpace trims leading and trailing ASCII whitespace (space, tab, LF, CR, FF, VT) only.
func TrimASCIISpace(s string) string { return strings.Trim(s, asciiSpace) }

// PrepareSource applies rufid-v1.md §2.1–2.2: one leading U+FEFF removed, then CRLF and every
// remaining lone CR replaced by LF.
func PrepareSource(source string) string {
	s := strings.TrimPrefix(source, "\uFEFF")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// NormalizeSource returns the normalized code used for identity (never for execution).
func NormalizeSource(source, language string) string {
	s := PrepareSource(source)
	switch fam := Family(language); fam {
	case FamilyPython:
		return normalizeWhitespace(lexPython(s))
	case FamilyJS, FamilyGo:
		return normalizeWhitespace(lexCLike(s, fam))
	default:
		return strings.TrimRight(s, " \t\f\v\n")
	}
}

// CanonicalString is `function_name + ":" + signature + ":" + normalized_code`, with name and
// signature trimmed of ASCII whitespace (rufid-v1.md §2.3, §7.1).
func CanonicalString(functionName, signature, normalizedCode string) string {
	return TrimASCIISpace(functionName) + ":" + TrimASCIISpace(signature) + ":" + normalizedCode
}

// RUFIDInput is what a RUFID is computed from.
type RUFIDInput struct {
	FunctionName string `json:"function_name"`
	Signature    string `json:"signature"`
	Language     string `json:"language"`
	SourceCode   string `json:"source_code"`
}

// RUFIDComputation is the result of ComputeRUFID.
type RUFIDComputation struct {
	// RUFIDShort is the 12-character hash.
	RUFIDShort string
	// ContentDigest is the lower-case hex SHA-256 of Canonical (stored as content_digest).
	ContentDigest  string
	NormalizedCode string
	Canonical      string
}

// ComputeRUFID runs the whole RUFID v1 algorithm (rufid-v1.md §2–§7).
func ComputeRUFID(in RUFIDInput) RUFIDComputation {
	normalized := NormalizeSource(in.SourceCode, in.Language)
	canonical := CanonicalString(in.FunctionName, in.Signature, normalized)
	digest := sha256.Sum256([]byte(canonical))
	b62 := Base62(digest[:])
	short := b62
	if len(short) > 12 {
		short = short[:12]
	}
	return RUFIDComputation{
		RUFIDShort:     short,
		ContentDigest:  hex.EncodeToString(digest[:]),
		NormalizedCode: normalized,
		Canonical:      canonical,
	}
}

// ShortRUFID is ComputeRUFID(...).RUFIDShort.
func ShortRUFID(functionName, signature, language, sourceCode string) string {
	return ComputeRUFID(RUFIDInput{
		FunctionName: functionName, Signature: signature, Language: language, SourceCode: sourceCode,
	}).RUFIDShort
}

// Base62Alphabet is the digit alphabet of rufid-v1.md §7.3.
const Base62Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Base62 reads b as one unsigned big-endian integer and writes it in base 62, most significant
// digit first, without padding ("0" for zero).
func Base62(b []byte) string {
	n := new(big.Int).SetBytes(b)
	if n.Sign() == 0 {
		return "0"
	}
	base := big.NewInt(62)
	rem := new(big.Int)
	var digits []byte
	for n.Sign() > 0 {
		n.DivMod(n, base, rem)
		digits = append(digits, Base62Alphabet[rem.Int64()])
	}
	for i, j := 0, len(digits)-1; i < j; i, j = i+1, j-1 {
		digits[i], digits[j] = digits[j], digits[i]
	}
	return string(digits)
}

// ---- lexing (rufid-v1.md §4–§5) -----------------------------------------------------------

// lexed is the lexer's output: bytes with a parallel mask, true for code characters and false
// for characters inside string literals (which normalization never touches).
type lexed struct {
	b    []byte
	code []bool
}

func (l *lexed) literal(s string) {
	l.b = append(l.b, s...)
	for range len(s) {
		l.code = append(l.code, false)
	}
}

func (l *lexed) codeByte(c byte) {
	l.b = append(l.b, c)
	l.code = append(l.code, true)
}

// scanQuoted returns the end (exclusive) of a literal whose opening delimiter ends at start.
func scanQuoted(s string, start int, delim string, escapes, endsAtLF bool) int {
	n := len(s)
	k := start
	for k < n {
		c := s[k]
		if escapes && c == '\\' {
			k += 2
			continue
		}
		if endsAtLF && c == '\n' {
			return k
		}
		if strings.HasPrefix(s[k:], delim) {
			return k + len(delim)
		}
		k++
	}
	return n
}

// lineCommentEnd: a line comment runs up to, not including, the next LF.
func lineCommentEnd(s string, i int) int {
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(s)
}

// blockComment removes the block comment starting at i, replacing it by an LF when it contains
// one and by a space otherwise; it returns the position after the comment.
func blockComment(s string, i int, out *lexed) int {
	end := len(s)
	if j := strings.Index(s[i+2:], "*/"); j >= 0 {
		end = i + 2 + j + 2
	}
	if strings.IndexByte(s[i:end], '\n') >= 0 {
		out.codeByte('\n')
	} else {
		out.codeByte(' ')
	}
	return end
}

func isIdentByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_'
}

func isPyPrefix(c byte) bool { return strings.IndexByte("rRbBuUfF", c) >= 0 }

func isHorizontalSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' || c == '\v' }

func lexPython(s string) *lexed {
	out := &lexed{b: make([]byte, 0, len(s)), code: make([]bool, 0, len(s))}
	n := len(s)
	i := 0
	for i < n {
		// A string literal: an optional prefix of at most two letters from rRbBuUfF (allowed
		// only when the character before it is not an ASCII letter, digit or '_'), then a quote.
		end := -1
		for p := 0; p <= 2 && i+p < n; p++ {
			if p > 0 {
				if !isPyPrefix(s[i+p-1]) {
					break
				}
				if i > 0 && isIdentByte(s[i-1]) {
					break
				}
			}
			q := s[i+p]
			if q == '\'' || q == '"' {
				triple := strings.Repeat(string(q), 3)
				if strings.HasPrefix(s[i+p:], triple) {
					end = scanQuoted(s, i+p+3, triple, true, false)
				} else {
					end = scanQuoted(s, i+p+1, string(q), true, true)
				}
				break
			}
		}
		if end >= 0 {
			end = min(end, n)
			out.literal(s[i:end])
			i = end
			continue
		}
		if s[i] == '#' {
			i = lineCommentEnd(s, i)
			continue
		}
		out.codeByte(s[i])
		i++
	}
	return out
}

func lexCLike(s string, fam LanguageFamily) *lexed {
	out := &lexed{b: make([]byte, 0, len(s)), code: make([]bool, 0, len(s))}
	n := len(s)
	i := 0
	for i < n {
		c := s[i]
		switch {
		case c == '"' || c == '\'':
			end := min(scanQuoted(s, i+1, string(c), true, true), n)
			out.literal(s[i:end])
			i = end
		case c == '`':
			// js template literal: escapes, ${} not tracked; go raw string: no escapes.
			end := min(scanQuoted(s, i+1, "`", fam == FamilyJS, false), n)
			out.literal(s[i:end])
			i = end
		case c == '/' && i+1 < n && s[i+1] == '/':
			i = lineCommentEnd(s, i)
		case c == '/' && i+1 < n && s[i+1] == '*':
			i = blockComment(s, i, out)
		default:
			out.codeByte(c)
			i++
		}
	}
	return out
}

// normalizeWhitespace applies rufid-v1.md §6 to code characters only.
func normalizeWhitespace(l *lexed) string {
	n := len(l.b)
	isCodeLF := func(k int) bool { return l.code[k] && l.b[k] == '\n' }

	// Step 1: drop every run of code whitespace followed by a code LF or by the end of input.
	keep := make([]int, 0, n)
	for i := 0; i < n; {
		if l.code[i] && isHorizontalSpace(l.b[i]) {
			j := i
			for j < n && l.code[j] && isHorizontalSpace(l.b[j]) {
				j++
			}
			if j < n && !isCodeLF(j) {
				for k := i; k < j; k++ {
					keep = append(keep, k)
				}
			}
			i = j
			continue
		}
		keep = append(keep, i)
		i++
	}

	// Step 2: drop code LFs at the start or right after another code LF, then a final code LF.
	out := make([]int, 0, len(keep))
	for _, k := range keep {
		if isCodeLF(k) && (len(out) == 0 || isCodeLF(out[len(out)-1])) {
			continue
		}
		out = append(out, k)
	}
	if len(out) > 0 && isCodeLF(out[len(out)-1]) {
		out = out[:len(out)-1]
	}

	var sb strings.Builder
	sb.Grow(len(out))
	for _, k := range out {
		sb.WriteByte(l.b[k])
	}
	return sb.String()
}

// ---- syntax (rufid-v1.md §8) --------------------------------------------------------------

var (
	shortRUFIDPattern = regexp.MustCompile(`^[A-Za-z0-9]{12}$`)
	fullRUFIDPattern  = regexp.MustCompile(`^rufid:([A-Za-z0-9]{12}):v([1-9][0-9]*):([A-Za-z0-9_.-]{1,64})$`)
)

// RUFID is a parsed RUFID. For the short form only Short is set (Version 0, Tenant "").
type RUFID struct {
	Short   string
	Version int
	Tenant  string
}

// IsFull reports whether r came from (or represents) the full form.
func (r RUFID) IsFull() bool { return r.Version > 0 }

// String returns the full form when r has a version, the short form otherwise.
func (r RUFID) String() string {
	if r.IsFull() {
		return FormatRUFID(r.Short, r.Version, r.Tenant)
	}
	return r.Short
}

// VersionLabel returns "v<n>", or "" for a short RUFID.
func (r RUFID) VersionLabel() string {
	if r.Version <= 0 {
		return ""
	}
	return "v" + strconv.Itoa(r.Version)
}

// IsShortRUFID reports whether s is a syntactically valid short RUFID.
func IsShortRUFID(s string) bool { return shortRUFIDPattern.MatchString(s) }

// IsValidRUFID reports whether s is a syntactically valid short or full RUFID.
func IsValidRUFID(s string) bool {
	_, err := ParseRUFID(s)
	return err == nil
}

// ParseRUFID accepts the short form `^[A-Za-z0-9]{12}$` or the full form
// `^rufid:[A-Za-z0-9]{12}:v[1-9][0-9]*:[A-Za-z0-9_.-]{1,64}$`. Anything else (including a
// version number too large for an int) is an *Error with Code 1001 (INVALID_RUFID).
func ParseRUFID(s string) (RUFID, error) {
	if shortRUFIDPattern.MatchString(s) {
		return RUFID{Short: s}, nil
	}
	m := fullRUFIDPattern.FindStringSubmatch(s)
	if m == nil {
		return RUFID{}, invalidRUFID(s, "malformed RUFID")
	}
	v, err := strconv.Atoi(m[2])
	if err != nil {
		return RUFID{}, invalidRUFID(s, "version out of range")
	}
	return RUFID{Short: m[1], Version: v, Tenant: m[3]}, nil
}

// FormatRUFID builds the full form `rufid:<short>:v<version>:<tenant>`.
func FormatRUFID(short string, version int, tenant string) string {
	return fmt.Sprintf("rufid:%s:v%d:%s", short, version, tenant)
}

func invalidRUFID(value, why string) *Error {
	return &Error{
		Code:    CodeInvalidRUFID,
		Name:    "INVALID_RUFID",
		Message: fmt.Sprintf("%s: %q", why, value),
		Details: map[string]any{"rufid": value},
	}
}
